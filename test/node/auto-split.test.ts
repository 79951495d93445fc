/**
 * Automatic splits (src/node/cluster/auto-split.ts) on a three-node in-process cluster with one partition:
 * past --auto-split-keys the leader splits the partition on its own, once per excess (each half is
 * under the threshold, so it stops there) and with every key kept exactly once; with the option
 * off, or with every key in one bucket (a split could not divide them), nothing splits.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { bucketOf } from '../../src/keys/bucket.js';
import { bucketHash } from '../../src/keys/bucket-hash.js';
import type { AutoSplitConfig, AutoSplitter } from '../../src/node/cluster/auto-split.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { InProcessCluster, settle, waitFor } from './in-process-cluster.js';

let cluster: InProcessCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const groups = (c: InProcessCluster, id: number): Map<number, PartitionReplica> => c.groups(id);

function splitter(c: InProcessCluster, id: number): AutoSplitter {
  return (c.node(id) as unknown as { autoSplitter: AutoSplitter }).autoSplitter;
}

async function startWith(keys: readonly string[], autoSplit?: AutoSplitConfig): Promise<InProcessCluster> {
  cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 100, ...(autoSplit !== undefined && { autoSplit }) });
  await cluster.start();
  await cluster.waitForLeader(10_000);
  for (const key of keys) await cluster.put(key, `v-${key}`);
  return cluster;
}

/** Three automatic-split rounds (one a second) and a little more. */
const ROUNDS_MS = 3_500;

describe('automatic splits', () => {
  it('splits a partition that grows past --auto-split-keys on its own, once, keeping every key', { timeout: 60_000 }, async () => {
    const keys = Array.from({ length: 40 }, (_, i) => `user${i}/profile`);
    const c = await startWith(keys, { maxKeys: 30, pauseMs: 0 });
    expect(await waitFor(() => [1, 2, 3].every((id) => groups(c, id).size === 2), 15_000)).toBe(true);
    // Each half holds fewer than 30 keys: a few more rounds split nothing more.
    await settle(ROUNDS_MS);
    for (const id of [1, 2, 3]) expect(groups(c, id).size).toBe(2);
    const done = [1, 2, 3].map((id) => splitter(c, id).splitsDone);
    expect(done.reduce((a, b) => a + b, 0)).toBe(1);
    const split = [1, 2, 3].map((id) => splitter(c, id).lastSplit).find((last) => last !== undefined)!;
    expect(split.reason).toBe('keys');
    expect(split.partition).toBe(0);
    const newPartition = split.newPartition;
    // Every replica: each key in exactly the store its hash says, with its value. (The stores also
    // hold the cluster's own records, so the halves add up to at least the keys written.)
    const totals = new Set<number>();
    for (const id of [1, 2, 3]) {
      const source = groups(c, id).get(0)!;
      const target = groups(c, id).get(newPartition)!;
      expect(source.mvcc.hashRange).toEqual({ start: 0, end: split.mid });
      expect(target.mvcc.hashRange).toEqual({ start: split.mid, end: 2 ** 32 });
      const sourceKeys = source.mvcc.keyIndexStatus().keys;
      const targetKeys = target.mvcc.keyIndexStatus().keys;
      totals.add(sourceKeys + targetKeys);
      expect(sourceKeys + targetKeys).toBeGreaterThanOrEqual(keys.length);
      expect(sourceKeys).toBeGreaterThan(0);
      expect(sourceKeys).toBeLessThanOrEqual(30);
      expect(targetKeys).toBeLessThanOrEqual(30);
      for (const key of keys) {
        const [owner, other] = bucketHash(bucketOf(key)) >= split.mid ? [target, source] : [source, target];
        const got = await owner.mvcc.get(key, { nowMs: Date.now() });
        expect(new TextDecoder().decode(got.value)).toBe(`v-${key}`);
        await expect(other.mvcc.get(key, { nowMs: Date.now() })).rejects.toMatchObject({ code: 'PARTITION_MOVED' });
      }
    }
    expect(totals.size).toBe(1);
  });

  it('splits nothing with the option off', { timeout: 60_000 }, async () => {
    const keys = Array.from({ length: 40 }, (_, i) => `user${i}/profile`);
    const c = await startWith(keys);
    await settle(ROUNDS_MS);
    for (const id of [1, 2, 3]) {
      expect([...groups(c, id).keys()]).toEqual([0]);
      expect(splitter(c, id).splitsDone).toBe(0);
    }
  });

  it('leaves a partition whose keys all sit in one bucket alone (a split would not divide them)', { timeout: 60_000 }, async () => {
    const keys = Array.from({ length: 40 }, (_, i) => `onebucket/k${i}`);
    const c = await startWith(keys, { maxKeys: 30, pauseMs: 0 });
    await settle(ROUNDS_MS);
    for (const id of [1, 2, 3]) {
      expect([...groups(c, id).keys()]).toEqual([0]);
      expect(splitter(c, id).splitsDone).toBe(0);
    }
    expect(groups(c, 1).get(0)!.mvcc.hashRange).toEqual({ start: 0, end: 2 ** 32 });
  });
});
