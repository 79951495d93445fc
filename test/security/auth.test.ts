/**
 * Tenants and access control on three real nodes started with an admin token: tenant-scoped keys,
 * cross-tenant probes, every authentication and authorisation failure through a node that does not
 * lead the key's partition, the peer secret, and quotas.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient, AtollClientError } from '../../src/client/index.js';
import { partitionOf } from '../../src/keys/partition-table.js';
import { newToken } from '../../src/tenancy/token.js';
import { LocalCluster } from '../integration/local-cluster.js';
import { genericKvClient, type GenericKv } from '../integration/plain-grpc.js';

const root = resolve(import.meta.dirname, '../..');
const PARTITIONS = 8;
const adminToken = newToken();

function callWith(client: GenericKv, method: string, request: object, token?: string): Promise<Record<string, unknown>> {
  const metadata = new grpc.Metadata();
  if (token !== undefined) metadata.set('authorization', token.startsWith('Bearer') ? token : `Bearer ${token}`);
  return new Promise((resolveCall, reject) => {
    const invoke = client[method] as unknown as (...args: unknown[]) => void;
    invoke.call(client, request, metadata, { deadline: Date.now() + 5_000 }, (error: grpc.ServiceError | null, response: Record<string, unknown>) =>
      error ? reject(error) : resolveCall(response),
    );
  });
}

async function statusOf(promise: Promise<unknown>): Promise<{ code: number; atollCode: unknown }> {
  const error = (await promise.then(
    () => undefined,
    (e: unknown) => e,
  )) as grpc.ServiceError | undefined;
  expect(error, 'the call should have failed').toBeDefined();
  return { code: error!.code, atollCode: error!.metadata.get('atoll-code')[0] };
}

async function clientError(promise: Promise<unknown>): Promise<AtollClientError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AtollClientError);
  return error as AtollClientError;
}

describe('tenants and access control', () => {
  let cluster: LocalCluster;
  let admin: AtollClient;
  const tokens: Record<string, string> = {};
  const clients: AtollClient[] = [];
  const clientFor = (token: string): AtollClient => {
    const client = new AtollClient({ endpoints: cluster.endpoints, token });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atoll-auth-'));
    const file = join(dir, 'admin-token');
    writeFileSync(file, `${adminToken}\n`, { mode: 0o600 });
    cluster = await LocalCluster.start({ partitions: PARTITIONS, extraArgs: ['--admin-token-file', file] });
    admin = clientFor(adminToken);
    for (const [name, tenant, role] of [
      ['acmeWriter', 'acme', 'readwrite'],
      ['acmeReader', 'acme', 'read'],
      ['acmeAdmin', 'acme', 'admin'],
      ['globexWriter', 'globex', 'readwrite'],
      ['quotaWriter', 'tiny', 'readwrite'],
      ['rateWriter', 'ratey', 'readwrite'],
    ] as const) {
      const created = await admin.authCall('CreateToken', { tenant, role, name });
      tokens[name] = created['token'] as string;
    }
  }, 60_000);

  afterAll(async () => {
    for (const client of clients) client.close();
    await cluster?.stop();
  });

  it("keeps two tenants' identical keys apart, in every kind of read and write", async () => {
    const acme = clientFor(tokens['acmeWriter']!);
    const globex = clientFor(tokens['globexWriter']!);
    await acme.put('users/user-42', 'acme-alice');
    await globex.put('users/user-42', 'globex-bob');
    expect((await acme.get('users/user-42')).text()).toBe('acme-alice');
    expect((await globex.get('users/user-42')).text()).toBe('globex-bob');
    await acme.put('users/acme-only', 'x');
    expect((await globex.exists('users/acme-only')).exists).toBe(false);
    expect((await globex.getByPrefix('users')).items.map((item) => item.key)).toEqual(['users/user-42']);
    expect((await acme.getByPrefix('users')).items.map((item) => [item.key, item.text()])).toEqual([
      ['users/acme-only', 'x'],
      ['users/user-42', 'acme-alice'],
    ]);
    expect((await globex.increment('users/counter', 5)).value).toBe(5n);
    expect((await acme.get('users/counter')).found).toBe(false);
    // Transactions and scripts are scoped the same way.
    const seen = await globex.transaction('users', async (tx) => (await tx.getByPrefix('users')).map((entry) => entry.key));
    expect(seen.value).toEqual(['users/counter', 'users/user-42']);
    const tx = await acme.beginTransaction('users');
    expect(tx.bucket).toBe('users');
    expect((await tx.get('users/user-42')).text()).toBe('acme-alice');
    await tx.put('users/from-txn', 'acme');
    await tx.commit();
    expect((await globex.get('users/from-txn')).found).toBe(false);
    const script = await globex.executeScript('let u = get "users/user-42"\nset "users/from-script" "globex"\nreturn u');
    expect(script.value).toMatchObject({ key: 'users/user-42', value: 'globex-bob' });
    expect((await acme.get('users/from-script')).found).toBe(false);
    // The default tenant (the admin token) sees none of them.
    expect((await admin.getByPrefix('users')).items).toEqual([]);
  });

  it("cannot name another tenant's keys, whatever it sends", async () => {
    const globex = clientFor(tokens['globexWriter']!);
    for (const probe of ['\u0000acme\u0000users/user-42', '\u0000acme\u0000users']) {
      expect((await clientError(globex.get(probe))).code).toBe('INVALID_KEY');
      expect((await clientError(globex.put(probe, 'stolen'))).code).toBe('INVALID_KEY');
      expect((await clientError(globex.getByPrefix(probe))).code).toBe('INVALID_KEY');
    }
    expect((await clientError(globex.executeScript('return get "\\u0000acme\\u0000users/user-42"', { bucket: 'users' }))).code).toMatch(/INVALID_KEY|SCRIPT_ERROR/);
    // A transaction handle begun by acme is refused to globex.
    const kv = genericKvClient(cluster.endpoints[0]!);
    try {
      const begun = await callWith(kv, 'BeginTransaction', { key: 'users' }, tokens['acmeWriter']);
      const refused = await statusOf(callWith(kv, 'Get', { key: 'users/user-42', transaction: begun['transaction'] }, tokens['globexWriter']));
      expect(refused).toEqual({ code: grpc.status.INVALID_ARGUMENT, atollCode: 'INVALID_TRANSACTION' });
    } finally {
      kv.close();
    }
    expect((await clientFor(tokens['acmeWriter']!).get('users/user-42')).text()).toBe('acme-alice');
  });

  it('refuses missing, malformed, unknown and revoked tokens and too-low roles through a node that does not lead the key', async () => {
    const info = await admin.clusterInfo();
    // The tenant's key is internal; any node but the leader of the internal key's partition will do,
    // and the admin's default-tenant key gives a node that certainly forwards for that partition.
    const leader = info.partitions[partitionOf('users', PARTITIONS)]!.leader;
    const address = [...cluster.addresses].find(([id]) => id !== leader)![1];
    const kv = genericKvClient(address);
    try {
      const put = { key: 'users/x', value: Buffer.from('v') };
      expect(await statusOf(callWith(kv, 'Put', put))).toEqual({ code: grpc.status.UNAUTHENTICATED, atollCode: 'UNAUTHENTICATED' });
      expect(await statusOf(callWith(kv, 'Put', put, 'Bearer not-a-token'))).toEqual({ code: grpc.status.UNAUTHENTICATED, atollCode: 'UNAUTHENTICATED' });
      expect(await statusOf(callWith(kv, 'Put', put, newToken()))).toEqual({ code: grpc.status.UNAUTHENTICATED, atollCode: 'UNAUTHENTICATED' });
      expect(await statusOf(callWith(kv, 'Put', put, tokens['acmeReader']))).toEqual({ code: grpc.status.PERMISSION_DENIED, atollCode: 'PERMISSION_DENIED' });
      expect(await statusOf(callWith(kv, 'ExecuteScript', { script: 'return 1', bucket: 'users' }, tokens['acmeReader']))).toMatchObject({ code: grpc.status.PERMISSION_DENIED });
      const read = await callWith(kv, 'Get', { key: 'users/user-42' }, tokens['acmeReader']);
      expect(Buffer.from(read['value'] as Uint8Array).toString()).toBe('acme-alice');
      // A stream carries the identity of the call that opened it.
      const readerClient = clientFor(tokens['acmeReader']!);
      expect((await clientError(readerClient.put('users/y', 'v'))).code).toBe('PERMISSION_DENIED');
      // Tenant admins manage only their own tenant; cluster operations need the cluster admin.
      const acmeAdmin = clientFor(tokens['acmeAdmin']!);
      expect((await clientError(acmeAdmin.authCall('CreateToken', { tenant: 'globex', role: 'admin' }))).code).toBe('PERMISSION_DENIED');
      expect((await clientError(clientFor(tokens['acmeWriter']!).authCall('CreateToken', { tenant: 'acme', role: 'read' }))).code).toBe('PERMISSION_DENIED');
      expect((await clientError(acmeAdmin.transferLeader(0, 1))).code).toBe('PERMISSION_DENIED');
      const listed = (await acmeAdmin.authCall('ListTokens'))['tokens'] as Array<{ tenant: string; id: string; name: string }>;
      expect(new Set(listed.map((token) => token.tenant))).toEqual(new Set(['acme']));
      // Revoked: refused by every node within the cache time.
      const victim = await acmeAdmin.authCall('CreateToken', { tenant: 'acme', role: 'read', name: 'victim' });
      expect((await callWith(kv, 'Exists', { key: 'users/user-42' }, victim['token'] as string))['exists']).toBe(true);
      await acmeAdmin.authCall('RevokeToken', { id: (victim['info'] as { id: string }).id });
      const deadline = Date.now() + 5_000;
      let revokedStatus: { code: number; atollCode: unknown } | undefined;
      while (Date.now() < deadline) {
        revokedStatus = await callWith(kv, 'Exists', { key: 'users/user-42' }, victim['token'] as string).then(
          () => undefined,
          (e: grpc.ServiceError) => ({ code: e.code, atollCode: e.metadata.get('atoll-code')[0] }),
        );
        if (revokedStatus !== undefined) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(revokedStatus).toEqual({ code: grpc.status.UNAUTHENTICATED, atollCode: 'UNAUTHENTICATED' });
    } finally {
      kv.close();
    }
  });

  it('refuses Peer calls without the cluster peer secret (no way around the edge)', async () => {
    const definition = protoLoader.loadSync(['atoll/v1/cluster.proto'], { includeDirs: [join(root, 'proto')], longs: String, defaults: true, oneofs: true });
    const pkg = grpc.loadPackageDefinition(definition) as unknown as { atoll: { v1: { Peer: new (a: string, c: grpc.ChannelCredentials) => GenericKv } } };
    // Peer is not served on the client port at all; on the peer port it needs the peer secret.
    for (const [address, expected] of [
      [cluster.endpoints[0]!, { code: grpc.status.UNIMPLEMENTED, atollCode: undefined }],
      [cluster.peerAddresses.get(1)!, { code: grpc.status.UNAUTHENTICATED, atollCode: 'UNAUTHENTICATED' }],
    ] as const) {
      const peer = new pkg.atoll.v1.Peer(address, grpc.credentials.createInsecure());
      try {
        const forged = { hops: 0, tenant: 'acme', get: { key: '\u0000acme\u0000users/user-42' } };
        const status = await statusOf(
          new Promise((resolveCall, reject) =>
            peer['forward']!.call(peer, forged, { deadline: Date.now() + 5_000 }, (error: grpc.ServiceError | null, response: unknown) => (error ? reject(error) : resolveCall(response))),
          ),
        );
        expect(status).toEqual(expected);
      } finally {
        peer.close();
      }
    }
  });

  it('enforces key and request-rate quotas at the leader, changing nothing past them, and reports usage', async () => {
    await admin.authCall('SetQuota', { tenant: 'tiny', quota: { maxKeys: '5' } });
    const tiny = clientFor(tokens['quotaWriter']!);
    for (let i = 0; i < 5; i++) await tiny.put(`files/f${i}`, 'data');
    // Usage reaches the leaders within a couple of publication rounds.
    const deadline = Date.now() + 10_000;
    let refused: AtollClientError | undefined;
    while (Date.now() < deadline && refused === undefined) {
      refused = await tiny.put('files/over', 'data').then(
        async () => {
          await tiny.delete('files/over');
          await new Promise((r) => setTimeout(r, 300));
          return undefined;
        },
        (e: unknown) => e as AtollClientError,
      );
    }
    expect(refused?.code).toBe('QUOTA_EXCEEDED');
    expect(refused?.grpcStatusCode).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(refused?.message).toMatch(/tiny.*quota of 5/);
    expect((await tiny.get('files/over')).found).toBe(false);
    // Usage is published about once a second, so it settles on the 5 stored keys shortly after.
    let usage: Array<{ tenant: string; keys: string; quota: { maxKeys: string } }> = [];
    for (const until = Date.now() + 10_000; Date.now() < until; await new Promise((r) => setTimeout(r, 300))) {
      usage = (await tiny.authCall('GetUsage'))['tenants'] as typeof usage;
      if (usage[0]?.keys === '5') break;
    }
    expect(usage).toEqual([expect.objectContaining({ tenant: 'tiny', keys: '5', quota: expect.objectContaining({ maxKeys: '5' }) })]);

    await admin.authCall('SetQuota', { tenant: 'ratey', quota: { maxRequestsPerSecond: '5' } });
    const ratey = clientFor(tokens['rateWriter']!);
    await ratey.put('r/k', 'v').catch(() => undefined);
    await new Promise((r) => setTimeout(r, 2_500));
    const outcomes = await Promise.all(Array.from({ length: 40 }, () => ratey.get('r/k').then(() => 'ok', (e: AtollClientError) => e.code)));
    expect(outcomes.filter((o) => o === 'QUOTA_EXCEEDED').length).toBeGreaterThan(20);
    expect(outcomes).toContain('ok');
  });
});
