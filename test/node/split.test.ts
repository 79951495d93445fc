/**
 * Splitting a live partition on a three-node in-process cluster (split-admin.ts, split-apply.ts,
 * range-routing.ts): the split entry goes through the source's log, every replica founds the new
 * group with the same voters and moves the same keys, the new group elects a leader and serves
 * its keys through the ordinary API, the source refuses them (PARTITION_MOVED, and the router
 * follows it), and a restart of every node keeps both partitions.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { bucketOf } from '../../src/keys/bucket.js';
import { bucketHash } from '../../src/keys/bucket-hash.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { MvccKeyLayout } from '../../src/mvcc/key-layout.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import type { WriteOperation } from '../../src/storage/storage-engine.js';
import { InProcessCluster, waitFor } from './in-process-cluster.js';

const text = (value: string): Uint8Array => new TextEncoder().encode(value);
const fromBytes = (value: Uint8Array | undefined): string | undefined => (value === undefined ? undefined : new TextDecoder().decode(value));
const hashOf = (key: string): number => bucketHash(bucketOf(key));

let cluster: InProcessCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const groups = (c: InProcessCluster, id: number): Map<number, PartitionReplica> => c.groups(id);

/** The node leading `partition` now (the loopback network forwards nothing: tests call the leader). */
function leaderOf(c: InProcessCluster, partition: number): number {
  return [1, 2, 3].find((id) => groups(c, id).get(partition)?.raw.status().role === 'leader') ?? 1;
}

/** Reads through the API at the leader of the partition the node's own table routes the key to. */
async function get(c: InProcessCluster, key: string, partition: number): Promise<string | undefined> {
  let last: unknown;
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      const got = await c.node(leaderOf(c, partition)).get({ key }, { deadlineMs: Date.now() + 2_000 });
      return got.found ? fromBytes(got.value) : undefined;
    } catch (error) {
      last = error;
      if (!isAtollError(error) || !['NOT_LEADER', 'NO_LEADER', 'UNAVAILABLE', 'DEADLINE_EXCEEDED'].includes(error.code)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  throw new Error(`could not read ${key}: ${String(last)}`);
}

async function put(c: InProcessCluster, key: string, value: string, partition: number): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    try {
      await c.node(leaderOf(c, partition)).put({ key, value: text(value) }, { deadlineMs: Date.now() + 2_000 });
      return;
    } catch (error) {
      // Retried only when certainly not applied (the loopback refuses a forward before sending it).
      const notSent = error instanceof Error && /tests write at the leader/.test(error.message);
      if (!isAtollError(error) || !['NOT_LEADER', 'NO_LEADER', 'UNAVAILABLE'].includes(error.code) || (error.details?.['neverSent'] !== true && !notSent)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  throw new Error(`could not write ${key}`);
}

/**
 * Splits partition 0 at its leader. A leader change while the split is under way (on a loaded
 * machine an election can fire mid-call) answers a retryable error whether or not the split
 * applied: the split is then read from the replicas (partition 0's new end names the new one), or
 * asked again at the new leader when it did not apply.
 */
async function splitZero(c: InProcessCluster): Promise<{ partition: number; newPartition: number; start: number; mid: number; end: number }> {
  let last: unknown;
  for (let attempt = 0; attempt < 50; attempt++) {
    const leader = await c.waitForLeader(10_000);
    try {
      return await c.node(leader).splitPartition({ partition: 0 }, { deadlineMs: Date.now() + 5_000 });
    } catch (error) {
      last = error;
      if (!isAtollError(error) || !['NOT_LEADER', 'NO_LEADER', 'DEADLINE_EXCEEDED', 'UNAVAILABLE'].includes(error.code)) throw error;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    const end = groups(c, await c.waitForLeader(10_000)).get(0)?.mvcc.hashRange?.end;
    if (end !== undefined && end < 2 ** 32) return { partition: 0, newPartition: end, start: 0, mid: end, end: 2 ** 32 };
  }
  throw new Error(`the split did not answer: ${String(last)}`);
}

describe('partition split on a live three-node cluster', () => {
  it('founds the new group on every replica, moves the keys, routes to it, and survives a restart', { timeout: 60_000 }, async () => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 100 });
    const c = cluster;
    await c.start();
    await c.waitForLeader(10_000);
    const keys = Array.from({ length: 40 }, (_, i) => `user${i}/profile`);
    for (const key of keys) await c.put(key, `v-${key}`);

    const split = await splitZero(c);
    expect(split.partition).toBe(0);
    expect(split.newPartition).toBe(split.mid);
    expect(split.start).toBe(0);
    expect(split.end).toBe(2 ** 32);
    const moved = keys.filter((key) => hashOf(key) >= split.mid);
    // The median bucket: both sides keep keys.
    expect(moved.length).toBeGreaterThan(0);
    expect(moved.length).toBeLessThan(keys.length);

    // Every replica founds the new group with the same voters and it elects a leader.
    expect(await waitFor(() => [1, 2, 3].every((id) => groups(c, id).has(split.newPartition)), 10_000)).toBe(true);
    expect(await waitFor(() => [1, 2, 3].some((id) => groups(c, id).get(split.newPartition)!.raw.status().role === 'leader'), 10_000)).toBe(true);
    for (const id of [1, 2, 3]) {
      const source = groups(c, id).get(0)!;
      const target = groups(c, id).get(split.newPartition)!;
      expect(target.raw.status().confState.voters).toEqual([1, 2, 3]);
      expect(source.mvcc.hashRange).toEqual({ start: 0, end: split.mid });
      expect(target.mvcc.hashRange).toEqual({ start: split.mid, end: 2 ** 32 });
      // Every replica moved the same keys at the same index: no key in both stores or in neither.
      for (const key of keys) {
        const [owner, other] = hashOf(key) >= split.mid ? [target, source] : [source, target];
        expect(fromBytes((await owner.mvcc.get(key, { nowMs: Date.now() })).value)).toBe(`v-${key}`);
        await expect(other.mvcc.get(key, { nowMs: Date.now() })).rejects.toMatchObject({ code: 'PARTITION_MOVED' });
      }
    }

    // Through the API: every node's table routes each key to its owner, which serves it.
    const ownerOf = (key: string): number => (hashOf(key) >= split.mid ? split.newPartition : 0);
    for (const id of [1, 2, 3]) {
      const router = (c.node(id) as unknown as { router: { partitionOfKey(key: string): number } }).router;
      for (const key of keys) expect(router.partitionOfKey(key)).toBe(ownerOf(key));
    }
    for (const key of keys) expect(await get(c, key, ownerOf(key))).toBe(`v-${key}`);
    for (const key of moved.slice(0, 5)) await put(c, key, `w-${key}`, ownerOf(key));
    const targetLeader = [1, 2, 3].find((id) => groups(c, id).get(split.newPartition)!.raw.status().role === 'leader')!;
    for (const key of moved.slice(0, 5)) expect(fromBytes((await groups(c, targetLeader).get(split.newPartition)!.mvcc.get(key, { nowMs: Date.now() })).value)).toBe(`w-${key}`);

    // Bad input changes nothing: an unknown partition, a follower (which names the leader).
    await expect(c.node(2).splitPartition({ partition: 99 }, { deadlineMs: Date.now() + 1_000 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const follower = [1, 2, 3].find((id) => groups(c, id).get(0)!.raw.status().role !== 'leader')!;
    await expect(c.node(follower).splitPartition({ partition: 0 }, { deadlineMs: Date.now() + 1_000 })).rejects.toMatchObject({ code: 'NOT_LEADER' });

    // Restart every node: both partitions come back from disk, with their ranges and data.
    await c.close();
    for (const id of [1, 2, 3]) {
      c.memory.get(id)!.reopen();
      await c.open(id);
    }
    expect(await waitFor(() => [1, 2, 3].every((id) => groups(c, id).has(split.newPartition)), 10_000)).toBe(true);
    for (const id of [1, 2, 3]) {
      expect(groups(c, id).get(0)!.mvcc.hashRange).toEqual({ start: 0, end: split.mid });
      expect(groups(c, id).get(split.newPartition)!.mvcc.hashRange).toEqual({ start: split.mid, end: 2 ** 32 });
    }
    for (const key of keys) {
      const expected = moved.slice(0, 5).includes(key) ? `w-${key}` : `v-${key}`;
      expect(await get(c, key, ownerOf(key))).toBe(expected);
    }
  });
});

/** The split's batch on a replica: the one write that puts partition 0's range record. */
const sourceRangeKey = new MvccKeyLayout(partitionKeyPrefix('mvcc', 0)).rangeKey;
function isSplitBatch(operations: readonly WriteOperation[] | 'deleteRange'): boolean {
  return operations !== 'deleteRange' && operations.some((op) => op.type === 'put' && Buffer.from(op.key).equals(Buffer.from(sourceRangeKey)));
}

describe('a replica that crashes around the split batch', () => {
  // 0: dies AT the split's one synced batch (none of it on disk); 1: at the write after it (all of it).
  it.each([0, 1])('comes back with the whole split (crash at write %i from the split batch)', { timeout: 60_000 }, async (crashAt) => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 100 });
    const c = cluster;
    await c.start();
    const leader = await c.waitForLeader(10_000);
    const keys = Array.from({ length: 30 }, (_, i) => `acct${i}/balance`);
    for (const key of keys) await c.put(key, `v-${key}`);
    const victim = [1, 2, 3].find((id) => id !== leader)!;
    let offset = -1;
    let crashed = false;
    c.engines.get(victim)!.beforeWrite = (operations) => {
      if (offset < 0 && isSplitBatch(operations)) offset = 0;
      else if (offset >= 0) offset++;
      if (offset !== crashAt || crashed) return false;
      crashed = true;
      return true;
    };
    const split = await splitZero(c);
    // A write after the split (to a key partition 0 kept) makes the victim write again (for crashAt 1).
    await put(c, `${keys.find((key) => hashOf(key) < split.mid)!}-after`, 'after', 0);
    expect(await waitFor(() => crashed, 5_000)).toBe(true);
    await waitFor(() => c.node(victim).failure !== undefined, 2_000);
    await c.node(victim).close();
    // Power loss: only synced batches survive.
    c.memory.get(victim)!.crash({ keepUnsyncedBatches: 0 });
    await c.open(victim);
    // It re-applies the entry (crashAt 0) or opens the new group from disk (crashAt 1): either way both partitions.
    expect(await waitFor(() => groups(c, victim).has(split.newPartition), 10_000)).toBe(true);
    const source = groups(c, victim).get(0)!;
    const target = groups(c, victim).get(split.newPartition)!;
    expect(await waitFor(() => source.mvcc.hashRange?.end === split.mid && target.raw.status().lead !== 0, 10_000)).toBe(true);
    expect(target.mvcc.hashRange).toEqual({ start: split.mid, end: 2 ** 32 });
    for (const key of keys.slice(1)) {
      const owner = hashOf(key) >= split.mid ? target : source;
      expect(await waitFor(async () => fromBytes((await owner.mvcc.get(key, { nowMs: Date.now() })).value) === `v-${key}`, 5_000), key).toBe(true);
    }
  });
});
