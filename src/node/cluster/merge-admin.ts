/**
 * Starts a partition merge on the left partition's leader (Cluster.MergePartition, `atoll cluster
 * merge L`; docs/architecture.md "Partition merges"): joins L with R, the partition whose range
 * starts at L's range end, into L's Raft group. The steps:
 *
 * 1. refusals, deciding nothing in any log: NOT_LEADER (with the leader) unless this node leads L;
 *    MERGE_REFUSED with `reason` 'no-right-neighbour' (L ends the hash space), 'below-initial' (R
 *    is one of the initial partitions: only a split partition can be merged away, so ids are never
 *    reused), 'replicas-differ' (R's voters are not L's, or this node hosts no R), 'in-progress'
 *    (learners or more voters than the replication factor on either side, a move coordinated here,
 *    L frozen, R frozen into another partition), 'leaders-differ' (this node does not lead R:
 *    details.rightLeader names R's leader; transfer R's leadership here and run the merge again,
 *    as the CLI does);
 * 2. the freeze entry proposed to R (merge-entry.ts), unless R is already frozen into L, when the
 *    recorded freeze index F is used (a merge that a crash or a deadline cut off continues);
 * 3. a wait until R's leader (this node) sees every voter's match index at or past F: every
 *    replica of L then holds R's log through F (merge-apply.ts brings a replica whose R applied
 *    less through F from that log);
 * 4. the merge entry proposed to L, and its apply awaited. The merge applies on every replica of L
 *    at the same index; its refusals (MERGE_REFUSED from replicated state) come back as errors.
 *
 * A deadline cuts any step off; running the merge again continues from R's freeze. A freeze has
 * no undo: R's keys are unavailable from F until the merge applies.
 */
import type { MergePartitionResult } from '../../api/node-api.js';
import { AtollError } from '../../errors.js';
import { hashSpaceSize } from '../../keys/bucket-hash.js';
import { proposeAndWait, type PartitionAdminHost } from './admin-propose.js';
import { encodeFreezeEntry, encodeMergeEntry } from '../replica/merge-entry.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import { partitionStartingAt } from './range-routing.js';

/** How often the wait for R's voters polls the leader's progress. */
const MATCH_POLL_MS = 20;

/** The node's merge call as the Cluster service sees it (AtollNode.mergePartition; optional in a fake). */
export interface MergeApi {
  mergePartition?(request: { readonly partition: number }, context: import('../../api/node-api.js').CallContext): Promise<MergePartitionResult>;
}

export interface MergeAdminOptions extends PartitionAdminHost {
  readonly replicationFactor: number;
}

function refused(reason: string, message: string, details: Record<string, unknown> = {}): AtollError {
  return new AtollError('MERGE_REFUSED', message, { reason, ...details });
}

function sameSet(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((voter) => b.includes(voter));
}

export class MergeAdmin {
  /** The merge of each left partition running on this node: a second call joins it (stranded-freezes.ts). */
  private readonly running = new Map<number, Promise<MergePartitionResult>>();

  constructor(private readonly options: MergeAdminOptions) {}

  merge(partition: number, deadlineMs: number): Promise<MergePartitionResult> {
    const running = this.running.get(partition);
    if (running !== undefined) return running;
    const started = this.mergeOnce(partition, deadlineMs).finally(() => this.running.delete(partition));
    this.running.set(partition, started);
    return started;
  }

  private async mergeOnce(partition: number, deadlineMs: number): Promise<MergePartitionResult> {
    const { driver, initialPartitions } = this.options;
    if (!Number.isSafeInteger(partition) || partition < 0 || !this.options.isKnown(partition)) throw new AtollError('INVALID_ARGUMENT', `no partition ${String(partition)}`);
    const left = driver.groups.get(partition);
    if (left === undefined) throw this.options.notLeader(partition);
    if (left.raw.status().role !== 'leader') throw left.notLeaderError();
    const range = left.mvcc.hashRange;
    if (range === undefined) throw new AtollError('INVALID_ARGUMENT', `partition ${partition} has no hash range`);
    if (left.mvcc.frozen !== undefined) throw refused('in-progress', `partition ${partition} is itself frozen for a merge into partition ${left.mvcc.frozen.into}`, { partition });
    if (range.end >= hashSpaceSize) throw refused('no-right-neighbour', `partition ${partition} ends the hash space: it has no right neighbour`, { partition });
    // Invariant: rightId is the partition whose range starts at L's end, whatever this node's
    // routing table knows. So it is named by that start through the id rule alone, never by the
    // table: a node that never hosted R need not know R's start, and one that met R's freeze (a
    // PARTITION_MOVED naming mergedInto, a peer's mergedStarts) forgot it before the merge is done;
    // either table owns R's start to L itself. A leader of L that hosts no R (a move gave it L's
    // replica and not R's: simulator seed 4956) asked the table, refused with 'below-initial'
    // naming L as its own right neighbour, and so never told the operator to move R's replica here:
    // the merge waited for good. Now it refuses with 'replicas-differ' naming R.
    const rightId = partitionStartingAt(range.end, initialPartitions);
    if (rightId < initialPartitions) {
      throw refused('below-initial', `partition ${rightId}, right of partition ${partition}, is one of the ${initialPartitions} initial partitions: only a split partition can be merged away`, { partition, rightPartition: rightId });
    }
    const right = driver.groups.get(rightId);
    if (right === undefined) throw refused('replicas-differ', `partition ${rightId} has no replica on this node, which leads partition ${partition}: move the replicas so that both have the same`, { partition, rightPartition: rightId });
    const rightRange = right.mvcc.hashRange;
    if (rightRange === undefined || rightRange.start !== range.end) {
      throw refused('no-right-neighbour', `this node's replica of partition ${rightId} does not start at ${range.end}; retry once it has caught up`, { partition, rightPartition: rightId });
    }
    const frozen = right.mvcc.frozen;
    if (frozen !== undefined && frozen.into !== partition) throw refused('in-progress', `partition ${rightId} is frozen for a merge into partition ${frozen.into}`, { partition, rightPartition: rightId });
    // A move of either side first, whoever leads R: a move that takes R's replica off this node
    // must move R's leadership away from here, and an operator (or `atoll cluster merge`) that
    // answered leaders-differ by moving it back undid the move's step at every retry (whole-node
    // simulator seed 71035: the move and the merge retries passed R's leadership to and fro for 37 s).
    this.checkNoMove(left, right);
    const rightStatus = right.raw.status();
    if (rightStatus.role !== 'leader') {
      throw refused('leaders-differ', `this node leads partition ${partition} but not partition ${rightId}: transfer its leadership here and merge again`, {
        partition,
        rightPartition: rightId,
        leftLeader: left.nodeId,
        ...(rightStatus.lead !== 0 && { rightLeader: rightStatus.lead }),
      });
    }
    this.checkReplicas(left, right);
    let freezeIndex = frozen?.index;
    if (freezeIndex === undefined) {
      const result = await proposeAndWait(this.options, right, encodeFreezeEntry({ nowMs: this.options.clock.wallMs(), into: partition }), deadlineMs, 'the merge freeze');
      if (result.error !== undefined) throw result.error;
      freezeIndex = right.mvcc.frozen?.index;
      if (freezeIndex === undefined || right.mvcc.frozen?.into !== partition) throw new AtollError('UNAVAILABLE', `partition ${rightId}: the freeze applied but the partition is not frozen into ${partition}; run the merge again`);
    }
    const voters = await this.awaitVotersAt(right, freezeIndex, deadlineMs);
    const payload = encodeMergeEntry({ nowMs: this.options.clock.wallMs(), right: rightId, freezeIndex, rightEnd: rightRange.end, voters });
    const result = await proposeAndWait(this.options, left, payload, deadlineMs, 'the merge');
    if (result.error !== undefined) throw result.error;
    return { partition, mergedPartition: rightId, start: range.start, end: rightRange.end };
  }

  /** Refuses while either side has learners, extra voters (a move's middle, as this node's replicas see it) or a move run here. */
  private checkNoMove(left: PartitionReplica, right: PartitionReplica): void {
    const { replicationFactor } = this.options;
    for (const replica of [left, right]) {
      const { voters, learners } = replica.raw.status().confState;
      if (learners.length > 0 || voters.length > replicationFactor || this.options.moveInProgress(replica.id)) {
        throw refused('in-progress', `partition ${replica.id} has a replica move in progress; merge after the move`, { partition: left.id, rightPartition: right.id });
      }
    }
  }

  /** Refuses unless both sides have the same voters, no learners, no extra voters and no move here. */
  private checkReplicas(left: PartitionReplica, right: PartitionReplica): void {
    this.checkNoMove(left, right);
    const details = { partition: left.id, rightPartition: right.id };
    const leftVoters = left.raw.status().confState.voters;
    const rightVoters = right.raw.status().confState.voters;
    if (!sameSet(leftVoters, rightVoters)) {
      throw refused('replicas-differ', `partitions ${left.id} [${[...leftVoters].sort((a, b) => a - b).join(',')}] and ${right.id} [${[...rightVoters].sort((a, b) => a - b).join(',')}] are on different nodes: move the replicas so that both have the same`, details);
    }
  }

  /**
   * Waits until R's leader (this node) sees every voter's match index at or past the freeze,
   * then returns R's voters, ascending. NOT_LEADER when R's leadership moves meanwhile (run the
   * merge again: R stays frozen and the next run continues), DEADLINE_EXCEEDED at the deadline.
   */
  private async awaitVotersAt(right: PartitionReplica, freezeIndex: number, deadlineMs: number): Promise<number[]> {
    const { clock, timers } = this.options;
    for (;;) {
      const status = right.raw.status();
      if (status.role !== 'leader') throw right.notLeaderError();
      const voters = [...status.confState.voters].sort((a, b) => a - b);
      const behind = voters.filter((voter) => (status.progress.get(voter)?.match ?? 0) < freezeIndex);
      if (behind.length === 0) return voters;
      if (clock.wallMs() + MATCH_POLL_MS >= deadlineMs) {
        throw new AtollError('DEADLINE_EXCEEDED', `partition ${right.id} is frozen at index ${freezeIndex}, but nodes ${behind.join(',')} have not stored it yet; run the merge again`, { partition: right.id });
      }
      await new Promise<void>((resolve) => timers.after(MATCH_POLL_MS, resolve));
    }
  }
}
