/**
 * Locks with fencing tokens and lease attach in transactions and scripts, on a real three-node
 * cluster (issue 21):
 * - three waiters are served in the order they arrived, with strictly increasing tokens;
 * - a holder that stops keeping its lease alive loses the lock to the next waiter within the TTL;
 * - a stale holder's fenced write is refused (FENCED) after the newer holder wrote, in a put, a
 *   transaction and a script alike;
 * - a transaction's put and a script's `set ... lease` attach a lease; a bad lease fails the whole
 *   commit (nothing changes); bad input is refused with stable codes;
 * - the CLI: atoll lock NAME -- CMD (token in $ATOLL_FENCING_TOKEN, exit code passed on) and
 *   atoll put --if-fence.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run, type CliIo } from '../../src/cli/run.js';
import { partitionOfBucket } from '../../src/keys/partition-table.js';
import type { HeldLock } from '../../src/client/index.js';
import { LocalCluster } from './local-cluster.js';

const PARTITIONS = 3;
const TTL_MS = 3_000;

async function until(check: () => Promise<boolean> | boolean, timeoutMs: number, what: string): Promise<void> {
  const giveUpAt = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > giveUpAt) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('locks with fencing tokens', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: PARTITIONS });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('serves three waiters in arrival order, with increasing fencing tokens', async () => {
    const client = cluster.client();
    const first = await client.lock('order', { ttlMs: TTL_MS });
    const granted: string[] = [];
    const waiters: Array<Promise<HeldLock>> = [];
    for (const name of ['second', 'third']) {
      const before = (await client.getByPrefix('locks/order/')).items.length;
      waiters.push(
        client.lock('order', { ttlMs: TTL_MS }).then((held) => {
          granted.push(name);
          return held;
        }),
      );
      // The next waiter queues only after this one's key exists, so the arrival order is known.
      await until(async () => (await client.getByPrefix('locks/order/')).items.length > before, 10_000, `${name} to queue`);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(granted).toEqual([]);
    await first.unlock();
    const second = await waiters[0]!;
    expect(granted).toEqual(['second']);
    await second.unlock();
    const third = await waiters[1]!;
    expect(granted).toEqual(['second', 'third']);
    expect(first.fencingToken).toBeLessThan(second.fencingToken);
    expect(second.fencingToken).toBeLessThan(third.fencingToken);
    expect(second.grantRevision).toBeGreaterThan(second.fencingToken);
    await third.unlock();
    expect((await client.getByPrefix('locks/order/')).items).toEqual([]);
    client.close();
  }, 60_000);

  it("a holder's lost lease passes the lock on within the TTL; its stale fenced writes are refused", async () => {
    const staleClient = cluster.client();
    const client = cluster.client();
    const stale = await staleClient.lock('fenced', { ttlMs: TTL_MS });
    await staleClient.put('data/guarded', 'from the first holder', { ifFence: stale.fencingToken });
    const waiting = client.lock('fenced', { ttlMs: TTL_MS });
    // The holder stops keeping its lease alive (a stalled process); it still thinks it holds the lock.
    const stoppedAt = Date.now();
    stale.lease.close();
    const newer = await waiting;
    // A new leader may restart the TTL once; a leader round on top.
    expect(Date.now() - stoppedAt).toBeLessThan(2 * TTL_MS + 2_000);
    expect(newer.fencingToken).toBeGreaterThan(stale.fencingToken);
    expect((await client.put('data/guarded', 'from the second holder', { ifFence: newer.fencingToken })).applied).toBe(true);

    // The stale holder's writes, in every form, are refused and change nothing.
    await expect(staleClient.put('data/guarded', 'stale', { ifFence: stale.fencingToken })).rejects.toMatchObject({ code: 'FENCED' });
    const tx = await staleClient.beginTransaction('data');
    await tx.put('data/other', 'x');
    await tx.put('data/guarded', 'stale', { ifFence: stale.fencingToken });
    await expect(tx.commit()).rejects.toMatchObject({ code: 'FENCED' });
    await expect(
      staleClient.executeScript('set "data/other" "y"\nset "data/guarded" "stale" fence @token', { params: { token: stale.fencingToken } }),
    ).rejects.toMatchObject({ code: 'FENCED' });
    expect((await client.get('data/guarded')).text()).toBe('from the second holder');
    expect((await client.get('data/other')).found).toBe(false);
    // The newer holder's own token still passes.
    expect((await client.put('data/guarded', 'again', { ifFence: newer.fencingToken })).applied).toBe(true);
    await newer.unlock();
    staleClient.close();
    client.close();
  }, 60_000);

  it('a transaction and a script attach keys to a lease; a bad lease fails the whole commit', async () => {
    const client = cluster.client();
    const lease = await client.lease(20_000);
    const tx = await client.beginTransaction('svc');
    await tx.put('svc/tx', 'up', { lease });
    await tx.put('svc/plain', 'stays');
    await tx.commit();
    const id = await lease.idFor('svc/x');
    await client.executeScript('set "svc/script" "up" lease @lease', { params: { lease: id } });
    expect((await client.get('svc/tx')).found).toBe(true);
    expect((await client.get('svc/script')).found).toBe(true);
    expect((await client.leaseCall({ action: 'info', lease: id })).keys.sort()).toEqual(['svc/script', 'svc/tx']);
    await lease.revoke();
    expect((await client.get('svc/tx')).found).toBe(false);
    expect((await client.get('svc/script')).found).toBe(false);
    expect((await client.get('svc/plain')).found).toBe(true);

    // An ended lease: LEASE_NOT_FOUND, and the transaction's other write did not happen either.
    const ended = await client.beginTransaction('svc');
    await ended.put('svc/a', '1');
    await ended.put('svc/b', '2', { lease: id });
    await expect(ended.commit()).rejects.toMatchObject({ code: 'LEASE_NOT_FOUND' });
    await expect(client.executeScript('set "svc/a" "1"\nset "svc/b" "2" lease @lease', { params: { lease: id } })).rejects.toMatchObject({ code: 'LEASE_NOT_FOUND' });
    expect((await client.get('svc/a')).found).toBe(false);
    // A lease of another partition: LEASE_WRONG_PARTITION.
    const svcPartition = partitionOfBucket('svc', PARTITIONS);
    const otherBucket = ['b0', 'b1', 'b2', 'b3', 'b4', 'b5', 'b6', 'b7'].find((bucket) => partitionOfBucket(bucket, PARTITIONS) !== svcPartition)!;
    const other = await client.leaseCall({ action: 'grant', key: otherBucket, ttlMs: 5_000 });
    const wrong = await client.beginTransaction('svc');
    await wrong.put('svc/a', '1', { lease: other.lease });
    await expect(wrong.commit()).rejects.toMatchObject({ code: 'LEASE_WRONG_PARTITION' });
    await expect(client.executeScript('set "svc/a" "1" lease @lease', { params: { lease: other.lease } })).rejects.toMatchObject({ code: 'LEASE_WRONG_PARTITION' });
    expect((await client.get('svc/a')).found).toBe(false);
    client.close();
  }, 60_000);

  it('refuses bad input with stable codes', async () => {
    const client = cluster.client();
    await expect(client.lock('')).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(client.lock('x', { bucket: 'a/b' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(client.put('data/x', 'v', { ifFence: 0 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(client.put('data/x', 'v', { ifFence: -3 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await expect(client.executeScript('set "data/x" "v" fence "seven"')).rejects.toMatchObject({ code: 'SCRIPT_ERROR' });
    await expect(client.executeScript('set "data/x" "v" lease 7')).rejects.toMatchObject({ code: 'SCRIPT_ERROR' });
    expect((await client.get('data/x')).found).toBe(false);
    // An aborted wait leaves the line: its key goes with its lease.
    const holder = await client.lock('abort', { ttlMs: TTL_MS });
    const abort = new AbortController();
    const waiting = client.lock('abort', { ttlMs: TTL_MS, signal: abort.signal });
    await until(async () => (await client.getByPrefix('locks/abort/')).items.length === 2, 10_000, 'the waiter to queue');
    abort.abort(new Error('gave up'));
    await expect(waiting).rejects.toThrow('gave up');
    await until(async () => (await client.getByPrefix('locks/abort/')).items.length === 1, 10_000, 'the waiter to leave');
    await holder.unlock();
    client.close();
  }, 60_000);

  it('atoll lock NAME -- CMD runs the command holding the lock; atoll put --if-fence', async () => {
    const atoll = async (...argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> => {
      let stdout = '';
      let stderr = '';
      const io: CliIo = { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env: { ATOLL_ENDPOINTS: [...cluster.addresses.values()].join(',') } };
      const code = await run(argv, io);
      return { code, stdout, stderr };
    };
    const dir = mkdtempSync(join(tmpdir(), 'atoll-lock-cli-'));
    try {
      const file = join(dir, 'token');
      expect((await atoll('lock', 'cli', '--ttl', '5000', '--', 'sh', '-c', `echo "$ATOLL_FENCING_TOKEN $ATOLL_LOCK_KEY" > ${file}`)).code).toBe(0);
      const [token, key] = readFileSync(file, 'utf8').trim().split(' ');
      expect(Number(token)).toBeGreaterThan(0);
      expect(key).toMatch(/^locks\/cli\/\d+\.\d+$/);
      expect((await atoll('lock', 'cli', '--', 'sh', '-c', 'exit 7')).code).toBe(7);
      // Each run unlocked on its way out.
      const client = cluster.client();
      expect((await client.getByPrefix('locks/cli/')).items).toEqual([]);
      client.close();
      // A newer token wrote the key: this token is stale now.
      expect((await atoll('put', 'data/cli', 'v', '--if-fence', String(Number(token) + 1))).code).toBe(0);
      const stale = await atoll('put', 'data/cli', 'w', '--if-fence', token!);
      expect(stale.code).toBe(2);
      expect(stale.stderr).toMatch(/^error FENCED: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
