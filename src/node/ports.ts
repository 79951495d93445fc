import { performance } from 'node:perf_hooks';
import type { VoteFloor } from '../raft/types.js';
/**
 * The node's ports to the outside world: clock, timers, randomness, storage and the peer transport
 * come in through these small interfaces, so the Raft driver and the rooms around it never reach
 * for a global. Production passes the real ones (systemClock, systemTimers, LevelDB, the gRPC
 * transport in src/peer); a simulator can pass its own.
 */
import type { Rng } from '../raft/rng.js';
import type { StorageEngine } from '../storage/storage-engine.js';
import type { ClusterInfoResponse } from '../api/node-api.js';
import type { NodeMetrics } from './metrics.js';
import type { KvOperation, KvResult } from '../api/operations.js';
import type { GroupMessage } from './raft-wire.js';
import type { CallSignal } from '../api/call-signal.js';

export interface NodeClock {
  /** Monotonic milliseconds (performance.now()): ticks, intervals, idle times. */
  monotonicMs(): number;
  /** Wall-clock Unix epoch milliseconds (Date.now()): deadlines, TTLs, entry timestamps. */
  wallMs(): number;
}

/**
 * Failed authentications by connection and source address (service/failed-auths.ts): what the
 * node's authentication asks and tells; the client port's listener (src/server/client-listener.ts)
 * shares the same object to refuse blocked sources at accept and close the connections it names.
 */
export interface FailedAuthGate {
  /** Why a call on `connection` (remote address:port) is refused without a token lookup, or undefined. */
  refusal(connection: string, nowMs: number): { readonly retryAfterMs: number; readonly by: 'connection' | 'source' } | undefined;
  /** Counts a failed authentication on `connection`. */
  record(connection: string, nowMs: number): void;
}

export interface TimerHandle {
  cancel(): void;
}

export interface NodeTimers {
  /** Runs `run` every `intervalMs` until cancelled; never keeps the process alive by itself. */
  every(intervalMs: number, run: () => void): TimerHandle;
  /** Runs `run` once after `delayMs`. */
  after(delayMs: number, run: () => void): TimerHandle;
  /** Runs `run` soon, after the current turn (the loop's next iteration). */
  soon(run: () => void): void;
}

export interface TransportEvents {
  /** Raft messages arrived from a peer (already decoded). */
  onMessages(from: number, messages: GroupMessage[]): void;
  /** The stream to a peer broke: its groups should stop waiting on it. */
  onPeerUnreachable(peer: number): void;
}

/** Node-to-node traffic: Raft frames, forwarded client requests, and peers' cluster views. */
export interface NodeTransport {
  /** Sends messages for many groups to `peer`. Never throws: Raft retries. */
  send(peer: number, messages: GroupMessage[]): void;
  isReachable(peer: number): boolean;
  /** Sends a client request to another node, with the caller's deadline. */
  forward(peer: number, operation: KvOperation, hops: number, deadlineMs: number, signal?: CallSignal, tenant?: string): Promise<KvResult>;
  /** A peer's view of the cluster (leaders of partitions this node does not host); `partitions`: only those listed. */
  clusterInfo(peer: number, deadlineMs: number, partitions?: readonly number[]): Promise<ClusterInfoResponse>;
  /** Asks a peer to open an empty replica of `partition` (a replica move's first step; replica-moves.ts). */
  prepareReplica?(peer: number, partition: number, voteFloor: VoteFloor, deadlineMs: number): Promise<void>;
  /** Dials a new member at its peer address (membership.ts); a peer with a link keeps it. */
  addPeer?(peer: number, address: string): void;
  /** Closes the link to a removed member and never dials it again. */
  dropPeer?(peer: number): void;
  close(): void;
}

/**
 * Builds the node's transport once the node knows where to deliver what arrives. `clusterId`
 * (cluster-descriptor.ts) goes with the secret on every call to a peer.
 */
export type TransportFactory = (events: TransportEvents, peerSecret: string, clusterId?: string) => NodeTransport;

/** Everything outside the node it runs against. Only the transport has no default. */
export interface NodeEnvironment {
  readonly transport: TransportFactory;
  readonly clock?: NodeClock;
  readonly timers?: NodeTimers;
  /** The seeded generator the Raft groups fork theirs from (default: seeded from the node id and time). */
  readonly random?: Rng;
  /** The storage engine (default: LevelDB at config.dataDir behind the write-behind layer). */
  readonly engine?: StorageEngine;
  /**
   * Told once when the node stops on a fatal error (a failed synced write, a broken invariant);
   * the node closes itself either way. Default: set process.exitCode to 1 (a simulator running
   * many nodes in one process records the failure instead).
   */
  readonly onFatal?: (error: Error) => void;
  /** Called once when the node learns it was removed from the cluster (membership.ts); the server exits with code 4. */
  readonly onRemoved?: () => void;
  /** Where the node reports its events (src/node/metrics.ts; default: nowhere). */
  readonly metrics?: NodeMetrics;
}

export const systemClock: NodeClock = Object.freeze({
  monotonicMs: () => performance.now(),
  wallMs: () => Date.now(),
});

export const systemTimers: NodeTimers = Object.freeze({
  every(intervalMs: number, run: () => void): TimerHandle {
    const timer = setInterval(run, intervalMs);
    timer.unref();
    return { cancel: () => clearInterval(timer) };
  },
  after(delayMs: number, run: () => void): TimerHandle {
    const timer = setTimeout(run, delayMs);
    return { cancel: () => clearTimeout(timer) };
  },
  soon(run: () => void): void {
    setImmediate(run);
  },
});
