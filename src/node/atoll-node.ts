/**
 * One Atoll node, wired from rooms with one job each: the multi-Raft driver (raft-driver.ts), the
 * router (router.ts), the KV executor (kv-executor.ts), admission and access control
 * (node-access.ts, admission.ts), watches (watch-service.ts), read-only reports (node-reports.ts)
 * and housekeeping (maintenance.ts). This file opens the node's
 * replicas, connects the rooms, and keeps the public surface the gRPC layer and tests use: the
 * NodeApi, the cluster and access-control calls, and the plain methods the Peer service needs.
 */
import type { Logger } from 'pino';
import type { VoteFloor } from '../raft/types.js';
import { AtollError } from '../errors.js';
import { LoadTracker } from '../hotkeys/index.js';
import { defaultLimits, makeLimits, type Limits } from '../limits.js';
import { VersionCache } from '../mvcc/version-cache.js';
import { Rng } from '../raft/rng.js';
import type { StorageEngine } from '../storage/storage-engine.js';
import { WriteBehindEngine } from '../storage/write-behind-engine.js';
import { mapOperation, unmapError, unmapResult } from '../tenancy/map-operation.js';
import { defaultTenant } from '../keys/tenant-keys.js';
import { checkOperation } from '../tenancy/check-operation.js';
import { markChecked } from '../api/checked-operation.js';
import { requireClusterAdmin, type Principal } from '../tenancy/principal.js';
import { TxnHandleKeys } from '../txn/txn-handle.js';
import { Admission } from './service/admission.js';
import type * as api from '../api/node-api.js';
import type { LeaderChange, MergePartitionResult, SplitPartitionResult } from '../api/node-api.js';
import type { Quota, SystemStore, TenantUsage, TokenRecord } from './service/auth.js';
import { KvExecutor } from './service/kv-executor.js';
import { LeaseKeeper } from './service/lease-keeper.js';
import { Maintenance } from './service/maintenance.js';
import { transferLeader } from './cluster/leader-transfer.js';
import { Membership } from './cluster/membership.js';
import { MembershipAdmin } from './cluster/membership-admin.js';
import { memoryView } from './service/memory-view.js';
import { noMetrics, type NodeMetricsView } from './metrics.js';
import { NodeAccess } from './service/node-access.js';
import type { KvKind, KvOperation, KvResult, KvTypes } from '../api/operations.js';
import { openClusterDescriptor, type ClusterDescriptor } from './cluster/cluster-descriptor.js';
import type { PartitionReplica } from './replica/partition-replica.js';
import { newPeerSecret } from './peers/peer-secret.js';
import { replicasOf } from '../keys/placement.js';
import { systemClock, systemTimers, type NodeClock, type NodeEnvironment } from './ports.js';
import { RaftDriver } from './replica/raft-driver.js';
import { maxSnapshotChunkBytes } from './snapshot/snapshot-transfer.js';
import { ReplicaMoves } from './cluster/replica-moves.js';
import { Rebalancer } from './cluster/rebalancer.js';
import { MergeAdmin } from './cluster/merge-admin.js';
import { StrandedFreezes } from './cluster/stranded-freezes.js';
import { loadTombstones } from './apply/merge-tombstones.js';
import { SplitAdmin } from './cluster/split-admin.js';
import { AutoSplitter } from './cluster/auto-split.js';
import { ReplicaStore } from './apply/replica-store.js';
import { NodeReports } from './service/node-reports.js';
import { LeaderChangeLog } from './service/leader-changes.js';
import { Router } from './service/router.js';
import { ScriptScheduler } from './service/script-scheduler.js';
import { WatchService } from './service/watch-service.js';
import { NODE_DEFAULTS, type AtollNodeConfig } from './node-config.js';

export { NODE_DEFAULTS, type AtollNodeConfig, type NodeTestBugs } from './node-config.js';

/** The response of a NodeApi method of one kind, from the result of runKv. */
function responseOf<K extends KvKind>(result: KvResult): KvTypes[K]['response'] {
  return result.response as KvTypes[K]['response'];
}

/** The deadline of a merge the node finishes itself (stranded-freezes.ts): a freeze wait and two commits. */
const STRANDED_MERGE_CALL_MS = 10_000;

/** One Atoll node: the rooms above, wired; see the file comment. */
export class AtollNode implements api.NodeApi {
  readonly id: number;
  /** Limits every replica applies identically: values are checked before proposing and on apply. */
  readonly limits: Limits;
  /** Newest versions of recently used keys, shared by this node's partition stores. */
  readonly versionCache: VersionCache;
  private readonly logger: Logger;
  private readonly clock: NodeClock;
  private readonly nodeIds: number[];
  /** Request rates and hot keys of the partitions this node serves (src/hotkeys), for ClusterInfo. */
  private readonly load: LoadTracker;
  private readonly driver: RaftDriver<PartitionReplica>;
  private readonly access: NodeAccess;
  private readonly router: Router;
  private readonly executor: KvExecutor;
  private readonly maintenance: Maintenance;
  private readonly leases: LeaseKeeper;
  private readonly watches: WatchService;
  private readonly reports: NodeReports;
  /** Leader changes this node's replicas saw, for the status page (leader-changes.ts). */
  private readonly leaderChanges: LeaderChangeLog;
  private readonly replicaStore: ReplicaStore;
  private readonly moves: ReplicaMoves;
  private readonly splits: SplitAdmin;
  /** Joins a led partition with its right neighbour (merge-admin.ts). */
  private readonly merges: MergeAdmin;
  /** Splits led partitions past the --auto-split-* thresholds (auto-split.ts); idle when none is set. */
  private readonly autoSplitter: AutoSplitter;
  /** The replicated member table, followed (membership.ts) and changed (membership-admin.ts). */
  private readonly membership: Membership;
  private readonly memberAdmin: MembershipAdmin;
  /** Evens replicas and leaders across the members (rebalancer.ts); maintenance follows its leaders. */
  private readonly rebalancer: Rebalancer;

  private constructor(
    readonly config: AtollNodeConfig,
    private readonly engine: StorageEngine,
    private readonly environment: NodeEnvironment,
    /** What this node's data directory records about its cluster (cluster-descriptor.ts). */
    readonly descriptor: ClusterDescriptor,
  ) {
    this.id = config.id;
    this.logger = config.logger;
    this.clock = environment.clock ?? systemClock;
    const timers = environment.timers ?? systemTimers;
    this.nodeIds = [...config.peers.keys()].sort((a, b) => a - b);
    this.limits =
      config.maxValueBytes === undefined && config.maxTokensPerTenant === undefined && config.limits === undefined
        ? defaultLimits
        : makeLimits({
            ...config.limits,
            ...(config.maxValueBytes !== undefined && { maxValueBytes: config.maxValueBytes }),
            ...(config.maxTokensPerTenant !== undefined && { maxTokensPerTenant: config.maxTokensPerTenant }),
          });
    this.load = new LoadTracker({ maxPartitions: config.partitions });
    const admission = new Admission(this.limits);
    this.versionCache = new VersionCache(config.cacheBytes ?? NODE_DEFAULTS.cacheBytes);
    const txnKeys = TxnHandleKeys.derive({ peerSecrets: config.peerSecrets, adminToken: config.adminToken });
    const peerSecrets = config.peerSecrets !== undefined && config.peerSecrets.length > 0 ? config.peerSecrets : [newPeerSecret()];
    const { id, logger, limits, clock } = this;
    this.leaderChanges = new LeaderChangeLog(clock, (partition) => this.driver.groups.get(partition)?.raw.status().term ?? 0);
    this.driver = new RaftDriver<PartitionReplica>({
      id,
      knownNodes: config.peers,
      tickMs: config.tickMs,
      electionTicks: config.electionTicks,
      engine,
      transport: environment.transport,
      peerSecret: peerSecrets[0] as string,
      clusterId: descriptor.clusterId,
      clock, timers, logger,
      metrics: this.leaderChanges.tapping(environment.metrics ?? noMetrics),
      followerAckBeforeSync: config.testBugs?.followerAckBeforeSync === true,
      coalesce: config.coalesceRaftMessages === true,
      maxSnapshotChunkBytes: maxSnapshotChunkBytes(limits),
      // A replica the loop no longer runs gives its key index bytes back to the node's budget.
      onGroupDropped: (group) => (group as PartitionReplica).mvcc.releaseKeyIndex(),
      onFatal: (error) => {
        if (environment.onFatal !== undefined) environment.onFatal(error);
        else process.exitCode = 1;
        void this.close();
      },
    });
    const driver = this.driver;
    // The system records go through the router, which is built below: the store looks it up per call.
    const store: SystemStore = {
      get: (key) => this.router.systemStore().get(key),
      put: (key, value) => this.router.systemStore().put(key, value),
      scan: (bucket) => this.router.systemStore().scan(bucket),
    };
    this.access = new NodeAccess({ adminToken: config.adminToken, tenantGrants: config.tenantGrants ?? [], failedAuths: config.failedAuths, peerSecrets, limits, store, driver, clock, logger });
    const executor = new KvExecutor({
      partitions: config.partitions,
      bucketHash: descriptor.hashFunction,
      limits,
      testBugs: config.testBugs,
      driver,
      access: this.access,
      admission,
      load: this.load,
      txnKeys,
      clock,
      timers,
      leases: (this.leases = new LeaseKeeper({ partitions: config.partitions, limits, driver, clock, timers, logger })),
      scripts: new ScriptScheduler({ limits, nowMs: () => clock.monotonicMs() }),
    });
    this.executor = executor;
    this.router = new Router({
      id,
      peers: config.peers,
      nodeIds: this.nodeIds,
      partitions: config.partitions,
      bucketHash: descriptor.hashFunction,
      replicationFactor: config.replicationFactor,
      tickMs: config.tickMs,
      electionTicks: config.electionTicks,
      limits,
      testBugs: config.testBugs,
      driver,
      executor, deadlines: executor.deadlines,
      admission,
      clock,
      timers,
      ...(environment.metrics !== undefined && { metrics: environment.metrics }),
    });
    this.watches = new WatchService({ id, limits, driver, router: this.router, executor, access: this.access, clock, timers, bucketHash: descriptor.hashFunction, ...(config.testBugs !== undefined && { testBugs: config.testBugs }) });
    this.reports = new NodeReports({ id, config, descriptor, nodeIds: this.nodeIds, limits, clock, load: this.load, driver, access: this.access, router: this.router, executor, leaderChanges: this.leaderChanges, memory: () => memoryView(driver.groups.values(), this.versionCache, engine, config, this.watches.memory), watches: () => this.watches.view() });
    const random = environment.random ?? new Rng(this.id * 2_654_435_761 + clock.wallMs());
    this.replicaStore = new ReplicaStore({ id, config, engine, limits, versionCache: this.versionCache, clock, random, logger, hashFunction: descriptor.hashFunction, stagedSnapshots: this.driver.transfers.receiver, addGroup: (replica) => this.driver.addGroup(replica), loop: this.driver, mergedAway: (right, into) => this.mergedAway(right, into) });
    const { partitions, replicationFactor } = config;
    const notLeader = this.router.notLeader.bind(this.router);
    const replicaStore = this.replicaStore;
    // config.peers is this node's own Map (open copies it): the member table grows and shrinks it.
    const peers = config.peers as Map<number, string>;
    const router = this.router;
    const route = router.route.bind(router);
    const partitionOfKey = router.partitionOfKey.bind(router);
    // Removed: the node closes what it still hosts (strays; replica-moves.ts closeAll), then stops.
    const onRemoved = (): void => {
      this.moves.closeAll();
      environment.onRemoved?.();
    };
    this.membership = new Membership({ id, descriptor, peers, driver, engine, clock, timers, logger, route, partitionOfKey, onRemoved, ...(config.zone !== undefined && { zone: config.zone }), ...(config.adminAddresses?.get(id) && { adminAddress: config.adminAddresses.get(id) as string }) });
    const { membership, access } = this;
    this.memberAdmin = new MembershipAdmin({
      id,
      replicationFactor,
      membership,
      principalOf: access.principalOf.bind(access),
      isReachable: (node) => driver.transport.isReachable(node),
      partitionsNaming: (node) => this.rebalancer.partitionsNaming(node),
      ...(config.adminAddresses !== undefined && { adminAddresses: config.adminAddresses }),
    });
    const refreshMembers = async (): Promise<void> => void (await membership.refresh());
    const memberState = (node: number): string | undefined => membership.current().members.find((member) => member.id === node)?.state;
    // Split partitions move too: known ids, or a split start a peer's PrepareReplica names (learned).
    // A move's target (learn) also accepts a merged-away start: the routing table tombstones a
    // frozen R's start as soon as the node meets its freeze, and a frozen R may move (a voter of R
    // lost for good is replaced that way: docs/architecture.md "Splits and moves during a merge").
    // The coordinator is R's leader, so R is live there; its snapshot carries the freeze.
    const isPartition = (p: number, learn: boolean): boolean => router.ranges.isKnown(p) || (learn && (router.ranges.mergedInto(p) !== undefined || (router.ranges.learn(p) && router.ranges.isKnown(p))));
    this.moves = new ReplicaMoves({ id, partitions, replicationFactor, limits, knownNodes: peers, refreshMembers, memberState, driver, store: replicaStore, engine, clock, timers, logger, notLeader, isPartition, healing: () => replicaStore.heal.awaitingFirstSnapshot(), ...(config.testBugs !== undefined && { testBugs: config.testBugs }) });
    const rebalancer = (this.rebalancer = new Rebalancer({ id, partitions, replicationFactor, ...config.rebalance, membership, driver, moves: this.moves, load: this.load, route, partitionOfKey, clock, timers, logger }));
    this.splits = new SplitAdmin({ driver, initialPartitions: partitions, replicationFactor, hashFunction: descriptor.hashFunction, clock, timers, moveInProgress: (p) => this.moves.movesInProgress().some((move) => move.partition === p), isKnown: (p) => router.ranges.isKnown(p), notLeader: (p) => router.notLeader(p, router.leaderOf(p), 'no replica of the partition here'), isMergedStart: (hash) => router.ranges.mergedInto(hash) !== undefined });
    const moveInProgress = (p: number): boolean => this.moves.movesInProgress().some((move) => move.partition === p);
    this.merges = new MergeAdmin({ driver, initialPartitions: partitions, replicationFactor, clock, timers, moveInProgress, isKnown: (p) => router.ranges.isKnown(p), notLeader: (p) => router.notLeader(p, router.leaderOf(p), 'no replica of the partition here') });
    const knownPartitionCount = (): number => partitions + router.ranges.knownStarts().length;
    this.autoSplitter = new AutoSplitter({ config: config.autoSplit ?? {}, driver, splits: this.splits, load: this.load, hashFunction: descriptor.hashFunction, knownPartitionCount, maxPartitionCount: limits.maxPartitionCount, moveInProgress, clock, timers, logger });
    this.maintenance = new Maintenance({
      id,
      preferredLeader: (partition) => rebalancer.preferredLeader(partition),
      transferTarget: (partition) => rebalancer.transferTarget(partition),
      retentionRevisions: config.retentionRevisions,
      electionTicks: config.electionTicks,
      ...(config.testBugs?.noStartupCampaigns === true && { noStartupCampaigns: true }),
      limits,
      driver,
      router: this.router,
      access: this.access,
      clock,
      timers,
      logger,
      strandedFreezes: new StrandedFreezes({ id, clock, logger, merge: (left) => this.merges.merge(left, clock.wallMs() + STRANDED_MERGE_CALL_MS) }),
    });
  }

  /** Opens a node on its storage and starts it; src/peer/grpc-node.ts passes the gRPC transport. */
  static async open(config: AtollNodeConfig, environment: NodeEnvironment): Promise<AtollNode> {
    if (!config.peers.has(config.id)) throw new AtollError('INVALID_ARGUMENT', `--peers must include this node (${config.id})`);
    // Unsynced applies ride along with the loop's one synced write (write-behind-engine.ts).
    // LevelDB is loaded only when no engine is given (the whole-node simulator gives its own).
    const engine = environment.engine ?? new WriteBehindEngine(await (await import('../storage/level-engine.js')).LevelEngine.open(config.dataDir));
    // Settled before any replica opens: it decides the routing hash, and refuses another cluster's data.
    const descriptor = await openClusterDescriptor(engine, config, environment.engine === undefined);
    const node = new AtollNode({ ...config, peers: new Map(config.peers) }, engine, environment, descriptor);
    await node.openReplicas();
    node.driver.start(node.maintenance.start());
    node.moves.start();
    node.membership.start();
    node.rebalancer.start();
    node.leases.start();
    node.autoSplitter.start();
    return node;
  }

  /** Opens the replicas on disk (at a new cluster's first start, the seeded ones: replica-store.ts). */
  private async openReplicas(): Promise<void> {
    const { config } = this;
    // A node that joined a running cluster founds no group: replicas are moved onto it.
    const joined = this.descriptor.origin === 'joined';
    const replicas = await this.replicaStore.openAll((partition) => (joined ? [] : replicasOf(partition, this.nodeIds, config.replicationFactor)));
    for (const replica of replicas) this.driver.addGroup(replica);
    // Starts this node's merges removed stay removed, whatever a peer still reports (merge-tombstones.ts).
    for (const { start, into } of await loadTombstones(this.engine)) this.router.ranges.forget(start, into);
    this.logger.info({ partitions: config.partitions, hosted: this.driver.groups.size }, 'partitions opened');
  }

  /**
   * A merge applied here folded `right` into `into` (merge-apply.ts, inside the loop's apply):
   * `right` leaves the loop and the routing table, and its waiters are told where its keys went.
   */
  private mergedAway(right: PartitionReplica, into: number): void {
    right.retire();
    if (this.driver.groups.get(right.id) === right) this.driver.removeGroup(right.id);
    this.router.ranges.forget(right.id, into);
    right.failAll(new AtollError('PARTITION_MOVED', `partition ${right.id} was merged into partition ${into}: refresh the partition table and retry`, { servedPartitionId: right.id, mergedInto: into }));
  }

  // ------------------------------------------------------------ NodeApi: KV

  /** Runs a caller's operation (the server hands it the one it decoded): authorized, validated once into the caller's tenant, routed. */
  async runKv(operation: KvOperation, context: api.CallContext): Promise<KvResult> {
    const tenant = await this.access.authorize(operation.kind, context);
    try {
      // The request's one validation, where the call arrived (check-operation.ts); a forward carries the tenant.
      const checked = checkOperation(tenant, operation, this.limits);
      return unmapResult(tenant, await this.router.route(this.router.partitionOf(checked, tenant, true), checked, { ...context, tenant }));
    } catch (error) {
      throw unmapError(tenant, error);
    }
  }

  get(request: api.GetRequest, context: api.CallContext): Promise<api.GetResponse> {
    return this.runKv({ kind: 'get', request }, context).then(responseOf<'get'>);
  }

  put(request: api.PutRequest, context: api.CallContext): Promise<api.PutResponse> {
    return this.runKv({ kind: 'put', request }, context).then(responseOf<'put'>);
  }

  delete(request: api.DeleteRequest, context: api.CallContext): Promise<api.DeleteResponse> {
    return this.runKv({ kind: 'delete', request }, context).then(responseOf<'delete'>);
  }

  increment(request: api.IncrementRequest, context: api.CallContext): Promise<api.IncrementResponse> {
    return this.runKv({ kind: 'increment', request }, context).then(responseOf<'increment'>);
  }

  exists(request: api.ExistsRequest, context: api.CallContext): Promise<api.ExistsResponse> {
    return this.runKv({ kind: 'exists', request }, context).then(responseOf<'exists'>);
  }

  extend(request: api.ExtendRequest, context: api.CallContext): Promise<api.ExtendResponse> {
    return this.runKv({ kind: 'extend', request }, context).then(responseOf<'extend'>);
  }

  lease(request: api.LeaseRequest, context: api.CallContext): Promise<api.LeaseResponse> {
    return this.runKv({ kind: 'lease', request }, context).then(responseOf<'lease'>);
  }

  getByPrefix(request: api.GetByPrefixRequest, context: api.CallContext): Promise<api.GetByPrefixResponse> {
    return this.runKv({ kind: 'getByPrefix', request }, context).then(responseOf<'getByPrefix'>);
  }

  beginTransaction(request: api.BeginTransactionRequest, context: api.CallContext): Promise<api.BeginTransactionResponse> {
    return this.runKv({ kind: 'beginTransaction', request }, context).then(responseOf<'beginTransaction'>);
  }

  commit(request: api.CommitRequest, context: api.CallContext): Promise<api.CommitResponse> {
    return this.runKv({ kind: 'commit', request }, context).then(responseOf<'commit'>);
  }

  executeScript(request: api.ExecuteScriptRequest, context: api.CallContext): Promise<api.ExecuteScriptResponse> {
    return this.runKv({ kind: 'executeScript', request }, context).then(responseOf<'executeScript'>);
  }

  watch(request: api.WatchRequest, context: api.CallContext, sink: api.WatchSink): Promise<void> {
    return this.watches.watch(request, context, sink);
  }

  /** Watchers this node runs now (tests). */
  get openWatchers(): number {
    return this.watches.openWatchers;
  }

  /** Runs a request forwarded by another node (Peer.Forward), checked where the call arrived; one `asSent` (the caller's form) is moved into its tenant here. */
  async executeForwarded(operation: KvOperation, context: api.CallContext, asSent = false): Promise<KvResult> {
    const checked = markChecked(asSent ? mapOperation(context.tenant ?? defaultTenant, operation, false) : operation);
    return this.router.route(this.router.partitionOf(checked, context.tenant, true), checked, context);
  }

  // ------------------------------------------------------------ access control (node-access.ts)

  /** Whether `secret` (a call's peer-secret metadata) is one of the cluster's peer secrets (constant time). */
  peerCallAllowed(secret: unknown): boolean {
    return this.access.peerCallAllowed(secret);
  }

  whoAmI(context: api.CallContext): Promise<Principal> {
    return this.access.principalOf(context);
  }

  createToken(request: { tenant: string; role: string; name: string }, context: api.CallContext): Promise<{ token: string; info: TokenRecord }> {
    return this.access.createToken(request, context);
  }

  listTokens(request: { tenant: string }, context: api.CallContext): Promise<TokenRecord[]> {
    return this.access.listTokens(request, context);
  }

  revokeToken(request: { id: string }, context: api.CallContext): Promise<TokenRecord> {
    return this.access.revokeToken(request, context);
  }

  setQuota(request: { tenant: string; quota: Quota }, context: api.CallContext): Promise<void> {
    return this.access.setQuota(request, context);
  }

  usage(request: { tenant: string }, context: api.CallContext): Promise<TenantUsage[]> {
    return this.access.usage(request, context);
  }

  // ------------------------------------------------------------ cluster API

  async clusterInfo(context: api.CallContext, request?: api.ClusterInfoRequest): Promise<api.ClusterInfoResponse> {
    return this.memberAdmin.decorate(await this.reports.clusterInfo(context, request));
  }

  /** The map with every tenant's hot keys, for a peer's status page (Peer.NodeStatus; node-reports.ts). */
  clusterInfoForStatus(): api.ClusterInfoResponse {
    return this.memberAdmin.decorate(this.reports.clusterInfoForStatus());
  }

  /** Changes the member table (Cluster.ChangeMember; cluster admin). */
  changeMember(request: api.ChangeMemberRequest, context: api.CallContext): Promise<api.ChangeMemberResponse> {
    return this.memberAdmin.change(request, context);
  }

  /** Pauses, resumes or reports the rebalancer (Cluster.Rebalance; cluster admin). */
  async rebalance(request: api.RebalanceRequest, context: api.CallContext): Promise<api.RebalanceResponse> {
    requireClusterAdmin(await this.access.principalOf(context), 'pausing or resuming the rebalancer');
    return this.rebalancer.request(request.action);
  }

  /** Whether this node learned that it was removed from the cluster (the server then exits with code 4). */
  get removedFromCluster(): boolean {
    return this.membership.removed;
  }

  /** Whether node `id` was removed from the cluster (the peer port refuses its calls). */
  memberRemoved(id: number): boolean {
    return this.membership.isRemoved(id);
  }

  async transferLeader(request: api.TransferLeaderRequest, context: api.CallContext): Promise<void> {
    requireClusterAdmin(await this.access.principalOf(context), 'moving leadership');
    await transferLeader({ id: this.id, driver: this.driver, peers: this.config.peers, notLeader: this.router.notLeader.bind(this.router) }, request);
  }

  /** Moves one replica of a partition to another node, run at its leader (replica-moves.ts). */
  async moveReplica(request: api.MoveReplicaRequest, context: api.CallContext): Promise<api.MoveReplicaResponse> {
    requireClusterAdmin(await this.access.principalOf(context), 'moving a replica');
    return this.moves.move(request, context);
  }

  /** Splits a partition's hash range in two, run at its leader (split-admin.ts; cluster admin only). */
  async splitPartition(request: { readonly partition: number }, context: api.CallContext): Promise<SplitPartitionResult> {
    requireClusterAdmin(await this.access.principalOf(context), 'splitting a partition');
    return this.splits.split(request.partition, context.deadlineMs);
  }

  /** Joins a partition with its right neighbour, run at its leader (merge-admin.ts; cluster admin only). */
  async mergePartition(request: { readonly partition: number }, context: api.CallContext): Promise<MergePartitionResult> {
    requireClusterAdmin(await this.access.principalOf(context), 'merging partitions');
    return this.merges.merge(request.partition, context.deadlineMs);
  }

  /** Opens an empty replica of `partition` here for a move (Peer.PrepareReplica: peers only). */
  prepareReplica(partition: number, voteFloor: VoteFloor): Promise<void> {
    return this.moves.prepare(partition, voteFloor);
  }

  /** One page of a partition's live keys at one revision, for `atoll backup` (node-reports.ts). */
  backupPage(request: api.BackupPageRequest, context: api.CallContext): Promise<api.BackupPageResponse> {
    return this.reports.backupPage(request, context);
  }

  // ------------------------------------------------------------ metrics and health (admin port)

  /** The node's state for a metrics scrape or a health check (node-reports.ts). */
  metricsView(): NodeMetricsView {
    return this.reports.metricsView();
  }

  /** The leader changes this node's replicas saw, newest last (bounded; the status page). */
  recentLeaderChanges(): LeaderChange[] {
    return this.reports.recentLeaderChanges();
  }

  /** Every tenant's usage against its quota, for the metrics scrape (at most `maxTenants`; none without authentication). */
  tenantUsageForMetrics(maxTenants: number): Promise<TenantUsage[]> {
    return this.access.usageForMetrics(maxTenants);
  }

  // ------------------------------------------------------------ lifecycle

  /** True when every hosted partition knows its leader. */
  allPartitionsLed(): boolean {
    return this.driver.allGroupsLed();
  }

  /**
   * Runs `inspect` on the hosted replicas between two loop iterations, where no apply is in
   * progress, so each replica's applied index and state machine agree (the whole-node simulator's
   * state digests). Never settles on a closed node.
   */
  betweenIterations<T>(inspect: (replicas: ReadonlyMap<number, PartitionReplica>) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.driver.enqueue(() => {
        try {
          resolve(inspect(this.driver.groups));
        } catch (error) {
          reject(error);
        }
      });
    });
  }

  /** Peer messages dropped since the node started (tests). */
  get refusedPeerMessageCount(): number {
    return this.driver.refusedPeerMessageCount;
  }

  async close(): Promise<void> {
    if (this.driver.closed) return;
    this.watches.close();
    this.maintenance.stop();
    this.moves.stop();
    this.membership.stop();
    this.rebalancer.stop();
    this.leases.stop();
    this.autoSplitter.stop();
    await this.driver.close();
  }

  get failure(): Error | undefined {
    return this.driver.failure;
  }
}
