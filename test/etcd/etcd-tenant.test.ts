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
import { rawSession, rawUnary } from '../security/raw-http2.js';

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

  it("a flood of random tokens on the etcd port gets its address's new connections closed at accept, there and on the client port", async () => {
    // From 127.0.0.9, an address of the flood's own (the other tests' clients use 127.0.0.1).
    const [host, port] = (cluster.etcdAddresses.get(1) as string).split(':') as [string, string];
    const outcomes = new Map<string, number>();
    // A RangeRequest for key "a" (field 1), framed.
    const rangeOfA = Buffer.from([0, 0, 0, 0, 3, 0x0a, 0x01, 0x61]);
    let refusedAtAccept = false;
    let served = 0;
    for (let connection = 0; connection < 30 && !refusedAtAccept; connection++) {
      const session = rawSession(host, Number(port), '127.0.0.9');
      try {
        for (let batch = 0; batch < 10 && !session.closed; batch++) {
          const results = await Promise.all(Array.from({ length: 10 }, () => rawUnary(session.session, '/etcdserverpb.KV/Range', { token: newToken() }, rangeOfA)));
          for (const result of results) outcomes.set(result, (outcomes.get(result) ?? 0) + 1);
        }
        refusedAtAccept = (await session.settled) === 'refused';
        if (!refusedAtAccept) {
          served++;
          expect(session.closed, `connection ${connection} should have been closed by the node`).toBe(true);
        }
      } finally {
        session.session.destroy();
      }
    }
    expect(refusedAtAccept, JSON.stringify([...outcomes])).toBe(true);
    // The etcd port answers every refusal as etcd does ("invalid auth token"), so count connections:
    // each was closed after its 20th failure (up to a batch of 10 more in flight), and the address
    // was refused at accept once 100 had failed: after 4 to 6 served connections.
    expect(served, JSON.stringify([...outcomes])).toBeGreaterThanOrEqual(4);
    expect(served).toBeLessThanOrEqual(6);
    // One gate per node: the client port refuses the address too; another address is served.
    const [clientHost, clientPort] = (cluster.endpoints[0] as string).split(':') as [string, string];
    const blocked = rawSession(clientHost, Number(clientPort), '127.0.0.9');
    expect(await blocked.settled).toBe('refused');
    blocked.session.destroy();
    const other = rawSession(host, Number(port), '127.0.0.10');
    expect(await other.settled).toBe('served');
    other.session.destroy();
    // And the configured tenant's calls from 127.0.0.1 go on.
    await anonymous.put('flood/after').value('ok');
    expect(await anonymous.get('flood/after').string()).toBe('ok');
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
