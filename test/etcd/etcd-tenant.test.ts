/**
 * The etcd port's default tenant (`--etcd-tenant`, here ATOLL_ETCD_TENANT=acme) on a cluster with
 * authentication: calls without a token act as acme, calls with a token are their token's tenant,
 * and a tenant named by a client (in any header or metadata) is never honoured, on the etcd port or
 * on Atoll's own. One Atoll cluster for the file; the `etcd3` npm client, etcdctl (skipped without it,
 * outside CI) and raw gRPC calls.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient } from '../../src/client/index.js';
import { etcdPackageDefinition } from '../../src/etcd/etcd-protos.js';
import { newToken } from '../../src/tenancy/token.js';
import { LocalCluster } from '../integration/local-cluster.js';
import { etcdctl, requireEtcdTools } from './etcd-harness.js';

const tools = requireEtcdTools('etcdctl with a token on the etcd port');

type Callback = (error: grpc.ServiceError | null, response: Record<string, unknown>) => void;
type RawClient = Record<string, (request: object, metadata: grpc.Metadata, options: grpc.CallOptions, callback: Callback) => void> & grpc.Client;

/** Metadata a client might try to name a tenant with: none of it may count. */
function tenantMetadata(tenant: string): grpc.Metadata {
  const metadata = new grpc.Metadata();
  for (const key of ['tenant', 'x-atoll-tenant', 'atoll-tenant', 'tenantgrant', 'tenant-grant']) metadata.set(key, tenant);
  return metadata;
}

function rawCall(client: RawClient, method: string, request: object, metadata: grpc.Metadata): Promise<Record<string, unknown>> {
  return new Promise((resolveCall, reject) => {
    client[method]!.call(client, request, metadata, { deadline: Date.now() + 5_000 }, (error, response) => (error ? reject(error) : resolveCall(response)));
  });
}

describe('the etcd port acting as its configured tenant', () => {
  const work = mkdtempSync(join(tmpdir(), 'atoll-etcd-tenant-'));
  const adminToken = newToken();
  let cluster: LocalCluster;
  const clients: Etcd3[] = [];
  let anonymous: Etcd3;
  let acme: Etcd3;
  let beta: Etcd3;
  let admin: Etcd3;
  const tokens = { acme: '', beta: '' };

  const etcdClient = (password?: string): Etcd3 => {
    const client = new Etcd3({ hosts: [...cluster.etcdAddresses.values()].map((address) => `http://${address}`), ...(password !== undefined && { auth: { username: 'someone', password } }) });
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    const file = join(work, 'admin-token');
    writeFileSync(file, `${adminToken}\n`, { mode: 0o600 });
    cluster = await LocalCluster.start({ partitions: 2, etcd: true, extraArgs: ['--admin-token-file', file], env: { ATOLL_ETCD_TENANT: 'acme' } });
    const atoll = new AtollClient({ endpoints: cluster.endpoints, defaultTimeoutMs: 5_000, token: adminToken });
    try {
      const acmeToken = String((await atoll.authCall('CreateToken', { tenant: 'acme', role: 'readwrite', name: 'acme-etcd' }))['token']);
      const betaToken = String((await atoll.authCall('CreateToken', { tenant: 'beta', role: 'readwrite', name: 'beta-etcd' }))['token']);
      Object.assign(tokens, { acme: acmeToken, beta: betaToken });
      anonymous = etcdClient();
      acme = etcdClient(acmeToken);
      beta = etcdClient(betaToken);
      admin = etcdClient(adminToken);
    } finally {
      atoll.close();
    }
  }, 60_000);

  afterAll(async () => {
    for (const client of clients) client.close();
    await cluster?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it('serves calls without a token as the configured tenant; a token still decides its own tenant', async () => {
    await anonymous.put('service/a').value('from-anonymous');
    expect(await acme.get('service/a').string()).toBe('from-anonymous');
    expect(await beta.get('service/a').string()).toBeNull();
    // The cluster admin token is the default tenant's: another keyspace.
    expect(await admin.get('service/a').string()).toBeNull();
    await beta.put('service/a').value('from-beta');
    expect(await anonymous.get('service/a').string()).toBe('from-anonymous');
    expect(await beta.get('service/a').string()).toBe('from-beta');
    // Leases and watches take the same tenant.
    const lease = anonymous.lease(30, { autoKeepAlive: false });
    await lease.put('service/leased').value('v');
    expect(await acme.get('service/leased').string()).toBe('v');
    await lease.revoke();
    expect(await acme.get('service/leased').string()).toBeNull();
  });

  it.skipIf(!tools.available)('etcdctl: --user with an Atoll token as --password picks the token\'s tenant, no credentials the configured one', async () => {
    const endpoint = cluster.etcdAddresses.get(2) as string;
    const get = async (...credentials: string[]): Promise<string> => (await etcdctl(endpoint, [...credentials, 'get', 'service/a', '--print-value-only'])).stdout;
    expect(await get()).toBe('from-anonymous\n');
    expect(await get('--user', 'acme', '--password', tokens.acme)).toBe('from-anonymous\n');
    expect(await get('--user', 'beta', '--password', tokens.beta)).toBe('from-beta\n');
    const refused = await etcdctl(endpoint, ['--user', 'beta', '--password', 'atk_not-a-token', 'get', 'service/a']);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('authentication failed');
  });

  it('never takes a tenant a client names in metadata, on the etcd port or on Atoll\'s', async () => {
    const pkg = grpc.loadPackageDefinition(etcdPackageDefinition) as unknown as { etcdserverpb: { KV: new (a: string, c: grpc.ChannelCredentials) => RawClient } };
    const kv = new pkg.etcdserverpb.KV(cluster.etcdAddresses.get(1) as string, grpc.credentials.createInsecure());
    try {
      await rawCall(kv, 'Put', { key: Buffer.from('named/by-metadata'), value: Buffer.from('x') }, tenantMetadata('beta'));
      expect(await acme.get('named/by-metadata').string()).toBe('x');
      expect(await beta.get('named/by-metadata').string()).toBeNull();
    } finally {
      kv.close();
    }
    const definition = protoLoader.loadSync(['atoll/v1/kv.proto'], { includeDirs: [resolve(import.meta.dirname, '../../proto')], longs: String, defaults: true, oneofs: true });
    const atollPkg = grpc.loadPackageDefinition(definition) as unknown as { atoll: { v1: { KV: new (a: string, c: grpc.ChannelCredentials) => RawClient } } };
    const atollKv = new atollPkg.atoll.v1.KV(cluster.endpoints[0] as string, grpc.credentials.createInsecure());
    try {
      for (const tenant of ['acme', 'beta', 'default']) {
        const error = (await rawCall(atollKv, 'Get', { key: 'etcd/k/named/by-metadata' }, tenantMetadata(tenant)).then(
          () => undefined,
          (e: unknown) => e,
        )) as grpc.ServiceError | undefined;
        expect(error?.code, `tenant ${tenant} named in metadata`).toBe(grpc.status.UNAUTHENTICATED);
      }
    } finally {
      atollKv.close();
    }
  });
});
