/**
 * Merging two partitions on three real nodes (issue 19): partition 0 is split, then `atoll
 * cluster merge 0` (its code, src/cli/cluster-merge.ts: Cluster.MergePartition over gRPC, moving
 * the right side's leadership first when another node leads it) joins the halves again under a
 * bounded write load through every node. Afterwards every acknowledged write is there, read
 * through clients whose routing map still names the merged-away partition and through a fresh
 * one; ClusterInfo lists partitions 0 and 1 only, and the merged-away start as a tombstone.
 */
import { describe, expect, it } from 'vitest';
import type { AtollClient } from '../../src/client/index.js';
import { mergeWithLeaderTransfer } from '../../src/cli/cluster-merge.js';
import { bucketHash } from '../../src/keys/bucket-hash.js';
import { untilAtLeast } from './paced.js';
import { bucketsOfPartition, clientPerNode, useRangeCluster } from './range-support.js';

const NODES = [1, 2, 3];
const PARTITIONS = 2;

describe('merging partitions online (3 nodes)', () => {
  const fixture = useRangeCluster({ nodes: NODES.length, partitions: PARTITIONS });

  it('merges a split partition back under writes; nothing acknowledged is lost; stale clients follow', async () => {
    const cluster = fixture.cluster;
    const buckets = bucketsOfPartition('mp', 0, PARTITIONS, 24);
    const clients = clientPerNode(cluster, NODES);
    const admin = clients.get(1) as AtollClient;
    const split = await admin.splitPartition(0, { timeoutMs: 20_000 });
    const moved = buckets.filter((bucket) => bucketHash(bucket) >= split.mid);
    expect(moved.length).toBeGreaterThan(0);
    // Every client learns the split (its map then routes the moved buckets to the new partition).
    for (const client of clients.values()) await client.clusterInfo();

    const acknowledged = new Map<string, string>();
    let stop = false;
    const writers = NODES.map(async (id) => {
      const client = clients.get(id) as AtollClient;
      for (let i = 0; !stop && i < 20_000; i++) {
        const key = `${buckets[i % buckets.length]}/n${id}-${i}`;
        try {
          if ((await client.put(key, `v${id}-${i}`, { timeoutMs: 3_000 })).applied) acknowledged.set(key, `v${id}-${i}`);
        } catch {
          // Not acknowledged (R's keys are unavailable between the freeze and the merge).
        }
      }
    });
    let merged: Awaited<ReturnType<typeof mergeWithLeaderTransfer>>;
    try {
      await untilAtLeast(() => acknowledged.size, 20, 30_000);
      merged = await mergeWithLeaderTransfer(admin, 0, 20_000, (line) => console.log(`merge: ${line}`));
      const atMerge = acknowledged.size;
      await untilAtLeast(() => acknowledged.size, atMerge + 20, 30_000);
    } finally {
      stop = true;
      await Promise.all(writers);
    }
    expect(merged).toEqual({ partition: 0, mergedPartition: split.mid, start: split.start, end: split.end });

    for (const id of NODES) {
      const info = await cluster.clusterInfoOf(id);
      expect(info.partitions.map((p) => Number(p.id)), `node ${id}`).toEqual([0, 1]);
      expect((info.mergedStarts ?? []).map((m) => [Number(m.start), Number(m.into)]), `node ${id}`).toEqual([[split.mid, 0]]);
    }
    // The writers' clients still had the old map: they follow PARTITION_MOVED to the merged partition.
    const stale = clients.get(2) as AtollClient;
    for (const [key, value] of acknowledged) expect((await stale.get(key)).text(), key).toBe(value);
    const fresh = cluster.client();
    try {
      await fresh.put(`${moved[0]}/after-merge`, 'yes');
      expect((await fresh.get(`${moved[0]}/after-merge`)).text()).toBe('yes');
      for (const [key, value] of acknowledged) expect((await fresh.get(key)).text(), key).toBe(value);
    } finally {
      fresh.close();
    }
    for (const client of clients.values()) client.close();
    expect(cluster.crashes).toEqual([]);
  }, 120_000);
});
