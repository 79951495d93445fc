/**
 * The client routes by the hash the cluster names in ClusterInfo: fnv1a32 (clusters created before
 * cluster descriptors) and murmur3_32 (new ones) each send every key to its partition's leader,
 * and a name the client does not know fails with CLUSTER_MISMATCH before anything is sent.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient, AtollClientError } from '../../src/index.js';
import { ClusterMap } from '../../src/client/cluster-map.js';
import { bucketOf } from '../../src/keys/bucket.js';
import { partitionOf, partitionOfBucket } from '../../src/keys/partition-table.js';
import { toInternalKey } from '../../src/keys/tenant-keys.js';
import type { ClusterInfoResponse } from '../../src/api/node-api.js';
import { startNode, type RunningNode } from '../server/harness.js';

const PARTITIONS = 4;
/** Even partitions led by node 1, odd ones by node 2. */
const leaderOf = (partition: number): number => (partition % 2 === 0 ? 1 : 2);
const keys = Array.from({ length: 40 }, (_, i) => `user${i}/name`);

describe('ClusterMap', () => {
  const info = (hashFunction: string): ClusterInfoResponse => ({ nodeId: 1, partitionCount: 64, replicationFactor: 1, hashFunction, nodes: [], partitions: [] });

  it('computes partitions with the hash ClusterInfo names (an empty name is the old fnv1a32)', () => {
    for (const [named, hash] of [['fnv1a32', 'fnv1a32'], ['murmur3_32', 'murmur3_32'], ['', 'fnv1a32']] as const) {
      const map = new ClusterMap(info(named));
      expect(map.hash).toBe(hash);
      for (const key of keys) expect(map.partitionOfKey(key)).toBe(partitionOfBucket(bucketOf(key), 64, hash));
    }
  });

  it("routes a tenant's keys as the node stores them, (tenant, bucket), once ClusterInfo names the caller's tenant", () => {
    const plain = new ClusterMap(info('murmur3_32'));
    const acme = new ClusterMap({ ...info('murmur3_32'), callerTenant: 'acme' });
    for (const key of keys) {
      expect(plain.partitionOfKey(key)).toBe(partitionOf(key, 64, 'murmur3_32'));
      expect(acme.partitionOfKey(key)).toBe(partitionOf(toInternalKey('acme', key), 64, 'murmur3_32'));
      expect(acme.partitionOfBucket(bucketOf(key))).toBe(acme.partitionOfKey(key));
    }
    // The tag moves most keys: a client that ignored it would send them to the wrong leader.
    expect(keys.filter((key) => acme.partitionOfKey(key) !== plain.partitionOfKey(key)).length).toBeGreaterThan(keys.length / 2);
  });

  it('refuses to route with an unknown hash name: CLUSTER_MISMATCH, naming it', () => {
    const map = new ClusterMap(info('xxhash64'));
    expect(map.hash).toBeUndefined();
    expect(() => map.partitionOfBucket('user1')).toThrow(AtollClientError);
    expect(() => map.partitionOfBucket('user1')).toThrow(expect.objectContaining({ code: 'CLUSTER_MISMATCH', message: expect.stringContaining('"xxhash64"') }));
  });
});

describe('AtollClient routing by the cluster hash', () => {
  let first: RunningNode;
  let second: RunningNode;
  beforeAll(async () => {
    first = await startNode({ nodeId: 1, partitionCount: PARTITIONS });
    second = await startNode({ nodeId: 2, partitionCount: PARTITIONS });
    const nodes = [
      { id: 1, address: first.address, reachable: true },
      { id: 2, address: second.address, reachable: true },
    ];
    for (const running of [first, second]) {
      running.node.nodes = nodes;
      running.node.leaderOf = leaderOf;
    }
  });
  afterAll(async () => {
    await first.stop();
    await second.stop();
  });

  for (const hash of ['fnv1a32', 'murmur3_32'] as const) {
    it(`sends every key to its partition's leader by ${hash}`, async () => {
      for (const running of [first, second]) {
        running.node.hashFunction = hash;
        running.node.calls.length = 0;
      }
      // The two hashes disagree on the leader of many of these keys: a client using the wrong one fails.
      const disagree = keys.filter((key) => leaderOf(partitionOf(key, PARTITIONS, 'fnv1a32')) !== leaderOf(partitionOf(key, PARTITIONS, 'murmur3_32')));
      expect(disagree.length).toBeGreaterThan(8);
      const client = new AtollClient({ endpoints: [first.address] });
      try {
        for (const key of keys) await client.put(key, 'v');
      } finally {
        client.close();
      }
      const putKeys = (running: RunningNode): string[] => running.node.callsOf('put').map((call) => (call.request as { key: string }).key);
      expect(putKeys(first)).toEqual(keys.filter((key) => leaderOf(partitionOf(key, PARTITIONS, hash)) === 1));
      expect(putKeys(second)).toEqual(keys.filter((key) => leaderOf(partitionOf(key, PARTITIONS, hash)) === 2));
    });
  }

  it("sends a tenant's keys to the leader of (tenant, bucket) when ClusterInfo names the caller's tenant", async () => {
    for (const running of [first, second]) {
      running.node.hashFunction = 'murmur3_32';
      running.node.callerTenant = 'acme';
      running.node.calls.length = 0;
    }
    const leaderOfKey = (key: string): number => leaderOf(partitionOf(toInternalKey('acme', key), PARTITIONS, 'murmur3_32'));
    expect(keys.filter((key) => leaderOfKey(key) !== leaderOf(partitionOf(key, PARTITIONS, 'murmur3_32'))).length).toBeGreaterThan(8);
    const client = new AtollClient({ endpoints: [first.address] });
    try {
      for (const key of keys) await client.put(key, 'v');
      for (const key of keys) await client.get(key);
    } finally {
      client.close();
      for (const running of [first, second]) running.node.callerTenant = undefined;
    }
    const keysOf = (running: RunningNode, method: 'put' | 'get'): string[] => running.node.callsOf(method).map((call) => (call.request as { key: string }).key);
    for (const method of ['put', 'get'] as const) {
      expect(keysOf(first, method)).toEqual(keys.filter((key) => leaderOfKey(key) === 1));
      expect(keysOf(second, method)).toEqual(keys.filter((key) => leaderOfKey(key) === 2));
    }
  });

  it('fails with CLUSTER_MISMATCH, sending nothing, when the cluster names a hash it does not know', async () => {
    for (const running of [first, second]) {
      running.node.hashFunction = 'xxhash64';
      running.node.calls.length = 0;
    }
    const client = new AtollClient({ endpoints: [first.address] });
    try {
      await expect(client.put('user1/name', 'v')).rejects.toMatchObject({ code: 'CLUSTER_MISMATCH' });
    } finally {
      client.close();
    }
    expect(first.node.callsOf('put').length + second.node.callsOf('put').length).toBe(0);
  });
});
