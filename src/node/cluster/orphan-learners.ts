/**
 * Learners no move will ever finish (issue 19). A replica move (replica-moves.ts) adds its target
 * as a learner, catches it up, promotes it and removes its source. If the leader coordinating it
 * dies, or the rebalancer drops it after its timeout, between "learner added" and "promoted", the
 * learner stays in the group's configuration for good: the planner assigns no move to a partition
 * with a learner (and cannot see other leaders' learners to resume), nextMoveStep refuses every
 * other move of the partition ('in-progress'), and splits refuse it too. So the partition's leader
 * removes a learner once it has led, in one term, for ORPHAN_LEARNER_MS with the learner present and
 * no move of the partition coordinated here. A move of other nodes that starts here meanwhile does
 * not wait for this: it removes such a learner as its first step (replica-moves.ts run).
 *
 * Why remove rather than finish the promotion: the move that added the learner knew which source
 * to remove after promoting it, and that knowledge died with it; promoting alone would leave RF + 1
 * voters for someone else to trim, and the learner may never have caught up (its node down,
 * leaving, removed), in which case a promotion would make it a voter that holds back commits.
 * Removing it returns the group to the shape every move and every plan starts from (RF voters, no
 * learner) and leaves the voters as they were, so a partition never drops below its replication
 * factor by it; a move still wanted is planned or repeated from the start (moves are resumable:
 * each step is chosen from the applied configuration).
 *
 * Why it races no running move: a move is coordinated only at the partition's leader, and every
 * round of it checks that this node still leads (a former leader's move stops at its next round
 * with NOT_LEADER, and the configuration change it may still propose cannot commit in its old
 * term). A move resumed after a leader change runs HERE (the rebalancer runs the moves assigned to
 * the partitions this node leads every round, a client's retry follows NOT_LEADER to this node),
 * and while it runs with this learner as its target (or source) the clock is reset. A move here of
 * other nodes does not reset it: it removes the learner itself as its first step. The bound is
 * well above the longest gap between two runs of an assigned move on its leader (a node that does
 * not hold the rebalancer's record reads it every 10 s); the removal and the check that no move runs
 * here happen in one loop task, so a move starting next sees the removal in its first round.
 */
import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import { RaftError } from '../../raft/errors.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import type { NodeClock } from '../ports.js';

/** How long a leader keeps a learner that no move coordinated here touches before removing it. */
export const ORPHAN_LEARNER_MS = 60_000;

export interface OrphanLearnersOptions {
  readonly clock: NodeClock;
  readonly logger: Logger;
  /** The move of `partition` coordinated on this node now, if any (ReplicaMoves). */
  readonly moveOf: (partition: number) => { readonly from: number; readonly to: number } | undefined;
  /** Overrides ORPHAN_LEARNER_MS (tests). */
  readonly patienceMs?: number;
  /** Negative control (NodeTestBugs.orphanLearnersKept): the learner is kept, the old behaviour. */
  readonly disabled?: boolean;
}

export class OrphanLearners {
  /**
   * Partitions led here with learners and no move coordinated here that uses one: in which term,
   * and since when (monotonic ms). Invariant: an entry is dropped as soon as one of these stops
   * holding, so its age is a continuous stretch of one leadership.
   */
  private readonly watched = new Map<number, { term: number; sinceMs: number }>();

  constructor(private readonly options: OrphanLearnersOptions) {}

  /**
   * A sweep's look at one group (a loop task: nothing applies meanwhile). Field reads only, unless
   * this node leads the group and it has learners (rare: a move, or an orphan).
   */
  observe(partition: number, replica: PartitionReplica): void {
    const raw = replica.raw;
    if (raw.role !== 'leader' || raw.learnerCount === 0 || this.moveUsesLearner(partition, replica)) {
      if (this.watched.size > 0) this.watched.delete(partition);
      return;
    }
    const nowMs = this.options.clock.monotonicMs();
    const seen = this.watched.get(partition);
    if (seen === undefined || seen.term !== raw.term) {
      this.watched.set(partition, { term: raw.term, sinceMs: nowMs });
      return;
    }
    if (nowMs - seen.sinceMs < (this.options.patienceMs ?? ORPHAN_LEARNER_MS) || this.options.disabled === true) return;
    this.remove(partition, replica, nowMs - seen.sinceMs);
  }

  /** Whether the move of `partition` coordinated here has one of the group's learners as its target or source. */
  private moveUsesLearner(partition: number, replica: PartitionReplica): boolean {
    const move = this.options.moveOf(partition);
    if (move === undefined) return false;
    const { learners } = replica.raw.status().confState;
    return learners.includes(move.to) || learners.includes(move.from);
  }

  /** Drops what it remembers of groups this node no longer hosts. */
  prune(hosted: ReadonlyMap<number, unknown>): void {
    for (const partition of this.watched.keys()) if (!hosted.has(partition)) this.watched.delete(partition);
  }

  private remove(partition: number, replica: PartitionReplica, orphanedMs: number): void {
    const { confState } = replica.raw.status();
    const learner = confState.learners[0];
    assert.ok(learner !== undefined, `partition ${partition}: a learner to remove`);
    // Invariant: only a learner goes, so the voters stay as they are (never below RF by this).
    assert.ok(!confState.voters.includes(learner), `partition ${partition}: node ${learner} is a voter and a learner`);
    try {
      const proposed = replica.raw.proposeConfChange({ type: 'removeNode', node: learner });
      this.options.logger.warn({ partition, learner, voters: confState.voters, orphanedMs, index: proposed.index }, 'removing a learner no replica move finished (its move stopped before promoting it)');
    } catch (error) {
      // Another configuration change still applies, or leadership is moving: the next sweep looks again.
      if (!(error instanceof RaftError)) throw error;
    }
  }
}
