/**
 * The node's metrics port: the rooms report events through this small interface, and the layer
 * above (src/server/node-metrics.ts) implements it with prom-client, so src/node never imports a
 * metrics library and a simulator or test can pass `noMetrics`. Every method is called on a hot
 * path (a request, a loop iteration, a Raft message) and must cost nanoseconds: an implementation
 * only adds to numbers it holds and never does I/O. Gauges (roles, indexes, sizes) are not pushed
 * here: the implementation reads them from AtollNode.metricsView() when scraped.
 *
 * Label values passed here come from small fixed sets (operation kinds, AtollError codes, Raft
 * message types), never from keys or tenants, so the series count stays bounded.
 */

export interface NodeMetrics {
  /** A request this node ran on its own replica (as the leader, or a stale or transaction read). */
  executed(kind: string, code: string, seconds: number): void;
  /** A request this node forwarded to the leader on another node, and how it ended. */
  forwarded(kind: string, code: string): void;
  /** One loop iteration: its duration and the tasks it ran. */
  loopIteration(seconds: number, tasks: number): void;
  /** The loop's storage write: duration, operations and bytes, and whether it was synced. */
  storageWrite(seconds: number, operations: number, bytes: number, synced: boolean): void;
  /** Raft messages of one type sent to or received from peers. */
  raftMessages(direction: 'sent' | 'received', type: string, count: number): void;
  /** A snapshot exported for a follower, or installed from the leader, and how long it took. */
  snapshot(kind: 'exported' | 'installed', seconds: number): void;
  /** A hosted partition's replica became a candidate (an election it started). */
  electionStarted(partition: number): void;
  /** A hosted partition's replica saw its leader change (to a node, or to none: 0). */
  leaderChanged(partition: number, leader: number): void;
}

const nothing = (): void => undefined;

/** Metrics that go nowhere (tests, the simulator, a node opened without a metrics port). */
export const noMetrics: NodeMetrics = Object.freeze({
  executed: nothing,
  forwarded: nothing,
  loopIteration: nothing,
  storageWrite: nothing,
  raftMessages: nothing,
  snapshot: nothing,
  electionStarted: nothing,
  leaderChanged: nothing,
});

/** One hosted partition as the scrape sees it (AtollNode.metricsView). */
export interface PartitionMetricsView {
  readonly partition: number;
  readonly role: string;
  readonly term: number;
  /** The leader this replica knows, 0 when none. */
  readonly leader: number;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  /** Entries held in the Raft log (last index minus the snapshot point). */
  readonly logEntries: number;
  readonly proposalsPending: number;
  /** The decayed request rate this node served for the partition. */
  readonly requestsPerSecond: number;
  readonly keys: number;
  /** Live value bytes plus retained history bytes. */
  readonly bytes: number;
  readonly dedupRecords: number;
}

/** The node's watches as the scrape sees them (bytes held are the memory consumer 'watch'). */
export interface WatchesMetricsView {
  /** Watchers running. */
  readonly open: number;
  /** HTTP/2 streams (and in-process sinks) with a watch counted. */
  readonly streams: number;
  /** Streams cut off since start: their queued bytes were not written for watchStallMs, or their watcher overflowed. */
  readonly cutOffs: number;
  /** Watches refused since start because a stream, connection, tenant or the node held its bound of bytes. */
  readonly memoryRefusals: number;
}

/** What a scrape reads from a node: no I/O, O(hosted partitions). */
export interface NodeMetricsView {
  readonly nodeId: number;
  readonly tasksQueued: number;
  readonly partitions: readonly PartitionMetricsView[];
  /** What the node's memory goes to, by consumer (memory-view.ts; absent where not wired). */
  readonly memory?: ReadonlyArray<{ readonly consumer: string; readonly bytes: number; readonly limitBytes?: number }>;
  /** Watches served here and their memory accounting (watch-service.ts; absent where not wired). */
  readonly watches?: WatchesMetricsView;
  /** Peers this node hears from, by id (itself included). */
  readonly reachable: ReadonlyArray<{ readonly node: number; readonly reachable: boolean }>;
}
