/**
 * Merges a crash, a lost connection or a deadline cut off after the freeze (issue 32). A merge
 * freezes R first (merge-entry.ts) and folds it into L with a second entry (merge-admin.ts); a
 * freeze has no undo, and from it until the merge applies R's keys take no writes (R's and L's
 * replicas may still move: a voter of R lost for good is replaced that way, and the merge waits
 * until both sides have the same voters again; replica-moves.ts keptForMerge). The merge admin continues from the recorded freeze
 * whenever it runs again, but nothing ran it again unless an operator did: one cut-off
 * `atoll cluster merge` left a bucket range unwritable for good (the fault suite's merges found it).
 *
 * So the node finishes it. The leader of a frozen R, once this node has seen R frozen for
 * STRANDED_FREEZE_MS (and again every STRANDED_FREEZE_MS after each action):
 * - runs the merge itself when it also leads L (the admin continues from the freeze), unless a
 *   merge of L already runs on this node;
 * - otherwise hands R's leadership to L's leader, whose own sweep then finds R frozen and led there
 *   and runs the merge after its own patience. Leader balancing leaves frozen partitions alone
 *   (maintenance.ts), so the two never pull R's leadership back and forth.
 *
 * Why it races nothing: the merge is the admin's own code path (all its refusals apply, and a
 * second merge entry after the first is refused at apply, changing nothing); a merge of L already
 * running on this node (an operator's) is joined, not repeated (MergeAdmin.merge); and only R's
 * leader acts, a whole patience after it first saw the freeze, so an operator's merge is given
 * that long first.
 */
import type { Logger } from 'pino';
import type { PartitionReplica } from '../replica/partition-replica.js';
import type { NodeClock } from '../ports.js';

/** How long a frozen R's leader waits, in one term, before it finishes the merge itself. */
export const STRANDED_FREEZE_MS = 10_000;

export interface StrandedFreezesOptions {
  readonly id: number;
  readonly clock: NodeClock;
  readonly logger: Logger;
  /** Runs (continues) the merge of L at this node, which leads L and R (MergeAdmin.merge). */
  readonly merge: (left: number) => Promise<unknown>;
  /** Overrides STRANDED_FREEZE_MS (tests). */
  readonly patienceMs?: number;
}

export class StrandedFreezes {
  /**
   * Frozen partitions hosted here, and since when this node has seen them frozen (monotonic ms), or
   * since its last action for them. Invariant: an entry is dropped as soon as the partition is no
   * longer frozen or hosted here. Leadership does not reset it: under load a frozen group's leader
   * may change every few seconds, and a freeze's age is what says that its admin is gone.
   */
  private readonly watched = new Map<number, number>();
  /** Left partitions whose merge this sweep started and which have not answered yet. */
  private readonly merging = new Set<number>();

  constructor(private readonly options: StrandedFreezesOptions) {}

  /** One look at every hosted group (a loop task). Field reads only, unless a frozen partition is led here. */
  sweep(groups: ReadonlyMap<number, PartitionReplica>): void {
    for (const partition of this.watched.keys()) if (!groups.has(partition)) this.watched.delete(partition);
    for (const [partition, replica] of groups) {
      const frozen = replica.mvcc.frozen;
      if (frozen === undefined || replica.mvcc.mergedInto !== undefined) {
        if (this.watched.size > 0) this.watched.delete(partition);
        continue;
      }
      const nowMs = this.options.clock.monotonicMs();
      const sinceMs = this.watched.get(partition);
      if (sinceMs === undefined) {
        this.watched.set(partition, nowMs);
        continue;
      }
      if (replica.raw.role !== 'leader' || nowMs - sinceMs < (this.options.patienceMs ?? STRANDED_FREEZE_MS)) continue;
      // Acted on: the next action waits a whole patience again.
      this.watched.set(partition, nowMs);
      this.finish(replica, frozen.into, groups.get(frozen.into), nowMs - sinceMs);
    }
  }

  private finish(right: PartitionReplica, left: number, leftReplica: PartitionReplica | undefined, frozenMs: number): void {
    const { logger, id } = this.options;
    if (leftReplica?.raw.role === 'leader') {
      if (this.merging.has(left)) return;
      this.merging.add(left);
      logger.warn({ partition: left, rightPartition: right.id, frozenMs }, 'finishing a merge whose freeze was left behind');
      void this.options
        .merge(left)
        .then(
          () => logger.info({ partition: left, rightPartition: right.id }, 'finished a merge whose freeze was left behind'),
          (error: unknown) => logger.warn({ partition: left, rightPartition: right.id, err: error instanceof Error ? error.message : String(error) }, 'a left-behind merge is not finished yet; trying again later'),
        )
        .finally(() => this.merging.delete(left));
      return;
    }
    // L's leader as this node's replica of L knows it (the merge needs L and R on the same nodes).
    const target = leftReplica?.raw.lead ?? 0;
    if (target === 0 || target === id || !right.raw.isVoter(target)) return;
    try {
      right.raw.transferLeadership(target);
      logger.warn({ partition: right.id, into: left, target, frozenMs }, "handing a frozen partition's leadership to its merge target's leader, to finish the merge there");
    } catch {
      // Not possible right now (a transfer under way, a configuration change): the next sweep looks again.
    }
  }
}
