/**
 * Leases on a real three-node cluster (issue 21), from the client: service registration with
 * client.register, a registry watcher, and the two ways a registration ends.
 * - A kept-alive registration survives a kill -9 of its partition's leader (the new leader gives
 *   the lease a full TTL from its takeover and the client's keepalives reach it).
 * - When the service dies (its client stops keeping the lease alive), its entry drops out within
 *   the TTL (plus a leader round), and the watcher sees a delete with reason "lease".
 * - revoke deletes every key of a lease spanning two buckets; a lease id of another partition is refused.
 * - The CLI: atoll lease grant|keepalive|info|revoke and atoll put --lease.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type CliIo } from '../../src/cli/run.js';
import { partitionOf } from '../../src/keys/partition-table.js';
import { LocalCluster } from './local-cluster.js';

const PARTITIONS = 3;
const BUCKET = 'services';
const TTL_MS = 4_000;

async function until(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<number> {
  const startedAt = Date.now();
  while (!(await check())) {
    if (Date.now() - startedAt > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return Date.now() - startedAt;
}

describe('leases for service discovery', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: PARTITIONS });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('a registration survives a leader kill while kept alive, and drops out within its TTL once the service dies', async () => {
    const reader = cluster.client();
    const service = cluster.client();
    const partition = partitionOf(`${BUCKET}/auth`, PARTITIONS);
    const start = (await reader.put(`${BUCKET}/start`, 'x')).revision;
    const deletes: Array<{ key: string; reason: string }> = [];
    const abort = new AbortController();
    const watching = (async () => {
      for await (const item of reader.watch(BUCKET, { fromRevision: start, signal: abort.signal })) {
        if (item.type === 'delete') deletes.push({ key: item.key, reason: item.reason });
      }
    })().catch(() => undefined);

    const lease = await service.register(`${BUCKET}/auth`, 'localhost:8081', { ttlMs: TTL_MS });
    let lost = false;
    lease.onLost(() => (lost = true));
    expect((await reader.get(`${BUCKET}/auth`)).found).toBe(true);

    // kill -9 the partition's leader; the entry stays for two more TTLs while the service lives.
    const leader = Number((await reader.clusterInfo()).partitions[partition]?.leader ?? 0);
    expect(leader).toBeGreaterThan(0);
    await cluster.kill(leader);
    const aliveUntil = Date.now() + 2 * TTL_MS;
    while (Date.now() < aliveUntil) {
      expect((await reader.get(`${BUCKET}/auth`, { timeoutMs: 8_000 })).found).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(lost).toBe(false);
    cluster.startNode(leader);

    // The service dies: no more keepalives. The entry goes within the TTL and a leader round,
    // counted from the later of the last keepalive and the last leader change: a new leader gives
    // every lease a full TTL from its takeover (etcd's rule), and the node restarted above may take
    // the partition's leadership back (the leader balancer) after the service died.
    service.close();
    let lastChangeAt = Date.now();
    let lastLeader = Number((await reader.clusterInfo()).partitions[partition]?.leader ?? 0);
    await until(
      async () => {
        const now = Number((await reader.clusterInfo()).partitions[partition]?.leader ?? 0);
        if (now !== lastLeader) [lastLeader, lastChangeAt] = [now, Date.now()];
        return !(await reader.get(`${BUCKET}/auth`)).found;
      },
      3 * TTL_MS + 10_000,
      'the entry to drop out',
    );
    expect(Date.now() - lastChangeAt).toBeLessThanOrEqual(TTL_MS + 3_000);
    await until(() => deletes.length > 0, 5_000, 'the watcher to see the delete');
    expect(deletes).toEqual([{ key: `${BUCKET}/auth`, reason: 'lease' }]);
    abort.abort();
    await watching;
  }, 60_000);

  it('revoke deletes every key of a lease spanning buckets; a lease of another partition is refused', async () => {
    const client = cluster.client();
    const lease = await client.lease(10_000);
    await client.put('alpha/one', '1', { lease });
    await client.put('beta/two', '2', { lease });
    await client.put('alpha/plain', 'stays');
    await lease.revoke();
    expect((await client.get('alpha/one')).found).toBe(false);
    expect((await client.get('beta/two')).found).toBe(false);
    expect((await client.get('alpha/plain')).found).toBe(true);
    await expect(client.put('alpha/three', '3', { lease })).rejects.toMatchObject({ code: 'LEASE_NOT_FOUND' });

    // A raw lease id of one partition cannot hold a key of another.
    const granted = await client.leaseCall({ action: 'grant', key: 'alpha', ttlMs: 5_000 });
    let other = 'b0';
    for (let index = 0; partitionOf(`${other}/k`, PARTITIONS) === partitionOf('alpha/k', PARTITIONS); index++) other = `b${index}`;
    await expect(client.put(`${other}/k`, 'v', { lease: granted.lease })).rejects.toMatchObject({ code: 'LEASE_WRONG_PARTITION' });
    await expect(client.leaseCall({ action: 'keepAlive', lease: 'nonsense' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await client.leaseCall({ action: 'revoke', lease: granted.lease });
  }, 30_000);

  it('atoll lease grant, put --lease, keepalive, info and revoke', async () => {
    const atoll = async (...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
      let stdout = '';
      let stderr = '';
      const io: CliIo = { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env: { ATOLL_ENDPOINTS: [...cluster.addresses.values()].join(',') } };
      const code = await run(argv, io);
      return { code, stdout, stderr };
    };
    const granted = await atoll('lease', 'grant', 'cli', '20000');
    expect(granted.code).toBe(0);
    const id = granted.stdout.trim();
    expect(id).toMatch(/^\d+\.\d+$/);
    expect((await atoll('put', 'cli/svc', 'host:1', '--lease', id)).code).toBe(0);
    expect(await atoll('lease', 'keepalive', id)).toMatchObject({ code: 0, stdout: 'kept alive for 20000 ms\n' });
    const info = await atoll('--json', 'lease', 'info', id);
    expect(JSON.parse(info.stdout)).toMatchObject({ lease: id, ttlMs: 20000, keys: ['cli/svc'] });
    expect((await atoll('lease', 'revoke', id)).stdout).toMatch(/^revoked at revision \d+/);
    expect((await atoll('get', 'cli/svc')).code).toBe(1);
    const gone = await atoll('lease', 'keepalive', id);
    expect(gone.code).toBe(2);
    expect(gone.stderr).toMatch(/^error LEASE_NOT_FOUND: /);
    expect((await atoll('lease', 'grant', 'cli', '0')).code).not.toBe(0);
  }, 30_000);
});
