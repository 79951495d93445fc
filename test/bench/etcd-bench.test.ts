/**
 * `atoll bench --system etcd` against Atoll's etcd port (issue 36): the same etcd client code that
 * measures etcd measures Atoll through etcd's API, authenticated with a tenant's token, and
 * `--tenants N` spreads the workers over N clients, each its own tenant, so the keys land in N
 * keyspaces. One authenticated three-node cluster (from dist/) for the file; short runs.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchJson } from '../../src/bench/bench-report.js';
import { AtollClient } from '../../src/client/index.js';
import { LocalCluster } from '../../src/chaos/local-cluster.js';
import { etcdPackageDefinition } from '../../src/etcd/etcd-protos.js';
import { newToken } from '../../src/tenancy/token.js';
import { bench } from './bench-cli.js';

const adminToken = newToken();
let cluster: LocalCluster;
let scratch: string;
/** Tokens of the tenants bench-a and bench-b, one a line, as --etcd-password-file takes them. */
let passwordFile: string;
const tokens: string[] = [];

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'atoll-etcd-bench-'));
  const adminFile = join(scratch, 'admin-token');
  writeFileSync(adminFile, `${adminToken}\n`, { mode: 0o600 });
  cluster = await LocalCluster.start({ nodes: 3, partitions: 4, etcd: true, extraArgs: ['--admin-token-file', adminFile] });
  const admin = new AtollClient({ endpoints: cluster.endpoints, defaultTimeoutMs: 5_000, token: adminToken });
  try {
    for (const tenant of ['bench-a', 'bench-b']) tokens.push(String((await admin.authCall('CreateToken', { tenant, role: 'readwrite', name: 'etcd bench test' }))['token']));
  } finally {
    admin.close();
  }
  passwordFile = join(scratch, 'passwords');
  writeFileSync(passwordFile, `${tokens.join('\n')}\n`, { mode: 0o600 });
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  if (scratch !== undefined) rmSync(scratch, { recursive: true, force: true });
});

const etcdEndpoints = (): string => [...cluster.etcdAddresses.values()].join(',');
const quick = ['--system', 'etcd', '--label', 'atoll-etcd', '--workloads', 'put', '--duration', '1', '--warmup', '0', '--keys', '100', '--json'];

/** Every key of the keyspace the token's tenant sees through etcd's API. */
async function etcdKeysOf(token: string): Promise<string[]> {
  const client = new Etcd3({ hosts: [...cluster.etcdAddresses.values()].map((address) => `http://${address}`), auth: { username: 'test', password: token } });
  try {
    return await client.getAll().prefix('').keys();
  } finally {
    client.close();
  }
}

describe("atoll bench against Atoll's etcd port", () => {
  it('measures puts through etcd\'s client, authenticated as a tenant, and the keys land in that tenant\'s keyspace', async () => {
    const result = await bench('--endpoints', etcdEndpoints(), ...quick, '--concurrency', '2', '--etcd-password-file', passwordFile);
    expect(result.stderr).not.toMatch(/^error/m);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as BenchJson;
    expect(report.system).toBe('atoll-etcd');
    const [put] = report.runs;
    expect(put?.operations).toBeGreaterThan(0);
    expect(put?.errors, JSON.stringify(put?.errorsByCode)).toBe(0);
    // Without --tenants, the first password's tenant (bench-a) gets the keys as they are.
    const keys = await etcdKeysOf(tokens[0] as string);
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((key) => /^bench-\d+$/.test(key))).toBe(true);
    // In Atoll's terms: bench-a's bucket `etcd`, invisible to the default tenant.
    const tenantA = new AtollClient({ endpoints: cluster.endpoints, defaultTimeoutMs: 5_000, token: tokens[0] as string });
    const admin = new AtollClient({ endpoints: cluster.endpoints, defaultTimeoutMs: 5_000, token: adminToken });
    try {
      expect((await tenantA.getByPrefix('etcd/k/bench-', { limit: 1_000 })).items.length).toBe(keys.length);
      expect((await admin.getByPrefix('etcd/k/', { limit: 1_000 })).items).toEqual([]);
    } finally {
      tenantA.close();
      admin.close();
    }
  }, 20_000);

  it('spreads the workers over one keyspace per tenant with --tenants', async () => {
    const result = await bench('--endpoints', etcdEndpoints(), ...quick, '--concurrency', '2', '--tenants', '2', '--etcd-password-file', passwordFile);
    expect(result.code).toBe(0);
    const report = JSON.parse(result.stdout) as BenchJson;
    expect(report.settings.tenants).toBe(2);
    expect(report.runs[0]?.operations).toBeGreaterThan(0);
    expect(report.runs[0]?.errors).toBe(0);
    // Tenant i wrote tenant-i/ keys into its own keyspace, and only there.
    const [a, b] = [await etcdKeysOf(tokens[0] as string), await etcdKeysOf(tokens[1] as string)];
    expect(a.some((key) => key.startsWith('tenant-0/'))).toBe(true);
    expect(a.some((key) => key.startsWith('tenant-1/'))).toBe(false);
    expect(b.some((key) => key.startsWith('tenant-1/'))).toBe(true);
    expect(b.every((key) => key.startsWith('tenant-1/'))).toBe(true);
  }, 20_000);

  it('without credentials fails at once with etcd\'s "user name is empty" (before, the etcd3 client retried an invalid-token answer forever)', async () => {
    const startedAt = Date.now();
    const result = await bench('--endpoints', etcdEndpoints(), ...quick, '--concurrency', '2', '--no-preload');
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/no operation succeeded/);
    expect(Date.now() - startedAt).toBeLessThan(8_000);
    const anonymous = new Etcd3({ hosts: [...cluster.etcdAddresses.values()].map((address) => `http://${address}`) });
    try {
      await expect(anonymous.put('anonymous').value('x').exec()).rejects.toThrow('etcdserver: user name is empty');
    } finally {
      anonymous.close();
    }
    // A stream too: LeaseKeepAlive without a token ends with the same answer, not an invalid token.
    const pkg = grpc.loadPackageDefinition(etcdPackageDefinition) as unknown as { etcdserverpb: { Lease: new (address: string, credentials: grpc.ChannelCredentials) => grpc.Client } };
    const lease = new pkg.etcdserverpb.Lease(cluster.etcdAddresses.get(1) as string, grpc.credentials.createInsecure());
    try {
      const stream = (lease as unknown as { LeaseKeepAlive(options: grpc.CallOptions): grpc.ClientDuplexStream<{ ID: string }, object> }).LeaseKeepAlive({ deadline: Date.now() + 5_000 });
      const ended = new Promise<grpc.ServiceError>((resolveEnded) => stream.on('error', resolveEnded));
      stream.on('data', () => undefined);
      stream.write({ ID: '12345' });
      const error = await ended;
      expect([error.code, error.details]).toEqual([grpc.status.INVALID_ARGUMENT, 'etcdserver: user name is empty']);
    } finally {
      lease.close();
    }
  }, 15_000);

  it('refuses --tenants it cannot honour, before connecting', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--tenants', '3', '--concurrency', '2'], /--tenants 3 needs --concurrency of at least 3/],
      [['--tenants', '3', '--concurrency', '4', '--etcd-password-file', passwordFile], /has 2 passwords; 3 tenant\(s\) need one each/],
      [['--tenants', '0'], /--tenants must be an integer >= 1/],
      [['--system', 'atoll', '--tenants', '2'], /--tenants applies to --system etcd/],
      [['--label', 'Not A Label'], /--label must be/],
    ];
    for (const [options, message] of cases) {
      const result = await bench('--endpoints', etcdEndpoints(), ...quick, ...options);
      expect(result.code, options.join(' ')).toBe(2);
      expect(result.stderr, options.join(' ')).toMatch(message);
    }
  });
});
