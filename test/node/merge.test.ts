/**
 * Merging two partitions on a live three-node in-process cluster (merge-admin.ts, merge-apply.ts,
 * range-routing.ts tombstones): partition 0 is split, both sides take writes, and `merge 0` joins
 * them again. Every key is then served by partition 0 with its value and its older versions, the
 * merged-away id is gone from every node (groups, ClusterInfo) and stays gone after a restart,
 * writes to its keys route to partition 0, and a request id the right side recorded before the
 * merge is answered once. A freeze a crashed admin left behind blocks moves and splits and is
 * continued by the next merge; the applier refuses an entry whose voters are not the partition's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { bucketOf } from '../../src/keys/bucket.js';
import { bucketHash } from '../../src/keys/bucket-hash.js';
import type { ApplyResult } from '../../src/mvcc/index.js';
import { encodeFreezeEntry, encodeMergeEntry } from '../../src/node/replica/merge-entry.js';
import type { MergePartitionResult } from '../../src/api/node-api.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import type { RangeRouting } from '../../src/node/cluster/range-routing.js';
import { MvccKeyLayout } from '../../src/mvcc/key-layout.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { prefixRange } from '../../src/storage/bytes.js';
import { RaftLogKeys } from '../../src/node/raftlog/raft-log-codec.js';
import { CollectingSink, InProcessCluster, waitFor } from './in-process-cluster.js';
import { alignLeaders, atLeader, deadline, fromBytes, get, hashOf, leaderOf, leaderSoon, mergeAligned, NODES, proposeRaw, put, ranges, splitCluster as splitClusterOf, text } from './merge-support.js';

let cluster: InProcessCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const splitCluster = (): ReturnType<typeof splitClusterOf> => splitClusterOf((c) => (cluster = c));

describe('partition merge on a live three-node cluster', () => {
  it('joins a split partition back: every key with its history at the left, the right id gone for good, dedup kept', { timeout: 90_000 }, async () => {
    const { c, mid, keys } = await splitCluster();
    const ownerBefore = (key: string): number => (hashOf(key) >= mid ? mid : 0);
    const rightKeys = keys.filter((key) => hashOf(key) >= mid);
    expect(rightKeys.length).toBeGreaterThan(2);
    expect(rightKeys.length).toBeLessThan(keys.length);
    // Writes on both sides after the split: a second version of every key, at its owner.
    const firstRevision = new Map<string, number>();
    for (const key of keys) {
      firstRevision.set(key, (await atLeader(c, ownerBefore(key), (node) => c.node(node).get({ key }, deadline()))).modRevision!);
      await put(c, ownerBefore(key), key, `v2-${key}`);
    }
    // A request id the right side records before the merge.
    const counter = `${rightKeys[0]}-n`;
    expect(hashOf(counter)).toBe(hashOf(rightKeys[0]!));
    const first = await atLeader(c, mid, (node) => c.node(node).increment({ key: counter, delta: 5n, requestId: 'merge-req' }, deadline()));
    expect(first.value).toBe(5n);

    // Refusals that change nothing: the right neighbour of `mid` is initial partition 1, partition
    // 1 ends the hash space, an unknown id, a follower of 0.
    await expect(atLeader(c, mid, (node) => c.node(node).mergePartition({ partition: mid }, deadline()))).rejects.toMatchObject({ code: 'MERGE_REFUSED', details: { reason: 'below-initial' } });
    await expect(atLeader(c, 1, (node) => c.node(node).mergePartition({ partition: 1 }, deadline()))).rejects.toMatchObject({ code: 'MERGE_REFUSED', details: { reason: 'no-right-neighbour' } });
    await expect(c.node(1).mergePartition({ partition: 99 }, deadline())).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const follower = NODES.find((id) => c.groups(id).get(0)!.raw.status().role !== 'leader')!;
    await expect(c.node(follower).mergePartition({ partition: 0 }, deadline())).rejects.toMatchObject({ code: 'NOT_LEADER' });
    // Leaders on different nodes: refused, naming both.
    const leftLeader = await leaderSoon(c, 0);
    const other = NODES.find((id) => id !== leftLeader)!;
    await c.node(await leaderSoon(c, mid)).transferLeader({ partition: mid, targetNode: other }, deadline());
    if (await waitFor(() => leaderOf(c, mid) === other && leaderOf(c, 0) === leftLeader, 3_000)) {
      await expect(c.node(leftLeader).mergePartition({ partition: 0 }, deadline())).rejects.toMatchObject({ code: 'MERGE_REFUSED', details: { reason: 'leaders-differ', rightPartition: mid, leftLeader } });
    }
    for (const id of NODES) expect(c.groups(id).get(mid)!.mvcc.frozen).toBeUndefined();

    const rightReplicas = NODES.map((id) => c.groups(id).get(mid)!);
    const merged = await mergeAligned(c, 0, mid);
    const leader = leaderOf(c, 0) ?? 1;
    expect(merged).toEqual({ partition: 0, mergedPartition: mid, start: 0, end: 2 ** 31 });

    // Every node: the right group is gone, the left owns both ranges, the start is a tombstone.
    expect(await waitFor(() => NODES.every((id) => !c.groups(id).has(mid) && c.groups(id).get(0)!.mvcc.hashRange?.end === 2 ** 31), 10_000)).toBe(true);
    for (const id of NODES) {
      expect(ranges(c, id).isKnown(mid)).toBe(false);
      expect(ranges(c, id).mergedInto(mid)).toBe(0);
      for (const key of keys) expect(ranges(c, id).partitionOfBucket(bucketOf(key))).toBe(0);
    }
    // Nothing of the right side is left on disk, and its retired replica objects stage no log record.
    for (const id of NODES) {
      for (const range of [new RaftLogKeys(mid).groupRange(), prefixRange(partitionKeyPrefix('mvcc', mid))]) {
        const left: Uint8Array[] = [];
        for await (const [key] of c.memory.get(id)!.iterate(range)) left.push(key);
        expect(left, `node ${id}`).toEqual([]);
      }
    }
    for (const replica of rightReplicas) expect(replica.compactLog()).toEqual([]);
    const info = await c.node(leader).clusterInfo(deadline());
    expect(info.partitions.map((partition) => partition.id)).toEqual([0, 1]);
    expect(info.partitions[0]).toMatchObject({ rangeStart: 0, rangeEnd: 2 ** 31 });
    expect(info.mergedStarts).toEqual([{ start: mid, into: 0 }]);

    // Every key at partition 0: its newest value and the version before it.
    for (const key of keys) {
      expect(await get(c, 0, key)).toBe(`v2-${key}`);
      expect(await get(c, 0, key, firstRevision.get(key))).toBe(`v1-${key}`);
    }
    // Writes to the right side's keys route to partition 0 and apply.
    for (const key of rightKeys.slice(0, 3)) {
      await put(c, 0, key, `v3-${key}`);
      expect(await get(c, 0, key)).toBe(`v3-${key}`);
    }
    // The retry of the request the right side recorded is answered with its first result, once.
    const retry = await atLeader(c, 0, (node) => c.node(node).increment({ key: counter, delta: 5n, requestId: 'merge-req' }, deadline()));
    expect(retry).toEqual(first);
    const fresh = await atLeader(c, 0, (node) => c.node(node).increment({ key: counter, delta: 1n, requestId: 'merge-req-2' }, deadline()));
    expect(fresh.value).toBe(6n);

    // Restart every node: the right partition does not come back, and its start stays a tombstone.
    await c.close();
    for (const id of NODES) {
      c.memory.get(id)!.reopen();
      await c.open(id);
    }
    expect(await waitFor(() => leaderOf(c, 0) !== undefined, 10_000)).toBe(true);
    for (const id of NODES) {
      expect(c.groups(id).has(mid)).toBe(false);
      expect(ranges(c, id).mergedInto(mid)).toBe(0);
      // Even a peer's stale report cannot teach the start again.
      expect(ranges(c, id).learn(mid)).toBe(false);
    }
    for (const key of keys) expect(await get(c, 0, key)).toBe(rightKeys.slice(0, 3).includes(key) ? `v3-${key}` : `v2-${key}`);
  });

  it('continues a merge a freeze was left behind for; the frozen side refuses splits and reads meanwhile', { timeout: 90_000 }, async () => {
    const { c, mid, keys } = await splitCluster();
    const leader = await alignLeaders(c, 0, mid);
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    // A watch on a key of R, at R's leader: the freeze ends it (nothing is published in R from then on).
    const sink = new CollectingSink();
    let watchEnded: unknown = 'running';
    const abort = new AbortController();
    void c
      .node(leader)
      .watch({ key: rightKey, progress: true }, { deadlineMs: Date.now() + 60_000, signal: abort.signal }, sink)
      .then(() => (watchEnded = 'ended'))
      .catch((error: unknown) => (watchEnded = error));
    expect(await waitFor(() => sink.messages.length > 0, 5_000)).toBe(true);
    // An admin that crashed right after its freeze: R is frozen into 0, no merge entry yet.
    const frozen = await proposeRaw(c, mid, encodeFreezeEntry({ nowMs: Date.now(), into: 0 }));
    expect(frozen.error).toBeUndefined();
    expect(await waitFor(() => NODES.every((id) => c.groups(id).get(mid)?.mvcc.frozen?.into === 0), 5_000)).toBe(true);
    const freezeIndex = c.groups(leader).get(mid)!.mvcc.frozen!.index;
    expect(await waitFor(() => watchEnded !== 'running', 5_000)).toBe(true);
    expect(watchEnded).toMatchObject({ code: 'PARTITION_MOVED', details: { mergedInto: 0 } });
    abort.abort();
    // Reads and writes of R's keys are refused with where they went; nothing changes.
    await expect(c.groups(leader).get(mid)!.mvcc.get(rightKey, { nowMs: Date.now() })).rejects.toMatchObject({ code: 'PARTITION_MOVED', details: { mergedInto: 0 } });
    // Splits of either side are refused while the merge is pending. Moves are not refused for the
    // merge (a voter of R lost for good is replaced by one: merge-lost-voter.test.ts); here the
    // target holds a replica already, so the move's own refusal answers.
    const other = NODES.find((id) => id !== leader)!;
    await expect(c.node(leader).moveReplica!({ partition: mid, fromNode: other, toNode: other === 2 ? 3 : 2 }, deadline())).rejects.toMatchObject({ code: 'MOVE_REFUSED', details: { reason: 'already-replica' } });
    await expect(c.node(leader).moveReplica!({ partition: 0, fromNode: other, toNode: other === 2 ? 3 : 2 }, deadline())).rejects.toMatchObject({ code: 'MOVE_REFUSED', details: { reason: 'already-replica' } });
    await expect(c.node(leader).splitPartition({ partition: mid }, deadline())).rejects.toMatchObject({ code: 'SPLIT_REFUSED', details: { reason: 'in-progress' } });
    await expect(c.node(leader).splitPartition({ partition: 0 }, deadline())).rejects.toMatchObject({ code: 'SPLIT_REFUSED', details: { reason: 'in-progress' } });
    // A merge entry whose voters are not partition 0's is refused by every replica alike.
    const wrong = await proposeRaw(c, 0, encodeMergeEntry({ nowMs: Date.now(), right: mid, freezeIndex, rightEnd: 2 ** 31, voters: [1, 2] }));
    expect(wrong.error).toMatchObject({ code: 'MERGE_REFUSED', details: { reason: 'replicas-differ' } });
    expect(NODES.every((id) => c.groups(id).has(mid))).toBe(true);

    // The next merge continues from the recorded freeze.
    const merged = await mergeAligned(c, 0, mid);
    expect(merged.mergedPartition).toBe(mid);
    expect(await waitFor(() => NODES.every((id) => !c.groups(id).has(mid)), 10_000)).toBe(true);
    for (const key of keys) expect(await get(c, 0, key)).toBe(`v1-${key}`);
  });

  it('merges on a replica whose right side lost its freeze apply in a crash: it applies its own stored entries first', { timeout: 90_000 }, async () => {
    const { c, mid, keys } = await splitCluster();
    const leader = await alignLeaders(c, 0, mid);
    const victim = NODES.find((id) => id !== leader)!;
    // The victim dies at the batch that applies the freeze in its replica of the right side: the
    // entry is in its log (appended, synced, acknowledged), its store never applied it.
    const freezeKey = Buffer.from(new MvccKeyLayout(partitionKeyPrefix('mvcc', mid)).freezeKey);
    let died = false;
    c.engines.get(victim)!.beforeWrite = (operations) => {
      if (died || operations === 'deleteRange' || !operations.some((op) => op.type === 'put' && Buffer.from(op.key).equals(freezeKey))) return false;
      died = true;
      return true;
    };
    await proposeRaw(c, mid, encodeFreezeEntry({ nowMs: Date.now(), into: 0 }));
    expect(await waitFor(() => died, 5_000)).toBe(true);
    await waitFor(() => c.node(victim).failure !== undefined, 2_000);
    await c.node(victim).close();
    c.memory.get(victim)!.crash({ keepUnsyncedBatches: 0 });
    // From now on the victim's right side hears nothing: only the merge entry in the left side's
    // log can bring it through the freeze.
    c.network.cutGroups.add(`${victim}:${mid}`);
    await c.open(victim);
    const right = c.groups(victim).get(mid)!;
    expect(right.mvcc.frozen).toBeUndefined();
    const freezeIndex = c.groups(leader).get(mid)!.mvcc.frozen!.index;
    expect(right.storage.lastIndex()).toBeGreaterThanOrEqual(freezeIndex);

    const merged = await mergeAligned(c, 0, mid);
    expect(merged.mergedPartition).toBe(mid);
    expect(await waitFor(() => !c.groups(victim).has(mid), 10_000)).toBe(true);
    expect(c.node(victim).failure).toBeUndefined();
    const left = c.groups(victim).get(0)!;
    expect(left.mvcc.hashRange).toEqual({ start: 0, end: 2 ** 31 });
    for (const key of keys) expect(fromBytes((await left.mvcc.get(key, { nowMs: Date.now() })).value), key).toBe(`v1-${key}`);
  });
});
