/**
 * Admission and access control at a node: who the caller is (tokens, roles; src/node/service/auth.ts),
 * whether a call to the peer port carries the peer secret, tenants' quotas, the per-tenant usage
 * each partition leader publishes, and the compaction that lets a tenant at its bytes quota get
 * back under it by deleting.
 */
import type { Logger } from 'pino';
import type { Limits } from '../../limits.js';
import { AtollError } from '../../errors.js';
import { systemTenant, validateTenant } from '../../keys/tenant-keys.js';
import type { TenantGrant } from '../../api/tenant-grant.js';
import { encodeCommand } from '../../mvcc/index.js';
import { anonymousPrincipal, requireRole, type Principal } from '../../tenancy/principal.js';
import type * as api from '../../api/node-api.js';
import { NodeAuth, quotaCompactionIntervalMs, usageBucket, type Quota, type SystemStore, type TenantUsage, type TokenRecord } from './auth.js';
import { isWriteKind, type KvKind } from '../../api/operations.js';
import { encodeEntryPayload, type PartitionReplica } from '../replica/partition-replica.js';
import { PeerSecretCheck } from '../peers/peer-secret.js';
import type { FailedAuthGate } from '../ports.js';
import type { NodeClock } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';
import { compactionFloor } from './snapshot-pins.js';

export interface NodeAccessOptions {
  /** The bootstrap cluster admin token; absent: authentication is off. */
  readonly adminToken: string | undefined;
  /** Grants of in-process listeners (NodeConfig.tenantGrants). */
  readonly tenantGrants: readonly TenantGrant[];
  /** Shared with the client port's listener (NodeConfig.failedAuths). */
  readonly failedAuths: FailedAuthGate | undefined;
  /** Every peer secret this node accepts (the first is the one it sends). */
  readonly peerSecrets: readonly string[];
  readonly limits: Limits;
  /** Where tokens, quotas and usage records live (the node's own system-tenant reads and writes). */
  readonly store: SystemStore;
  readonly driver: RaftDriver<PartitionReplica>;
  readonly clock: NodeClock;
  readonly logger: Logger;
}

/** A tenant a listener may act as: a valid name, and never the system tenant (the cluster's own records). */
export function checkGrantable(tenant: string): void {
  validateTenant(tenant);
  if (tenant === systemTenant) throw new AtollError('INVALID_ARGUMENT', 'the system tenant holds the cluster\'s own records: no listener may act as it');
}

export class NodeAccess {
  private readonly auth: NodeAuth;
  /** Checks the secret every call to this node's peer port must carry. */
  private readonly peerSecretCheck: PeerSecretCheck;
  /** Requests per (partition, tenant) since the last usage publication. */
  private readonly requestCounts = new Map<number, Map<string, number>>();
  private readonly lastPublishedUsage = new Map<number, string>();
  private lastUsagePublishMs: number;
  /** Partitions' last compaction for a tenant at its bytes quota (monotonic ms), and whether a check runs. */
  private readonly quotaCompactedAtMs = new Map<number, number>();
  private checkingQuotaHistory = false;
  /** The tenant grants of the node's config; any other object is ignored. */
  private readonly grants: ReadonlySet<TenantGrant>;

  constructor(private readonly options: NodeAccessOptions) {
    this.auth = new NodeAuth(options.adminToken, options.store, options.limits, options.failedAuths);
    this.grants = new Set(options.tenantGrants);
    for (const grant of this.grants) checkGrantable(grant.tenant);
    this.peerSecretCheck = new PeerSecretCheck(options.peerSecrets);
    this.lastUsagePublishMs = options.clock.monotonicMs();
  }

  /**
   * The caller of a client call: its token (the peer secret never authorizes a client call); a
   * call without one, from an in-process listener holding one of the grants in the node's
   * config (--etcd-tenant), acts as the grant's tenant with the readwrite role. Without
   * authentication every call is the default tenant's, as always.
   */
  principalOf(context: api.CallContext): Promise<Principal> {
    const grant = context.tenantGrant;
    if (grant !== undefined && (context.authorization === undefined || context.authorization === '') && this.grants.has(grant) && this.auth.enabled) {
      return Promise.resolve({ tenant: grant.tenant, role: 'readwrite', clusterAdmin: false, tokenId: '' });
    }
    return this.auth.principalOf(context.authorization, context.connection);
  }

  /** The caller's tenant, once its role allows the operation. */
  async authorize(kind: KvKind, context: api.CallContext): Promise<string> {
    // Without authentication every caller is the anonymous principal, a cluster admin: nothing to look up or check.
    const principal = await (this.auth.enabled ? this.principalOf(context) : anonymousPrincipal);
    if (!principal.clusterAdmin) requireRole(principal, isWriteKind(kind) ? 'readwrite' : 'read', `${kind}`);
    return principal.tenant;
  }

  /** Whether `secret` (a call's peer-secret metadata) is one of the cluster's peer secrets (constant time). */
  peerCallAllowed(secret: unknown): boolean {
    return this.peerSecretCheck.matches(secret);
  }

  async createToken(request: { tenant: string; role: string; name: string }, context: api.CallContext): Promise<{ token: string; info: TokenRecord }> {
    return this.auth.createToken(await this.principalOf(context), request.tenant, request.role, request.name);
  }

  async listTokens(request: { tenant: string }, context: api.CallContext): Promise<TokenRecord[]> {
    return this.auth.listTokens(await this.principalOf(context), request.tenant);
  }

  async revokeToken(request: { id: string }, context: api.CallContext): Promise<TokenRecord> {
    return this.auth.revokeToken(await this.principalOf(context), request.id);
  }

  async setQuota(request: { tenant: string; quota: Quota }, context: api.CallContext): Promise<void> {
    await this.auth.setQuota(await this.principalOf(context), request.tenant, request.quota);
  }

  async usage(request: { tenant: string }, context: api.CallContext): Promise<TenantUsage[]> {
    return this.auth.usage(await this.principalOf(context), request.tenant);
  }

  /** Every tenant's usage and quota for the operator's metrics scrape (NodeAuth.usageForMetrics). */
  usageForMetrics(maxTenants: number): Promise<TenantUsage[]> {
    return this.auth.usageForMetrics(maxTenants);
  }

  /** Refuses a lease grant of a tenant at its lease quota or its storage quota. */
  checkLeaseQuota(tenant: string): Promise<void> {
    return this.auth.checkLeaseQuota(tenant);
  }

  /** Refuses a write that adds data for a tenant over its storage quota. */
  checkStorageQuota(tenant: string): Promise<void> {
    return this.auth.checkStorageQuota(tenant);
  }

  /**
   * Counts one request this node serves for the partition (the tenant's request rate) and refuses it
   * when its tenant is over its quota (`grows`: the request may add stored data, so the storage
   * quota applies too). Without authentication there is nothing to count or check.
   */
  chargeRequest(partition: number, tenant: string, grows: () => boolean): Promise<void> {
    if (!this.auth.enabled) return Promise.resolve();
    const counts = this.requestCounts.get(partition) ?? new Map<string, number>();
    counts.set(tenant, (counts.get(tenant) ?? 0) + 1);
    this.requestCounts.set(partition, counts);
    return this.auth.checkQuota(tenant, grows());
  }

  /**
   * Each partition this node leads publishes its per-tenant stored keys, live bytes, retained
   * history bytes, leases and request rate to the system record usage/<partition> when they changed;
   * NodeAuth sums the records for quotas.
   */
  publishUsage(): void {
    if (!this.auth.enabled) return;
    const nowMs = this.options.clock.monotonicMs();
    const seconds = Math.max(0.001, (nowMs - this.lastUsagePublishMs) / 1000);
    this.lastUsagePublishMs = nowMs;
    const counts = this.requestCounts;
    for (const replica of this.options.driver.groups.values()) {
      if (replica.raw.role !== 'leader') continue;
      const record: Record<string, { keys: number; bytes: number; historyBytes: number; rps: number; leases?: number }> = {};
      const entryOf = (tenant: string) => (record[tenant] ??= { keys: 0, bytes: 0, historyBytes: 0, rps: 0 });
      for (const [tenant, usage] of replica.mvcc.usageByTenant()) {
        if (tenant !== systemTenant) Object.assign(entryOf(tenant), { keys: usage.keys, bytes: usage.bytes, historyBytes: usage.historyBytes });
      }
      // Only tenants holding leases get the field, so a partition without leases publishes what it did before.
      for (const [tenant, leases] of replica.mvcc.leaseCountsByTenant()) {
        if (tenant !== systemTenant) entryOf(tenant).leases = leases;
      }
      for (const [tenant, count] of counts.get(replica.id) ?? []) {
        if (tenant !== systemTenant) entryOf(tenant).rps = Math.round(count / seconds);
      }
      const text = JSON.stringify(record);
      if (this.lastPublishedUsage.get(replica.id) === text) continue;
      this.lastPublishedUsage.set(replica.id, text);
      this.options.store.put(`${usageBucket}/${replica.id}`, new TextEncoder().encode(text)).catch((error: unknown) => {
        this.lastPublishedUsage.delete(replica.id);
        this.options.logger.debug({ err: error, partition: replica.id }, 'publishing tenant usage failed');
      });
    }
    counts.clear();
  }

  /**
   * Retained history counts toward a tenant's bytes quota (src/node/service/auth.ts), and a delete only
   * moves a value into history. So that a tenant at its quota can get back under by deleting, a
   * leader whose partition holds history of such a tenant compacts ALL of the partition's history
   * (floor = its revision), at most once per quotaCompactionIntervalMs. That shortens the retention
   * window of every tenant of the partition for the moment (past reads and transactions older than
   * the floor get COMPACTED), which is the price of bounding history per tenant; docs/security.md.
   */
  async compactHistoryOverQuota(): Promise<void> {
    const { driver } = this.options;
    if (!this.auth.enabled || this.checkingQuotaHistory || driver.closed) return;
    this.checkingQuotaHistory = true;
    try {
      const over = await this.auth.tenantsOverBytesQuotaWithHistory();
      if (over.size === 0) return;
      driver.enqueue(() => this.compactFor(over));
    } catch (error) {
      this.options.logger.debug({ err: error }, 'checking tenants at their bytes quota failed');
    } finally {
      this.checkingQuotaHistory = false;
    }
  }

  /** The loop task of compactHistoryOverQuota: proposes the compactions that are due. */
  private compactFor(over: ReadonlySet<string>): void {
    const { clock, logger, limits } = this.options;
    const nowMs = clock.monotonicMs();
    for (const replica of this.options.driver.groups.values()) {
      if (replica.raw.role !== 'leader') continue;
      const { compactedRevision } = replica.mvcc;
      // Never past a snapshot a running script reads at (snapshot-pins.ts).
      const revision = compactionFloor(replica.mvcc, replica.mvcc.revision);
      if (revision <= compactedRevision) continue;
      if (nowMs - (this.quotaCompactedAtMs.get(replica.id) ?? -Infinity) < quotaCompactionIntervalMs) continue;
      const usage = replica.mvcc.usageByTenant();
      if (![...over].some((tenant) => (usage.get(tenant)?.historyBytes ?? 0) > 0)) continue;
      this.quotaCompactedAtMs.set(replica.id, nowMs);
      const payload = encodeEntryPayload(clock.wallMs(), encodeCommand({ type: 'compact', belowRevision: revision }, limits));
      try {
        replica.propose(payload, {
          resolve: () => logger.info({ partition: replica.id, belowRevision: revision, tenants: [...over] }, 'compacted history held by tenants at their bytes quota'),
          reject: (error: unknown) => logger.debug({ err: error, partition: replica.id }, 'quota compaction not applied'),
        });
      } catch {
        // Lost leadership meanwhile; the next leader sees the same usage.
      }
    }
  }
}
