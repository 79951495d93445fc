/**
 * The split entry's refusals at apply time (split-apply.ts), on a real MVCC store: the leader
 * refuses a split before proposing while its partition has more voters than the replication factor
 * (split-admin.ts), but a promotion (a move's addVoter) can commit between that check and the split
 * entry. Every replica then decides from the configuration as of the entry (the one PartitionReplica
 * folds in, conf-after.ts), not from what the leader saw: with RF + 1 voters the entry is refused
 * ('in-progress') and changes nothing but the applied index, and the new partition is not founded
 * (before, it was founded with the extra voter, which no move of it ever removes). A configuration
 * as of the entry with RF voters splits, whatever the replica's current view says.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/keys/bucket.js';
import { bucketHash } from '../../src/keys/bucket-hash.js';
import { chooseSplitPoint } from '../../src/keys/partition-table.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { confAfter } from '../../src/node/replica/conf-after.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { PersistentLogStorage } from '../../src/node/raftlog/raft-log-store.js';
import { SplitApplier } from '../../src/node/apply/split-apply.js';
import { encodeSplitEntry, splitPartitionId } from '../../src/node/replica/split-entry.js';
import { EntryType, type ConfState, type Entry } from '../../src/raft/types.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import type { StorageEngine } from '../../src/storage/storage-engine.js';
import { keysOfEqualPartition, startMs, text } from '../mvcc/harness.js';

const RF = 3;
const open = (engine: StorageEngine, id: number): Promise<MvccStore> => MvccStore.open({ engine, prefix: partitionKeyPrefix('mvcc', id), partition: { id, count: 1 } });

interface Applied {
  readonly result: Awaited<ReturnType<SplitApplier['apply']>>;
  readonly source: MvccStore;
  readonly before: { readonly revision: number; readonly range: unknown; readonly keys: number };
  readonly founded: PartitionReplica[];
  /** The new partition's Raft log after the apply: its last index and its founding voters. */
  readonly newLog: { readonly lastIndex: number; readonly voters: readonly number[] };
}

/** Partition 0 (of 1) with 40 keys; one split entry applied with `confAtEntry`, while the replica's current view is `currentView`. */
async function applySplitWith(confAtEntry: ConfState, currentView: ConfState): Promise<Applied> {
  const engine = new MemoryEngine();
  const source = await open(engine, 0);
  const keys = keysOfEqualPartition(0, 1, 40);
  let index = 0;
  for (const key of keys) await source.apply({ type: 'put', key, value: text(key) }, { index: ++index, nowMs: startMs });
  const mid = chooseSplitPoint(source.hashRange!, keys.map((key) => bucketHash(bucketOf(key))))!;
  const before = { revision: source.revision, range: source.hashRange, keys: source.storedKeyNames(1_000).length };
  const founded: PartitionReplica[] = [];
  const applier = new SplitApplier({
    engine,
    initialPartitions: 1,
    replicationFactor: RF,
    logger: pino({ level: 'silent' }),
    openStore: (id) => open(engine, id),
    openReplica: async (id) => ({ id }) as unknown as PartitionReplica,
    addGroup: (replica) => void founded.push(replica),
  });
  const replica = { id: 0, mvcc: source, raw: { status: () => ({ confState: currentView }) } } as unknown as PartitionReplica;
  const entry: Entry = { index: ++index, term: 2, type: EntryType.Normal, data: encodeSplitEntry({ nowMs: startMs, mid, newId: splitPartitionId(mid) }) };
  const result = await applier.apply(replica, entry, confAtEntry);
  const log = await PersistentLogStorage.load(engine, splitPartitionId(mid), { snapshotData: () => new Uint8Array() });
  return { result, source, before, founded, newLog: { lastIndex: log.lastIndex(), voters: log.snapshotMeta().confState.voters } };
}

describe('split entry refusals at apply', () => {
  it('refuses in-progress when a promotion committed before the entry (RF + 1 voters as of the entry), changing nothing but the applied index', async () => {
    // The leader checked RF voters and proposed; a move's addVoter(4) committed just before the entry.
    const leaderSaw: ConfState = { voters: [1, 2, 3], learners: [4] };
    const atEntry = confAfter(leaderSaw, { type: 'addVoter', node: 4 });
    expect(atEntry.voters).toHaveLength(RF + 1);
    const { result, source, before, founded, newLog } = await applySplitWith(atEntry, leaderSaw);
    expect(result.applied).toBe(false);
    expect(result.error).toMatchObject({ code: 'SPLIT_REFUSED', details: { reason: 'in-progress' } });
    expect(source.appliedIndex).toBe(result.index);
    expect(source.revision).toBe(before.revision);
    expect(source.hashRange).toEqual(before.range);
    expect(source.storedKeyNames(1_000)).toHaveLength(before.keys);
    expect(founded).toHaveLength(0);
    expect(newLog.lastIndex).toBe(0);
  });

  it('still refuses in-progress while the source has a learner', async () => {
    const conf: ConfState = { voters: [1, 2, 3], learners: [4] };
    const { result, founded } = await applySplitWith(conf, conf);
    expect(result.error).toMatchObject({ code: 'SPLIT_REFUSED', details: { reason: 'in-progress' } });
    expect(founded).toHaveLength(0);
  });

  it('splits with RF voters as of the entry, founding the new partition with them, whatever the current view says', async () => {
    const { result, source, before, founded, newLog } = await applySplitWith({ voters: [1, 2, 3], learners: [] }, { voters: [1, 2, 3, 4], learners: [] });
    expect(result.applied).toBe(true);
    expect(result.error).toBeUndefined();
    expect(source.hashRange).not.toEqual(before.range);
    expect(founded).toHaveLength(1);
    expect(newLog.lastIndex).toBe(result.index);
    expect([...newLog.voters].sort()).toEqual([1, 2, 3]);
  });
});
