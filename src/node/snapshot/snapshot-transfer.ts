/**
 * Snapshot transfers outside Raft (issue 16, "Snapshot install"; docs/architecture.md section 5):
 * the protocol, its bounds, and what the leader's sender (snapshot-sender.ts) and the follower's
 * receiver (snapshot-receiver.ts) need of a group and of the node. snapshot-transfers.ts wires both
 * into the node loop.
 *
 * The protocol (TiKV's order: the data completes before the follower's Raft core sees a MsgSnap):
 * - The leader's Raft core sends MsgSnap whose snapshot data is only a ticket (digest, chunk and
 *   byte counts: snapshot-payload.ts). The node holds that MsgSnap back and streams the export's
 *   chunks to the follower as transfer items (raft-wire.ts), at most TRANSFER_WINDOW unacknowledged.
 * - The follower checks each chunk as it arrives (order, the MVCC snapshot checks, the running
 *   digest), writes it to its staging keys and acknowledges it once written. After the last chunk
 *   the digest must equal the ticket's.
 * - Once the follower acknowledged the last chunk, the leader lets the held MsgSnap go. The
 *   follower's core accepts it only if a complete staged transfer matches its ticket
 *   (acceptSnapshot); the install then imports the staged chunks beside the loop, one at a time,
 *   and deletes them in the import's final synced batch.
 * Why this order rather than a metadata-only MsgSnap the core adopts first: a core that adopted a
 * snapshot cannot take it back, so a transfer that then failed (leader change, timeout, forged
 * chunk) would leave the group with a torn store and only a node stop to recover it. Here a failed
 * transfer touches nothing but staging keys, which are discarded.
 */
import type { Logger } from 'pino';
import { defaultLimits, type Limits } from '../../limits.js';
import type { RawNode } from '../../raft/rawnode.js';
import type { StorageEngine } from '../../storage/storage-engine.js';
import type { NodeClock } from '../ports.js';
import type { GroupMessage } from '../raft-wire.js';

/** Chunks a leader sends ahead of the follower's acknowledgement, per transfer. */
export const TRANSFER_WINDOW = 4;
/** Transfers a node receives at once; a leader's further transfers wait for a free slot. */
export const MAX_INCOMING_TRANSFERS = 2;
/** Transfers a node sends at once. */
export const MAX_OUTGOING_TRANSFERS = 4;
/** A leader resends its unacknowledged chunks after this long without progress. */
export const TRANSFER_RESEND_MS = 1_000;
/** A transfer with no progress for this long is given up (sender) or discarded (receiver). */
export const TRANSFER_IDLE_MS = 30_000;

/** An MVCC export chunk's bound: snapshotChunkBytes plus one maximal entry (mvcc-store.ts exportSnapshot). */
export function maxSnapshotChunkBytes(limits: Pick<Limits, 'snapshotChunkBytes' | 'maxKeyBytes' | 'maxValueBytes' | 'messageOverheadBytes'> = defaultLimits): number {
  return limits.snapshotChunkBytes + limits.maxKeyBytes + limits.maxValueBytes + limits.messageOverheadBytes;
}

/**
 * A leader's exported snapshot: its PayloadDigest and counts, and its chunks, which stay in the
 * leader's spool (snapshot-spool.ts) and are read one at a time as the sender sends them.
 */
export interface ExportedSnapshot {
  readonly digest: Uint8Array;
  readonly chunkCount: number;
  /** Chunk `seq` read from the spool; undefined once the export was released (the transfer ends). */
  readChunk(seq: number): Promise<Uint8Array | undefined>;
}

/** What the transfers need of a group (PartitionReplica has it). */
export interface TransferGroup {
  readonly id: number;
  readonly raw: RawNode;
  installing?: boolean;
  awaitingFirstSnapshot?(): boolean;
  /** Leader: the chunks of the held export for snapshot (index, snapTerm), if it holds that one. */
  exportedSnapshot?(index: number, snapTerm: number): ExportedSnapshot | undefined;
  /** Follower: checks a snapshot's chunks one at a time, in order (MvccStore.snapshotCheck). */
  snapshotCheck?(): { add(chunk: Uint8Array): void; finish(): { appliedIndex: number } };
}

export interface TransferHost {
  readonly id: number;
  readonly engine: StorageEngine;
  readonly clock: NodeClock;
  readonly logger: Logger;
  /** Largest chunk a follower takes (an MVCC export chunk: snapshotChunkBytes plus one entry). */
  readonly maxChunkBytes: number;
  group(id: number): TransferGroup | undefined;
  send(peer: number, items: GroupMessage[]): void;
  /** Counts a refused peer item (peer-refusals.ts). */
  refuse(from: number, group: number, reason: string): void;
}
