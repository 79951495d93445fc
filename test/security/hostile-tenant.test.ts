/**
 * Hostile tenants on real three-node clusters (issue 17, "Tenant isolation, on every path").
 *
 * Cluster one runs with an admin token: tenant acme is the victim, tenant globex and a token of the
 * default tenant attack it, and the system tenant's records (tokens) are a target too. Cluster two
 * runs without authentication: the default tenant tries to escape into `\0system\0...`.
 *
 * Every probe asserts the precise error (gRPC status and `atoll-code`), and each block ends by
 * checking the victim's data is intact and that no node restarted. Calls that must be forwarded go
 * to a node that does not lead the target partition.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient, AtollClientError } from '../../src/client/index.js';
import { ClusterPoller, topSnapshot, type TopSnapshot } from '../../src/cli/top.js';
import { partitionOfBucket } from '../../src/keys/partition-table.js';
import { newToken } from '../../src/tenancy/token.js';
import { LocalCluster } from '../integration/local-cluster.js';
import { genericKvClient, type GenericKv } from '../integration/plain-grpc.js';

const root = resolve(import.meta.dirname, '../..');
const cli = join(root, 'dist/src/cli/atoll.js');
const runFile = promisify(execFile);
const PARTITIONS = 8;
const INVALID_ARGUMENT = grpc.status.INVALID_ARGUMENT;

/** Keys that would name another tenant's or the system tenant's data, and U+0000 not in first place. */
const keyProbes = ['\u0000acme\u0000users/alice', '\u0000system\u0000tokens/x', 'users/\u0000acme\u0000', 'us\u0000ers/alice'];
const prefixProbes = ['\u0000acme\u0000users', '\u0000system\u0000tokens', '\u0000acme\u0000users/', 'users/\u0000', 'users\u0000'];

type Refusal = { code: number; atollCode: unknown };

function callWith(client: GenericKv, method: string, request: object, token?: string): Promise<Record<string, unknown>> {
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set('authorization', `Bearer ${token}`);
  return new Promise((resolveCall, reject) => {
    const invoke = client[method] as unknown as (...args: unknown[]) => void;
    invoke.call(client, request, metadata, { deadline: Date.now() + 10_000 }, (error: grpc.ServiceError | null, response: Record<string, unknown>) =>
      error ? reject(error) : resolveCall(response),
    );
  });
}

async function refusal(promise: Promise<unknown>): Promise<Refusal> {
  const error = (await promise.then(
    () => undefined,
    (e: unknown) => e,
  )) as grpc.ServiceError | AtollClientError | undefined;
  expect(error, 'the call should have been refused').toBeDefined();
  if (error instanceof AtollClientError) return { code: error.grpcStatusCode, atollCode: error.code };
  return { code: (error as grpc.ServiceError).code, atollCode: (error as grpc.ServiceError).metadata?.get('atoll-code')[0] };
}

const invalidKey: Refusal = { code: INVALID_ARGUMENT, atollCode: 'INVALID_KEY' };
const invalidTransaction: Refusal = { code: INVALID_ARGUMENT, atollCode: 'INVALID_TRANSACTION' };

/** The handle with one field of its JSON changed, everything else (the MAC, if any) kept. */
function alteredHandle(text: string, change: (json: Record<string, unknown>) => void): string {
  const parts = text.split('.');
  const json = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as Record<string, unknown>;
  change(json);
  parts[1] = Buffer.from(JSON.stringify(json)).toString('base64url');
  return parts.join('.');
}

async function atoll(cluster: LocalCluster, args: string[], token?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { ...process.env, ATOLL_ENDPOINTS: cluster.endpoints.join(','), ATOLL_TOKEN: token ?? '' };
  return runFile(process.execPath, [cli, '--timeout', '10000', ...args], { env, timeout: 30_000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (error: { code?: number; stdout?: string; stderr?: string }) => ({ code: Number(error.code ?? -1), stdout: error.stdout ?? '', stderr: error.stderr ?? '' }),
  );
}

function pidsOf(cluster: LocalCluster): Map<number, number | undefined> {
  return new Map([...cluster.processes].map(([id, child]) => [id, child.pid]));
}

function expectNoRestart(cluster: LocalCluster, pids: Map<number, number | undefined>): void {
  for (const [id, child] of cluster.processes) {
    expect(child.pid, `node ${id} was restarted`).toBe(pids.get(id));
    expect(child.exitCode, `node ${id} exited`).toBeNull();
  }
}

describe('hostile tenants on a cluster with authentication', () => {
  let cluster: LocalCluster;
  let pids: Map<number, number | undefined>;
  let admin: AtollClient;
  let acme: AtollClient;
  let globex: AtollClient;
  let plain: AtollClient;
  const tokens: Record<string, string> = {};
  const adminToken = newToken();
  /** A raw gRPC client on a node that does not lead acme's `users` partition (so every call to it is forwarded). */
  let forwarding: GenericKv;
  let acmeUsersPartition: number;

  const victimIntact = async (): Promise<void> => {
    const alice = await acme.get('users/alice');
    expect(alice.text()).toBe('acme-secret');
    expect(alice.expiresAtMs).toBe(0);
    expect((await acme.getByPrefix('users')).items.map((item) => [item.key, item.text()])).toEqual([
      ['users/alice', 'acme-secret'],
      ['users/bob', 'acme-bob'],
    ]);
    expect((await acme.get('counters/c')).text()).toBe('7');
    expect(pidsOf(cluster)).toEqual(pids);
    expectNoRestart(cluster, pids);
  };

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atoll-hostile-tenant-'));
    const file = join(dir, 'admin-token');
    writeFileSync(file, `${adminToken}\n`, { mode: 0o600 });
    cluster = await LocalCluster.start({ partitions: PARTITIONS, extraArgs: ['--admin-token-file', file] });
    pids = pidsOf(cluster);
    admin = new AtollClient({ endpoints: cluster.endpoints, token: adminToken });
    for (const [name, tenant] of [
      ['acme', 'acme'],
      ['globex', 'globex'],
      ['plain', 'default'],
    ] as const) {
      tokens[name] = (await admin.authCall('CreateToken', { tenant, role: 'readwrite', name }))['token'] as string;
    }
    acme = new AtollClient({ endpoints: cluster.endpoints, token: tokens['acme']! });
    globex = new AtollClient({ endpoints: cluster.endpoints, token: tokens['globex']! });
    plain = new AtollClient({ endpoints: cluster.endpoints, token: tokens['plain']! });
    await acme.put('users/alice', 'acme-secret');
    await acme.put('users/bob', 'acme-bob');
    await acme.increment('counters/c', 7);
    acmeUsersPartition = partitionOfBucket('\u0000acme\u0000users', PARTITIONS);
    const leader = (await admin.clusterInfo()).partitions[acmeUsersPartition]!.leader;
    forwarding = genericKvClient([...cluster.addresses].find(([id]) => id !== leader)![1]);
  }, 90_000);

  afterAll(async () => {
    forwarding?.close();
    for (const client of [admin, acme, globex, plain]) client?.close();
    await cluster?.stop();
  });

  it("refuses the issue's reproduction through the CLI: a default-tenant token reading acme's and the system tenant's prefixes", async () => {
    // Each CLI run starts a Node process (seconds on a loaded machine): the two commands, and a key.
    const runs: Array<[string, string]> = [
      [tokens['plain']!, 'return get by prefix "\\0acme\\0users"'],
      [tokens['plain']!, 'return get by prefix "\\0system\\0tokens"'],
      [tokens['globex']!, 'return get "\\0acme\\0users/alice"'],
    ];
    for (const [token, script] of runs) {
      const result = await atoll(cluster, ['txn', '-e', script], token);
      expect(result.code, `${script}: ${result.stdout}`).toBe(2);
      expect(result.stderr).toMatch(/^error INVALID_KEY: /);
      expect(result.stdout).not.toMatch(/acme-secret|tenant/);
    }
    await victimIntact();
  }, 60_000);

  it('refuses U+0000 in keys and prefixes of every KV call, through a forwarding node and over the KV stream', async () => {
    for (const token of [tokens['plain']!, tokens['globex']!]) {
      for (const key of keyProbes) {
        expect(await refusal(callWith(forwarding, 'Get', { key }, token))).toEqual(invalidKey);
        expect(await refusal(callWith(forwarding, 'Exists', { key }, token))).toEqual(invalidKey);
        expect(await refusal(callWith(forwarding, 'Put', { key, value: Buffer.from('stolen') }, token))).toEqual(invalidKey);
        expect(await refusal(callWith(forwarding, 'Delete', { key }, token))).toEqual(invalidKey);
        expect(await refusal(callWith(forwarding, 'Increment', { key, delta: '1' }, token))).toEqual(invalidKey);
        expect(await refusal(callWith(forwarding, 'Extend', { key, ttlMs: '1000' }, token))).toEqual(invalidKey);
        expect(await refusal(callWith(forwarding, 'BeginTransaction', { key }, token))).toEqual(invalidKey);
      }
      for (const prefix of prefixProbes) expect(await refusal(callWith(forwarding, 'GetByPrefix', { prefix }, token))).toEqual(invalidKey);
    }
    // The client library sends over KV.Stream.
    for (const attacker of [plain, globex]) {
      for (const key of keyProbes) {
        expect(await refusal(attacker.get(key))).toEqual(invalidKey);
        expect(await refusal(attacker.exists(key))).toEqual(invalidKey);
        expect(await refusal(attacker.put(key, 'stolen'))).toEqual(invalidKey);
        expect(await refusal(attacker.delete(key))).toEqual(invalidKey);
        expect(await refusal(attacker.increment(key))).toEqual(invalidKey);
        expect(await refusal(attacker.extend(key, 1_000))).toEqual(invalidKey);
      }
      for (const prefix of prefixProbes) expect(await refusal(attacker.getByPrefix(prefix))).toEqual(invalidKey);
      // A sharded counter's name becomes its shard keys: refused before any round trip (the node refuses the keys too).
      for (const name of ['likes\u0000', '\u0000acme\u0000likes']) {
        expect(() => attacker.shardedCounter(name, { shards: 2 })).toThrowError(expect.objectContaining({ code: 'INVALID_KEY' }) as Error);
      }
      expect(await refusal(attacker.increment('\u0000acme\u0000likes~0~shard/count'))).toEqual(invalidKey);
    }
    await victimIntact();
  }, 60_000);

  it('refuses a crafted page token that points outside the caller\'s prefix', async () => {
    for (const after of ['\u0000acme\u0000users/', '\u0000acme\u0000users/a', '\u0000system\u0000tokens/']) {
      const pageToken = Buffer.from(JSON.stringify({ r: 0, a: after })).toString('base64url');
      expect(await refusal(callWith(forwarding, 'GetByPrefix', { prefix: 'users', pageToken }, tokens['globex']))).toEqual({
        code: INVALID_ARGUMENT,
        atollCode: 'INVALID_ARGUMENT',
      });
    }
    await victimIntact();
  });

  it('scripts: literal, computed, parameter and escaped keys and prefixes with U+0000 are refused; the routing bucket too', async () => {
    const scripts: Array<{ script: string; bucket?: string; params?: string }> = [
      { script: 'return get by prefix "\\0acme\\0users"' },
      { script: 'return get by prefix "\\u0000system\\u0000tokens"', bucket: 'users' },
      { script: 'return get by prefix ("\\0acme" + "\\0users")', bucket: 'users' },
      { script: 'let p = concat("\\u{0}acme", "\\u0000", "users")\nreturn get by prefix p', bucket: 'users' },
      { script: 'return get by prefix @p', params: JSON.stringify({ p: '\u0000acme\u0000users' }) },
      { script: 'return get by prefix @p', bucket: 'users', params: JSON.stringify({ p: '\u0000acme\u0000users' }) },
      { script: 'return get (@k)', bucket: 'users', params: JSON.stringify({ k: '\u0000acme\u0000users/alice' }) },
      { script: 'set ("\\0acme\\0" + "users/alice") "stolen"\nreturn 1', bucket: 'users' },
      { script: 'delete (concat("\\0acme\\0users/", "bob"))\nreturn 1', bucket: 'users' },
      { script: 'incr "users/\\0x" by 1\nreturn 1' },
      { script: 'return 1', bucket: '\u0000acme\u0000users' },
      { script: 'return 1', bucket: 'users\u0000' },
    ];
    for (const token of [tokens['plain']!, tokens['globex']!]) {
      for (const { script, bucket, params } of scripts) {
        const request = { script, ...(bucket !== undefined && { bucket }), ...(params !== undefined && { params: JSON.parse(params) as Record<string, string> }) };
        const wire = {
          script,
          ...(bucket !== undefined && { bucket }),
          ...(params !== undefined && { params: Object.fromEntries(Object.entries(JSON.parse(params) as Record<string, string>).map(([k, v]) => [k, JSON.stringify(v)])) }),
        };
        expect(await refusal(callWith(forwarding, 'ExecuteScript', wire, token)), script).toEqual(invalidKey);
        const client = token === tokens['plain'] ? plain : globex;
        expect(await refusal(client.executeScript(request.script, { ...(request.bucket !== undefined && { bucket: request.bucket }), ...(request.params !== undefined && { params: request.params }) })), script).toEqual(invalidKey);
      }
    }
    await victimIntact();
  }, 60_000);

  it("transactions: keys with U+0000 and another tenant's or a forged handle are refused, on reads and on commit", async () => {
    const begun = await callWith(forwarding, 'BeginTransaction', { key: 'users' }, tokens['globex']);
    const handle = begun['transaction'] as string;
    // Keys with U+0000 in a transaction's reads, writes, read keys and read prefixes.
    for (const key of keyProbes) {
      expect(await refusal(callWith(forwarding, 'Get', { key, transaction: handle }, tokens['globex']))).toEqual(invalidKey);
      expect(await refusal(callWith(forwarding, 'Commit', { transaction: handle, writes: [{ key, value: Buffer.from('x') }] }, tokens['globex']))).toEqual(invalidKey);
      expect(await refusal(callWith(forwarding, 'Commit', { transaction: handle, readKeys: [key] }, tokens['globex']))).toEqual(invalidKey);
    }
    for (const prefix of prefixProbes) {
      expect(await refusal(callWith(forwarding, 'GetByPrefix', { prefix, transaction: handle }, tokens['globex']))).toEqual(invalidKey);
      expect(await refusal(callWith(forwarding, 'Commit', { transaction: handle, readPrefixes: [prefix] }, tokens['globex']))).toEqual(invalidKey);
    }
    const tx = await globex.beginTransaction('users');
    expect(await refusal(tx.get('\u0000acme\u0000users/alice'))).toEqual(invalidKey);
    expect(await refusal(tx.getByPrefix('\u0000acme\u0000users'))).toEqual(invalidKey);

    // Another tenant's handle, genuine: refused to globex and to the default tenant.
    const acmeBegun = await callWith(forwarding, 'BeginTransaction', { key: 'users' }, tokens['acme']);
    const acmeHandle = acmeBegun['transaction'] as string;
    for (const token of [tokens['globex'], tokens['plain']]) {
      expect(await refusal(callWith(forwarding, 'Get', { key: 'users/alice', transaction: acmeHandle }, token))).toEqual(invalidTransaction);
      expect(await refusal(callWith(forwarding, 'GetByPrefix', { prefix: 'users', transaction: acmeHandle }, token))).toEqual(invalidTransaction);
      expect(await refusal(callWith(forwarding, 'Commit', { transaction: acmeHandle, writes: [{ key: 'users/alice', value: Buffer.from('stolen') }] }, token))).toEqual(
        invalidTransaction,
      );
    }
    // Forged: globex's own handle with a field changed (MAC kept), or acme's relabelled as globex's.
    const forgeries = [
      // Each forgery must really change its field (a no-op "forgery" keeps a valid MAC).
      alteredHandle(handle, (json) => (json['r'] = Number(json['r']) === 0 ? 1 : Number(json['r']) - 1)),
      alteredHandle(handle, (json) => (json['p'] = Number(json['p']) === acmeUsersPartition ? (acmeUsersPartition + 1) % PARTITIONS : acmeUsersPartition)),
      alteredHandle(handle, (json) => (json['b'] = '\u0000globex\u0000other')),
      alteredHandle(handle, (json) => (json['t'] = Date.now() + 3_600_000)),
      alteredHandle(handle, (json) => (json['i'] = json['i'] === 'z' ? 's' : 'z')),
      alteredHandle(acmeHandle, (json) => (json['e'] = 'globex')),
    ];
    for (const forged of forgeries) {
      expect(await refusal(callWith(forwarding, 'Get', { key: 'users/x', transaction: forged }, tokens['globex']))).toEqual(invalidTransaction);
      expect(await refusal(callWith(forwarding, 'Commit', { transaction: forged, writes: [{ key: 'users/x', value: Buffer.from('x') }] }, tokens['globex']))).toEqual(
        invalidTransaction,
      );
    }
    expect((await globex.get('users/x')).found).toBe(false);
    // The genuine handles still work for their own tenants.
    await callWith(forwarding, 'Commit', { transaction: handle, writes: [{ key: 'users/own', value: Buffer.from('globex') }] }, tokens['globex']);
    expect((await globex.get('users/own')).text()).toBe('globex');
    const read = await callWith(forwarding, 'Get', { key: 'users/alice', transaction: acmeHandle }, tokens['acme']);
    expect(Buffer.from(read['value'] as Uint8Array).toString()).toBe('acme-secret');
    await victimIntact();
  }, 60_000);

  it("request ids are per tenant: another tenant can neither read acme's recorded result nor pre-empt acme's write", async () => {
    // A globex bucket in the same partition as acme's `users`, so both share one dedup table.
    let bucket = '';
    for (let i = 0; bucket === ''; i++) if (partitionOfBucket(`\u0000globex\u0000g${i}`, PARTITIONS) === acmeUsersPartition) bucket = `g${i}`;

    // Reading: acme's put is recorded under "shared-read"; globex's put with that id must apply.
    const acmePut = await acme.put('users/rid', 'acme-rid', { requestId: 'shared-read' });
    const globexPut = await globex.put(`${bucket}/rid`, 'globex-rid', { requestId: 'shared-read', returnPrevious: true });
    expect(globexPut.revision).not.toBe(acmePut.revision);
    expect(globexPut.previous).toBeUndefined();
    expect((await globex.get(`${bucket}/rid`)).text()).toBe('globex-rid');

    // Pre-empting: globex records "shared-write" first; acme's later increment with it must still apply.
    expect((await globex.increment(`${bucket}/c`, 5, { requestId: 'shared-write' })).value).toBe(5n);
    expect((await acme.increment('users/c', 1, { requestId: 'shared-write' })).value).toBe(1n);
    expect((await acme.get('users/c')).text()).toBe('1');
    // Within a tenant the id still deduplicates (a retry is answered, not applied again).
    expect((await acme.increment('users/c', 1, { requestId: 'shared-write' })).value).toBe(1n);
    expect((await acme.get('users/c')).text()).toBe('1');
    // The default tenant cannot send a scoped id either.
    expect(await refusal(plain.put('users/z', 'v', { requestId: '\u0000acme-id' }))).toEqual({ code: INVALID_ARGUMENT, atollCode: 'INVALID_ARGUMENT' });
    await acme.delete('users/rid');
    await acme.delete('users/c');
    await victimIntact();
  }, 60_000);

  it('hot keys and script buckets appear to their own tenant (without the tag) and to the cluster admin only', async () => {
    // Load: acme reads users/alice and runs scripts in bucket "hotscript"; nobody else does.
    const work: Array<Promise<unknown>> = [];
    for (let i = 0; i < 300; i++) {
      work.push(acme.get('users/alice'));
      if (i % 2 === 0) work.push(acme.executeScript('return 1', { bucket: 'hotscript' }));
      if (work.length >= 32) await Promise.all(work.splice(0));
    }
    await Promise.all(work);
    const keysFor = async (token: string): Promise<string[]> => {
      const poller = new ClusterPoller(cluster.endpoints, { token });
      try {
        const snapshot: TopSnapshot = await topSnapshot(poller, { timeoutMs: 5_000, limit: 100 });
        return snapshot.keys.map((entry) => entry.key);
      } finally {
        poller.close();
      }
    };
    const acmeKeys = await keysFor(tokens['acme']!);
    expect(acmeKeys).toEqual(expect.arrayContaining(['users/alice', 'hotscript']));
    expect(acmeKeys.some((key) => key.includes('\u0000'))).toBe(false);
    for (const token of [tokens['globex']!, tokens['plain']!]) {
      const keys = await keysFor(token);
      expect(keys).not.toContain('users/alice');
      expect(keys).not.toContain('hotscript');
      expect(keys.some((key) => key.includes('\u0000') || key.includes('acme'))).toBe(false);
    }
    expect(await keysFor(adminToken)).toEqual(expect.arrayContaining(['\u0000acme\u0000users/alice', '\u0000acme\u0000hotscript']));
    // The same through the CLI: `atoll top` sends the caller's token.
    const top = await atoll(cluster, ['--json', 'top', '--once', '--limit', '100'], tokens['acme']);
    expect(top.code).toBe(0);
    const cliKeys = (JSON.parse(top.stdout) as TopSnapshot).keys.map((entry) => entry.key);
    expect(cliKeys).toEqual(expect.arrayContaining(['users/alice', 'hotscript']));
    const globexTop = await atoll(cluster, ['--json', 'top', '--once', '--limit', '100'], tokens['globex']);
    expect((JSON.parse(globexTop.stdout) as TopSnapshot).keys.map((entry) => entry.key)).not.toContain('users/alice');
    await victimIntact();
  }, 60_000);
});

describe('the default tenant on a cluster without authentication', () => {
  let cluster: LocalCluster;
  let pids: Map<number, number | undefined>;
  let client: AtollClient;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: 4 });
    pids = pidsOf(cluster);
    client = cluster.client();
    await client.put('users/alice', 'alice');
  }, 60_000);

  afterAll(async () => {
    client?.close();
    await cluster?.stop();
  });

  it('cannot reach \\0system\\0... or any key with U+0000: CLI, KV calls, scripts', async () => {
    for (const script of ['return get by prefix "\\0system\\0tokens"', 'set ("\\0sys" + "tem\\0tokens/x") "forged"\nreturn 1']) {
      const result = await atoll(cluster, ['txn', '-e', script, '--bucket', 'users']);
      expect(result.code, script).toBe(2);
      expect(result.stderr).toMatch(/^error INVALID_KEY: /);
    }
    for (const key of keyProbes) {
      expect(await refusal(client.get(key))).toEqual(invalidKey);
      expect(await refusal(client.put(key, 'x'))).toEqual(invalidKey);
    }
    for (const prefix of prefixProbes) expect(await refusal(client.getByPrefix(prefix))).toEqual(invalidKey);
    expect(await refusal(client.executeScript('return get by prefix @p', { params: { p: '\u0000system\u0000tokens' } }))).toEqual(invalidKey);
    expect((await client.get('users/alice')).text()).toBe('alice');
    expect((await client.getByPrefix('users')).items.map((item) => item.key)).toEqual(['users/alice']);
    expectNoRestart(cluster, pids);
  }, 60_000);
});
