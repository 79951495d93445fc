/**
 * The node's read-only reports, one room: the cluster map and load (ClusterInfo), pages of a
 * partition's keys for backups (Cluster.BackupPage), and the numbers a metrics scrape or a health
 * check reads. None of them changes state; AtollNode forwards its calls here.
 */
import { AtollError, isAtollError } from '../../errors.js';
import type { LoadTracker } from '../../hotkeys/index.js';
import { defaultTenant, systemTenant, tenantOfInternalKey, tenantTag, toUserKey } from '../../keys/tenant-keys.js';
import type { Limits } from '../../limits.js';
import { anonymousPrincipal, requireRole, type Principal } from '../../tenancy/principal.js';
import type * as api from '../../api/node-api.js';
import type { LeaderChange } from '../../api/node-api.js';
import type { KvExecutor } from './kv-executor.js';
import type { LeaderChangeLog } from './leader-changes.js';
import type { NodeMetricsView } from '../metrics.js';
import type { NodeAccess } from './node-access.js';
import type { AtollNodeConfig } from '../node-config.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import type { NodeClock } from '../ports.js';
import type { ClusterDescriptor } from '../cluster/cluster-descriptor.js';
import type { RaftDriver } from '../replica/raft-driver.js';
import type { Router } from './router.js';

export interface NodeReportsDeps {
  readonly id: number;
  readonly config: AtollNodeConfig;
  /** The cluster's recorded identity and hash (cluster-descriptor.ts). */
  readonly descriptor: ClusterDescriptor;
  readonly nodeIds: readonly number[];
  readonly limits: Limits;
  readonly clock: NodeClock;
  readonly load: LoadTracker;
  readonly driver: RaftDriver<PartitionReplica>;
  readonly access: NodeAccess;
  readonly router: Router;
  readonly executor: KvExecutor;
  readonly leaderChanges: LeaderChangeLog;
  /** The memory by consumer (memory-view.ts), for the scrape. */
  readonly memory?: () => NodeMetricsView['memory'];
  readonly watches?: () => NodeMetricsView['watches'];
}

/** See the file comment. */
export class NodeReports {
  constructor(private readonly deps: NodeReportsDeps) {}

  async clusterInfo(context: api.CallContext, request?: api.ClusterInfoRequest): Promise<api.ClusterInfoResponse> {
    // The map is public (clients need it to route; it names no data), but hot keys name keys: a
    // tenant sees only its own, without the tenant tag, and an unauthenticated caller sees none.
    const principal = await this.deps.access.principalOf(context).catch((error: unknown) => {
      if (isAtollError(error, 'UNAUTHENTICATED')) return undefined;
      throw error;
    });
    return this.clusterInfoFor(principal, request);
  }

  /**
   * The whole map with every tenant's hot keys, as the cluster admin sees it: for another node's
   * status page (Peer.NodeStatus, on the peer port only; that page needs the cluster admin token).
   */
  clusterInfoForStatus(): api.ClusterInfoResponse {
    return this.clusterInfoFor(anonymousPrincipal);
  }

  private clusterInfoFor(principal: Principal | undefined, request?: api.ClusterInfoRequest): api.ClusterInfoResponse {
    // The equal table cut at every split start this node knows (range-routing.ts); only the
    // partitions asked about when the request names some (an idle peer's stray check asks about a
    // few: building, encoding and decoding all 1,024 was most of an idle node's CPU).
    const only = request?.partitions !== undefined && request.partitions.length > 0 ? new Set(request.partitions) : undefined;
    const table = only === undefined ? this.deps.router.ranges.table() : this.deps.router.ranges.table().filter((range) => only.has(range.id));
    const load = this.deps.load.report(this.deps.clock.monotonicMs());
    const visibleLoad = (partition: number): ReturnType<typeof load.of> => {
      const of = load.of(partition);
      if (principal?.clusterAdmin === true || of.topKeys === undefined) return of;
      if (principal === undefined) return { ...of, topKeys: [] };
      // Own keys only: the tag must be there whole (a key cut for the report keeps it: the cut is
      // far longer than any tag) and, for the default tenant, absent (no user key has U+0000).
      const tag = tenantTag(principal.tenant);
      const own = of.topKeys.filter((entry) =>
        tag === '' ? !entry.key.startsWith('\u0000') : entry.key.startsWith(tag) && tenantOfInternalKey(entry.key) === principal.tenant,
      );
      return { ...of, topKeys: own.map((entry) => ({ ...entry, key: entry.key.slice(tag.length) })) };
    };
    const partitions: api.PartitionInfo[] = table.map((range) => {
      // Field reads, no status() object: peers ask for this (stray-check.ts) on idle clusters too.
      const replica = this.deps.driver.groups.get(range.id);
      const raw = replica?.raw;
      return {
        id: range.id,
        rangeStart: range.start,
        rangeEnd: range.end,
        replicas: this.deps.router.replicasOf(range.id),
        learners: raw?.learnerList() ?? [],
        leader: raw !== undefined ? raw.lead : (this.deps.router.remoteLeaderOf(range.id) ?? 0),
        term: raw?.term ?? 0,
        commitIndex: raw?.committedIndex ?? 0,
        appliedIndex: replica?.appliedIndex ?? 0,
        revision: replica?.mvcc.revision ?? 0,
        ...visibleLoad(range.id),
      };
    });
    return {
      nodeId: this.deps.id,
      partitionCount: this.deps.config.partitions,
      replicationFactor: this.deps.config.replicationFactor,
      hashFunction: this.deps.descriptor.hashFunction,
      clusterId: this.deps.descriptor.clusterId,
      nodes: this.deps.nodeIds.map((id) => ({
        id,
        address: this.deps.config.peers.get(id) as string,
        reachable: this.deps.driver.transport.isReachable(id),
        adminAddress: this.deps.config.adminAddresses?.get(id) ?? '',
      })),
      partitions,
      ...(this.deps.router.ranges.mergedStarts().length > 0 && { mergedStarts: this.deps.router.ranges.mergedStarts() }),
      // The caller's own tenant, so its client routes (tenant, bucket) straight to the leader.
      ...(principal !== undefined && principal.tenant !== defaultTenant && { callerTenant: principal.tenant }),
    };
  }

  /**
   * One page of a partition's live keys at one revision, for `atoll backup`; served by the
   * partition's leader only (others answer NOT_LEADER / NO_LEADER with a hint, and the client
   * follows it). A tenant admin reads its own tenant's keys; the cluster admin (or anyone, without
   * authentication) every tenant's except the system tenant's (tokens, quotas, usage).
   */
  async backupPage(request: api.BackupPageRequest, context: api.CallContext): Promise<api.BackupPageResponse> {
    const principal = await this.deps.access.principalOf(context);
    requireRole(principal, 'admin', 'a backup');
    const { partitions } = this.deps.config;
    // A partition a split made (id past the equal table's) is valid once this node's table knows it.
    const known = Number.isSafeInteger(request.partition) && request.partition >= partitions && this.deps.router.ranges.isKnown(request.partition);
    if (!known && (!Number.isSafeInteger(request.partition) || request.partition < 0 || request.partition >= partitions)) {
      throw new AtollError('INVALID_ARGUMENT', `partition must be an integer in [0, ${partitions - 1}]`, { partition: request.partition });
    }
    const limit = request.limit === 0 ? this.deps.limits.defaultPageSize : Math.min(request.limit, this.deps.limits.maxPageSize);
    // Which keys the caller may read: the scan starts at its tenant's tag, and `include` also keeps
    // the default tenant (whose tag is "") from seeing other tenants' keys.
    const everyTenant = principal.clusterAdmin;
    const scanPrefix = everyTenant ? '' : tenantTag(principal.tenant);
    const include = (internalKey: string): boolean => {
      const tenant = tenantOfInternalKey(internalKey);
      return everyTenant ? tenant !== systemTenant : tenant === principal.tenant;
    };
    let after: string | undefined;
    if (request.pageToken !== '') {
      if (request.pageToken.length > this.deps.limits.maxKeyBytes * 2 || !/^[A-Za-z0-9_-]+$/.test(request.pageToken)) {
        throw new AtollError('INVALID_ARGUMENT', 'page_token is not one this API returned');
      }
      after = Buffer.from(request.pageToken, 'base64url').toString('utf8');
      if (!after.startsWith(scanPrefix) || after === '') throw new AtollError('INVALID_ARGUMENT', 'page_token is not one this API returned');
    }
    if (request.revision === 0 && after !== undefined) throw new AtollError('INVALID_ARGUMENT', 'a page_token goes with the revision of the first page');
    const replica = this.deps.driver.groups.get(request.partition);
    if (replica === undefined) {
      throw this.deps.router.notLeader(request.partition, this.deps.router.remoteLeaderOf(request.partition) ?? 0, `node ${this.deps.id} has no replica`);
    }
    const status = replica.raw.status();
    if (status.role !== 'leader') throw this.deps.router.notLeader(request.partition, status.lead === this.deps.id ? 0 : status.lead, 'backups read at the leader');
    const page = await this.deps.executor.backupPage(replica, { revision: request.revision, after, limit }, scanPrefix, include, context);
    return {
      revision: page.revision,
      items: page.items.map((item) => {
        const tenant = tenantOfInternalKey(item.key);
        return { tenant, key: toUserKey(tenant, item.key), value: item.value, expiresAtMs: item.expiresAtMs ?? 0, modRevision: item.modRevision };
      }),
      nextPageToken: page.continueAfter === undefined ? '' : Buffer.from(page.continueAfter, 'utf8').toString('base64url'),
    };
  }

  /**
   * The node's state for a metrics scrape or a health check: plain numbers read from the loop's
   * rooms, no I/O, O(hosted partitions). Read between loop iterations (the event loop is single
   * threaded), so each partition's numbers are one consistent moment of that partition.
   */
  metricsView(): NodeMetricsView {
    const nowMs = this.deps.clock.monotonicMs();
    const partitions = [...this.deps.driver.groups.values()].map((replica) => {
      const status = replica.raw.status();
      let keys = 0;
      let bytes = 0;
      for (const usage of replica.mvcc.usageByTenant().values()) {
        keys += usage.keys;
        bytes += usage.bytes + usage.historyBytes;
      }
      return {
        partition: replica.id,
        role: status.role,
        term: status.term,
        leader: status.lead,
        commitIndex: status.commit,
        appliedIndex: replica.appliedIndex,
        logEntries: Math.max(0, replica.storage.lastIndex() - replica.storage.snapshotMeta().index),
        proposalsPending: replica.proposalsPending,
        requestsPerSecond: this.deps.load.rateOf(replica.id, nowMs),
        keys,
        bytes,
        dedupRecords: replica.mvcc.dedupStatus().recordCount,
      };
    });
    return {
      nodeId: this.deps.id,
      tasksQueued: this.deps.driver.tasksQueued,
      partitions,
      ...(this.deps.memory !== undefined && { memory: this.deps.memory() }),
      ...(this.deps.watches !== undefined && { watches: this.deps.watches() }),
      reachable: this.deps.nodeIds.map((node) => ({ node, reachable: node === this.deps.id || this.deps.driver.transport.isReachable(node) })),
    };
  }

  /** The leader changes this node's replicas saw, newest last (at most LEADER_CHANGES_KEPT). */
  recentLeaderChanges(): LeaderChange[] {
    return this.deps.leaderChanges.recent();
  }
}
