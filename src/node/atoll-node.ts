import { performance } from 'node:perf_hooks';
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { AtollError, isAtollError } from '../errors.js';
import { bucketOf } from '../keys/bucket.js';
import { partitionOfBucket, partitionTable } from '../keys/partition-table.js';
import { prefixBucket } from '../keys/prefix-bucket.js';
import { validateKey } from '../keys/validate-key.js';
import { defaultLimits, makeLimits, type Limits } from '../limits.js';
import { VersionCache } from '../mvcc/version-cache.js';
import { encodeCommand, MvccStore, validateRequestId, type ApplyResult, type Command, type KeyVersion, type WriteOp } from '../mvcc/index.js';
import { Rng } from '../raft/rng.js';
import type { Ready } from '../raft/rawnode.js';
import type { Message } from '../raft/types.js';
import { isWriteKind, type KvKind, type KvOperation, type KvResult, type KvResultOf, type KvTypes } from './operations.js';
import type { NodeEnvironment, NodeTransport } from './ports.js';
import { partitionKeyPrefix } from '../storage/keyspace.js';
import { LevelEngine } from '../storage/level-engine.js';
import { WriteBehindEngine } from '../storage/write-behind-engine.js';
import type { StorageEngine, WriteOperation } from '../storage/storage-engine.js';
import type * as api from './api.js';
import { encodeEntryPayload, PartitionReplica, type GroupSettings } from './partition-replica.js';
import { preferredLeaderOf, replicasOf } from './placement.js';
import { PersistentLogStorage } from './raft-log-store.js';
import type { GroupMessage } from './raft-wire.js';
import { TxnHandleKeys } from '../txn/txn-handle.js';
import { TxnScope } from '../txn/txn-scope.js';
import { getResponseOf, keyRecordOf } from './records.js';
import { runScriptAtLeader, scriptBucket } from './script-runner.js';
import { LoadTracker, loadKeyOf } from '../hotkeys/index.js';
import { defaultTenant, systemTenant, tenantOfInternalKey, tenantTag, toInternalKey } from '../keys/tenant-keys.js';
import { requireClusterAdmin, requireRole, type Principal } from '../tenancy/principal.js';
import { mapOperation, unmapError, unmapResult } from '../tenancy/map-operation.js';
import { NodeAuth, quotaCompactionIntervalMs, usageBucket, type Quota, type TenantUsage, type TokenRecord } from './auth.js';
import { newPeerSecret, PeerSecretCheck } from './peer-secret.js';
import { refusalOf } from './peer-message-check.js';
import { Admission } from './admission.js';
import assert from 'node:assert/strict';

export interface AtollNodeConfig {
  readonly id: number;
  /** Every node's id and client/peer address (host:port), including this one. */
  readonly peers: ReadonlyMap<number, string>;
  readonly dataDir: string;
  readonly partitions: number;
  readonly replicationFactor: number;
  /** Milliseconds per Raft tick. Election timeout is electionTicks of these. */
  readonly tickMs: number;
  readonly electionTicks: number;
  /** Keep this many revisions of history per partition; older versions are compacted. */
  readonly retentionRevisions: number;
  readonly snapshotEveryEntries: number;
  /** Memory for the newest versions of recently used keys, shared by every partition (default NODE_DEFAULTS.cacheBytes). */
  readonly cacheBytes?: number;
  /** Largest value a write may carry (default 1 MiB); must leave room in one gRPC message. */
  readonly maxValueBytes?: number;
  /** Tokens a tenant admin may create for its tenant (default limits.maxTokensPerTenant). */
  readonly maxTokensPerTenant?: number;
  /** Other limits that differ from src/limits.ts (tests lower the admission bounds). */
  readonly limits?: Partial<Limits>;
  /** Deliberate defects for the fault suite's negative controls; never set in production. */
  readonly testBugs?: NodeTestBugs;
  /** Addresses to dial peers at, when not their advertised ones (a harness's fault proxies). */
  readonly dialAddresses?: ReadonlyMap<number, string>;
  /** How to dial peers (peer mutual TLS, server/server-tls.ts); plaintext when absent. */
  readonly peerCredentials?: grpc.ChannelCredentials;
  /**
   * The bootstrap cluster admin token. When set, every call must present a token (src/node/auth.ts)
   * and keys are tenant-scoped; every node of a cluster must be given the same one.
   */
  readonly adminToken?: string;
  /**
   * The cluster peer secrets (src/node/peer-secret.ts), current first: the first is sent on every
   * call to a peer, all are accepted from peers. They never authorize a client call. Absent: one
   * random secret of this process, which only a one-node cluster can work with.
   */
  readonly peerSecrets?: readonly string[];
  readonly logger: Logger;
}

/**
 * Defects the fault-injection suite plants to prove its checkers catch them (negative controls).
 * atoll-server accepts them only with ATOLL_ALLOW_TEST_BUGS=1.
 */
export interface NodeTestBugs {
  /** Serve linearizable reads from any replica's local state, without a ReadIndex round. */
  readonly readsWithoutQuorum?: boolean;
  /** Acknowledge a write as soon as the leader appends it, before it commits. */
  readonly ackBeforeCommit?: boolean;
  /** Ignore request ids: a retried write applies again (breaks exactly-once increments). */
  readonly noDedup?: boolean;
  /** Commit a transaction's first write in a log entry of its own: a snapshot, conflict or crash in between leaves half of it. */
  readonly tornTransactions?: boolean;
}

export const NODE_DEFAULTS = {
  partitions: 64,
  replicationFactor: 3,
  tickMs: 100,
  electionTicks: 10,
  retentionRevisions: 100_000,
  /** Applied entries between log compactions; with 1,000 kept behind, a partition holds at most 3,000 entries in memory. */
  snapshotEveryEntries: 2_000,
  /**
   * The newest versions of recently used keys kept in memory (src/mvcc/version-cache.ts). 128 MiB
   * holds about 195,000 keys of 128-byte values. 256 MiB was no faster while everything fitted and
   * slower once full: its few hundred thousand long-lived entries cost the nodes garbage collection
   * (1,000,000 keys right after the preload: puts 681 and gets 4,460 ops/s with 256 MiB, 1,157 and
   * 5,498 with 128; at 100,000 keys the two measure the same; docs/performance.md).
   */
  cacheBytes: 128 * 1024 * 1024,
};

/** A leader's log replication: it carries the leader's log, never a promise about this node's disk. */
function sendableBeforeSync(message: Message): boolean {
  return message.type === 'app' || message.type === 'heartbeat';
}

/** Bounds of request routing between nodes. */
const MAX_FORWARD_HOPS = 3;
const LEADER_WAIT_POLL_MS = 20;
const BALANCE_INTERVAL_MS = 1_000;
const MAX_CATCH_UP_TICKS = 50;
/** Snapshot data exported for a follower is dropped once no follower asked for it this long. */
const SNAPSHOT_IDLE_MS = 30_000;
/** A storage write the loop waits on for longer than this is logged at warn level. */
const SLOW_WRITE_MS = 1_000;

type Task = () => void;

/**
 * One Atoll node: every partition replica it hosts, one loop that drives them all, the peer
 * transport, and the NodeApi the gRPC services call (routing and forwarding included).
 *
 * The loop owns the RawNodes: timers, incoming frames and client requests only queue tasks; an
 * iteration runs the tasks, then handles every group's Ready with ONE LevelDB write (synced when
 * any group has entries, a snapshot or a new term or vote), sends one frame per peer (leaders'
 * appends before the write, everything else after), applies, and advances. Nothing touches a
 * RawNode between ready() and advance().
 */
export class AtollNode implements api.NodeApi {
  readonly id: number;
  private readonly replicas = new Map<number, PartitionReplica>();
  /** Log records of adopted snapshots, for the next iteration's synced write. */
  private pendingLogOps: WriteOperation[] = [];
  private readonly transport: NodeTransport;
  private readonly logger: Logger;
  private tasks: Task[] = [];
  private loopRunning = false;
  private loopScheduled = false;
  private tickTimer: NodeJS.Timeout | undefined;
  private balanceTimer: NodeJS.Timeout | undefined;
  private leaderRefreshTimer: NodeJS.Timeout | undefined;
  private refreshingLeaders = false;
  private lastTickAtMs = performance.now();
  private closed = false;
  private fatal: Error | undefined;
  /** Leader hints for partitions this node does not host. */
  private readonly remoteLeaders = new Map<number, number>();
  private readonly nodeIds: number[];
  /** Limits every replica applies identically: values are checked before proposing and on apply. */
  readonly limits: Limits;
  /** Request rates and hot keys of the partitions this node serves (src/hotkeys), for ClusterInfo. */
  private readonly load: LoadTracker;
  private readonly auth: NodeAuth;
  /** Checks the secret every call to this node's peer port must carry. */
  private readonly peerSecretCheck: PeerSecretCheck;
  /** Peer messages dropped since the last report (sender not a member, malformed content). */
  private refusedPeerMessages = 0;
  private refusedPeerMessagesTotal = 0;
  private refusedPeerMessagesReportedAtMs = 0;
  /** Signs the transaction handles this node hands out and verifies the ones callers send back. */
  private readonly txnKeys: TxnHandleKeys;
  /** Bounds on client work waiting here (src/node/admission.ts); internal work bypasses it. */
  private readonly admission: Admission;
  /** Newest versions of recently used keys, shared by this node's partition stores. */
  readonly versionCache: VersionCache;

  private constructor(
    readonly config: AtollNodeConfig,
    private readonly engine: StorageEngine,
    environment: NodeEnvironment,
  ) {
    this.id = config.id;
    this.logger = config.logger;
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
    this.admission = new Admission(this.limits);
    this.versionCache = new VersionCache(config.cacheBytes ?? NODE_DEFAULTS.cacheBytes);
    this.txnKeys = TxnHandleKeys.derive({ peerSecrets: config.peerSecrets, adminToken: config.adminToken });
    this.auth = new NodeAuth(config.adminToken, {
      get: async (key) => {
        const { response } = (await this.route(this.partitionOfKey(key), { kind: 'get', request: { key } }, this.internalContext())) as KvResultOf<'get'>;
        return response.found ? response.value : undefined;
      },
      put: async (key, value) => {
        await this.route(this.partitionOfKey(key), { kind: 'put', request: { key, value } }, this.internalContext());
      },
      scan: async (bucket) => {
        const entries: Array<{ key: string; value: Uint8Array }> = [];
        let pageToken = '';
        do {
          const operation = { kind: 'getByPrefix', request: { prefix: bucket, limit: defaultLimits.maxPageSize, ...(pageToken !== '' && { pageToken }) } } as const;
          const { response } = (await this.route(this.partitionOf(operation), operation, this.internalContext())) as KvResultOf<'getByPrefix'>;
          for (const item of response.items) entries.push({ key: item.key, value: item.value });
          pageToken = response.nextPageToken;
        } while (pageToken !== '');
        return entries;
      },
    }, this.limits);
    const peerSecrets = config.peerSecrets !== undefined && config.peerSecrets.length > 0 ? config.peerSecrets : [newPeerSecret()];
    this.peerSecretCheck = new PeerSecretCheck(peerSecrets);
    this.transport = environment.transport(
      {
        onMessages: (from, messages) => this.enqueue(() => this.stepMessages(from, messages)),
        onPeerUnreachable: (peer) => this.enqueue(() => this.reportUnreachable(peer)),
      },
      peerSecrets[0] as string,
    );
  }

  /** Opens a node on its storage and starts it; src/peer/grpc-node.ts passes the gRPC transport. */
  static async open(config: AtollNodeConfig, environment: NodeEnvironment): Promise<AtollNode> {
    if (!config.peers.has(config.id)) throw new AtollError('INVALID_ARGUMENT', `--peers must include this node (${config.id})`);
    // Unsynced applies ride along with the loop's one synced write (write-behind-engine.ts).
    const engine = environment.engine ?? new WriteBehindEngine(await LevelEngine.open(config.dataDir));
    const node = new AtollNode(config, engine, environment);
    await node.openReplicas();
    node.start();
    return node;
  }

  private async openReplicas(): Promise<void> {
    const settings: GroupSettings = {
      electionTicks: this.config.electionTicks,
      heartbeatTicks: 1,
      quiesceAfterTicks: this.config.electionTicks * 3,
      snapshotEveryEntries: this.config.snapshotEveryEntries,
      logEntriesKeptAfterSnapshot: 1_000,
    };
    const rng = new Rng(this.id * 2_654_435_761 + Date.now());
    const bootstrapOps: WriteOperation[] = [];
    for (let partition = 0; partition < this.config.partitions; partition++) {
      const replicas = replicasOf(partition, this.nodeIds, this.config.replicationFactor);
      if (!replicas.includes(this.id)) continue;
      let replica: PartitionReplica | undefined;
      const storage = await PersistentLogStorage.load(this.engine, partition, {
        snapshotData: (meta) => (replica as PartitionReplica).snapshotData(meta),
      });
      if (storage.lastIndex() === 0) bootstrapOps.push(...storage.stageBootstrap({ voters: replicas, learners: [] }));
      const mvcc = await MvccStore.open({
        engine: this.engine,
        prefix: partitionKeyPrefix('mvcc', partition),
        partition: { id: partition, count: this.config.partitions },
        limits: this.limits,
        ...(this.config.testBugs?.noDedup ? { dedupDisabled: true } : {}),
        versionCache: { cache: this.versionCache, storeId: partition },
      });
      replica = new PartitionReplica(partition, this.id, storage, mvcc, settings, rng.fork(), (reason) =>
        this.logger.warn({ partition, reason }, 'refused a snapshot from the leader; the transfer restarts'),
      );
      this.replicas.set(partition, replica);
    }
    if (bootstrapOps.length > 0) await this.engine.write(bootstrapOps, { sync: true });
    this.logger.info({ partitions: this.config.partitions, hosted: this.replicas.size }, 'partitions opened');
  }

  private start(): void {
    this.tickTimer = setInterval(() => this.enqueue(() => this.catchUpTicks()), this.config.tickMs);
    this.tickTimer.unref();
    this.balanceTimer = setInterval(() => this.enqueue(() => {
      this.balanceLeaders();
      this.compactHistory();
      this.publishUsage();
      const now = performance.now();
      for (const replica of this.replicas.values()) replica.releaseIdleSnapshot(now, SNAPSHOT_IDLE_MS);
    }), BALANCE_INTERVAL_MS);
    this.leaderRefreshTimer = setInterval(() => {
      void this.refreshRemoteLeaders();
      void this.compactHistoryOverQuota();
    }, BALANCE_INTERVAL_MS);
    this.leaderRefreshTimer.unref();
    this.balanceTimer.unref();
    // Preferred leaders campaign at once, so a fresh cluster starts balanced.
    this.enqueue(() => {
      for (const [partition, replica] of this.replicas) {
        if (preferredLeaderOf(partition, this.nodeIds, this.config.replicationFactor) === this.id) replica.raw.campaign();
      }
    });
  }

  // ------------------------------------------------------------ the loop

  /**
   * Queues a task for the loop. Never refuses: the queue's client tasks are bounded upstream (each
   * request admitted by `admitted` queues one, src/node/admission.ts), and internal tasks (ticks,
   * Raft frames, snapshot adoption) come at the pace of their timers and peers.
   */
  private enqueue(task: Task): void {
    if (this.closed) return;
    this.tasks.push(task);
    this.scheduleLoop();
  }

  private scheduleLoop(): void {
    if (this.loopRunning || this.loopScheduled) return;
    this.loopScheduled = true;
    setImmediate(() => {
      this.loopScheduled = false;
      void this.runLoop();
    });
  }

  private async runLoop(): Promise<void> {
    if (this.loopRunning || this.closed) return;
    this.loopRunning = true;
    try {
      for (let guard = 0; guard < 1_000 && !this.closed; guard++) {
        if (!(await this.iteration())) break;
      }
    } catch (error) {
      // A failed synced write leaves memory ahead of disk: the only safe move is to stop.
      this.fatal = error instanceof Error ? error : new Error(String(error));
      this.logger.fatal({ err: this.fatal }, 'node loop failed; stopping');
      process.exitCode = 1;
      void this.close();
    } finally {
      this.loopRunning = false;
    }
    if (this.tasks.length > 0 && !this.closed) this.scheduleLoop();
  }

  /** One pass: run queued tasks, then persist, send, apply and advance every ready group. */
  private async iteration(): Promise<boolean> {
    const tasks = this.tasks;
    this.tasks = [];
    for (const task of tasks) {
      try {
        task();
      } catch (error) {
        this.logger.error({ err: error }, 'loop task failed');
      }
    }
    for (const replica of this.replicas.values()) replica.startReadRound();

    const ready = [...this.replicas.values()].filter((replica) => replica.raw.hasReady()).map((replica) => ({ replica, ready: replica.raw.ready() }));
    if (ready.length === 0 && this.pendingLogOps.length === 0) {
      this.maybeBuildSnapshots();
      return tasks.length > 0 || this.pendingLogOps.length > 0;
    }
    // Adopted snapshots' log records (and compaction) ride along, synced.
    const ops: WriteOperation[] = this.pendingLogOps;
    this.pendingLogOps = [];
    let mustSync = ops.length > 0;
    for (const { replica, ready: r } of ready) {
      if (r.snapshot) this.logger.info({ partition: replica.id, index: r.snapshot.meta.index, bytes: r.snapshot.data.length }, 'installing a snapshot from the leader');
      const staged = await replica.stage(r);
      ops.push(...staged.ops);
      mustSync ||= staged.mustSync;
    }
    // A leader's appends and heartbeats promise nothing about its own disk, so they go out before
    // its synced write (Raft thesis 10.2.1): followers persist while the leader does. The leader
    // counts its own copy only when it steps their answers, in a later iteration, after this
    // write. Everything else (votes, acknowledgements) waits for the write.
    this.sendMessages(ready, true);
    if (ops.length > 0) {
      const startedMs = performance.now();
      await this.engine.write(ops, { sync: mustSync });
      const tookMs = performance.now() - startedMs;
      // Every write the loop waits on delays every partition on this node: a slow one is news.
      if (tookMs > SLOW_WRITE_MS) this.logger.warn({ tookMs: Math.round(tookMs), operations: ops.length, sync: mustSync }, 'slow storage write held the node loop');
    }
    this.sendMessages(ready, false);

    await Promise.all(ready.map(({ replica, ready: r }) => replica.apply(r)));
    for (const { replica, ready: r } of ready) {
      replica.raw.advance(r);
      if (r.softState) this.logger.debug({ partition: replica.id, role: r.softState.role, lead: r.softState.lead }, 'raft role changed');
    }
    this.maybeBuildSnapshots();
    return true;
  }

  /** Sends the Readys' messages that may go before the synced write (`early`), or the others. */
  private sendMessages(ready: ReadonlyArray<{ replica: PartitionReplica; ready: Ready }>, early: boolean): void {
    const outgoing = new Map<number, GroupMessage[]>();
    for (const { replica, ready: r } of ready) {
      for (const message of r.messages) {
        if (sendableBeforeSync(message) !== early) continue;
        let list = outgoing.get(message.to);
        if (!list) outgoing.set(message.to, (list = []));
        list.push({ group: replica.id, message });
      }
    }
    for (const [peer, messages] of outgoing) this.transport.send(peer, messages);
  }

  /**
   * Starts the snapshot exports that are due. Each runs beside the loop (the group keeps ticking,
   * replicating and applying); when it finishes, a loop task adopts it, and its log records go
   * into the next iteration's synced write.
   */
  private maybeBuildSnapshots(): void {
    for (const replica of this.replicas.values()) {
      if (replica.needsCompaction()) this.pendingLogOps.push(...replica.compactLog());
      if (replica.exporting || !replica.needsSnapshotBuild()) continue;
      replica.exporting = true;
      void replica
        .exportSnapshot()
        .then((snapshot) => {
          if (snapshot === undefined) return;
          this.logger.info({ partition: replica.id, index: snapshot.meta.index, bytes: snapshot.data.length }, 'exported a snapshot for a follower');
          this.enqueue(() => this.pendingLogOps.push(...replica.adoptSnapshot(snapshot)));
        })
        .catch((error: unknown) => {
          // An import from the leader replaced the state under the export: the next one will do.
          if (error instanceof AtollError && error.code === 'UNAVAILABLE') this.logger.debug({ err: error, partition: replica.id }, 'snapshot export overtaken');
          else this.logger.error({ err: error, partition: replica.id }, 'snapshot failed');
        })
        .finally(() => {
          replica.exporting = false;
          this.scheduleLoop();
        });
    }
  }

  private catchUpTicks(): void {
    // Ticks follow the monotonic clock: after a stall (GC, SIGSTOP) every missed tick is replayed,
    // so election timers and CheckQuorum see the time that really passed.
    const now = performance.now();
    const due = Math.min(MAX_CATCH_UP_TICKS, Math.floor((now - this.lastTickAtMs) / this.config.tickMs));
    if (due <= 0) return;
    this.lastTickAtMs += due * this.config.tickMs;
    if (now - this.lastTickAtMs > this.config.tickMs * MAX_CATCH_UP_TICKS) this.lastTickAtMs = now;
    for (let i = 0; i < due; i++) for (const replica of this.replicas.values()) replica.raw.tick();
  }

  /**
   * Steps messages from peer `from` into their groups. A message is dropped, and counted, when its
   * sender is not a member of the group (voter or learner), or when its content would break an
   * invariant the Raft core asserts (peer-message-check.ts): a peer that holds the secret still
   * cannot stop this node with a forged message.
   */
  private stepMessages(from: number, messages: GroupMessage[]): void {
    for (const { group, message } of messages) {
      const replica = this.replicas.get(group);
      if (!replica || message.to !== this.id || message.from !== from) {
        this.refusePeerMessage(from, group, 'not addressed to this node');
        continue;
      }
      if (!replica.raw.isMember(from)) {
        this.refusePeerMessage(from, group, 'sender is not a member of the group');
        continue;
      }
      const refusal = refusalOf(message, { knownNodes: this.config.peers, lastIndex: replica.raw.lastIndex() });
      if (refusal !== undefined) {
        this.refusePeerMessage(from, group, refusal);
        continue;
      }
      replica.raw.step(message as Message);
    }
  }

  /** Counts a dropped peer message; one debug line per second at most says how many and the last reason. */
  private refusePeerMessage(from: number, group: number, reason: string): void {
    this.refusedPeerMessages++;
    this.refusedPeerMessagesTotal++;
    const nowMs = performance.now();
    if (nowMs - this.refusedPeerMessagesReportedAtMs < 1_000) return;
    this.logger.debug({ from, partition: group, reason, dropped: this.refusedPeerMessages }, 'dropped peer raft messages');
    this.refusedPeerMessagesReportedAtMs = nowMs;
    this.refusedPeerMessages = 0;
  }

  /** Peer messages dropped since the node started (tests). */
  get refusedPeerMessageCount(): number {
    return this.refusedPeerMessagesTotal;
  }

  private reportUnreachable(peer: number): void {
    for (const replica of this.replicas.values()) replica.raw.reportUnreachable(peer);
  }

  /** Moves leadership back to each partition's preferred leader when it is caught up and reachable. */
  private balanceLeaders(): void {
    let transfers = 0;
    for (const [partition, replica] of this.replicas) {
      const status = replica.raw.status();
      if (status.role !== 'leader' || status.leadTransferee !== 0) continue;
      const preferred = preferredLeaderOf(partition, this.nodeIds, this.config.replicationFactor);
      if (preferred === this.id || !this.transport.isReachable(preferred)) continue;
      const progress = status.progress.get(preferred);
      if (!progress || progress.match < status.commit) continue;
      try {
        replica.raw.transferLeadership(preferred);
        transfers++;
      } catch {
        // Not possible right now; the next round tries again.
      }
      if (transfers >= 8) break;
    }
  }

  /**
   * Retention: a leader whose partition keeps more than `retentionRevisions` of history proposes a
   * compact command. It goes through the log because the floor decides which past reads and
   * snapshot transactions still work, so every replica must move it at the same index.
   */
  private compactHistory(): void {
    const retention = this.config.retentionRevisions;
    for (const replica of this.replicas.values()) {
      if (replica.raw.status().role !== 'leader') continue;
      const { revision, compactedRevision } = replica.mvcc;
      // Wait for a tenth of the window to accumulate so compactions stay occasional.
      if (revision - compactedRevision <= retention + Math.ceil(retention / 10)) continue;
      const payload = encodeEntryPayload(Date.now(), encodeCommand({ type: 'compact', belowRevision: revision - retention }, this.limits));
      try {
        replica.propose(payload, {
          resolve: () => undefined,
          reject: (error: unknown) => this.logger.debug({ err: error, partition: replica.id }, 'compaction not applied'),
        });
      } catch {
        // Lost leadership meanwhile; the next leader compacts.
      }
    }
  }

  /** Partitions' last compaction for a tenant at its bytes quota (performance.now() ms), and whether a check runs. */
  private readonly quotaCompactedAtMs = new Map<number, number>();
  private checkingQuotaHistory = false;

  /**
   * Retained history counts toward a tenant's bytes quota (src/node/auth.ts), and a delete only
   * moves a value into history. So that a tenant at its quota can get back under by deleting, a
   * leader whose partition holds history of such a tenant compacts ALL of the partition's history
   * (floor = its revision), at most once per quotaCompactionIntervalMs. That shortens the retention
   * window of every tenant of the partition for the moment (past reads and transactions older than
   * the floor get COMPACTED), which is the price of bounding history per tenant; docs/security.md.
   */
  private async compactHistoryOverQuota(): Promise<void> {
    if (!this.auth.enabled || this.checkingQuotaHistory || this.closed) return;
    this.checkingQuotaHistory = true;
    try {
      const over = await this.auth.tenantsOverBytesQuotaWithHistory();
      if (over.size === 0) return;
      this.enqueue(() => {
        const nowMs = performance.now();
        for (const replica of this.replicas.values()) {
          if (replica.raw.status().role !== 'leader') continue;
          const { revision, compactedRevision } = replica.mvcc;
          if (revision <= compactedRevision) continue;
          if (nowMs - (this.quotaCompactedAtMs.get(replica.id) ?? -Infinity) < quotaCompactionIntervalMs) continue;
          const usage = replica.mvcc.usageByTenant();
          if (![...over].some((tenant) => (usage.get(tenant)?.historyBytes ?? 0) > 0)) continue;
          this.quotaCompactedAtMs.set(replica.id, nowMs);
          const payload = encodeEntryPayload(Date.now(), encodeCommand({ type: 'compact', belowRevision: revision }, this.limits));
          try {
            replica.propose(payload, {
              resolve: () => this.logger.info({ partition: replica.id, belowRevision: revision, tenants: [...over] }, 'compacted history held by tenants at their bytes quota'),
              reject: (error: unknown) => this.logger.debug({ err: error, partition: replica.id }, 'quota compaction not applied'),
            });
          } catch {
            // Lost leadership meanwhile; the next leader sees the same usage.
          }
        }
      });
    } catch (error) {
      this.logger.debug({ err: error }, 'checking tenants at their bytes quota failed');
    } finally {
      this.checkingQuotaHistory = false;
    }
  }

  /**
   * With more nodes than replicas, a node does not host every partition. It learns those
   * partitions' leaders from the peers that host them (their ClusterInfo), so it can forward
   * straight to the leader and report a complete table.
   */
  private async refreshRemoteLeaders(): Promise<void> {
    if (this.refreshingLeaders || this.closed || this.replicas.size === this.config.partitions) return;
    this.refreshingLeaders = true;
    try {
      for (const peer of this.nodeIds) {
        if (peer === this.id || !this.transport.isReachable(peer)) continue;
        const hostsMissing = [...Array(this.config.partitions).keys()].some(
          (partition) => !this.replicas.has(partition) && replicasOf(partition, this.nodeIds, this.config.replicationFactor).includes(peer),
        );
        if (!hostsMissing) continue;
        try {
          const info = await this.transport.clusterInfo(peer, Date.now() + 500);
          for (const partition of info.partitions) {
            if (this.replicas.has(partition.id) || !partition.replicas.includes(peer)) continue;
            if (partition.leader !== 0) this.remoteLeaders.set(partition.id, partition.leader);
          }
        } catch {
          // That peer is slow or down; another one answers next round.
        }
      }
    } finally {
      this.refreshingLeaders = false;
    }
  }

  // ------------------------------------------------------------ routing

  private partitionOfKey(key: string): number {
    validateKey(key);
    return partitionOfBucket(bucketOf(key), this.config.partitions);
  }

  /** The node believed to lead `partition`, or 0. */
  private leaderOf(partition: number): number {
    const replica = this.replicas.get(partition);
    if (replica) return replica.raw.status().lead;
    return this.remoteLeaders.get(partition) ?? preferredLeaderOf(partition, this.nodeIds, this.config.replicationFactor);
  }

  /** The partition an operation runs on (decoding the transaction handle or the script as needed). */
  private partitionOf(operation: KvOperation, tenant = 'default'): number {
    switch (operation.kind) {
      case 'getByPrefix':
        return partitionOfBucket(prefixBucket(operation.request.prefix).bucket, this.config.partitions);
      case 'commit':
        return this.txnScope(operation.request.transaction, tenant).handle.partition;
      case 'executeScript':
        return partitionOfBucket(toInternalKey(tenant, scriptBucket(operation.request, this.limits)), this.config.partitions);
      default:
        return this.partitionOfKey(operation.request.key);
    }
  }

  /** A context for the node's own calls (system records): the system tenant, a 5 s deadline. */
  private internalContext(): api.CallContext {
    return { deadlineMs: Date.now() + 5_000, tenant: systemTenant };
  }

  /** A caller's transaction handle, verified: signed by this cluster and begun by `tenant`. */
  private txnScope(transaction: string, tenant: string | undefined): TxnScope {
    return TxnScope.fromVerified(transaction, this.config.partitions, this.txnKeys, tenant ?? defaultTenant);
  }

  private async route(partition: number, operation: KvOperation, context: api.CallContext): Promise<KvResult> {
    const hops = context.hops ?? 0;
    const local = this.replicas.get(partition);
    const isRead = operation.kind === 'get' || operation.kind === 'exists' || operation.kind === 'getByPrefix';
    const staleRead =
      isRead &&
      operation.request.transaction === undefined &&
      (operation.request.consistency === 'stale' || this.config.testBugs?.readsWithoutQuorum === true);
    if (local && staleRead) return this.executeLocal(local, operation, context);
    // A read inside a transaction reads immutable versions at or below its snapshot revision, so
    // any replica that has applied that revision answers it exactly, without a leader round.
    if (local && isRead && operation.request.transaction !== undefined) {
      const { snapshotRevision } = this.txnScope(operation.request.transaction, context.tenant).handle;
      if (local.mvcc.revision >= snapshotRevision) return this.executeLocal(local, operation, context);
    }
    let leader = this.leaderOf(partition);
    // Requests waiting out an election count toward the partition's bound like any other.
    if (local && leader === 0) leader = await this.admitted(local, context, () => this.waitForLeader(local, context));
    if (leader === this.id && local) return this.executeLocal(local, operation, context);
    if (hops >= MAX_FORWARD_HOPS) throw this.notLeader(partition, leader, 'too many forwarding hops');
    // The node's own calls (system tenant) are never refused; client forwards are bounded.
    const release = context.tenant === systemTenant ? () => undefined : this.admission.admitForward();
    try {
      const result = await this.transport.forward(leader, operation, hops + 1, context.deadlineMs, context.signal, context.tenant);
      if (!local) this.remoteLeaders.set(partition, leader);
      return result;
    } catch (error) {
      if (local && isAtollError(error) && error.details?.['fromTransport'] === true && error.code === 'UNAVAILABLE') {
        // The leader's node is gone: let the group notice now instead of after a timeout.
        this.enqueue(() => local.raw.reportUnreachable(leader));
      }
      if (!local) this.remoteLeaders.delete(partition);
      throw error;
    } finally {
      release();
    }
  }

  private async waitForLeader(replica: PartitionReplica, context: api.CallContext): Promise<number> {
    const giveUpAt = Math.min(context.deadlineMs - 50, Date.now() + this.config.tickMs * this.config.electionTicks * 3);
    while (Date.now() < giveUpAt) {
      if (context.signal?.aborted) break;
      const lead = replica.raw.status().lead;
      if (lead !== 0) return lead;
      await new Promise((resolve) => setTimeout(resolve, LEADER_WAIT_POLL_MS));
    }
    throw this.notLeader(replica.id, 0, 'no leader elected yet');
  }

  private notLeader(partition: number, leader: number, why: string): AtollError {
    const address = leader !== 0 ? this.config.peers.get(leader) : undefined;
    return new AtollError(leader === 0 ? 'NO_LEADER' : 'NOT_LEADER', `partition ${partition}: ${why}`, {
      partition,
      ...(address ? { leaderHint: { nodeId: leader, address } } : {}),
    });
  }

  private withLeaderHint(error: unknown, partition: number): unknown {
    if (!isAtollError(error) || (error.code !== 'NOT_LEADER' && error.code !== 'NO_LEADER')) return error;
    if (error.details?.['leaderHint']) return error;
    const leader = Number(error.details?.['leaderId'] ?? this.leaderOf(partition));
    return this.notLeader(partition, leader === this.id ? 0 : leader, error.message);
  }

  // ------------------------------------------------------------ execution at the leader

  private async executeLocal(replica: PartitionReplica, operation: KvOperation, context: api.CallContext): Promise<KvResult> {
    try {
      return await this.executeOn(replica, operation, context);
    } catch (error) {
      throw this.withLeaderHint(error, replica.id);
    }
  }

  private async executeOn(replica: PartitionReplica, operation: KvOperation, context: api.CallContext): Promise<KvResult> {
    const tenant = context.tenant ?? defaultTenant;
    // A script's bucket is the caller's user bucket (its keys are mapped where it runs): counted
    // under the caller's tenant, like every other request's key.
    const scriptBucketKey = operation.kind === 'executeScript' ? toInternalKey(tenant, scriptBucket(operation.request, this.limits)) : undefined;
    // Every request this node serves for the partition: all of them at its leader, local reads at a replica.
    this.load.record(replica.id, scriptBucketKey ?? loadKeyOf(operation.request), performance.now());
    this.countRequest(replica.id, tenant);
    await this.auth.checkQuota(tenant, this.mayGrow(operation, tenant));
    switch (operation.kind) {
      case 'get': {
        const request = operation.request;
        if (request.transaction !== undefined) return { kind: 'get', response: await this.txnGet(replica, request, context) };
        if (request.consistency !== 'stale') await this.readBarrier(replica, context);
        const result = await replica.mvcc.get(request.key, { nowMs: Date.now(), ...(request.revision ? { revision: request.revision } : {}) });
        return { kind: 'get', response: getResponseOf(result) };
      }
      case 'exists': {
        const request = operation.request;
        if (request.transaction !== undefined) {
          const found = await this.txnGet(replica, { key: request.key, transaction: request.transaction }, context);
          return { kind: 'exists', response: { exists: found.found, revision: found.revision } };
        }
        if (request.consistency !== 'stale') await this.readBarrier(replica, context);
        const result = await replica.mvcc.get(request.key, { nowMs: Date.now() });
        return { kind: 'exists', response: { exists: result.found, revision: result.revision } };
      }
      case 'getByPrefix':
        return { kind: 'getByPrefix', response: await this.prefixPage(replica, operation.request, context) };
      case 'put': {
        const r = operation.request;
        const op: WriteOp = {
          type: 'put',
          key: r.key,
          value: r.value,
          ...(r.ttlMs ? { ttlMs: r.ttlMs } : {}),
          ...(r.keepTtl ? { keepTtl: true } : {}),
          ...(r.ifAbsent ? { ifAbsent: true } : {}),
          ...(r.ifPresent ? { ifPresent: true } : {}),
          ...(r.ifModRevision !== undefined ? { ifModRevision: r.ifModRevision } : {}),
          ...(r.ifValue !== undefined ? { ifValue: r.ifValue } : {}),
          ...(r.returnPrevious ? { returnPrevious: true } : {}),
        };
        const result = await this.propose(replica, op, context, r.requestId);
        const write = result.writes[0];
        const previous = write?.previous;
        return { kind: 'put', response: { applied: result.applied, revision: result.revision, ...(previous ? { previous: keyRecordOf(previous) } : {}) } };
      }
      case 'delete': {
        const r = operation.request;
        const op: WriteOp = {
          type: 'delete',
          key: r.key,
          ...(r.ifModRevision !== undefined ? { ifModRevision: r.ifModRevision } : {}),
          ...(r.ifValue !== undefined ? { ifValue: r.ifValue } : {}),
        };
        const result = await this.propose(replica, op, context, r.requestId);
        return { kind: 'delete', response: { deleted: result.applied && (result.writes[0]?.deleted ?? false), revision: result.revision } };
      }
      case 'increment': {
        const r = operation.request;
        const result = await this.propose(replica, { type: 'increment', key: r.key, delta: r.delta, ...(r.ttlMs ? { ttlMs: r.ttlMs } : {}) }, context, r.requestId);
        return { kind: 'increment', response: { value: result.writes[0]?.counter ?? 0n, revision: result.revision } };
      }
      case 'extend': {
        const r = operation.request;
        const result = await this.propose(replica, { type: 'extend', key: r.key, ttlMs: r.ttlMs }, context, r.requestId);
        const write = result.writes[0];
        return {
          kind: 'extend',
          response: { extended: write?.conditionHeld ?? false, expiresAtMs: write?.current?.expiresAtMs ?? 0, revision: result.revision },
        };
      }
      case 'beginTransaction':
        return { kind: 'beginTransaction', response: await this.beginAt(replica, operation.request, context) };
      case 'commit': {
        const r = operation.request;
        const scope = this.txnScope(r.transaction, tenant);
        scope.checkAlive(Date.now(), this.limits);
        let command = scope.commandOf(r);
        if (this.config.testBugs?.tornTransactions === true && command.writes.length > 1) {
          await this.propose(replica, { ...command, writes: command.writes.slice(0, 1) }, context);
          command = { ...command, writes: command.writes.slice(1) };
        }
        const result = await this.propose(replica, command, context, r.requestId);
        return { kind: 'commit', response: { revision: result.revision } };
      }
      case 'executeScript':
        return {
          kind: 'executeScript',
          response: await runScriptAtLeader({
            request: operation.request,
            limits: this.limits,
            partitionCount: this.config.partitions,
            tenant,
            begin: () =>
              this.beginAt(replica, { key: scriptBucketKey as string, isolation: operation.request.isolation ?? 'snapshot' }, context),
            mvcc: replica.mvcc,
            // A script's writes are known only once it ran: one that adds data meets the storage quota here.
            propose: async (command, requestId) => {
              if (commandGrows(command)) await this.auth.checkStorageQuota(tenant);
              return this.propose(replica, command, context, requestId);
            },
            deadlineMs: context.deadlineMs,
          }),
        };
    }
  }

  /**
   * Whether an operation may add stored data, so the storage quota applies: deletes, expiry
   * changes (extend) and transactions that only delete go through over quota (a tenant must be
   * able to get back under it); a script is checked when it commits (see executeScript).
   */
  private mayGrow(operation: KvOperation, tenant: string): boolean {
    switch (operation.kind) {
      case 'put':
      case 'increment':
        return true;
      case 'commit':
        return commandGrows(this.txnScope(operation.request.transaction, tenant).commandOf(operation.request));
      default:
        return false;
    }
  }

  /** Starts a transaction: a linearizable read of the partition's revision, taken as the snapshot. */
  private async beginAt(replica: PartitionReplica, request: api.BeginTransactionRequest, context: api.CallContext): Promise<api.BeginTransactionResponse> {
    await this.readBarrier(replica, context);
    const isolation = request.isolation ?? 'snapshot';
    const bucket = bucketOf(request.key);
    const startedAtMs = Date.now();
    const tenant = context.tenant ?? defaultTenant;
    const handle = { partition: replica.id, partitionCount: this.config.partitions, tenant, bucket, snapshotRevision: replica.mvcc.revision, isolation, startedAtMs };
    return {
      transaction: this.txnKeys.encode(handle),
      partition: replica.id,
      bucket,
      snapshotRevision: handle.snapshotRevision,
      isolation,
      expiresAtMs: startedAtMs + this.limits.maxTxnDurationMs,
    };
  }

  /** Waits until the replica has applied `revision` (a leader that just took over may be behind). */
  private async ensureRevision(replica: PartitionReplica, revision: number, context: api.CallContext): Promise<void> {
    if (replica.mvcc.revision >= revision) return;
    await this.readBarrier(replica, context);
    if (replica.mvcc.revision < revision) {
      throw new AtollError('FUTURE_REVISION', `partition ${replica.id} has not reached revision ${revision}`, { revision });
    }
  }

  /** A get inside a transaction: at its snapshot revision and clock, confined to its partition. */
  private async txnGet(replica: PartitionReplica, request: api.GetRequest, context: api.CallContext): Promise<api.GetResponse> {
    const { handle } = this.txnRead(request.transaction!, context.tenant, request.revision, (scope) => scope.checkKey(request.key));
    await this.ensureRevision(replica, handle.snapshotRevision, context);
    return getResponseOf(await replica.mvcc.get(request.key, { nowMs: handle.startedAtMs, revision: handle.snapshotRevision }));
  }

  private txnRead(transaction: string, tenant: string | undefined, revision: number | undefined, check: (scope: TxnScope) => void): TxnScope {
    const scope = this.txnScope(transaction, tenant);
    if (revision !== undefined && revision !== scope.handle.snapshotRevision) {
      throw new AtollError('INVALID_ARGUMENT', 'a read inside a transaction is at its snapshot revision: leave revision unset', {
        revision,
        snapshotRevision: scope.handle.snapshotRevision,
      });
    }
    check(scope);
    return scope;
  }

  private async prefixPage(replica: PartitionReplica, request: api.GetByPrefixRequest, context: api.CallContext): Promise<api.GetByPrefixResponse> {
    const scope = prefixBucket(request.prefix);
    const token = request.pageToken ? decodePageToken(request.pageToken, scope.keyPrefix) : undefined;
    const txn =
      request.transaction === undefined
        ? undefined
        : this.txnRead(request.transaction, context.tenant, token?.revision ?? request.revision, (s) => s.checkPrefix(request.prefix)).handle;
    if (txn !== undefined) await this.ensureRevision(replica, txn.snapshotRevision, context);
    else if (!token && request.consistency !== 'stale') await this.readBarrier(replica, context);
    const revision = txn?.snapshotRevision ?? token?.revision ?? request.revision;
    const limit = Math.min(request.limit && request.limit > 0 ? request.limit : defaultLimits.defaultPageSize, defaultLimits.maxPageSize);
    const page = await replica.mvcc.getByPrefix(scope.keyPrefix, {
      nowMs: txn?.startedAtMs ?? Date.now(),
      limit,
      ...(revision ? { revision } : {}),
      ...(token ? { after: token.after } : {}),
    });
    return {
      items: page.items.map(keyRecordOf),
      revision: page.revision,
      nextPageToken: page.more && page.continueAfter !== undefined ? encodePageToken(page.revision, page.continueAfter) : '',
    };
  }

  /** Linearizable reads: wait for a ReadIndex round that started after this call, then for apply. */
  private readBarrier(replica: PartitionReplica, context: api.CallContext): Promise<void> {
    if (this.config.testBugs?.readsWithoutQuorum) return Promise.resolve();
    return this.admitted(replica, context, () => this.withDeadline(
      () => new Promise<void>((resolve, reject) => {
        this.enqueue(() => {
          if (replica.raw.status().role !== 'leader') {
            reject(replica.notLeaderError());
            return;
          }
          replica.enqueueRead({ resolve, reject });
        });
      }),
      context,
    ));
  }

  /**
   * Runs a request that queues work for the loop under the admission bounds: OVERLOADED at once
   * past them. The node's own reads and writes (system tenant: tokens, quotas, usage) are not
   * counted, so a flood of client work never locks out authentication.
   */
  private admitted<T>(replica: PartitionReplica, context: api.CallContext, run: () => Promise<T>): Promise<T> {
    if (context.tenant === systemTenant) return run();
    let release: () => void;
    try {
      release = this.admission.admitRequest(replica.id);
    } catch (error) {
      return Promise.reject(error);
    }
    return run().finally(release);
  }

  private propose(replica: PartitionReplica, command: Command, context: api.CallContext, requestId?: string): Promise<ApplyResult> {
    // Validation happens here, before anything reaches the log: bad input changes nothing.
    if (requestId !== undefined) validateRequestId(requestId);
    const payload = encodeEntryPayload(Date.now(), encodeCommand(command, this.limits), requestId);
    return this.admitted(replica, context, () => this.withDeadline(
      () => new Promise<ApplyResult>((resolve, reject) => {
        this.enqueue(() => {
          try {
            replica.propose(payload, { resolve, reject }, this.config.testBugs?.ackBeforeCommit === true);
          } catch (error) {
            reject(replica.notLeaderError(error));
          }
        });
      }),
      context,
    )).then((result) => {
      if (result.error) throw result.error;
      return result;
    });
  }

  /**
   * Runs `start` under the caller's deadline. `start` is not called at all when the deadline has
   * passed: a started request's promise must always have a listener, or its later rejection would
   * be unhandled.
   */
  private withDeadline<T>(start: () => Promise<T>, context: api.CallContext): Promise<T> {
    // Deadlines are clamped where calls arrive (call-context.ts); this clamps forwarded ones too.
    const remaining = Math.min(context.deadlineMs - Date.now(), this.limits.maxCallTimeoutMs);
    assert(remaining <= 2 ** 31 - 1, 'a deadline timer fits setTimeout');
    if (remaining <= 0) return Promise.reject(new AtollError('DEADLINE_EXCEEDED', 'deadline passed before the request started'));
    const promise = start();
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(new AtollError('DEADLINE_EXCEEDED', `no answer within the deadline (${remaining} ms); a write may still apply`)), remaining);
      const abort = (): void => reject(new AtollError('DEADLINE_EXCEEDED', 'cancelled by the caller'));
      context.signal?.addEventListener('abort', abort, { once: true });
      promise.then(resolve, reject).finally(() => {
        clearTimeout(timer);
        context.signal?.removeEventListener('abort', abort);
      });
    });
  }

  // ------------------------------------------------------------ NodeApi

  /** Routes one operation to its partition (here or at its leader) and returns its response. */
  private async serve<K extends KvKind>(kind: K, request: KvTypes[K]['request'], context: api.CallContext): Promise<KvTypes[K]['response']> {
    const principal = await this.principalOf(context);
    requireRole(principal, isWriteKind(kind) ? 'readwrite' : 'read', `${kind}`);
    const { tenant } = principal;
    try {
      // Keys are checked and moved into the caller's tenant here, where the call arrived; forwarded
      // requests carry internal keys and the tenant, never the forwarding node's identity.
      const operation = mapOperation(tenant, { kind, request } as KvOperation);
      const result = await this.route(this.partitionOf(operation, tenant), operation, { ...context, tenant });
      return unmapResult(tenant, result).response as KvTypes[K]['response'];
    } catch (error) {
      throw unmapError(tenant, error);
    }
  }

  /** The caller of a client call: its token alone (the peer secret never authorizes a client call). */
  private async principalOf(context: api.CallContext): Promise<Principal> {
    return this.auth.principalOf(context.authorization, context.connection);
  }

  /** Whether `secret` (a call's peer-secret metadata) is one of the cluster's peer secrets (constant time). */
  peerCallAllowed(secret: unknown): boolean {
    return this.peerSecretCheck.matches(secret);
  }

  // ------------------------------------------------------------ access control (src/node/auth.ts)

  async whoAmI(context: api.CallContext): Promise<Principal> {
    return this.principalOf(context);
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

  /** Requests per (partition, tenant) since the last usage publication. */
  private readonly requestCounts = new Map<number, Map<string, number>>();
  private lastPublishedUsage = new Map<number, string>();
  private lastUsagePublishMs = performance.now();

  private countRequest(partition: number, tenant: string): void {
    if (!this.auth.enabled) return;
    const counts = this.requestCounts.get(partition) ?? new Map<string, number>();
    counts.set(tenant, (counts.get(tenant) ?? 0) + 1);
    this.requestCounts.set(partition, counts);
  }

  /**
   * Each partition this node leads publishes its per-tenant stored keys, live bytes, retained
   * history bytes and request rate to the system record usage/<partition> when they changed;
   * NodeAuth sums the records for quotas.
   */
  private publishUsage(): void {
    if (!this.auth.enabled) return;
    const nowMs = performance.now();
    const seconds = Math.max(0.001, (nowMs - this.lastUsagePublishMs) / 1000);
    this.lastUsagePublishMs = nowMs;
    const counts = this.requestCounts;
    for (const replica of this.replicas.values()) {
      if (replica.raw.status().role !== 'leader') continue;
      const record: Record<string, { keys: number; bytes: number; historyBytes: number; rps: number }> = {};
      for (const [tenant, usage] of replica.mvcc.usageByTenant()) {
        if (tenant !== systemTenant) record[tenant] = { keys: usage.keys, bytes: usage.bytes, historyBytes: usage.historyBytes, rps: 0 };
      }
      for (const [tenant, count] of counts.get(replica.id) ?? []) {
        if (tenant === systemTenant) continue;
        const entry = (record[tenant] ??= { keys: 0, bytes: 0, historyBytes: 0, rps: 0 });
        entry.rps = Math.round(count / seconds);
      }
      const text = JSON.stringify(record);
      if (this.lastPublishedUsage.get(replica.id) === text) continue;
      this.lastPublishedUsage.set(replica.id, text);
      const key = `${usageBucket}/${replica.id}`;
      this.route(replica.id === this.partitionOfKey(key) ? replica.id : this.partitionOfKey(key), { kind: 'put', request: { key, value: new TextEncoder().encode(text) } }, this.internalContext()).catch(
        (error: unknown) => {
          this.lastPublishedUsage.delete(replica.id);
          this.logger.debug({ err: error, partition: replica.id }, 'publishing tenant usage failed');
        },
      );
    }
    counts.clear();
  }

  get(request: api.GetRequest, context: api.CallContext): Promise<api.GetResponse> {
    return this.serve('get', request, context);
  }

  put(request: api.PutRequest, context: api.CallContext): Promise<api.PutResponse> {
    return this.serve('put', request, context);
  }

  delete(request: api.DeleteRequest, context: api.CallContext): Promise<api.DeleteResponse> {
    return this.serve('delete', request, context);
  }

  increment(request: api.IncrementRequest, context: api.CallContext): Promise<api.IncrementResponse> {
    return this.serve('increment', request, context);
  }

  exists(request: api.ExistsRequest, context: api.CallContext): Promise<api.ExistsResponse> {
    return this.serve('exists', request, context);
  }

  extend(request: api.ExtendRequest, context: api.CallContext): Promise<api.ExtendResponse> {
    return this.serve('extend', request, context);
  }

  getByPrefix(request: api.GetByPrefixRequest, context: api.CallContext): Promise<api.GetByPrefixResponse> {
    return this.serve('getByPrefix', request, context);
  }

  beginTransaction(request: api.BeginTransactionRequest, context: api.CallContext): Promise<api.BeginTransactionResponse> {
    return this.serve('beginTransaction', request, context);
  }

  commit(request: api.CommitRequest, context: api.CallContext): Promise<api.CommitResponse> {
    return this.serve('commit', request, context);
  }

  executeScript(request: api.ExecuteScriptRequest, context: api.CallContext): Promise<api.ExecuteScriptResponse> {
    return this.serve('executeScript', request, context);
  }

  /** Runs a request forwarded by another node (Peer.Forward): its keys are internal already. */
  async executeForwarded(operation: KvOperation, context: api.CallContext): Promise<KvResult> {
    return this.route(this.partitionOf(operation, context.tenant), operation, context);
  }

  async clusterInfo(context: api.CallContext): Promise<api.ClusterInfoResponse> {
    // The map is public (clients need it to route; it names no data), but hot keys name keys: a
    // tenant sees only its own, without the tenant tag, and an unauthenticated caller sees none.
    const principal = await this.principalOf(context).catch((error: unknown) => {
      if (isAtollError(error, 'UNAUTHENTICATED')) return undefined;
      throw error;
    });
    const table = partitionTable(this.config.partitions);
    const load = this.load.report(performance.now());
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
      const replica = this.replicas.get(range.id);
      const status = replica?.raw.status();
      return {
        id: range.id,
        rangeStart: range.start,
        rangeEnd: range.end,
        replicas: replicasOf(range.id, this.nodeIds, this.config.replicationFactor),
        leader: status ? status.lead : (this.remoteLeaders.get(range.id) ?? 0),
        term: status?.term ?? 0,
        commitIndex: status?.commit ?? 0,
        appliedIndex: replica?.appliedIndex ?? 0,
        revision: replica?.mvcc.revision ?? 0,
        ...visibleLoad(range.id),
      };
    });
    return {
      nodeId: this.id,
      partitionCount: this.config.partitions,
      replicationFactor: this.config.replicationFactor,
      hashFunction: 'fnv1a32',
      nodes: this.nodeIds.map((id) => ({ id, address: this.config.peers.get(id) as string, reachable: this.transport.isReachable(id) })),
      partitions,
    };
  }

  async transferLeader(request: api.TransferLeaderRequest, context: api.CallContext): Promise<void> {
    requireClusterAdmin(await this.principalOf(context), 'moving leadership');
    const replica = this.replicas.get(request.partition);
    if (!replica) throw new AtollError('INVALID_ARGUMENT', `partition ${request.partition} has no replica on node ${this.id}`);
    if (!this.config.peers.has(request.targetNode)) throw new AtollError('INVALID_ARGUMENT', `no node ${request.targetNode}`);
    await new Promise<void>((resolve, reject) => {
      this.enqueue(() => {
        const status = replica.raw.status();
        if (status.role !== 'leader') {
          reject(this.notLeader(request.partition, status.lead, 'only the leader can transfer leadership'));
          return;
        }
        try {
          if (request.targetNode !== this.id) replica.raw.transferLeadership(request.targetNode);
          resolve();
        } catch (error) {
          reject(new AtollError('INVALID_ARGUMENT', error instanceof Error ? error.message : String(error)));
        }
      });
    });
  }

  // ------------------------------------------------------------ peer service and lifecycle

  /** True when every hosted partition knows its leader. */
  allPartitionsLed(): boolean {
    for (const replica of this.replicas.values()) if (replica.raw.status().lead === 0) return false;
    return true;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.tickTimer) clearInterval(this.tickTimer);
    if (this.balanceTimer) clearInterval(this.balanceTimer);
    if (this.leaderRefreshTimer) clearInterval(this.leaderRefreshTimer);
    // Let the current iteration finish its write before closing the database under it.
    for (let i = 0; i < 200 && this.loopRunning; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const shutdown = new AtollError('UNAVAILABLE', `node ${this.id} is shutting down`);
    for (const replica of this.replicas.values()) replica.failAll(shutdown);
    this.transport.close();
    await this.engine.close();
  }

  get failure(): Error | undefined {
    return this.fatal;
  }
}

/** Whether a command writes a value (put, increment) rather than only deleting or changing expiry. */
function commandGrows(command: Command): boolean {
  const writes = command.type === 'batch' || command.type === 'txn' ? command.writes : command.type === 'compact' ? [] : [command];
  return writes.some((write) => write.type === 'put' || write.type === 'increment');
}

function encodePageToken(revision: number, after: string): string {
  return Buffer.from(JSON.stringify({ r: revision, a: after }), 'utf8').toString('base64url');
}

/**
 * A page token names the last internal key returned. The scan is clamped to the prefix anyway
 * (MvccStore.scanRange); a token whose key is not under the request's (mapped) prefix is refused
 * as well, so a crafted token is never more than a resume point inside the caller's own prefix.
 */
function decodePageToken(token: string, keyPrefix: string): { revision: number; after: string } {
  try {
    const parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as { r: unknown; a: unknown };
    if (typeof parsed.r === 'number' && Number.isSafeInteger(parsed.r) && parsed.r >= 0 && typeof parsed.a === 'string' && parsed.a.startsWith(keyPrefix)) {
      return { revision: parsed.r, after: parsed.a };
    }
  } catch {
    // Fall through to the error below.
  }
  throw new AtollError('INVALID_ARGUMENT', 'malformed page token: pass back nextPageToken unchanged');
}
