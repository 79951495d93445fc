/**
 * A small bounded ring of the leader changes this node's replicas saw (partition, from, to, term,
 * wall time), newest last, for the status page. Fed from the loop's soft-state reports (the
 * driver's leaderChanged metric), so it costs nothing per request. Local observation only: it is
 * never replicated and nothing decides anything from it.
 */
import type { LeaderChange } from '../../api/node-api.js';
import type { NodeMetrics } from '../metrics.js';
import type { NodeClock } from '../ports.js';

/** How many changes the ring keeps (the oldest go first). */
export const LEADER_CHANGES_KEPT = 64;

export class LeaderChangeLog {
  private readonly ring: LeaderChange[] = [];
  /** The last non-zero leader seen per partition (bounded by the partition count). */
  private readonly lastLeader = new Map<number, number>();

  constructor(
    private readonly clock: NodeClock,
    private readonly termOf: (partition: number) => number,
  ) {}

  /**
   * A replica reported `leader` for `partition` (0: it knows none). Only a new non-zero leader is
   * a change: an election's leaderless moment is not one, so "1 -> 2" reads as one entry.
   */
  observe(partition: number, leader: number): void {
    if (leader === 0) return;
    const from = this.lastLeader.get(partition) ?? 0;
    if (from === leader) return;
    this.lastLeader.set(partition, leader);
    this.ring.push({ partition, from, to: leader, term: this.termOf(partition), atMs: this.clock.wallMs() });
    // Invariant: at most LEADER_CHANGES_KEPT entries.
    if (this.ring.length > LEADER_CHANGES_KEPT) this.ring.splice(0, this.ring.length - LEADER_CHANGES_KEPT);
  }

  /** Newest last, at most LEADER_CHANGES_KEPT. */
  recent(): LeaderChange[] {
    return [...this.ring];
  }

  /** `metrics` with every leaderChanged also recorded here (what the driver is given). */
  tapping(metrics: NodeMetrics): NodeMetrics {
    return {
      executed: metrics.executed.bind(metrics),
      forwarded: metrics.forwarded.bind(metrics),
      loopIteration: metrics.loopIteration.bind(metrics),
      storageWrite: metrics.storageWrite.bind(metrics),
      raftMessages: metrics.raftMessages.bind(metrics),
      snapshot: metrics.snapshot.bind(metrics),
      electionStarted: metrics.electionStarted.bind(metrics),
      leaderChanged: (partition, leader) => {
        this.observe(partition, leader);
        metrics.leaderChanged(partition, leader);
      },
    };
  }
}
