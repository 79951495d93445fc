/**
 * Three real atoll-server processes on loopback: every RPC through a node that does not lead the
 * key's partition (forwarding), through the client library, through the CLI, and through a plain
 * gRPC client that knows only the .proto files.
 */
import { spawnSync } from 'node:child_process';
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOf } from '../../src/keys/partition-table.js';
import { LocalCluster } from './local-cluster.js';
import { call, genericKvClient } from './plain-grpc.js';

const root = resolve(import.meta.dirname, '../..');
const PARTITIONS = 8;

function cli(cluster: LocalCluster, args: string[], endpoint?: string): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [join(root, 'dist/src/cli/atoll.js'), '--endpoints', endpoint ?? cluster.endpoints.join(','), ...args], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { status: result.status, stdout: result.stdout.trim(), stderr: result.stderr.trim() };
}

describe('three-node cluster', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: PARTITIONS, retentionRevisions: 20, maxValueBytes: 100_000 });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  /** The address of a node that does not lead the partition of `key`. */
  async function nonLeaderFor(key: string): Promise<{ address: string; leader: number }> {
    const client = cluster.client();
    try {
      const info = await client.clusterInfo();
      const partition = info.partitions[partitionOf(key, PARTITIONS)];
      const leader = partition?.leader ?? 0;
      const other = [...cluster.addresses].find(([id]) => id !== leader);
      return { address: other?.[1] as string, leader };
    } finally {
      client.close();
    }
  }

  it('leadership is balanced within 10 seconds of start-up', async () => {
    const client = cluster.client();
    const deadline = Date.now() + 10_000;
    let counts: number[] = [];
    try {
      while (Date.now() < deadline) {
        const info = await client.clusterInfo();
        counts = [1, 2, 3].map((id) => info.partitions.filter((p) => p.leader === id).length);
        if (counts.every((count) => Math.abs(count - PARTITIONS / 3) <= 1)) break;
        await new Promise((r) => setTimeout(r, 200));
      }
    } finally {
      client.close();
    }
    for (const count of counts) expect(Math.abs(count - PARTITIONS / 3)).toBeLessThanOrEqual(1);
  });

  it('serves every RPC through a node that does not lead the partition (plain gRPC client)', async () => {
    const { address, leader } = await nonLeaderFor('services/auth');
    expect(leader).toBeGreaterThan(0);
    const kv = genericKvClient(address);
    try {
      const put = await call(kv, 'put', { key: 'services/auth', value: Buffer.from('localhost:8081') });
      expect(put['applied']).toBe(true);
      const got = await call(kv, 'get', { key: 'services/auth' });
      expect(got['found']).toBe(true);
      expect(Buffer.from(got['value'] as Uint8Array).toString()).toBe('localhost:8081');
      expect(Number(got['modRevision'])).toBe(Number(put['revision']));
      const missing = await call(kv, 'get', { key: 'services/nope' });
      expect(missing['found']).toBe(false);
      await call(kv, 'put', { key: 'services/zero', value: Buffer.from('0') });
      const zero = await call(kv, 'get', { key: 'services/zero' });
      expect(zero['found']).toBe(true);
      expect(Buffer.from(zero['value'] as Uint8Array).toString()).toBe('0');
      const cas = await call(kv, 'put', { key: 'services/auth', value: Buffer.from('x'), ifModRevision: String(Number(put['revision']) + 1000) });
      expect(cas['applied']).toBe(false);
      const incr = await call(kv, 'increment', { key: 'services/counter', delta: '5' });
      expect(String(incr['value'])).toBe('5');
      const exists = await call(kv, 'exists', { key: 'services/counter' });
      expect(exists['exists']).toBe(true);
      await call(kv, 'put', { key: 'services/ttl', value: Buffer.from('t'), ttlMs: '60000' });
      const extended = await call(kv, 'extend', { key: 'services/ttl', ttlMs: '120000' });
      expect(extended['extended']).toBe(true);
      const page = await call(kv, 'getByPrefix', { prefix: 'services', limit: 10 });
      const keys = (page['items'] as Array<{ key: string }>).map((item) => item.key);
      expect(keys).toEqual(['services/auth', 'services/counter', 'services/ttl', 'services/zero']);
      const deleted = await call(kv, 'delete', { key: 'services/zero' });
      expect(deleted['deleted']).toBe(true);
      const afterDelete = await call(kv, 'get', { key: 'services/zero' });
      expect(afterDelete['found']).toBe(false);
      await expect(call(kv, 'get', { key: '' })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
      await expect(call(kv, 'getByPrefix', { prefix: '' })).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });
      await expect(call(kv, 'put', { key: 'big/value', value: Buffer.alloc(2 * 1024 * 1024) })).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
      // The configured limit (--max-value-bytes 100000) holds, and a refused write changes nothing.
      await expect(call(kv, 'put', { key: 'big/value', value: Buffer.alloc(100_001) })).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
      expect((await call(kv, 'get', { key: 'big/value' }))['found']).toBe(false);
      expect((await call(kv, 'put', { key: 'big/value', value: Buffer.alloc(100_000) }))['applied']).toBe(true);
      await call(kv, 'put', { key: 'notanumber', value: Buffer.from('abc') });
      await expect(call(kv, 'increment', { key: 'notanumber', delta: '1' })).rejects.toMatchObject({ code: grpc.status.FAILED_PRECONDITION });
    } finally {
      kv.close();
    }
  });

  it('the client library works from a single non-leader endpoint and from all endpoints', async () => {
    const { address } = await nonLeaderFor('carts/cart-731');
    for (const endpoints of [[address], cluster.endpoints]) {
      const client = cluster.client(endpoints);
      try {
        const put = await client.put('carts/cart-731', 'three items');
        expect(put.applied).toBe(true);
        const got = await client.get('carts/cart-731');
        expect(got.found).toBe(true);
        expect(new TextDecoder().decode(got.value)).toBe('three items');
        expect((await client.get('carts/none')).found).toBe(false);
        const stale = await client.get('carts/cart-731', { consistency: 'stale' });
        expect(stale.found === false || new TextDecoder().decode(stale.value) === 'three items').toBe(true);
        const absent = await client.put('carts/cart-731', 'other', { ifAbsent: true });
        expect(absent.applied).toBe(false);
        const incr = await client.increment('counters/visits', 2);
        expect(incr.value).toBeGreaterThanOrEqual(2n);
        const removed = await client.delete('carts/cart-731');
        expect(removed.deleted).toBe(true);
      } finally {
        client.close();
      }
    }
  });

  it('the client reloads its routing map while requests flow (a moved leadership shows no error)', async () => {
    const client = cluster.client();
    const admin = cluster.client();
    const mapOf = (): { leaderAddressOf(partition: number): string | undefined } | undefined => (client as unknown as { map?: { leaderAddressOf(partition: number): string | undefined } }).map;
    try {
      await client.put('maps/a', '1');
      const first = mapOf();
      expect(first).toBeDefined();
      await client.get('maps/a');
      expect(mapOf()).toBe(first);

      // Move the leadership of maps/a's partition to another replica, through a second client, so
      // the first client's map still names the old leader; then prove it moved.
      const partition = partitionOf('maps/a', PARTITIONS);
      const before = Number((await cluster.clusterInfoOf(1)).partitions[partition]?.leader);
      expect(first?.leaderAddressOf(partition)).toBe(cluster.addresses.get(before));
      const target = ([1, 2, 3] as const).find((id) => id !== before) as number;
      await admin.transferLeader(partition, target);
      const movedBy = Date.now() + 5_000;
      let leaderNow = before;
      while (leaderNow !== target && Date.now() < movedBy) {
        leaderNow = Number((await cluster.clusterInfoOf(target)).partitions[partition]?.leader);
        if (leaderNow !== target) await new Promise((r) => setTimeout(r, 20));
      }
      expect(leaderNow).toBe(target);
      // The client still routes by the old map: its requests reach the old leader, and neither a
      // write nor a read shows an error (the balancer may move leadership back meanwhile: also fine).
      expect(mapOf()).toBe(first);
      for (let i = 2; i <= 6; i++) {
        await client.put('maps/a', String(i));
        expect((await client.get('maps/a')).text()).toBe(String(i));
      }

      // Older than the client's map age (5 s): the next request starts a background reload.
      await new Promise((r) => setTimeout(r, 5_300));
      await client.get('maps/a');
      const deadline = Date.now() + 3_000;
      while (mapOf() === first && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(mapOf()).not.toBe(first);
    } finally {
      client.close();
      admin.close();
    }
  }, 30_000);

  it('keeps every key of many buckets across partitions', async () => {
    const client = cluster.client();
    try {
      const writes = Array.from({ length: 100 }, (_, i) => client.put(`bucket${i % 20}/key${i}`, `value${i}`));
      await Promise.all(writes);
      for (let i = 0; i < 100; i++) {
        const got = await client.get(`bucket${i % 20}/key${i}`);
        expect(new TextDecoder().decode(got.value)).toBe(`value${i}`);
      }
      const page = await client.getByPrefix('bucket3');
      expect(page.items.map((item) => item.key)).toEqual(['bucket3/key23', 'bucket3/key3', 'bucket3/key43', 'bucket3/key63', 'bucket3/key83']);
    } finally {
      client.close();
    }
  });

  it('the CLI: exit codes, (not found), a stored 0, --json, cluster status', async () => {
    const { address } = await nonLeaderFor('cli/zero');
    expect(cli(cluster, ['put', 'cli/zero', '0'], address).status).toBe(0);
    const zero = cli(cluster, ['get', 'cli/zero'], address);
    expect(zero).toMatchObject({ status: 0, stdout: '0' });
    const missing = cli(cluster, ['get', 'cli/missing']);
    expect(missing).toMatchObject({ status: 1, stdout: '(not found)' });
    const bad = cli(cluster, ['get', '']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/INVALID_KEY|INVALID_ARGUMENT/);
    expect(cli(cluster, ['incr', 'cli/n', '41']).stdout).toMatch(/41/);
    expect(cli(cluster, ['incr', 'cli/n']).stdout).toMatch(/42/);
    const status = cli(cluster, ['cluster', 'status', '--json']);
    expect(status.status).toBe(0);
    const parsed = JSON.parse(status.stdout) as { nodes: unknown[]; partitions: Array<{ id: number; leader: number; replicas: number[]; term: number; range: unknown }> };
    expect(parsed.nodes).toHaveLength(3);
    expect(parsed.partitions).toHaveLength(PARTITIONS);
    for (const partition of parsed.partitions) {
      expect(partition.leader).toBeGreaterThan(0);
      expect(partition.replicas).toHaveLength(3);
    }
  });

  it('reads past revisions until the retention window compacts them (OUT_OF_RANGE, COMPACTED)', async () => {
    const client = cluster.client();
    try {
      const first = await client.put('history/key', 'v0');
      for (let i = 1; i <= 40; i++) await client.put('history/key', `v${i}`);
      const recent = await client.get('history/key');
      const pastRevision = recent.modRevision - 5;
      const past = await client.get('history/key', { revision: pastRevision });
      expect(new TextDecoder().decode(past.value)).toBe('v35');
      let code = '';
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && code === '') {
        await client.get('history/key', { revision: first.revision }).catch((error: { code?: string }) => {
          code = error.code ?? 'unknown';
        });
        if (code === '') await new Promise((r) => setTimeout(r, 200));
      }
      expect(code).toBe('COMPACTED');
    } finally {
      client.close();
    }
  });

  it('a write retried with the same request id applies once (exactly-once increments)', async () => {
    const client = cluster.client();
    try {
      const first = await client.increment('dedup/counter', 5, { requestId: 'retry-1' });
      const retry = await client.increment('dedup/counter', 5, { requestId: 'retry-1' });
      expect(retry.value).toBe(first.value);
      expect(retry.revision).toBe(first.revision);
      const other = await client.increment('dedup/counter', 5, { requestId: 'retry-2' });
      expect(other.value).toBe(first.value + 5n);
      const put = await client.put('dedup/key', 'a', { ifAbsent: true, requestId: 'put-1' });
      const putRetry = await client.put('dedup/key', 'a', { ifAbsent: true, requestId: 'put-1' });
      expect(put.applied).toBe(true);
      expect(putRetry.applied).toBe(true); // the first attempt's answer, not a failed condition
      await expect(client.increment('dedup/counter', 1, { requestId: 'x'.repeat(65) })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      client.close();
    }
  });

  it('answers ClusterInfo with the documented hash and range table from every node', async () => {
    const clusterIds = new Set<string>();
    for (const address of cluster.endpoints) {
      const client = cluster.client([address]);
      try {
        const info = await client.clusterInfo();
        // A new cluster routes by murmur3_32 (src/keys/bucket-hash.ts); every node names the same cluster.
        expect(info.hashFunction).toBe('murmur3_32');
        expect(info.clusterId).toMatch(/^[0-9a-f]{32}$/);
        clusterIds.add(info.clusterId as string);
        expect(info.partitions[0]?.rangeStart).toBe(0);
        expect(info.partitions[PARTITIONS - 1]?.rangeEnd).toBe(2 ** 32);
      } finally {
        client.close();
      }
    }
    expect(clusterIds.size).toBe(1);
  });
});
