/**
 * A cluster larger than the replication factor: five real nodes, three replicas per partition.
 * Placement is what src/keys/placement.ts computes on every node, each node hosts only its
 * partitions, and a node that holds no replica of a key's partition still serves the key (it
 * forwards to the leader) for writes, linearizable reads and prefix reads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOf } from '../../src/keys/partition-table.js';
import { replicasOf } from '../../src/keys/placement.js';
import { LocalCluster } from './local-cluster.js';
import { call, genericKvClient } from './plain-grpc.js';

const NODES = [1, 2, 3, 4, 5];
const PARTITIONS = 10;
const RF = 3;

describe('five nodes, replication factor 3', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ nodes: NODES.length, partitions: PARTITIONS, extraArgs: ['--replication-factor', String(RF)] });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('places three replicas per partition, as placement computes, each led by one of them', async () => {
    const hosted = new Map<number, number>(NODES.map((id) => [id, 0]));
    for (const id of NODES) {
      const info = await cluster.clusterInfoOf(id);
      expect(info.nodes.map((node) => node.id).sort()).toEqual(NODES);
      expect(info.partitions).toHaveLength(PARTITIONS);
      for (const partition of info.partitions) {
        const expected = replicasOf(partition.id, NODES, RF);
        expect([...partition.replicas].sort(), `partition ${partition.id} as node ${id} sees it`).toEqual([...expected].sort());
        expect(expected).toContain(Number(partition.leader));
        if (id === 1) for (const replica of partition.replicas) hosted.set(replica, (hosted.get(replica) ?? 0) + 1);
      }
    }
    // 10 partitions x 3 replicas over 5 nodes: six each, and no node holds every partition.
    expect([...hosted.values()]).toEqual([6, 6, 6, 6, 6]);
  });

  it('a node that holds no replica of a partition forwards writes and reads to its leader', async () => {
    const client = cluster.client();
    try {
      for (let partition = 0; partition < PARTITIONS; partition++) {
        // A bucket of this partition, and a node that is not among its replicas.
        let bucket = '';
        for (let i = 0; bucket === '' && i < 10_000; i++) if (partitionOf(`far${i}/k`, PARTITIONS) === partition) bucket = `far${i}`;
        expect(bucket).not.toBe('');
        const outsider = NODES.find((id) => !replicasOf(partition, NODES, RF).includes(id)) as number;
        // Not a replica by placement, and not one by what the nodes report either.
        expect(outsider).toBeDefined();
        expect((await cluster.clusterInfoOf(outsider)).partitions.find((p) => p.id === partition)?.replicas).not.toContain(outsider);
        const kv = genericKvClient(cluster.addresses.get(outsider) as string);
        try {
          const key = `${bucket}/k`;
          const put = await call(kv, 'put', { key, value: Buffer.from(`through ${outsider}`) });
          expect(put['applied']).toBe(true);
          const got = await call(kv, 'get', { key });
          expect(Buffer.from(got['value'] as Uint8Array).toString()).toBe(`through ${outsider}`);
          const page = await call(kv, 'getByPrefix', { prefix: `${bucket}/` });
          expect((page['items'] as Array<{ key: string }>).map((item) => item.key)).toEqual([key]);
          const deleted = await call(kv, 'delete', { key });
          expect(deleted['deleted']).toBe(true);
          expect((await call(kv, 'get', { key }))['found']).toBe(false);
          // The write reached the partition's own replicas: the client library reads it back.
          await client.put(key, 'again');
          expect((await client.get(key)).text()).toBe('again');
        } finally {
          kv.close();
        }
      }
    } finally {
      client.close();
    }
    expect(cluster.crashes).toEqual([]);
  });
});
