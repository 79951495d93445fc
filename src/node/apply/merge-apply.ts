/**
 * Applies the two entries of a partition merge (merge-entry.ts; docs/architecture.md "Partition
 * merges") on this node's replicas, the same way on every replica:
 *
 * - the FREEZE entry, in the right partition R's log (MvccStore.applyFreeze): from it on R applies
 *   nothing, refuses everything with PARTITION_MOVED (details.mergedInto = L) and serves no read.
 *   Refused (MERGE_REFUSED, only the applied index moves) from replicated state: 'below-initial'
 *   for a partition of the equal table (ids are never reused, so only a split partition can go),
 *   'in-progress' while R has learners (a replica move), and MvccStore's own refusals.
 * - the MERGE entry, in L's log (MvccStore.applyMerge): R's state at its freeze index F folds into
 *   L. Refused from replicated state when L's voters at the entry are not the entry's (R's at F)
 *   or L has learners ('replicas-differ' / 'in-progress'). Otherwise this node's replica of R is
 *   brought through F first: its apply of the Ready in flight and any snapshot import beside the
 *   loop are awaited (the loop applies groups side by side; waiting for a LATER iteration here
 *   would deadlock, since the loop awaits this apply), then its own stored entries through F are
 *   applied from its log (the admin proposed the merge only once every voter of R held them, and
 *   L's voters are R's, so every replica of L has them). The merge batch also deletes R's Raft
 *   records and writes R's start as a merged-away start (merge-tombstones.ts), so a restart
 *   neither opens R nor routes to it; then R leaves the loop and the routing table.
 *
 * Invariant: a voter of L that applies a merge entry hosts R (the admin waited for every voter of
 * R to hold R's log through F, and the entry's voters are L's); a missing R is a broken invariant
 * and stops the node rather than letting this replica diverge from the others.
 */
import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import { AtollError } from '../../errors.js';
import type { ApplyResult } from '../../mvcc/index.js';
import { EntryType, type ConfState, type Entry } from '../../raft/types.js';
import type { WriteOperation } from '../../storage/storage-engine.js';
import { decodeFreezeEntry, decodeMergeEntry, isFreezeEntry, type MergeEntry } from '../replica/merge-entry.js';
import type { PartitionReplica } from '../replica/partition-replica.js';

/** What the applier needs from the node (replica-store.ts and the node wire it). */
export interface MergeHost {
  /** The cluster's initial partition count: ids below it are the equal table's and never merge away. */
  readonly initialPartitions: number;
  readonly logger: Logger;
  /** This node's replica of `id`, if it hosts one. */
  replica(id: number): PartitionReplica | undefined;
  /** Every Raft record of `id` (log, hard state, snapshot record, staging, spool): for the merge batch. */
  raftDeleteOps(id: number): Promise<WriteOperation[]>;
  /** The records that keep `start` a merged-away start across restarts (merge-tombstones.ts). */
  tombstoneOps(start: number, into: number): WriteOperation[];
  /** After the merge batch: R leaves the loop, the routing table and the heal bookkeeping. */
  mergedAway(right: PartitionReplica, into: number): void;
  /** Queues a loop task (the node's loop). */
  enqueue?(task: () => void): void;
  /** The replicas this node hosts now (the loop's groups). */
  hosted?(): Iterable<PartitionReplica>;
  /** Deletes a leftover R's records and writes its merged-start record, in one synced batch. */
  deleteLeftover?(right: PartitionReplica, into: number): Promise<void>;
}

/**
 * The replicas among `hosted` that a merge into `left` already absorbed: frozen into `left` (or
 * holding the freeze into `left` in their log, storesFreezeInto), and starting inside `left`'s range. A replica of L that installed a snapshot taken after the merge
 * never applied the merge entry, so its R stayed (frozen, and never led again: the other replicas
 * deleted theirs). L's range can only have grown past R's start by that merge (a freeze has no
 * undo, and L's range grows only by merging the partition frozen into it).
 */
export function absorbedBy(left: PartitionReplica, hosted: Iterable<PartitionReplica>): PartitionReplica[] {
  const range = left.mvcc.hashRange;
  // A replica of L that applied nothing (opened empty, or reset after a crash cut its install
  // short: discardInterruptedInstall) reports its founding range, which may cover R's start without
  // any merge: it proves nothing, and deleting R then stopped the node when L later applied the
  // merge entry and found no R (simulator seed 20852).
  if (range === undefined || left.mvcc.mergedInto !== undefined || left.mvcc.appliedIndex === 0) return [];
  const absorbed: PartitionReplica[] = [];
  for (const group of hosted) {
    if (group === left || group.mvcc.mergedInto !== undefined) continue;
    const start = group.mvcc.hashRange?.start ?? group.id;
    if (!(start > range.start && start < range.end)) continue;
    if (group.mvcc.frozen?.into === left.id || storesFreezeInto(group, left.id)) absorbed.push(group);
  }
  return absorbed;
}

/**
 * Whether `group`'s own log holds, past what it applied, a freeze entry into `into`. A replica of R
 * that stored the freeze but lost its apply and the commit index with it (the commit index is
 * stored lazily, so a crash may take both; simulator seed 1499) is not frozen after its restart,
 * and can never apply the freeze again: the others deleted their replicas of R when they merged,
 * so no leader will tell it the entry committed. The freeze in its log names R as the partition
 * frozen into L; once L's range covers R's start, L merged it, whether or not this replica saw its
 * own freeze commit.
 */
function storesFreezeInto(group: PartitionReplica, into: number): boolean {
  const storage = group.storage;
  const last = storage.lastIndex();
  let next = Math.max(group.mvcc.appliedIndex, storage.firstIndex() - 1) + 1;
  while (next <= last) {
    const entries = storage.entries(next, last + 1, 1024 * 1024);
    if (entries.length === 0) return false;
    for (const entry of entries) {
      if (entry.type !== EntryType.Normal || !isFreezeEntry(entry.data)) continue;
      try {
        if (decodeFreezeEntry(entry.data).into === into) return true;
      } catch {
        // A malformed freeze froze nothing (applyFreeze refuses it).
      }
    }
    next = (entries[entries.length - 1] as Entry).index + 1;
  }
  return false;
}

function sameMembers(a: readonly number[], b: readonly number[]): boolean {
  if (a.length !== b.length) return false;
  const sorted = [...a].sort((x, y) => x - y);
  return sorted.every((voter, i) => voter === b[i]);
}

export class MergeApplier {
  constructor(private readonly host: MergeHost) {}

  /** The freeze entry, applied in R's log (R = `replica`). */
  async applyFreeze(replica: PartitionReplica, entry: Entry, conf: ConfState): Promise<ApplyResult> {
    const mvcc = replica.mvcc;
    const skipped: ApplyResult = { index: entry.index, revision: mvcc.revision, applied: false, replayed: true, writes: [] };
    if (entry.index <= mvcc.appliedIndex) return skipped;
    let into = 0;
    let nowMs = mvcc.appliedTimeMs;
    let refusal: AtollError | undefined;
    try {
      ({ into, nowMs } = decodeFreezeEntry(entry.data));
    } catch (error) {
      refusal = new AtollError('MERGE_REFUSED', `malformed freeze entry: ${(error as Error).message}`, { reason: 'bad-entry' });
    }
    if (refusal === undefined && replica.id < this.host.initialPartitions) {
      refusal = new AtollError('MERGE_REFUSED', `partition ${replica.id} is one of the initial partitions: only a split partition can be merged away`, { reason: 'below-initial' });
    } else if (refusal === undefined && conf.learners.length > 0) {
      refusal = new AtollError('MERGE_REFUSED', `partition ${replica.id} has a replica move in progress`, { reason: 'in-progress' });
    }
    const result = await mvcc.applyFreeze({ index: entry.index, nowMs, into, ...(refusal !== undefined && { refusal }) });
    if (result.refused !== undefined) {
      this.host.logger.info({ partition: replica.id, into, reason: result.refused.details?.reason }, 'merge freeze refused');
      return { index: entry.index, revision: mvcc.revision, applied: false, replayed: false, error: result.refused, writes: [] };
    }
    this.host.logger.info({ partition: replica.id, into, freezeIndex: result.freezeIndex }, 'partition frozen for a merge');
    return { index: entry.index, revision: mvcc.revision, applied: true, replayed: false, writes: [] };
  }

  /** The merge entry, applied in L's log (L = `left`). */
  async applyMerge(left: PartitionReplica, entry: Entry, conf: ConfState): Promise<ApplyResult> {
    const mvcc = left.mvcc;
    if (entry.index <= mvcc.appliedIndex) return { index: entry.index, revision: mvcc.revision, applied: false, replayed: true, writes: [] };
    let merge: MergeEntry;
    try {
      merge = decodeMergeEntry(entry.data);
    } catch (error) {
      return this.refused(left, entry, { nowMs: mvcc.appliedTimeMs, freezeIndex: 1 }, new AtollError('MERGE_REFUSED', `malformed merge entry: ${(error as Error).message}`, { reason: 'bad-entry' }));
    }
    if (conf.learners.length > 0) {
      return this.refused(left, entry, merge, new AtollError('MERGE_REFUSED', `partition ${left.id} has a replica move in progress`, { reason: 'in-progress' }));
    }
    if (!sameMembers(conf.voters, merge.voters)) {
      return this.refused(left, entry, merge, new AtollError('MERGE_REFUSED', `partition ${left.id}'s voters [${conf.voters.join(',')}] are not partition ${merge.right}'s at its freeze [${merge.voters.join(',')}]`, { reason: 'replicas-differ' }));
    }
    if (merge.right < this.host.initialPartitions || merge.right === left.id) {
      return this.refused(left, entry, merge, new AtollError('MERGE_REFUSED', `partition ${merge.right} cannot be merged away`, { reason: 'below-initial' }));
    }
    const right = this.host.replica(merge.right);
    // Invariant (see the header): every voter of L hosts R with its log through the freeze.
    assert.ok(right !== undefined, `partition ${left.id}: merge entry ${entry.index} names partition ${merge.right}, which this node does not host`);
    await right.settled();
    if (right.mvcc.mergedInto === undefined && right.mvcc.appliedIndex < merge.freezeIndex) await right.applyStoredThrough(merge.freezeIndex);
    const start = right.mvcc.hashRange?.start ?? merge.right;
    const alsoWrite = [...(await this.host.raftDeleteOps(right.id)), ...this.host.tombstoneOps(start, left.id)];
    const result = await mvcc.applyMerge(right.mvcc, { index: entry.index, nowMs: merge.nowMs, freezeIndex: merge.freezeIndex }, alsoWrite);
    if (result.refused !== undefined) {
      this.host.logger.info({ partition: left.id, right: merge.right, reason: result.refused.details?.reason }, 'partition merge refused');
      return { index: entry.index, revision: mvcc.revision, applied: false, replayed: false, error: result.refused, writes: [] };
    }
    this.host.mergedAway(right, left.id);
    this.host.logger.info({ partition: left.id, right: merge.right, index: entry.index, freezeIndex: merge.freezeIndex, movedKeys: result.movedKeys, range: mvcc.hashRange }, 'partitions merged');
    return { index: entry.index, revision: mvcc.revision, applied: true, replayed: false, writes: [] };
  }

  /**
   * `left` installed a snapshot (beside the loop): the replicas it absorbed (absorbedBy) leave the
   * loop at the next iteration and their records are deleted.
   */
  installed(left: PartitionReplica): void {
    const { enqueue, deleteLeftover } = this.host;
    if (enqueue === undefined || deleteLeftover === undefined) return;
    enqueue(() => {
      const hosted = this.host.hosted?.() ?? [];
      for (const right of absorbedBy(left, hosted)) {
        right.retire();
        this.host.mergedAway(right, left.id);
        this.host.logger.warn({ partition: left.id, right: right.id }, 'a snapshot install covers a partition merged into this one: deleting the leftover replica');
        void deleteLeftover(right, left.id).catch((error: unknown) => this.host.logger.error({ err: error, partition: right.id }, 'deleting a merged-away replica failed; the next start retries'));
      }
    });
  }

  private async refused(left: PartitionReplica, entry: Entry, merge: Pick<MergeEntry, 'nowMs' | 'freezeIndex'>, refusal: AtollError): Promise<ApplyResult> {
    const mvcc = left.mvcc;
    const result = await mvcc.applyMerge(undefined, { index: entry.index, nowMs: merge.nowMs, freezeIndex: merge.freezeIndex, refusal });
    this.host.logger.info({ partition: left.id, reason: refusal.details?.reason }, 'partition merge refused');
    return { index: entry.index, revision: mvcc.revision, applied: false, replayed: false, error: result.refused ?? refusal, writes: [] };
  }
}
