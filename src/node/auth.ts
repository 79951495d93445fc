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
 * on every node within that time; an unknown token is looked up again after the same time.
 *
 * Quotas (`quotas/<tenant>` records) bound a tenant's stored keys and bytes and its request rate.
 * Stored keys and bytes are counted exactly per partition by the MVCC store; each partition leader
 * publishes its partition's per-tenant counts every `publishMs` to `usage/<partition>` and every
 * node sums those records, so a tenant's total is at most a few seconds old and a burst of writes
 * can overshoot a quota by what it writes in that time. The request rate is limited by each leader
 * node separately (a token bucket per tenant), so a cluster admits at most nodes x the rate.
 */
import { createHash, randomBytes } from 'node:crypto';
import { AtollError } from '../errors.js';
import { systemTenant, toInternalKey, validateTenant } from '../keys/tenant-keys.js';
import { anonymousPrincipal, isRole, requireClusterAdmin, requireRole, type Principal, type Role } from '../tenancy/principal.js';

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
}

export const noQuota: Quota = Object.freeze({ maxKeys: 0, maxBytes: 0, maxRequestsPerSecond: 0 });

export interface TenantUsage {
  readonly tenant: string;
  readonly keys: number;
  readonly bytes: number;
  readonly requestsPerSecond: number;
  readonly quota: Quota;
}

/** How the auth layer reads and writes the system keyspace (internal keys, through Raft). */
export interface SystemStore {
  get(internalKey: string): Promise<Uint8Array | undefined>;
  put(internalKey: string, value: Uint8Array): Promise<void>;
  /** Every live key under an internal key prefix (a system bucket). */
  scan(internalPrefix: string): Promise<Array<{ key: string; value: Uint8Array }>>;
}

const tokenPrefix = 'atk_';
const tokenPattern = /^atk_[A-Za-z0-9_-]{43}$/;
const cacheMs = 2_000;
const maxCachedTokens = 10_000;
const usageCacheMs = 1_000;

export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export function newToken(): string {
  return tokenPrefix + randomBytes(32).toString('base64url');
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
  return { maxKeys: count(q.maxKeys), maxBytes: count(q.maxBytes), maxRequestsPerSecond: count(q.maxRequestsPerSecond) };
}

function unauthenticated(message: string): AtollError {
  return new AtollError('UNAUTHENTICATED', message);
}

/** A token bucket per tenant: `rate` requests per second with a burst of one second's worth. */
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
  private readonly tokenCache = new Map<string, { principal: Principal | undefined; atMs: number }>();
  private quotaCache = new Map<string, { quota: Quota; atMs: number }>();
  private usageCache: { totals: Map<string, { keys: number; bytes: number; requestsPerSecond: number }>; atMs: number } | undefined;
  private readonly limiter = new RateLimiter();

  constructor(
    adminToken: string | undefined,
    private readonly store: SystemStore,
  ) {
    this.adminTokenHash = adminToken === undefined ? undefined : hashToken(adminToken);
  }

  get enabled(): boolean {
    return this.adminTokenHash !== undefined;
  }

  /** Who the caller is, from the `authorization` metadata value (or its absence). */
  async principalOf(authorization: string | undefined): Promise<Principal> {
    if (!this.enabled) return anonymousPrincipal;
    if (authorization === undefined || authorization === '') {
      throw unauthenticated('this cluster requires a token: send `authorization: Bearer <token>` metadata (atoll --token, ATOLL_TOKEN)');
    }
    const match = /^Bearer\s+(\S+)$/i.exec(authorization.trim());
    if (match === null || !tokenPattern.test(match[1]!)) throw unauthenticated('malformed authorization: expected `Bearer atk_...`');
    const hash = hashToken(match[1]!);
    if (hash === this.adminTokenHash) return { tenant: 'default', role: 'admin', clusterAdmin: true, tokenId: hash.slice(0, 12) };
    const nowMs = Date.now();
    const cached = this.tokenCache.get(hash);
    let principal = cached !== undefined && nowMs - cached.atMs < cacheMs ? cached.principal : undefined;
    if (cached === undefined || nowMs - cached.atMs >= cacheMs) {
      const bytes = await this.store.get(systemKey(`tokens/${hash}`));
      const record = bytes === undefined ? undefined : tokenRecordOf(parseJson(bytes));
      principal = record === undefined || record.revoked ? undefined : { tenant: record.tenant, role: record.role, clusterAdmin: false, tokenId: record.id };
      if (this.tokenCache.size >= maxCachedTokens) this.tokenCache.delete(this.tokenCache.keys().next().value!);
      this.tokenCache.set(hash, { principal, atMs: nowMs });
    }
    if (principal === undefined) throw unauthenticated('unknown or revoked token');
    return principal;
  }

  async createToken(caller: Principal, tenant: string, role: string, name: string): Promise<{ token: string; info: TokenRecord }> {
    validateTenant(tenant);
    if (tenant === systemTenant) throw new AtollError('INVALID_ARGUMENT', `tenant ${systemTenant} is reserved for the cluster's own records`);
    if (!isRole(role)) throw new AtollError('INVALID_ARGUMENT', `role must be read, readwrite or admin; got ${JSON.stringify(role)}`);
    this.requireTenantAdmin(caller, tenant, 'creating a token');
    if (name.length > 200) throw new AtollError('INVALID_ARGUMENT', 'a token name is at most 200 characters');
    const token = newToken();
    const hash = hashToken(token);
    const info: TokenRecord = { id: hash.slice(0, 12), tenant, role, name, createdAtMs: Date.now(), revoked: false };
    await this.store.put(systemKey(`tokens/${hash}`), json(info));
    return { token, info };
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
    this.quotaCache.delete(tenant);
  }

  async quotaOf(tenant: string): Promise<Quota> {
    if (!this.enabled) return noQuota;
    const nowMs = Date.now();
    const cached = this.quotaCache.get(tenant);
    if (cached !== undefined && nowMs - cached.atMs < cacheMs) return cached.quota;
    const bytes = await this.store.get(systemKey(`quotas/${tenant}`));
    const quota = bytes === undefined ? noQuota : quotaOf(parseJson(bytes));
    if (this.quotaCache.size >= maxCachedTokens) this.quotaCache = new Map();
    this.quotaCache.set(tenant, { quota, atMs: nowMs });
    return quota;
  }

  /** Cluster-wide per-tenant totals from the partitions' published usage records. */
  async totals(): Promise<Map<string, { keys: number; bytes: number; requestsPerSecond: number }>> {
    const nowMs = Date.now();
    if (this.usageCache !== undefined && nowMs - this.usageCache.atMs < usageCacheMs) return this.usageCache.totals;
    const totals = new Map<string, { keys: number; bytes: number; requestsPerSecond: number }>();
    for (const entry of await this.store.scan(usageBucket)) {
      const published = parseJson(entry.value) as Record<string, { keys?: number; bytes?: number; rps?: number }> | undefined;
      for (const [tenant, usage] of Object.entries(published ?? {})) {
        const total = totals.get(tenant) ?? { keys: 0, bytes: 0, requestsPerSecond: 0 };
        total.keys += Number(usage.keys) || 0;
        total.bytes += Number(usage.bytes) || 0;
        total.requestsPerSecond += Number(usage.rps) || 0;
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
      const total = totals.get(name) ?? { keys: 0, bytes: 0, requestsPerSecond: 0 };
      result.push({ tenant: name, ...total, quota: await this.quotaOf(name) });
    }
    return result;
  }

  /**
   * Checks a tenant's quotas before the leader runs a request: the request rate always, stored
   * keys and bytes for writes. Exceeding one changes nothing (QUOTA_EXCEEDED, RESOURCE_EXHAUSTED).
   */
  async checkQuota(tenant: string, write: boolean): Promise<void> {
    if (!this.enabled || tenant === systemTenant) return;
    const quota = await this.quotaOf(tenant);
    if (quota.maxRequestsPerSecond > 0 && !this.limiter.tryTake(tenant, quota.maxRequestsPerSecond, Date.now())) {
      throw new AtollError('QUOTA_EXCEEDED', `tenant ${tenant} is over its request quota of ${quota.maxRequestsPerSecond} requests per second (per leader node)`, {
        tenant,
        maxRequestsPerSecond: quota.maxRequestsPerSecond,
      });
    }
    if (!write || (quota.maxKeys === 0 && quota.maxBytes === 0)) return;
    const total = (await this.totals()).get(tenant) ?? { keys: 0, bytes: 0, requestsPerSecond: 0 };
    if (quota.maxKeys > 0 && total.keys >= quota.maxKeys) {
      throw new AtollError('QUOTA_EXCEEDED', `tenant ${tenant} stores ${total.keys} keys, at its quota of ${quota.maxKeys}: delete keys or ask for a larger quota`, {
        tenant,
        keys: total.keys,
        maxKeys: quota.maxKeys,
      });
    }
    if (quota.maxBytes > 0 && total.bytes >= quota.maxBytes) {
      throw new AtollError('QUOTA_EXCEEDED', `tenant ${tenant} stores ${total.bytes} bytes, at its quota of ${quota.maxBytes}: delete data or ask for a larger quota`, {
        tenant,
        bytes: total.bytes,
        maxBytes: quota.maxBytes,
      });
    }
  }

  private requireTenantAdmin(caller: Principal, tenant: string, action: string): void {
    if (caller.clusterAdmin) return;
    requireRole(caller, 'admin', action);
    if (caller.tenant !== tenant) throw new AtollError('PERMISSION_DENIED', `${action} for another tenant needs the cluster admin token`);
  }
}
