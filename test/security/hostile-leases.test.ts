/**
 * A hostile tenant against leases (issue 33, finding 4), on a real three-node cluster with
 * authentication:
 * - one tenant granting leases in one bucket without end is refused at its share of that
 *   partition's lease table (QUOTA_EXCEEDED, exactly at the share: the share is decided where the
 *   grant applies, from the replicated table), and another tenant's grants in the same partition
 *   go on succeeding;
 * - leases count against the tenant's quota: a lease quota (`maxLeases`) refuses grants past it,
 *   and a tenant at its keys quota cannot grant leases either; revoking brings it back under.
 * Each refusal changes nothing, and no node restarts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient, AtollClientError } from '../../src/client/index.js';
import { leasesPerTenantPerPartitionMax } from '../../src/mvcc/lease-table.js';
import { newToken } from '../../src/tenancy/token.js';
import { LocalCluster } from '../integration/local-cluster.js';

/** A tenant's share of one partition's lease table (leasesPerTenantPerPartitionMax: a quarter of its 10,000). */
const share = 2_500;
const sleep = (ms: number): Promise<void> => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));
/** Long enough that no lease of the test expires while it runs. */
const ttlMs = 600_000;

/** The error a call failed with, or undefined when it succeeded. */
async function refusalOf(promise: Promise<unknown>): Promise<AtollClientError | undefined> {
  return promise.then(
    () => undefined,
    (error: unknown) => {
      expect(error).toBeInstanceOf(AtollClientError);
      return error as AtollClientError;
    },
  );
}

describe('a hostile tenant against leases', () => {
  const adminToken = newToken();
  let cluster: LocalCluster;
  let admin: AtollClient;
  let pids: number[];
  const clients: AtollClient[] = [];
  const tokens: Record<string, string> = {};
  const clientOf = (tenant: string): AtollClient => {
    const created = new AtollClient({ endpoints: cluster.endpoints, token: tokens[tenant]!, defaultTimeoutMs: 20_000 });
    clients.push(created);
    return created;
  };
  const grant = (client: AtollClient, key: string): Promise<string> => client.leaseCall({ action: 'grant', key, ttlMs }).then((response) => response.lease);

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atoll-hostile-leases-'));
    const file = join(dir, 'admin-token');
    writeFileSync(file, `${adminToken}\n`, { mode: 0o600 });
    cluster = await LocalCluster.start({ partitions: 4, extraArgs: ['--admin-token-file', file] });
    admin = new AtollClient({ endpoints: cluster.endpoints, token: adminToken, defaultTimeoutMs: 20_000 });
    clients.push(admin);
    for (const tenant of ['evil', 'acme', 'capped', 'keysonly']) {
      tokens[tenant] = (await admin.authCall('CreateToken', { tenant, role: 'readwrite', name: tenant }))['token'] as string;
    }
    pids = [1, 2, 3].map((id) => cluster.pidOf(id)!);
  }, 60_000);

  afterAll(async () => {
    for (const client of clients) client.close();
    await cluster?.stop();
  });

  const noNodeRestarted = (): void => {
    expect([1, 2, 3].map((id) => cluster.pidOf(id))).toEqual(pids);
    for (const id of [1, 2, 3]) expect(cluster.isRunning(id)).toBe(true);
  };

  it("one tenant reaching its share of a partition's lease table never refuses another tenant's grant there", async () => {
    const evil = clientOf('evil');
    const acme = clientOf('acme');
    // Evil grants in one bucket, 32 at a time, until refused (bounded: a little past its share).
    const granted: string[] = [];
    let refusal: AtollClientError | undefined;
    const attempts = share + 64;
    for (let started = 0; started < attempts && refusal === undefined; ) {
      const batch = Math.min(32, attempts - started);
      started += batch;
      const results = await Promise.allSettled(Array.from({ length: batch }, () => grant(evil, 'shared')));
      for (const result of results) {
        if (result.status === 'fulfilled') granted.push(result.value);
        else refusal ??= result.reason as AtollClientError;
      }
    }
    console.log(`hostile-leases: tenant evil granted ${granted.length} leases in one bucket, then: ${refusal?.code ?? 'never refused'} (${refusal?.message ?? ''})`);
    expect(refusal, `evil was never refused in ${attempts} grants`).toBeInstanceOf(AtollClientError);
    expect(refusal).toMatchObject({ code: 'QUOTA_EXCEEDED', grpcStatusCode: grpc.status.RESOURCE_EXHAUSTED });
    expect(refusal!.message).toMatch(/share/);
    // Exactly the share: the table decides each grant as it applies, on every replica alike.
    expect(granted.length).toBe(share);
    expect(leasesPerTenantPerPartitionMax).toBe(share);
    const partition = granted[0]!.split('.')[0];
    expect(new Set(granted.map((lease) => lease.split('.')[0]))).toEqual(new Set([partition]));
    // A refused grant changed nothing: evil is still refused, and its leases are all there.
    expect(await refusalOf(grant(evil, 'shared'))).toMatchObject({ code: 'QUOTA_EXCEEDED' });
    expect((await evil.leaseCall({ action: 'info', lease: granted[0]! })).ttlMs).toBe(ttlMs);

    // Another tenant's grants in the same partition succeed: the partition still has room. A
    // bucket's partition depends on its tenant, so acme first finds a bucket of its own there.
    let bucket: string | undefined;
    for (let index = 0; index < 64 && bucket === undefined; index++) {
      const lease = await grant(acme, `b${index}`);
      if (lease.split('.')[0] === partition) bucket = `b${index}`;
      await acme.leaseCall({ action: 'revoke', lease });
    }
    expect(bucket, `no bucket of acme in partition ${partition}`).toBeDefined();
    const acmeLeases: string[] = [];
    for (let index = 0; index < 20; index++) acmeLeases.push(await grant(acme, bucket!));
    const acmePartitions = new Set(acmeLeases.map((lease) => lease.split('.')[0]));
    expect(acmePartitions).toEqual(new Set([partition]));
    // Its locks there work too: a key attached to its lease, deleted with it.
    await acme.put(`${bucket!}/lock`, 'held', { lease: acmeLeases[0]! });
    await acme.leaseCall({ action: 'revoke', lease: acmeLeases[0]! });
    expect((await acme.get(`${bucket!}/lock`)).found).toBe(false);

    // Evil, after revoking one, may grant one again (its share, not a ban).
    await evil.leaseCall({ action: 'revoke', lease: granted.pop()! });
    granted.push(await grant(evil, 'shared'));
    expect(await refusalOf(grant(evil, 'shared'))).toMatchObject({ code: 'QUOTA_EXCEEDED' });
    noNodeRestarted();
  }, 180_000);

  it("leases count against the tenant's lease quota; revoking brings it back under", async () => {
    const capped = clientOf('capped');
    await admin.authCall('SetQuota', { tenant: 'capped', quota: { maxLeases: '5' } });
    const held: string[] = [];
    for (let index = 0; index < 5; index++) held.push(await grant(capped, `c${index}`));
    // Usage is published by the leaders every second and cached for a second: wait for the refusal.
    let refused: AtollClientError | undefined;
    for (let attempt = 0; attempt < 60 && refused === undefined; attempt++) {
      refused = await refusalOf(
        grant(capped, 'c-more').then(async (lease) => {
          await capped.leaseCall({ action: 'revoke', lease });
        }),
      );
      if (refused === undefined) await sleep(250);
    }
    console.log(`hostile-leases: tenant capped (lease quota 5): ${refused?.code ?? 'never refused'} (${refused?.message ?? ''})`);
    expect(refused).toMatchObject({ code: 'QUOTA_EXCEEDED', grpcStatusCode: grpc.status.RESOURCE_EXHAUSTED });
    expect(refused!.message).toMatch(/leases, at its quota of 5/);
    // Usage reports the leases against the quota (each node's view of the published usage may be
    // a second or two behind); a tenant without a lease quota has the default.
    type Usage = { tenant: string; leases: string; quota: { maxLeases: string } };
    const usageOf = async (tenant: string): Promise<Usage | undefined> => ((await admin.authCall('GetUsage', { tenant }))['tenants'] as Usage[])[0];
    let usage = await usageOf('capped');
    for (let attempt = 0; attempt < 40 && usage?.leases !== '5'; attempt++) {
      await sleep(250);
      usage = await usageOf('capped');
    }
    expect(usage).toMatchObject({ leases: '5', quota: { maxLeases: '5' } });
    expect((await usageOf('acme'))?.quota.maxLeases).toBe('10000');
    // Revoking brings it back under: a grant works again once usage is republished.
    await capped.leaseCall({ action: 'revoke', lease: held.pop()! });
    let regranted = false;
    for (let attempt = 0; attempt < 60 && !regranted; attempt++) {
      regranted = await grant(capped, 'c-again').then(
        () => true,
        () => false,
      );
      if (!regranted) await sleep(250);
    }
    expect(regranted).toBe(true);
    noNodeRestarted();
  }, 120_000);

  it('a tenant at its keys quota cannot grant leases either (a lease is stored data)', async () => {
    // A tenant at its keys quota: puts are refused, and so are lease grants (a lease is stored data).
    const keysonly = clientOf('keysonly');
    await admin.authCall('SetQuota', { tenant: 'keysonly', quota: { maxKeys: '1' } });
    await keysonly.put('k/one', 'v');
    let putRefused: AtollClientError | undefined;
    for (let attempt = 0; attempt < 60 && putRefused === undefined; attempt++) {
      putRefused = await refusalOf(keysonly.put('k/two', 'v'));
      if (putRefused === undefined) {
        await keysonly.delete('k/two');
        await sleep(250);
      }
    }
    expect(putRefused).toMatchObject({ code: 'QUOTA_EXCEEDED' });
    const grantRefused = await refusalOf(grant(keysonly, 'k'));
    console.log(`hostile-leases: tenant keysonly (keys quota 1, at it): lease grant ${grantRefused?.code ?? 'granted'}`);
    expect(grantRefused).toMatchObject({ code: 'QUOTA_EXCEEDED', grpcStatusCode: grpc.status.RESOURCE_EXHAUSTED });
    noNodeRestarted();
  }, 120_000);
});
