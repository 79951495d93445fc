/**
 * NodeAuth's defences against token floods (src/node/service/auth.ts): the unknown-token cache kept apart
 * from the valid one, shared lookups, the failed-authentication limit per connection, and the
 * bound on a tenant admin's tokens. The store is a Map that counts reads.
 */
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { makeLimits } from '../../src/limits.js';
import { FailedAuths } from '../../src/node/service/failed-auths.js';
import { hashToken, NodeAuth, UnknownTokenCache, type SystemStore } from '../../src/node/service/auth.js';
import { newToken } from '../../src/tenancy/token.js';

class CountingStore implements SystemStore {
  readonly records = new Map<string, Uint8Array>();
  gets = 0;

  async get(key: string): Promise<Uint8Array | undefined> {
    this.gets++;
    await new Promise((resolve) => setImmediate(resolve));
    return this.records.get(key);
  }

  async put(key: string, value: Uint8Array): Promise<void> {
    this.records.set(key, value);
  }

  async scan(prefix: string): Promise<Array<{ key: string; value: Uint8Array }>> {
    return [...this.records].filter(([key]) => key.startsWith(prefix)).map(([key, value]) => ({ key, value }));
  }
}

const adminToken = newToken();
const bearer = (token: string): string => `Bearer ${token}`;

async function codeOf(attempt: Promise<unknown>): Promise<string> {
  try {
    await attempt;
    return 'ok';
  } catch (error) {
    return error instanceof AtollError ? error.code : String(error);
  }
}

describe('token floods', () => {
  it('names a token by the SHA-256 of its text, hex: the key of its stored record, which may never change between versions', () => {
    expect(hashToken('atk_test')).toBe('828ed13c839f74f2cb3c144f1cc09e8d5928aa474bb7c63f2bb2ef0bc5ca979b');
  });

  it('a flood of random tokens neither evicts a valid one nor reads the store more than once per token', async () => {
    // The clock stands still, so only eviction (never the 2 s expiry) could drop a cached token.
    vi.useFakeTimers({ toFake: ['Date'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const store = new CountingStore();
    const auth = new NodeAuth(adminToken, store, makeLimits({ maxUnknownTokensCached: 100, maxFailedAuthsPerConnection: 1_000_000, maxFailedAuthsPerSource: 1_000_000 }));
    // More random tokens than the node caches valid ones (10,000): they must not push the valid one out.
    const floodCount = 10_100;
    const admin = await auth.principalOf(bearer(adminToken));
    const { token } = await auth.createToken(admin, 'acme', 'readwrite', 'app');
    expect((await auth.principalOf(bearer(token))).tenant).toBe('acme');
    const readsBefore = store.gets;
    const random = Array.from({ length: floodCount }, () => newToken());
    for (const candidate of random) expect(await codeOf(auth.principalOf(bearer(candidate), 'flood:1'))).toBe('UNAUTHENTICATED');
    expect(store.gets - readsBefore).toBe(floodCount);
    // The valid token is still cached: no read.
    expect((await auth.principalOf(bearer(token))).tenant).toBe('acme');
    expect(store.gets - readsBefore).toBe(floodCount);
    // The same unknown token again costs nothing (the newest 100 are remembered).
    for (const candidate of random.slice(-100)) await codeOf(auth.principalOf(bearer(candidate)));
    expect(store.gets - readsBefore).toBe(floodCount);
    // Concurrent requests with one new token share one read.
    const fresh = newToken();
    await Promise.all(Array.from({ length: 50 }, () => codeOf(auth.principalOf(bearer(fresh)))));
    expect(store.gets - readsBefore).toBe(floodCount + 1);
    expect(auth.tokenLookups).toBeGreaterThan(0);
  });

  it('requests that find the quota cache cold share one read of the quota and one of the usage totals', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const store = new CountingStore();
    let scans = 0;
    const scan = store.scan.bind(store);
    store.scan = async (prefix) => {
      scans++;
      await new Promise((resolve) => setImmediate(resolve));
      return scan(prefix);
    };
    const auth = new NodeAuth(adminToken, store);
    const admin = await auth.principalOf(bearer(adminToken));
    await auth.setQuota(admin, 'acme', { maxKeys: 10, maxBytes: 0, maxRequestsPerSecond: 0, maxLeases: 0 });
    // A flood of writes arriving together, the cache cold: one get and one scan, not fifty of each
    // (the hostile load run found every request of its never-read stream reading the quota itself).
    await Promise.all(Array.from({ length: 50 }, () => auth.checkQuota('acme', true)));
    expect([store.gets, scans, auth.quotaLookups]).toEqual([1, 1, 2]);
    // Expired, the next burst reads once more; a quota set meanwhile is never hidden by a read from before it.
    vi.setSystemTime(Date.now() + 5_000);
    const burst = Promise.all(Array.from({ length: 50 }, () => auth.checkQuota('acme', true)));
    await auth.setQuota(admin, 'acme', { maxKeys: 1, maxBytes: 0, maxRequestsPerSecond: 0, maxLeases: 0 });
    await burst;
    // The burst's first read overlapped the set, so it did not fill the cache: the burst's storage
    // checks, after it, shared one read of the new quota, which the next request finds cached.
    expect([store.gets, scans]).toEqual([3, 2]);
    expect((await auth.quotaOf('acme')).maxKeys).toBe(1);
    expect(store.gets).toBe(3);
  });

  it('reads a token and a quota in use again in the background before they expire: a busy caller never waits for the read', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const store = new CountingStore();
    const auth = new NodeAuth(adminToken, store);
    const admin = await auth.principalOf(bearer(adminToken));
    const { token, info } = await auth.createToken(admin, 'acme', 'readwrite', 'app');
    await auth.principalOf(bearer(token));
    await auth.quotaOf('acme');
    const reads = store.gets;
    // 1.6 s on (past 3/4 of the 2 s lifetime): answered from the cache, and one read of each starts behind it.
    vi.setSystemTime(Date.now() + 1_600);
    let answered = false;
    const using = auth.principalOf(bearer(token)).then((principal) => ((answered = true), principal));
    await Promise.resolve();
    await Promise.resolve();
    expect(answered).toBe(true);
    expect((await using).tenant).toBe('acme');
    await auth.quotaOf('acme');
    expect(store.gets).toBe(reads + 2);
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    // 2.4 s after the first read, 0.8 s after the refresh: still cached, no read.
    vi.setSystemTime(Date.now() + 800);
    await auth.principalOf(bearer(token));
    await auth.quotaOf('acme');
    expect(store.gets).toBe(reads + 2);
    // A revocation at this node drops what it cached at once.
    await auth.revokeToken(admin, info.id);
    expect(await codeOf(auth.principalOf(bearer(token)))).toBe('UNAUTHENTICATED');
  });

  it('refuses a connection at once after too many failed authentications, without a lookup', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const store = new CountingStore();
    const auth = new NodeAuth(adminToken, store, makeLimits({ maxFailedAuthsPerConnection: 5, failedAuthWindowMs: 10_000 }));
    const admin = await auth.principalOf(bearer(adminToken));
    const { token } = await auth.createToken(admin, 'acme', 'read', 'app');
    // Calls without a token (ClusterInfo, health probes) or with a malformed one cost no lookup and do not count.
    for (let index = 0; index < 50; index++) {
      expect(await codeOf(auth.principalOf(undefined, 'hostile:9'))).toBe('UNAUTHENTICATED');
      expect(await codeOf(auth.principalOf('Bearer nonsense', 'hostile:9'))).toBe('UNAUTHENTICATED');
    }
    expect((await auth.principalOf(bearer(token), 'hostile:9')).tenant).toBe('acme');
    for (let index = 0; index < 5; index++) await codeOf(auth.principalOf(bearer(newToken()), 'hostile:9'));
    const reads = store.gets;
    const refused = await auth.principalOf(bearer(newToken()), 'hostile:9').catch((error: unknown) => error as AtollError);
    expect(refused).toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((refused as AtollError).message).toMatch(/too many failed authentications/);
    // Even a valid token is refused on that connection, and nothing was read.
    expect(await codeOf(auth.principalOf(bearer(token), 'hostile:9'))).toBe('UNAUTHENTICATED');
    expect(store.gets).toBe(reads);
    // Other connections are unaffected; the blocked one recovers when its window passes.
    expect((await auth.principalOf(bearer(token), 'friendly:1')).tenant).toBe('acme');
    vi.setSystemTime(Date.now() + 9_999);
    expect(await codeOf(auth.principalOf(bearer(token), 'hostile:9'))).toBe('UNAUTHENTICATED');
    vi.setSystemTime(Date.now() + 2);
    expect((await auth.principalOf(bearer(token), 'hostile:9')).tenant).toBe('acme');
  });

  it("closes a connection at its limit and, past the source's limit, refuses the source's new connections; its clean connections serve", async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const store = new CountingStore();
    const limits = makeLimits({ maxFailedAuthsPerConnection: 3, failedAuthWindowMs: 10_000, maxFailedAuthsPerSource: 7, failedAuthSourceWindowMs: 60_000 });
    const gate = new FailedAuths(limits);
    const auth = new NodeAuth(adminToken, store, limits, gate);
    const admin = await auth.principalOf(bearer(adminToken));
    const { token } = await auth.createToken(admin, 'acme', 'read', 'app');
    const closed: string[] = [];
    const attach = (connection: string): void => gate.attach(connection, () => closed.push(connection));
    for (const connection of ['10.0.0.9:1', '10.0.0.9:2', '10.0.0.9:3', '10.0.0.9:4', '10.0.0.7:1']) attach(connection);
    // A valid token first, so 10.0.0.9:4 is a connection that never failed.
    expect((await auth.principalOf(bearer(token), '10.0.0.9:4')).tenant).toBe('acme');
    for (let index = 0; index < 3; index++) expect(await codeOf(auth.principalOf(bearer(newToken()), '10.0.0.9:1'))).toBe('UNAUTHENTICATED');
    expect(closed).toEqual(['10.0.0.9:1']);
    expect(gate.admits('10.0.0.9', Date.now())).toBe(true);
    for (let index = 0; index < 3; index++) await codeOf(auth.principalOf(bearer(newToken()), '10.0.0.9:2'));
    // The seventh failure from 10.0.0.9 blocks the source, and the connection that made it is closed.
    await codeOf(auth.principalOf(bearer(newToken()), '10.0.0.9:3'));
    expect(closed).toEqual(['10.0.0.9:1', '10.0.0.9:2', '10.0.0.9:3']);
    expect(gate.admits('10.0.0.9', Date.now())).toBe(false);
    expect(gate.admits('10.0.0.7', Date.now())).toBe(true);
    const reads = store.gets;
    const refused = await auth.principalOf(bearer(token), '10.0.0.9:3').catch((error: unknown) => error as AtollError);
    expect((refused as AtollError).message).toMatch(/too many failed authentications from this address/);
    expect(store.gets).toBe(reads);
    // Its connection that never failed still serves a valid token; another source is untouched.
    expect((await auth.principalOf(bearer(token), '10.0.0.9:4')).tenant).toBe('acme');
    expect((await auth.principalOf(bearer(token), '10.0.0.7:1')).tenant).toBe('acme');
    // Until the source's window passes.
    vi.setSystemTime(Date.now() + 59_000);
    expect(gate.admits('10.0.0.9', Date.now())).toBe(false);
    vi.setSystemTime(Date.now() + 1_001);
    expect(gate.admits('10.0.0.9', Date.now())).toBe(true);
    expect(gate.refusedAtAccept).toBe(2);
  });

  it('the trackers stay within their capacity', () => {
    const tracker = new FailedAuths({ maxFailedAuthsPerConnection: 2, failedAuthWindowMs: 1000, maxFailedAuthsPerSource: 5, failedAuthSourceWindowMs: 1000, maxTrackedConnections: 10 });
    for (let port = 0; port < 1000; port++) tracker.record(`10.0.${port % 200}.1:${port}`, 0);
    expect(tracker.size).toMatchObject({ connections: 10, sources: 10 });
    const cache = new UnknownTokenCache(10, 1000);
    for (let index = 0; index < 1000; index++) cache.add(hashToken(String(index)), 0);
    expect(cache.size).toBe(10);
    expect(cache.has(hashToken('999'), 1)).toBe(true);
    expect(cache.has(hashToken('999'), 1000)).toBe(false);
  });

  it("bounds a tenant admin's tokens; the cluster admin is not bounded", async () => {
    const store = new CountingStore();
    const auth = new NodeAuth(adminToken, store, makeLimits({ maxTokensPerTenant: 3 }));
    const admin = await auth.principalOf(bearer(adminToken));
    const { token } = await auth.createToken(admin, 'acme', 'admin', 'acme-admin');
    const tenantAdmin = await auth.principalOf(bearer(token));
    await auth.createToken(tenantAdmin, 'acme', 'read', 'one');
    const created = await Promise.allSettled(Array.from({ length: 5 }, (_, index) => auth.createToken(tenantAdmin, 'acme', 'read', `more-${index}`)));
    expect(created.filter((result) => result.status === 'fulfilled')).toHaveLength(1);
    const refused = created.find((result) => result.status === 'rejected') as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ code: 'RESOURCE_EXHAUSTED', details: { maxTokensPerTenant: 3 } });
    expect((await auth.listTokens(admin, 'acme')).length).toBe(3);
    await auth.createToken(admin, 'acme', 'read', 'by-the-cluster-admin');
    expect((await auth.listTokens(admin, 'acme')).length).toBe(4);
  });
});
