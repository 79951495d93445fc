/**
 * Applies a split entry (split-entry.ts) on this node's replica of the source partition, the same
 * way on every replica: [mid, end) of the source's range becomes partition N = mid with the same
 * voters, its keys moved into N's store at exactly this applied index (MvccStore.applySplit), and
 * N's Raft group founded at (index, term) of the split entry with those voters, so every replica
 * founds the identical group and N elects a leader among them. N's founding log records, its
 * moved keys and the source's new range are written in ONE synced batch: after a crash either the
 * whole split is on disk (the source's applied index covers the entry, so it is not applied
 * again, and N opens from disk at the next start, replica-store.ts) or none of it is (the entry
 * is applied again). Only then is N added to the loop.
 *
 * Refusals are decided from replicated state only (the entry, the source's applied
 * configuration and range), so every replica refuses alike, and change nothing but the applied
 * index: SPLIT_REFUSED 'in-progress' while the source has learners or more voters than the
 * replication factor (a replica move is running: promoted, source not yet removed), 'bad-split-point'
 * for a point outside the range or below the initial partition count. The leader checks the same
 * before it proposes (split-admin.ts), but a promotion may commit between that check and the split
 * entry, and N founded with RF + 1 voters keeps the extra one for good (no move of N removes it).
 */
import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import { AtollError } from '../../errors.js';
import type { ApplyResult, MvccStore } from '../../mvcc/index.js';
import type { ConfState, Entry } from '../../raft/types.js';
import type { StorageEngine } from '../../storage/storage-engine.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import { PersistentLogStorage } from '../raftlog/raft-log-store.js';
import { decodeSplitEntry, splitIdAllowed, type SplitEntry } from '../replica/split-entry.js';

/** What the applier needs from the node (replica-store.ts and the driver provide it). */
export interface SplitHost {
  readonly engine: StorageEngine;
  /** The cluster's initial partition count (its descriptor): ids below it are the equal table's. */
  readonly initialPartitions: number;
  /** The cluster's replication factor (its descriptor: the same on every replica). */
  readonly replicationFactor: number;
  readonly logger: Logger;
  /** Opens partition `id`'s MVCC store (empty before the split). */
  openStore(id: number): Promise<MvccStore>;
  /** Opens partition `id`'s replica from what is on disk (after the split's batch). */
  openReplica(id: number): Promise<PartitionReplica | undefined>;
  /** Adds the new group to the node's loop. */
  addGroup(replica: PartitionReplica): void;
}

export class SplitApplier {
  constructor(private readonly host: SplitHost) {}

  /**
   * `conf` is the source's configuration as of the entry (PartitionReplica folds in the conf
   * changes of the entries before it, confAfter): Raft's own applies a Ready's conf changes only
   * after the whole batch, so reading it here would depend on how entries were batched, and
   * replicas could refuse or found N differently (simulator seed 1486: one replica refused
   * 'in-progress' where the others split).
   */
  async apply(source: PartitionReplica, entry: Entry, conf: ConfState = source.raw.status().confState): Promise<ApplyResult> {
    const mvcc = source.mvcc;
    let split: SplitEntry;
    try {
      split = decodeSplitEntry(entry.data);
    } catch (error) {
      // Never from a proposer of this code; refused like any other bad split.
      const refusal = new AtollError('SPLIT_REFUSED', `malformed split entry: ${(error as Error).message}`, { reason: 'bad-entry' });
      return this.refused(source, entry, { nowMs: mvcc.appliedTimeMs, mid: 0, newId: 0 }, refusal);
    }
    if (entry.index <= mvcc.appliedIndex) return { index: entry.index, revision: mvcc.revision, applied: false, replayed: true, writes: [] };
    // `conf` is the configuration as of this entry, the same on every replica (see above), never
    // the leader's view when it proposed.
    if (conf.learners.length > 0 || conf.voters.length > this.host.replicationFactor) {
      const shape = `voters ${conf.voters.join(', ')}${conf.learners.length > 0 ? `, learners ${conf.learners.join(', ')}` : ''}; replication factor ${this.host.replicationFactor}`;
      return this.refused(source, entry, split, new AtollError('SPLIT_REFUSED', `partition ${source.id} has a replica move in progress (${shape})`, { reason: 'in-progress' }));
    }
    if (!splitIdAllowed(split.mid, this.host.initialPartitions)) {
      return this.refused(source, entry, split, new AtollError('SPLIT_REFUSED', `split point ${split.mid} is below ${this.host.initialPartitions}`, { reason: 'bad-split-point' }));
    }
    const { engine, logger } = this.host;
    // N's founding Raft state: a snapshot point at the split entry's index and term, holding the
    // source's voters, and hard state {term, no vote, commit index}: identical on every replica.
    const log = await PersistentLogStorage.load(engine, split.newId, { snapshotData: () => assert.fail('a split target exports nothing before it opens') });
    // Invariant: ids are never reused (split-entry.ts), so N has no Raft state before its split.
    assert.ok(log.lastIndex() === 0 && log.snapshotMeta().index === 0, `partition ${split.newId}: Raft state exists before its split`);
    const founding = [
      ...log.stageSnapshot({ index: entry.index, term: entry.term, confState: { voters: [...conf.voters], learners: [] } }),
      ...log.stageHardState({ term: entry.term, vote: 0, commit: entry.index }),
    ];
    const target = await this.host.openStore(split.newId);
    const result = await mvcc.applySplit(target, { index: entry.index, nowMs: split.nowMs, mid: split.mid }, founding);
    if (result.refused !== undefined) return { index: entry.index, revision: mvcc.revision, applied: false, replayed: false, error: result.refused, writes: [] };
    const replica = await this.host.openReplica(split.newId);
    assert.ok(replica !== undefined, `partition ${split.newId}: the split wrote its founding state`);
    this.host.addGroup(replica);
    logger.info({ partition: source.id, newPartition: split.newId, mid: split.mid, index: entry.index, movedKeys: result.movedKeys, voters: conf.voters }, 'partition split');
    return { index: entry.index, revision: mvcc.revision, applied: true, replayed: false, writes: [] };
  }

  private async refused(source: PartitionReplica, entry: Entry, split: SplitEntry, refusal: AtollError): Promise<ApplyResult> {
    const mvcc = source.mvcc;
    if (entry.index <= mvcc.appliedIndex) return { index: entry.index, revision: mvcc.revision, applied: false, replayed: true, writes: [] };
    const result = await mvcc.applySplit(undefined, { index: entry.index, nowMs: Math.max(split.nowMs, 0), mid: split.mid, refusal });
    this.host.logger.info({ partition: source.id, mid: split.mid, reason: refusal.details?.reason }, 'partition split refused');
    return { index: entry.index, revision: mvcc.revision, applied: false, replayed: false, error: result.refused ?? refusal, writes: [] };
  }
}
