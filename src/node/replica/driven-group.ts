/**
 * The node loop's contract (raft-driver.ts): what it needs of one Raft group, the options it is
 * built with, and its small shared rules (which task errors are expected, which messages may go
 * before the synced write, how a write is measured). Its one job is that contract, so the driver
 * file holds only the loop.
 */
import type { Logger } from 'pino';
import { AtollError } from '../../errors.js';
import { RaftError } from '../../raft/errors.js';
import type { Ready, RawNode } from '../../raft/rawnode.js';
import type { Message } from '../../raft/types.js';
import type { StorageEngine, WriteOperation } from '../../storage/storage-engine.js';
import type { NodeMetrics } from '../metrics.js';
import type { NodeClock, NodeTimers, TransportFactory } from '../ports.js';
import type { JobGroup } from './group-jobs.js';
import type { NoticeHoldMode } from './node-batch.js';
import type { ImportingGroup } from '../snapshot/snapshot-imports.js';
import type { TransferGroup } from '../snapshot/snapshot-transfer.js';

/**
 * What the driver needs of one Raft group (PartitionReplica is one): the jobs beside the loop
 * (group-jobs.ts: log compaction, snapshot exports, storage compaction steps) and snapshot imports
 * (snapshot-imports.ts) each name their part.
 */
export interface DrivenGroup extends ImportingGroup, JobGroup, TransferGroup {
  readonly id: number;
  readonly raw: RawNode;
  startReadRound(): void;
  stage(ready: Ready): Promise<{ ops: WriteOperation[]; mustSync: boolean }>;
  apply(ready: Ready): Promise<void>;
  failAll(error: AtollError): void;
  /**
   * True while the group has no configuration at all: an empty replica a move opened, waiting for
   * its leader's first snapshot (replica-moves.ts). It takes messages from any known node.
   */
  awaitingFirstSnapshot?(): boolean;
}

/**
 * The errors a loop task may throw by design, which are logged and skipped: a RaftError (the Raft
 * core's typed outcomes, src/raft/errors.ts: a proposal, transfer or read refused here, an index
 * compacted or not yet in the log) and an AtollError (the node's operating errors, with a stable
 * code). Anything else, above all a `node:assert` AssertionError from the Raft core's safety checks
 * in step() or tick(), means the node's state broke an invariant: the node stops, as it does on a
 * failed synced write, rather than go on from a state it cannot trust.
 */
export function isExpectedTaskError(error: unknown): boolean {
  return error instanceof RaftError || error instanceof AtollError;
}

export interface RaftDriverOptions {
  readonly id: number;
  /** Every node's id and address: a peer message naming a stranger is refused. */
  readonly knownNodes: ReadonlyMap<number, string>;
  readonly tickMs: number;
  /** Ticks of silence after which a peer's quiesced groups wake (default 10: the election timeout). */
  readonly electionTicks?: number;
  readonly engine: StorageEngine;
  readonly transport: TransportFactory;
  readonly peerSecret: string;
  /** The cluster id peers are told (cluster-descriptor.ts). */
  readonly clusterId?: string;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
  readonly logger: Logger;
  /** Called once when the loop fails (a failed synced write, a broken invariant): the node must stop. */
  readonly onFatal: (error: Error) => void;
  /** Negative control (NodeTestBugs.followerAckBeforeSync): every message goes before the synced write. */
  readonly followerAckBeforeSync?: boolean;
  /**
   * Send every group's commit notices and acknowledgements to a peer as one node-level item each
   * per frame (node-batch.ts; AtollNodeConfig.coalesceRaftMessages). Every peer must decode them.
   */
  readonly coalesce?: boolean;
  /** When coalesced commit notices leave (node-batch.ts NoticeHoldMode; default 'frame'). */
  readonly noticeHold?: NoticeHoldMode;
  /** The longest a held notice waits for a frame to its peer (default raft-driver.ts MAX_NOTICE_HOLD_MS, at most a tick). */
  readonly maxNoticeHoldMs?: number;
  /** Loop, storage write, Raft message, snapshot and leadership events (default: none). */
  readonly metrics?: NodeMetrics;
  /** The largest snapshot chunk a follower takes (snapshot-transfer.ts; limits.ts: a chunk plus one entry). */
  readonly maxSnapshotChunkBytes?: number;
  /**
   * Called once the driver no longer runs a group (removeGroup, or addGroup of another group with
   * its id), to give back memory it shares with other groups (a replica's key index bytes).
   */
  readonly onGroupDropped?: (group: DrivenGroup) => void;
}

/** A leader's log replication (a commit notice too): it carries the leader's log, never a promise about this node's disk. */
export function sendableBeforeSync(message: Message): boolean {
  return message.type === 'app' || message.type === 'heartbeat' || message.type === 'commit';
}

/** Key and value bytes of a storage write (deletes count their key). */
export function writeBytes(ops: readonly WriteOperation[]): number {
  let bytes = 0;
  for (const op of ops) bytes += op.key.length + (op.type === 'put' ? op.value.length : 0);
  return bytes;
}
