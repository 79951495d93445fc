/**
 * Authentication, tokens and quotas on a node.
 *
 * A cluster runs with authentication when its nodes are started with the bootstrap admin token
 * (--admin-token-file). Then every client call must carry `authorization: Bearer <token>`:
 * the bootstrap token is the cluster admin; every other token is a record in the cluster's own
 * keyspace (tenant "system", key `tokens/<sha256 of the token>`), written through Raft like any
 * key, so every node can check every token. Only the hash is stored.
 *
 * A node caches what it learned about a token for `cacheMs` (2 s), so a revoked token stops working
 * on every node within that time; an unknown token is looked up again after the same time. A
 * token in use is read again in the background once its entry is 1.5 s old, while the entry
 * serves, so a busy caller never waits for that read (quotas and usage totals likewise).
 * Unknown tokens live in a cache of their own (limits.maxUnknownTokensCached hashes), so a flood of
 * random tokens never evicts a valid one, and concurrent requests with one token share one lookup.
 * A connection (the remote address:port) whose calls present an unknown or revoked token
 * limits.maxFailedAuthsPerConnection times within limits.failedAuthWindowMs is refused at once,
 * without a lookup, until the window passes (and closed, at the client port), and a source address
 * whose connections failed limits.maxFailedAuthsPerSource times within failedAuthSourceWindowMs has
 * its new connections closed at accept (failed-auths.ts): a flood of random tokens costs the token
 * partition at most that many lookups per source and window.
 *
 * A tenant admin creates at most limits.maxTokensPerTenant tokens for its tenant (revoked ones
 * count: their records stay for the audit list); the cluster admin is not bounded.
 *
 * Quotas (`quotas/<tenant>` records) bound a tenant's stored keys and bytes and its request rate.
 * The bytes quota bounds live bytes plus retained history bytes (superseded versions and
 * tombstones the partitions still keep), as etcd's quota counts its whole backend: overwriting one
 * key again and again keeps live bytes small but grows history until compaction frees it.
 * Stored keys and bytes are counted exactly per partition by the MVCC store; each partition leader
 * publishes its partition's per-tenant counts every `publishMs` to `usage/<partition>` and every
 * node sums those records, so a tenant's total is at most a few seconds old and a burst of writes
 * can overshoot a quota by what it writes in that time. The request rate is limited by each leader
 * node separately (a token bucket per tenant), so a cluster admits at most nodes x the rate.
 *
 * Leases (issue 33) have a quota of their own, maxLeases, counted like keys (each partition leader
 * publishes its tenants' lease counts with their usage): it always applies, limits.defaultLeaseQuota
 * when the tenant's record sets none (0), because every lease costs memory on every replica and a
 * timer at its leader. A grant is also refused when the tenant is at its keys or bytes quota (a lease
 * record is stored data). The per-partition share of the lease table (mvcc/lease-table.ts) is the
 * hard bound a burst cannot overshoot.
 */
import { hash } from 'node:crypto';
import { AtollError } from '../../errors.js';
import { limits as defaultLimits, type Limits } from '../../limits.js';
import { systemTenant, toInternalKey, validateTenant } from '../../keys/tenant-keys.js';
import { anonymousPrincipal, isRole, requireClusterAdmin, requireRole, type Principal, type Role } from '../../tenancy/principal.js';
import { newToken } from '../../tenancy/token.js';
import { FailedAuths } from './failed-auths.js';
import type { FailedAuthGate } from '../ports.js';

export interface TokenRecord {
  readonly id: string;
  readonly tenant: string;
  readonly role: Role;
  readonly name: string;
  readonly createdAtMs: number;
  readonly revoked: boolean;
}

export interface Quota {
  /** 0: unlimited. */
  readonly maxKeys: number;
  readonly maxBytes: number;
  readonly maxRequestsPerSecond: number;
  /** Leases held at once, all partitions; 0 in a quota record: limits.defaultLeaseQuota (never unlimited). */
  readonly maxLeases: number;
}

export const noQuota: Quota = Object.freeze({ maxKeys: 0, maxBytes: 0, maxRequestsPerSecond: 0, maxLeases: 0 });

export interface TenantUsage {
  readonly tenant: string;
  readonly keys: number;
  /** Live keys' key and value bytes. */
  readonly bytes: number;
  /** Retained history: superseded versions and tombstones not compacted yet (key and value bytes). */
  readonly historyBytes: number;
  readonly requestsPerSecond: number;
  /** Leases held, all partitions. */
  readonly leases: number;
  readonly quota: Quota;
}

/** A tenant's cluster-wide totals, summed over the partitions' published usage records. */
interface UsageTotal {
  keys: number;
  bytes: number;
  historyBytes: number;
  requestsPerSecond: number;
  leases: number;
}

const noUsage: Readonly<UsageTotal> = Object.freeze({ keys: 0, bytes: 0, historyBytes: 0, requestsPerSecond: 0, leases: 0 });

/** How the auth layer reads and writes the system keyspace (internal keys, through Raft). */
export interface SystemStore {
  get(internalKey: string): Promise<Uint8Array | undefined>;
  put(internalKey: string, value: Uint8Array): Promise<void>;
  /** Every live key under an internal key prefix (a system bucket). */
  scan(internalPrefix: string): Promise<Array<{ key: string; value: Uint8Array }>>;
}

const tokenPattern = /^atk_[A-Za-z0-9_-]{43}$/;
const cacheMs = 2_000;
/**
 * A cached token, quota or usage total used after this share of its lifetime is read again in the
 * background (one read, shared), while the cached answer serves: a tenant that keeps sending never
 * waits for a read when its entry expires (the hostile load run's ordinary tenant waited 130-180
 * ms for its token and quota reads each time they expired during an attack). The bound on a stale
 * answer is unchanged: an entry is never used past its lifetime.
 */
const refreshAfterShare = 0.75;

function dueForRefresh(ageMs: number, lifetimeMs: number): boolean {
  return ageMs >= lifetimeMs * refreshAfterShare;
}
const maxCachedTokens = 10_000;
const usageCacheMs = 1_000;
/**
 * A partition holding history of a tenant at its bytes quota compacts all of it at most this often
 * (AtollNode.compactHistoryOverQuota): often enough that deletes bring the tenant back under within
 * seconds, seldom enough that other tenants' past reads and open transactions rarely meet it.
 */
export const quotaCompactionIntervalMs = 10_000;

/** The token's SHA-256, hex: every authenticated request computes it (one-shot `hash`, a third of a Hash object's cost). */
export function hashToken(token: string): string {
  return hash('sha256', token, 'hex');
}

const systemKey = (key: string): string => toInternalKey(systemTenant, key);
const tokensBucket = systemKey('tokens');
export const usageBucket = systemKey('usage');

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const json = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(bytes)) as unknown;
  } catch {
    return undefined;
  }
}

function tokenRecordOf(value: unknown): TokenRecord | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const r = value as Partial<TokenRecord>;
  if (typeof r.id !== 'string' || typeof r.tenant !== 'string' || !isRole(r.role) || typeof r.name !== 'string') return undefined;
  return { id: r.id, tenant: r.tenant, role: r.role, name: r.name, createdAtMs: Number(r.createdAtMs) || 0, revoked: r.revoked === true };
}

function quotaOf(value: unknown): Quota {
  if (typeof value !== 'object' || value === null) return noQuota;
  const q = value as Partial<Quota>;
  const count = (n: unknown): number => (typeof n === 'number' && Number.isSafeInteger(n) && n > 0 ? n : 0);
  return { maxKeys: count(q.maxKeys), maxBytes: count(q.maxBytes), maxRequestsPerSecond: count(q.maxRequestsPerSecond), maxLeases: count(q.maxLeases) };
}

function unauthenticated(message: string): AtollError {
  return new AtollError('UNAUTHENTICATED', message);
}

/** Hashes of tokens that are not (or no longer) valid, remembered for `ttlMs`, at most `capacity`. */
export class UnknownTokenCache {
  private readonly seenAtMs = new Map<string, number>();

  constructor(
    private readonly capacity: number,
    private readonly ttlMs: number,
  ) {}

  has(hash: string, nowMs: number): boolean {
    const atMs = this.seenAtMs.get(hash);
    if (atMs === undefined) return false;
    if (nowMs - atMs < this.ttlMs) return true;
    this.seenAtMs.delete(hash);
    return false;
  }

  add(hash: string, nowMs: number): void {
    this.seenAtMs.delete(hash);
    if (this.seenAtMs.size >= this.capacity) this.seenAtMs.delete(this.seenAtMs.keys().next().value!);
    this.seenAtMs.set(hash, nowMs);
  }

  clear(): void {
    this.seenAtMs.clear();
  }

  get size(): number {
    return this.seenAtMs.size;
  }
}

class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; atMs: number }>();

  tryTake(tenant: string, rate: number, nowMs: number): boolean {
    const bucket = this.buckets.get(tenant) ?? { tokens: rate, atMs: nowMs };
    bucket.tokens = Math.min(rate, bucket.tokens + ((nowMs - bucket.atMs) / 1000) * rate);
    bucket.atMs = nowMs;
    this.buckets.set(tenant, bucket);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}

export class NodeAuth {
  private readonly adminTokenHash: string | undefined;
  /** Valid tokens only; unknown ones go to `unknownTokens`, so they cannot evict these. */
  private readonly tokenCache = new Map<string, { principal: Principal; atMs: number }>();
  private readonly unknownTokens: UnknownTokenCache;
  /** Lookups under way, by token hash: concurrent requests with one token share one. */
  private readonly lookups = new Map<string, Promise<Principal | undefined>>();
  /** Failed authentications by connection and source (failed-auths.ts); the client port's listener shares it. */
  readonly failedAuths: FailedAuthGate;
  /** Token records read from the store (a test and diagnostics counter). */
  tokenLookups = 0;
  /** Token creations run one at a time on a node, so the per-tenant count is checked against settled records. */
  private creating: Promise<unknown> = Promise.resolve();
  private quotaCache = new Map<string, { quota: Quota; atMs: number }>();
  private usageCache: { totals: Map<string, UsageTotal>; atMs: number } | undefined;
  /**
   * Reads of quotas and of the usage totals under way: the requests that find the cache cold or
   * expired share one read (the hostile load run: every request of a flood that arrived within a
   * read's round trip made its own, a get or a scan of the system partition, mostly forwarded).
   * Invariant: an entry is the read the cache will be filled from; setQuota drops it with the
   * cached quota, so a request after it never joins a read from before it.
   */
  private readonly quotaReads = new Map<string, Promise<Quota>>();
  private usageRead: Promise<Map<string, UsageTotal>> | undefined;
  /** Quotas set at this node: a read that overlapped one does not fill the cache. */
  private quotaSets = 0;
  /** Quota and usage records read from the store (a test and diagnostics counter). */
  quotaLookups = 0;
  private readonly limiter = new RateLimiter();

  constructor(
    adminToken: string | undefined,
    private readonly store: SystemStore,
    private readonly limits: Pick<
      Limits,
      'maxFailedAuthsPerConnection' | 'failedAuthWindowMs' | 'maxFailedAuthsPerSource' | 'failedAuthSourceWindowMs' | 'maxTrackedConnections' | 'maxUnknownTokensCached' | 'maxTokensPerTenant' | 'defaultLeaseQuota'
    > = defaultLimits,
    failedAuths?: FailedAuthGate,
  ) {
    this.adminTokenHash = adminToken === undefined ? undefined : hashToken(adminToken);
    this.unknownTokens = new UnknownTokenCache(limits.maxUnknownTokensCached, cacheMs);
    this.failedAuths = failedAuths ?? new FailedAuths(limits);
  }

  get enabled(): boolean {
    return this.adminTokenHash !== undefined;
  }

  /**
   * Who the caller is, from the `authorization` metadata value (or its absence). `connection`
   * names the caller's connection (grpc-js getPeer(): address:port) for the failed-authentication
   * limit; calls without one (the node's own) are not limited.
   */
  async principalOf(authorization: string | undefined, connection?: string): Promise<Principal> {
    if (!this.enabled) return anonymousPrincipal;
    const nowMs = Date.now();
    const refusal = connection === undefined ? undefined : this.failedAuths.refusal(connection, nowMs);
    if (refusal !== undefined) {
      const from = refusal.by === 'connection' ? 'on this connection' : 'from this address';
      throw new AtollError('UNAUTHENTICATED', `too many failed authentications ${from}: refused for ${Math.ceil(refusal.retryAfterMs / 1000)} s`, {
        retryAfterMs: refusal.retryAfterMs,
      });
    }
    const principal = await this.authenticate(authorization, nowMs);
    if (principal !== 'unknown') return principal;
    // Only a well-formed token that is not valid counts: it is what may cost a lookup. A missing
    // token (ClusterInfo, health checks) or a malformed one costs nothing and is not counted.
    if (connection !== undefined) this.failedAuths.record(connection, Date.now());
    throw unauthenticated('unknown or revoked token');
  }

  private async authenticate(authorization: string | undefined, nowMs: number): Promise<Principal | 'unknown'> {
    if (authorization === undefined || authorization === '') {
      throw unauthenticated('this cluster requires a token: send `authorization: Bearer <token>` metadata (atoll --token-file, ATOLL_TOKEN_FILE)');
    }
    const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
    if (match === null || !tokenPattern.test(match[1]!)) throw unauthenticated('malformed authorization: expected `Bearer atk_...`');
    const hash = hashToken(match[1]!);
    if (hash === this.adminTokenHash) return { tenant: 'default', role: 'admin', clusterAdmin: true, tokenId: hash.slice(0, 12) };
    const cached = this.tokenCache.get(hash);
    if (cached !== undefined && nowMs - cached.atMs < cacheMs) {
      if (dueForRefresh(nowMs - cached.atMs, cacheMs)) this.lookUp(hash).catch(() => undefined);
      return cached.principal;
    }
    if (this.unknownTokens.has(hash, nowMs)) return 'unknown';
    return (await this.lookUp(hash)) ?? 'unknown';
  }

  /** Reads a token's record (one read shared by concurrent callers) and caches the outcome. */
  private lookUp(hash: string): Promise<Principal | undefined> {
    const running = this.lookups.get(hash);
    if (running !== undefined) return running;
    const lookup = (async () => {
      this.tokenLookups++;
      const bytes = await this.store.get(systemKey(`tokens/${hash}`));
      const record = bytes === undefined ? undefined : tokenRecordOf(parseJson(bytes));
      const principal: Principal | undefined =
        record === undefined || record.revoked ? undefined : { tenant: record.tenant, role: record.role, clusterAdmin: false, tokenId: record.id };
      const atMs = Date.now();
      if (principal === undefined) {
        this.tokenCache.delete(hash);
        this.unknownTokens.add(hash, atMs);
      } else {
        if (!this.tokenCache.has(hash) && this.tokenCache.size >= maxCachedTokens) this.tokenCache.delete(this.tokenCache.keys().next().value!);
        this.tokenCache.set(hash, { principal, atMs });
      }
      return principal;
    })().finally(() => this.lookups.delete(hash));
    this.lookups.set(hash, lookup);
    return lookup;
  }

  async createToken(caller: Principal, tenant: string, role: string, name: string): Promise<{ token: string; info: TokenRecord }> {
    validateTenant(tenant);
    if (tenant === systemTenant) throw new AtollError('INVALID_ARGUMENT', `tenant ${systemTenant} is reserved for the cluster's own records`);
    if (!isRole(role)) throw new AtollError('INVALID_ARGUMENT', `role must be read, readwrite or admin; got ${JSON.stringify(role)}`);
    this.requireTenantAdmin(caller, tenant, 'creating a token');
    if (name.length > 200) throw new AtollError('INVALID_ARGUMENT', 'a token name is at most 200 characters');
    const create = async (): Promise<{ token: string; info: TokenRecord }> => {
      if (!caller.clusterAdmin) await this.requireRoomForToken(tenant);
      const token = newToken();
      const hash = hashToken(token);
      const info: TokenRecord = { id: hash.slice(0, 12), tenant, role, name, createdAtMs: Date.now(), revoked: false };
      await this.store.put(systemKey(`tokens/${hash}`), json(info));
      return { token, info };
    };
    const created = this.creating.then(create, create);
    this.creating = created.catch(() => undefined);
    return created;
  }

  /** RESOURCE_EXHAUSTED when the tenant already has maxTokensPerTenant token records (revoked ones too). */
  private async requireRoomForToken(tenant: string): Promise<void> {
    const max = this.limits.maxTokensPerTenant;
    let count = 0;
    for (const entry of await this.store.scan(tokensBucket)) if (tokenRecordOf(parseJson(entry.value))?.tenant === tenant) count++;
    if (count >= max) {
      throw new AtollError('RESOURCE_EXHAUSTED', `tenant ${tenant} has ${count} tokens (revoked ones included), the most a tenant admin may create; the cluster admin can create more`, {
        tenant,
        tokens: count,
        maxTokensPerTenant: max,
      });
    }
  }

  async listTokens(caller: Principal, tenant: string | undefined): Promise<TokenRecord[]> {
    if (tenant !== undefined && tenant !== '') this.requireTenantAdmin(caller, tenant, 'listing tokens');
    else requireRole(caller, 'admin', 'listing tokens');
    const visible = (record: TokenRecord): boolean =>
      (tenant === undefined || tenant === '' || record.tenant === tenant) && (caller.clusterAdmin || record.tenant === caller.tenant);
    const records = (await this.store.scan(tokensBucket)).map((entry) => tokenRecordOf(parseJson(entry.value)));
    return records.filter((record): record is TokenRecord => record !== undefined && visible(record)).sort((a, b) => a.createdAtMs - b.createdAtMs);
  }

  async revokeToken(caller: Principal, id: string): Promise<TokenRecord> {
    if (!/^[0-9a-f]{12}$/.test(id)) throw new AtollError('INVALID_ARGUMENT', 'a token id is 12 hex digits (see atoll auth token list)');
    const entries = await this.store.scan(tokensBucket);
    const entry = entries.find((candidate) => tokenRecordOf(parseJson(candidate.value))?.id === id);
    const record = entry === undefined ? undefined : tokenRecordOf(parseJson(entry.value));
    // A token of another tenant is reported exactly like a missing one: no probing across tenants.
    if (entry === undefined || record === undefined || (!caller.clusterAdmin && record.tenant !== caller.tenant)) {
      throw new AtollError('INVALID_ARGUMENT', `no token with id ${id}`);
    }
    this.requireTenantAdmin(caller, record.tenant, 'revoking a token');
    const revoked = { ...record, revoked: true };
    await this.store.put(entry.key, json(revoked));
    this.tokenCache.clear();
    return revoked;
  }

  async setQuota(caller: Principal, tenant: string, quota: Quota): Promise<void> {
    validateTenant(tenant);
    requireClusterAdmin(caller, 'setting a quota');
    await this.store.put(systemKey(`quotas/${tenant}`), json(quotaOf(quota)));
    this.quotaSets++;
    this.quotaCache.delete(tenant);
    this.quotaReads.delete(tenant);
  }

  async quotaOf(tenant: string): Promise<Quota> {
    if (!this.enabled) return noQuota;
    const nowMs = Date.now();
    const cached = this.quotaCache.get(tenant);
    if (cached !== undefined && nowMs - cached.atMs < cacheMs) {
      if (dueForRefresh(nowMs - cached.atMs, cacheMs)) this.sharedQuotaRead(tenant, nowMs).catch(() => undefined);
      return cached.quota;
    }
    return this.sharedQuotaRead(tenant, nowMs);
  }

  private sharedQuotaRead(tenant: string, nowMs: number): Promise<Quota> {
    const running = this.quotaReads.get(tenant);
    if (running !== undefined) return running;
    const read = this.readQuota(tenant, nowMs);
    this.quotaReads.set(tenant, read);
    const forget = (): void => {
      if (this.quotaReads.get(tenant) === read) this.quotaReads.delete(tenant);
    };
    read.then(forget, forget);
    return read;
  }

  private async readQuota(tenant: string, nowMs: number): Promise<Quota> {
    this.quotaLookups++;
    const sets = this.quotaSets;
    const bytes = await this.store.get(systemKey(`quotas/${tenant}`));
    const recorded = bytes === undefined ? noQuota : quotaOf(parseJson(bytes));
    // The lease quota always applies: the default when the record sets none.
    const quota = { ...recorded, maxLeases: recorded.maxLeases > 0 ? recorded.maxLeases : this.limits.defaultLeaseQuota };
    // A setQuota while this read ran: its answer, maybe from before it, must not fill the cache.
    if (this.quotaSets !== sets) return quota;
    if (this.quotaCache.size >= maxCachedTokens) this.quotaCache = new Map();
    this.quotaCache.set(tenant, { quota, atMs: nowMs });
    return quota;
  }

  /** Cluster-wide per-tenant totals from the partitions' published usage records. */
  async totals(): Promise<Map<string, UsageTotal>> {
    const nowMs = Date.now();
    const cached = this.usageCache;
    if (cached !== undefined && nowMs - cached.atMs < usageCacheMs) {
      if (dueForRefresh(nowMs - cached.atMs, usageCacheMs) && this.usageRead === undefined) this.sharedTotalsRead(nowMs).catch(() => undefined);
      return cached.totals;
    }
    return this.sharedTotalsRead(nowMs);
  }

  private sharedTotalsRead(nowMs: number): Promise<Map<string, UsageTotal>> {
    if (this.usageRead !== undefined) return this.usageRead;
    const read = this.readTotals(nowMs);
    this.usageRead = read;
    const forget = (): void => {
      if (this.usageRead === read) this.usageRead = undefined;
    };
    read.then(forget, forget);
    return read;
  }

  private async readTotals(nowMs: number): Promise<Map<string, UsageTotal>> {
    this.quotaLookups++;
    const totals = new Map<string, UsageTotal>();
    for (const entry of await this.store.scan(usageBucket)) {
      const published = parseJson(entry.value) as Record<string, { keys?: number; bytes?: number; historyBytes?: number; rps?: number; leases?: number }> | undefined;
      for (const [tenant, usage] of Object.entries(published ?? {})) {
        const total = totals.get(tenant) ?? { ...noUsage };
        total.keys += Number(usage.keys) || 0;
        total.bytes += Number(usage.bytes) || 0;
        // Records published before history was counted have none: they count as 0.
        total.historyBytes += Number(usage.historyBytes) || 0;
        total.requestsPerSecond += Number(usage.rps) || 0;
        // Records published before leases were counted have none: they count as 0.
        total.leases += Number(usage.leases) || 0;
        totals.set(tenant, total);
      }
    }
    this.usageCache = { totals, atMs: nowMs };
    return totals;
  }

  async usage(caller: Principal, tenant: string | undefined): Promise<TenantUsage[]> {
    const totals = await this.totals();
    let tenants: string[];
    if (tenant !== undefined && tenant !== '') {
      this.requireTenantAdmin(caller, tenant, 'reading usage');
      tenants = [tenant];
    } else if (caller.clusterAdmin) {
      tenants = [...totals.keys()].filter((name) => name !== systemTenant).sort();
    } else {
      tenants = [caller.tenant];
    }
    const result: TenantUsage[] = [];
    for (const name of tenants) {
      const total = totals.get(name) ?? noUsage;
      result.push({ tenant: name, ...total, quota: await this.quotaOf(name) });
    }
    return result;
  }

  /**
   * Every tenant's usage and quota for the metrics scrape of the admin port (an operator's port,
   * not a client call, so no principal): none without authentication, at most `maxTenants` (the
   * largest by stored bytes), from the same cached totals and quotas the quota checks use.
   */
  async usageForMetrics(maxTenants: number): Promise<TenantUsage[]> {
    if (!this.enabled) return [];
    const totals = [...(await this.totals())].filter(([name]) => name !== systemTenant);
    totals.sort((a, b) => b[1].bytes + b[1].historyBytes - (a[1].bytes + a[1].historyBytes) || (a[0] < b[0] ? -1 : 1));
    const result: TenantUsage[] = [];
    for (const [name, total] of totals.slice(0, maxTenants)) result.push({ tenant: name, ...total, quota: await this.quotaOf(name) });
    return result;
  }

  /**
   * Checks a tenant's quotas before the leader runs a request: the request rate always, stored
   * keys and bytes for requests that may add data (`grows`). Deletes, expiry changes and
   * transactions that only delete are let through over quota, so a tenant can always get back
   * under it. Exceeding one changes nothing (QUOTA_EXCEEDED, RESOURCE_EXHAUSTED).
   */
  async checkQuota(tenant: string, grows: boolean): Promise<void> {
    if (!this.enabled || tenant === systemTenant) return;
    const quota = await this.quotaOf(tenant);
    if (quota.maxRequestsPerSecond > 0 && !this.limiter.tryTake(tenant, quota.maxRequestsPerSecond, Date.now())) {
      throw new AtollError('QUOTA_EXCEEDED', `tenant ${tenant} is over its request quota of ${quota.maxRequestsPerSecond} requests per second (per leader node)`, {
        tenant,
        maxRequestsPerSecond: quota.maxRequestsPerSecond,
      });
    }
    if (grows) await this.checkStorageQuota(tenant);
  }

  /**
   * Checks a lease grant against the tenant's quotas: its storage quota (a lease record is stored
   * data) and its lease quota (QUOTA_EXCEEDED at it; soft, as the key count is). The request rate
   * was checked by checkQuota.
   */
  async checkLeaseQuota(tenant: string): Promise<void> {
    if (!this.enabled || tenant === systemTenant) return;
    await this.checkStorageQuota(tenant);
    const quota = await this.quotaOf(tenant);
    const leases = ((await this.totals()).get(tenant) ?? noUsage).leases;
    if (leases >= quota.maxLeases) {
      throw new AtollError('QUOTA_EXCEEDED', `tenant ${tenant} holds ${leases} leases, at its quota of ${quota.maxLeases}: revoke unused leases or ask for a larger quota`, {
        tenant,
        leases,
        maxLeases: quota.maxLeases,
      });
    }
  }

  /**
   * QUOTA_EXCEEDED when the tenant's stored keys, or its live plus history bytes, are at its quota
   * (writes that add data).
   */
  async checkStorageQuota(tenant: string): Promise<void> {
    if (!this.enabled || tenant === systemTenant) return;
    const quota = await this.quotaOf(tenant);
    if (quota.maxKeys === 0 && quota.maxBytes === 0) return;
    const total = (await this.totals()).get(tenant) ?? noUsage;
    if (quota.maxKeys > 0 && total.keys >= quota.maxKeys) {
      throw new AtollError('QUOTA_EXCEEDED', `tenant ${tenant} stores ${total.keys} keys, at its quota of ${quota.maxKeys}: delete keys or ask for a larger quota`, {
        tenant,
        keys: total.keys,
        maxKeys: quota.maxKeys,
      });
    }
    const storedBytes = total.bytes + total.historyBytes;
    if (quota.maxBytes > 0 && storedBytes >= quota.maxBytes) {
      throw new AtollError(
        'QUOTA_EXCEEDED',
        `tenant ${tenant} stores ${storedBytes} bytes (${total.bytes} live, ${total.historyBytes} retained history of overwritten and deleted values), ` +
          `at its quota of ${quota.maxBytes}: ask for a larger quota, or delete data: deleted and overwritten values stay in history ` +
          `until their partitions compact it, which a tenant at its bytes quota makes them do within about ${Math.ceil(quotaCompactionIntervalMs / 1000) + 2} s`,
        { tenant, bytes: storedBytes, liveBytes: total.bytes, historyBytes: total.historyBytes, maxBytes: quota.maxBytes },
      );
    }
  }

  /**
   * The tenants at their bytes quota with retained history in it: their deletes free nothing until
   * history is compacted, so the partitions holding that history compact it (AtollNode
   * compactHistoryOverQuota). Only tenants with history are looked at, and quotas come from the cache.
   */
  async tenantsOverBytesQuotaWithHistory(): Promise<Set<string>> {
    const over = new Set<string>();
    if (!this.enabled) return over;
    for (const [tenant, total] of await this.totals()) {
      if (tenant === systemTenant || total.historyBytes <= 0) continue;
      const quota = await this.quotaOf(tenant);
      if (quota.maxBytes > 0 && total.bytes + total.historyBytes >= quota.maxBytes) over.add(tenant);
    }
    return over;
  }

  private requireTenantAdmin(caller: Principal, tenant: string, action: string): void {
    if (caller.clusterAdmin) return;
    requireRole(caller, 'admin', action);
    if (caller.tenant !== tenant) throw new AtollError('PERMISSION_DENIED', `${action} for another tenant needs the cluster admin token`);
  }
}
