/**
 * The router: finds the partition of a request, and runs it here (a local replica that leads it,
 * or may answer a stale or transactional read) or forwards it to the node that leads it, with a
 * bounded number of hops. It keeps leader hints for partitions this node does not host (learned
 * from peers' cluster views and from forwards) and turns "not the leader" into errors that name
 * the leader.
 */
import { isAtollError, AtollError } from '../../errors.js';
import { bucketOf } from '../../keys/bucket.js';
import type { BucketHashName } from '../../keys/bucket-hash.js';
import { prefixBucket } from '../../keys/prefix-bucket.js';
import { systemTenant, toInternalKey } from '../../keys/tenant-keys.js';
import { validateKey } from '../../keys/validate-key.js';
import { defaultLimits, type Limits } from '../../limits.js';
import type { Admission } from './admission.js';
import type * as api from '../../api/node-api.js';
import type { SystemStore } from './auth.js';
import type { NodeTestBugs } from '../node-config.js';
import type { KvExecutor } from './kv-executor.js';
import { noMetrics, type NodeMetrics } from '../metrics.js';
import type { KvOperation, KvResult, KvResultOf } from '../../api/operations.js';
import { isCheckedOperation } from '../../api/checked-operation.js';
import { hasDeadlineSignal } from '../../api/deadline-signal.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import { preferredLeaderOf, replicasOf } from '../../keys/placement.js';
import type { NodeClock, NodeTimers } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';
import { scriptBucket } from './script-runner.js';
import { RangeRouting } from '../cluster/range-routing.js';
import { RequestDeadlines } from './request-deadline.js';

/** Bounds of request routing between nodes. */
const MAX_FORWARD_HOPS = 3;
/** How often the node a request arrived at tries again after a leader change that left it unapplied. */
const MAX_ROUTE_ATTEMPTS = 12;
const ROUTE_BACKOFF_FIRST_MS = 10;
const ROUTE_BACKOFF_MAX_MS = 200;
/** A retry is not started unless this much of the deadline is left for it. */
const ROUTE_RETRY_MARGIN_MS = 50;
const LEADER_WAIT_POLL_MS = 20;
/** How long the node's own system-record calls may take. */
const INTERNAL_CALL_TIMEOUT_MS = 5_000;
/** How long a peer has to answer a ClusterInfo asking for leaders. */
const LEADER_REFRESH_TIMEOUT_MS = 500;

export interface RouterOptions {
  readonly id: number;
  readonly peers: ReadonlyMap<number, string>;
  /** Every node id, ascending (placement). */
  readonly nodeIds: readonly number[];
  readonly partitions: number;
  /** The cluster's bucket hash (its descriptor; default: a new cluster's). */
  readonly bucketHash?: BucketHashName;
  readonly replicationFactor: number;
  readonly tickMs: number;
  readonly electionTicks: number;
  readonly limits: Limits;
  readonly testBugs: NodeTestBugs | undefined;
  readonly driver: RaftDriver<PartitionReplica>;
  readonly executor: KvExecutor;
  readonly admission: Admission;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
  /** Requests run here and forwarded (default: none). */
  readonly metrics?: NodeMetrics;
  /** Where a request that arrives without a registered deadline gets one (default: a wheel of its own). */
  readonly deadlines?: RequestDeadlines;
}

/** The metrics label of a request's outcome: OK, or the AtollError code (INTERNAL for anything else). */
export function outcomeCode(error: unknown): string {
  return isAtollError(error) ? error.code : 'INTERNAL';
}

export class Router {
  /** Leader hints for partitions this node does not host. */
  private readonly remoteLeaders = new Map<number, number>();
  /** The voters of partitions this node does not host, as a peer hosting them last reported. */
  private readonly remoteReplicas = new Map<number, readonly number[]>();
  private refreshingLeaders = false;
  /** The partition table: the equal one plus the split starts this node knows (range-routing.ts). */
  readonly ranges: RangeRouting;
  private readonly deadlines: RequestDeadlines;

  constructor(private readonly options: RouterOptions) {
    this.ranges = new RangeRouting(options.partitions, options.bucketHash, options.driver.groups);
    this.deadlines = options.deadlines ?? new RequestDeadlines(options.clock, options.timers, options.limits);
  }

  /** The owner of a bucket by the ranges this node knows. */
  private partitionOfBucket(bucket: string): number {
    return this.ranges.partitionOfBucket(bucket);
  }

  partitionOfKey(key: string): number {
    validateKey(key);
    return this.partitionOfBucket(bucketOf(key));
  }

  /**
   * The partition an operation runs on (decoding the transaction handle or the script as needed).
   * A checked operation's keys were validated where it entered the cluster (checked-operation.ts):
   * `keysChecked`, which a caller that has just checked it passes rather than have it asked again.
   */
  partitionOf(operation: KvOperation, tenant = 'default', keysChecked = isCheckedOperation(operation)): number {
    let key: string;
    switch (operation.kind) {
      case 'getByPrefix':
        if (operation.request.transaction !== undefined && this.options.testBugs?.txnScopeByInitialTable !== true) {
          return this.options.executor.txnScope(operation.request.transaction, tenant).handle.partition;
        }
        return this.partitionOfBucket(prefixBucket(operation.request.prefix).bucket);
      case 'commit':
        return this.options.executor.txnScope(operation.request.transaction, tenant).handle.partition;
      case 'get':
      case 'exists':
        // A read inside a transaction runs at the transaction's partition, whatever the key's owner
        // is now (issue 32): only there is the snapshot revision the transaction's.
        if (operation.request.transaction !== undefined && this.options.testBugs?.txnScopeByInitialTable !== true) {
          return this.options.executor.txnScope(operation.request.transaction, tenant).handle.partition;
        }
        key = operation.request.key;
        break;
      case 'executeScript':
        return this.partitionOfBucket(toInternalKey(tenant, scriptBucket(operation.request, this.options.limits)));
      case 'lease':
        if (operation.request.action !== 'grant') return this.ranges.leasePartition(operation.request.lease);
        key = operation.request.key ?? '';
        break;
      case 'put':
        // A lease id naming a partition this table does not know is bad input, wherever the key routes.
        if (operation.request.lease !== undefined) this.ranges.leasePartition(operation.request.lease);
        key = operation.request.key;
        break;
      default:
        key = operation.request.key;
    }
    if (!keysChecked) validateKey(key);
    return this.ranges.partitionOfBucket(bucketOf(key));
  }

  /** The node believed to lead `partition`, or 0. */
  leaderOf(partition: number): number {
    const replica = this.options.driver.groups.get(partition);
    if (replica) return replica.raw.lead;
    const guess = this.remoteLeaders.get(partition) ?? this.remoteReplicas.get(partition)?.[0] ?? preferredLeaderOf(partition, this.options.nodeIds, this.options.replicationFactor);
    // A replica moved away from this node: the seed may still name it; ask another replica. A
    // removed member (gone from the address book the member table keeps) is never guessed.
    if (guess !== this.options.id && this.options.peers.has(guess)) return guess;
    return this.seedReplicas(partition).find((node) => node !== this.options.id) ?? 0;
  }

  /**
   * A partition's live replica set (its voters; learners never serve): the applied configuration
   * of the local replica, else what a peer hosting it last reported, else the seed placement.
   */
  replicasOf(partition: number): number[] {
    const replica = this.options.driver.groups.get(partition);
    const voters = replica?.raw.voterList();
    if (voters !== undefined && voters.length > 0) return [...voters];
    const remote = this.remoteReplicas.get(partition);
    if (remote !== undefined) return [...remote];
    return this.seedReplicas(partition);
  }

  /** The founding placement's replicas of `partition` that are still members (in the address book), the last-resort guess. */
  private seedReplicas(partition: number): number[] {
    const { id, peers } = this.options;
    return replicasOf(partition, this.options.nodeIds, this.options.replicationFactor).filter((node) => node === id || peers.has(node));
  }

  /** The last known leader of a partition this node does not host, or undefined. */
  remoteLeaderOf(partition: number): number | undefined {
    return this.remoteLeaders.get(partition);
  }

  /**
   * Runs an operation on its partition: here when this node may answer it, else at its leader.
   * The node the request arrived at (hops 0) hides leader changes: when an attempt fails in a way
   * that proves the request was not applied (see mayRetry), it waits briefly and routes it again to
   * the leader it now knows, a bounded number of times and never past the request's deadline.
   */
  async route(partition: number, operation: KvOperation, callContext: api.CallContext): Promise<KvResult> {
    // The request's one deadline registration in this process, unless its server scope made it
    // (then its signal aborts at the deadline, and the context goes on as it came).
    const armed = hasDeadlineSignal(callContext) ? undefined : this.deadlines.arm(callContext);
    const context = armed?.context ?? callContext;
    try {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.routeOnce(partition, operation, context);
        } catch (error) {
          // A forwarded request (hops > 0) is not routed again here: the node it arrived at does that.
          if ((context.hops ?? 0) > 0) throw error;
          // A split or a merge moved the key (nothing was applied): learn the start the partition
          // reported (or the merged-away start) and route again to the new owner at once, within the
          // same bound on attempts.
          const moved = this.movedTo(error, operation, context, partition);
          if (moved !== undefined && attempt < MAX_ROUTE_ATTEMPTS) {
            partition = moved;
            continue;
          }
          if (!this.mayRetry(error, operation)) throw error;
          this.learnLeaderHint(partition, error);
          const backoffMs = Math.min(ROUTE_BACKOFF_FIRST_MS * 2 ** (attempt - 1), ROUTE_BACKOFF_MAX_MS);
          const timeLeft = context.deadlineMs - this.options.clock.wallMs() - backoffMs;
          if (attempt >= MAX_ROUTE_ATTEMPTS || context.signal?.aborted) throw error;
          if (timeLeft < ROUTE_RETRY_MARGIN_MS) {
            // Every attempt was refused before it could apply: the caller may safely retry.
            throw new AtollError('DEADLINE_EXCEEDED', `partition ${partition}: no leader took the request within its deadline (${String((error as Error).message)})`, {
              partition,
              neverSent: true,
            });
          }
          await new Promise<void>((resolve) => this.options.timers.after(backoffMs, resolve));
        }
      }
    } finally {
      armed?.dispose();
    }
  }

  /**
   * Whether a failed attempt may be routed again. Reads change nothing, so any leader change or
   * unreachable leader qualifies. A write qualifies only when the failure proves it was not
   * applied (`neverSent`: refused by raft or superseded at its log index, never sent to the
   * leader, or refused by a node that had no leader): after a send that failed any other way, or
   * a deadline, the outcome is unknown and goes to the caller. Scripts may propose more than once,
   * so they are never retried here.
   */
  private mayRetry(error: unknown, operation: KvOperation): boolean {
    if (!isAtollError(error)) return false;
    const leaderChange = error.code === 'NOT_LEADER' || error.code === 'NO_LEADER';
    const unreachable = error.code === 'UNAVAILABLE' && (error.details?.['fromTransport'] === true || error.details?.['neverSent'] === true);
    if (!leaderChange && !unreachable) return false;
    switch (operation.kind) {
      case 'get':
      case 'exists':
      case 'getByPrefix':
      case 'beginTransaction':
        return true;
      case 'executeScript':
        return false;
      case 'lease':
        // A keepalive or an info changes nothing in the log: any leader change qualifies.
        return operation.request.action === 'keepAlive' || operation.request.action === 'info' || error.details?.['neverSent'] === true;
      case 'commit':
        if (this.options.testBugs?.tornTransactions === true) return false;
        return error.details?.['neverSent'] === true;
      default:
        return error.details?.['neverSent'] === true;
    }
  }

  /** After PARTITION_MOVED: the operation's owner once the reported range end is learned, if another partition. */
  private movedTo(error: unknown, operation: KvOperation, context: api.CallContext, partition: number): number | undefined {
    if (!isAtollError(error, 'PARTITION_MOVED') || operation.kind === 'commit') return undefined;
    const rangeEnd = error.details?.['rangeEnd'];
    if (typeof rangeEnd === 'number') this.ranges.learn(rangeEnd);
    // A partition merged away (merge-apply.ts): its start is a tombstone, and its keys belong to the
    // partition it names. Not one only frozen for the merge (details.reason 'frozen'): until the merge applies
    // it is still a group with replicas that moves, counts and elects like any other, and ClusterInfo
    // must keep listing it. Forgotten at its freeze, it vanished from every view: a membership change
    // moved every replica off a leaving node but its, removed the node, and the merge, which needs R's
    // voters to be L's, never applied (fault suite seed 202, --membership: its keys unavailable for good).
    const mergedInto = error.details?.['mergedInto'];
    const served = error.details?.['servedPartitionId'];
    if (typeof mergedInto === 'number' && typeof served === 'number' && error.details?.['reason'] !== 'frozen') this.ranges.forget(served, mergedInto);
    const owner = this.partitionOf(operation, context.tenant);
    return owner !== partition ? owner : undefined;
  }

  /** A leader named by an error (NOT_LEADER's hint) is where the next attempt goes for a partition not hosted here. */
  private learnLeaderHint(partition: number, error: unknown): void {
    if (this.options.driver.groups.has(partition) || !isAtollError(error)) return;
    const hint = error.details?.['leaderHint'] as { nodeId?: unknown } | undefined;
    const nodeId = Number(hint?.nodeId);
    if (Number.isSafeInteger(nodeId) && nodeId !== this.options.id && this.options.peers.has(nodeId)) this.remoteLeaders.set(partition, nodeId);
  }

  private async routeOnce(partition: number, operation: KvOperation, context: api.CallContext): Promise<KvResult> {
    const { driver, executor, admission } = this.options;
    const hops = context.hops ?? 0;
    const local = driver.groups.get(partition);
    const isRead = operation.kind === 'get' || operation.kind === 'exists' || operation.kind === 'getByPrefix';
    const staleRead =
      isRead &&
      operation.request.transaction === undefined &&
      (operation.request.consistency === 'stale' || this.options.testBugs?.readsWithoutQuorum === true);
    // A learner (a move's new replica, maybe still empty) serves no reads of its own.
    const servesLocally = staleRead || (isRead && operation.request.transaction !== undefined);
    const localVoter = local !== undefined && servesLocally && local.raw.isVoter(this.options.id);
    // Run here: a stale read at a voter; a read inside a transaction at a voter that has applied its
    // snapshot revision (it reads immutable versions at or below it, so any such replica answers it
    // exactly, without a leader round); anything at the leader.
    let here =
      localVoter &&
      (staleRead || (operation.request.transaction !== undefined && local.mvcc.revision >= executor.txnScope(operation.request.transaction, context.tenant).handle.snapshotRevision));
    let leader = 0;
    if (!here) {
      leader = local !== undefined ? local.raw.lead : this.leaderOf(partition);
      // Requests waiting out an election count toward the partition's bound like any other.
      if (local && leader === 0) leader = await admission.run(local.id, context, () => this.waitForLeader(local, context));
      here = leader === this.options.id && local !== undefined;
    }
    if (here && local !== undefined) {
      const metrics = this.options.metrics ?? noMetrics;
      const startedMs = this.options.clock.monotonicMs();
      try {
        const result = await executor.execute(local, operation, context, startedMs);
        metrics.executed(operation.kind, 'OK', (this.options.clock.monotonicMs() - startedMs) / 1000);
        return result;
      } catch (error) {
        metrics.executed(operation.kind, outcomeCode(error), (this.options.clock.monotonicMs() - startedMs) / 1000);
        throw this.withLeaderHint(error, local.id);
      }
    }
    if (leader === 0 || leader === this.options.id) throw notApplied(this.notLeader(partition, 0, 'no known leader for a partition this node does not hold'));
    if (hops >= MAX_FORWARD_HOPS) throw notApplied(this.notLeader(partition, leader, 'too many forwarding hops'));
    // The node's own calls (system tenant) are never refused; client forwards are bounded.
    const release = context.tenant === systemTenant ? () => undefined : admission.admitForward();
    const metrics = this.options.metrics ?? noMetrics;
    try {
      const result = await driver.transport.forward(leader, operation, hops + 1, context.deadlineMs, context.signal, context.tenant);
      if (!local) this.remoteLeaders.set(partition, leader);
      metrics.forwarded(operation.kind, 'OK');
      return result;
    } catch (error) {
      metrics.forwarded(operation.kind, outcomeCode(error));
      if (local && isAtollError(error) && error.details?.['fromTransport'] === true && error.code === 'UNAVAILABLE') {
        // The leader's node is gone: let the group notice now instead of after a timeout.
        driver.enqueue(() => local.raw.reportUnreachable(leader));
      }
      if (!local) this.remoteLeaders.delete(partition);
      throw error;
    } finally {
      release();
    }
  }

  private async waitForLeader(replica: PartitionReplica, context: api.CallContext): Promise<number> {
    const { clock, tickMs, electionTicks } = this.options;
    const giveUpAt = Math.min(context.deadlineMs - 50, clock.wallMs() + tickMs * electionTicks * 3);
    while (clock.wallMs() < giveUpAt) {
      if (context.signal?.aborted) break;
      const lead = replica.raw.lead;
      if (lead !== 0) return lead;
      await new Promise<void>((resolve) => this.options.timers.after(LEADER_WAIT_POLL_MS, resolve));
    }
    throw notApplied(this.notLeader(replica.id, 0, 'no leader elected yet'));
  }

  /** NOT_LEADER naming the leader (with its address) when one is known, else NO_LEADER. */
  notLeader(partition: number, leader: number, why: string): AtollError {
    const address = leader !== 0 ? this.options.peers.get(leader) : undefined;
    return new AtollError(leader === 0 ? 'NO_LEADER' : 'NOT_LEADER', `partition ${partition}: ${why}`, {
      partition,
      ...(address ? { leaderHint: { nodeId: leader, address } } : {}),
    });
  }

  private withLeaderHint(error: unknown, partition: number): unknown {
    if (!isAtollError(error) || (error.code !== 'NOT_LEADER' && error.code !== 'NO_LEADER')) return error;
    if (error.details?.['leaderHint']) return error;
    const leader = Number(error.details?.['leaderId'] ?? this.leaderOf(partition));
    const hinted = this.notLeader(partition, leader === this.options.id ? 0 : leader, error.message);
    return error.details?.['neverSent'] === true ? notApplied(hinted) : hinted;
  }

  /**
   * With more nodes than replicas, a node does not host every partition. It learns those
   * partitions' leaders from the peers that host them (their ClusterInfo), so it can forward
   * straight to the leader and report a complete table.
   */
  async refreshRemoteLeaders(): Promise<void> {
    const { driver, partitions, nodeIds, id } = this.options;
    // Every partition the table knows, split ones included: a node that hosts every founding
    // partition may still lack a split one (and then listed a guess for its replicas).
    const known = this.ranges.table().map((range) => range.id);
    if (this.refreshingLeaders || driver.closed || known.every((partition) => driver.groups.has(partition))) return;
    this.refreshingLeaders = true;
    try {
      // Replicas move, so every reachable peer is asked (at most one call per node and round),
      // and only its first-hand answers count: partitions it hosts itself.
      const learned = new Set<number>();
      // Every member this node knows now (the member table grows the peers map), not only the founders.
      for (const peer of [...new Set([...nodeIds, ...this.options.peers.keys()])]) {
        if (peer === id || !driver.transport.isReachable(peer)) continue;
        const missing = known.some((partition) => !driver.groups.has(partition) && !learned.has(partition));
        if (!missing) break;
        try {
          const info = await driver.transport.clusterInfo(peer, this.options.clock.wallMs() + LEADER_REFRESH_TIMEOUT_MS);
          // Merged-away starts first, so that a start the peer still lists (it has not applied the merge) is not learned.
          for (const { start, into } of info.mergedStarts ?? []) this.ranges.forget(start, into);
          for (const partition of info.partitions) {
            // A split partition a peer reports: its id is its start (range-routing.ts).
            if (partition.id >= partitions) this.ranges.learn(partition.id);
            // First-hand means hosted by the peer: a replica reports its Raft term, a partition the
            // peer does not host reports term 0 with the peer's own guesses. Its guessed voters may
            // still name the peer (it left the partition) and its leader this node (the leader
            // before a move took this node's replica away): learned, that sent this node's watches'
            // clients back to it for good (whole-node simulator seed 92397).
            if (driver.groups.has(partition.id) || partition.term === 0 || !partition.replicas.includes(peer)) continue;
            learned.add(partition.id);
            this.remoteReplicas.set(partition.id, [...partition.replicas]);
            // Invariant: a remote leader is never this node (it does not host the partition).
            if (partition.leader !== 0 && partition.leader !== id) this.remoteLeaders.set(partition.id, partition.leader);
          }
        } catch {
          // That peer is slow or down; another one answers next round.
        }
      }
    } finally {
      this.refreshingLeaders = false;
    }
  }

  /** The node's own records (tokens, quotas, usage: the system tenant), read and written through routing. */
  systemStore(): SystemStore {
    return {
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
    };
  }

  /** A context for the node's own calls (system records): the system tenant, a 5 s deadline. */
  private internalContext(): api.CallContext {
    return { deadlineMs: this.options.clock.wallMs() + INTERNAL_CALL_TIMEOUT_MS, tenant: systemTenant };
  }
}

/** The same error, marked as certainly not applied (sent as `atoll-not-applied`). */
function notApplied(error: AtollError): AtollError {
  return new AtollError(error.code, error.message, { ...error.details, neverSent: true });
}
