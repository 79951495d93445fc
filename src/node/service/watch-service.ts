/**
 * The node's side of Watch (issue 21): checks and maps a watch request like any KV read, serves it
 * only at the partition's leader, keeps one WatchHub per partition it has served a watch on (fed
 * by the partition store's commit listener), bounds watchers per node and per tenant, and runs
 * each watcher (src/watch/watcher.ts) until the call ends.
 *
 * Invariants:
 * - `open` counts the watchers running on this node and `openByTenant` the same per tenant
 *   (absent = 0); a watcher is counted from its admission to the end of its call (finally), so a
 *   cancelled client frees its slot whatever ended it, but only once its bytes are gone.
 * - Memory (issue 33): every watch has a charge in `memory` (src/watch/watch-memory.ts), counted
 *   at its stream, connection, tenant and node; it is refused while one of them is full. Its slot
 *   is freed only after the charge settled (everything it queued was written) or closed (the
 *   stream closed, dropping what was queued). A watch that overflows because its own stream or
 *   connection did not drain has its stream cut off at once; the memory's watchdog cuts off any
 *   stream whose queued bytes are not written for watchStallMs, so a settle never waits longer.
 *   A sink without a transport (in-process) is counted too, its messages written at once.
 *   A watch that starts below its partition's ring (it will read history) takes its first read's
 *   reservation at admission, before the read barrier, and is refused there when its connection,
 *   tenant or node has no room for it; the watcher moves its first read into that reservation,
 *   and gives it back when the ring serves it or the watch ends first.
 * - `running` holds the abort controller of every watcher between its start and its end; close()
 *   aborts them all and sets `closed` first, so no watcher starts after it.
 * - A hub is created from the store's revision at the moment the listener is installed, in one
 *   synchronous step, so it misses no commit after it: its ring holds (floor, top] exactly.
 * - The start of a watch without start_revision is the revision of a linearizable read at the
 *   leader, so it covers every write acknowledged before the watch began.
 * - A stale watch is served by any replica of the partition from its own applied history (its
 *   store and hub, fed by the same commit listener on followers): no leadership check and no
 *   read barrier. Its start defaults to the replica's applied revision, and a start above it (a
 *   resume from a replica further ahead) waits for apply to reach it. Replicas apply the same log,
 *   so every replica's history has the same changes at the same revisions: a resume after the last
 *   revision received, on any replica, continues without a gap or a duplicate.
 */
import { AtollError } from '../../errors.js';
import { prefixBucket } from '../../keys/prefix-bucket.js';
import { defaultBucketHash, type BucketHashName } from '../../keys/bucket-hash.js';
import { keyInHashRange } from '../../mvcc/split-plan.js';
import { toUserKey } from '../../keys/tenant-keys.js';
import type { Limits } from '../../limits.js';
import { validateRevisionNumber } from '../../mvcc/validate-command.js';
import { mapOperation, unmapError } from '../../tenancy/map-operation.js';
import { WatchHub } from '../../watch/watch-hub.js';
import { WatchMemory, watchReadReserveBytes, type WatchCharge } from '../../watch/watch-memory.js';
import { HistoryReadLine, SendPacer } from '../../watch/history-turns.js';
import { runWatcher, type WatchSink, type WatchTarget } from '../../watch/watcher.js';
import type * as api from '../../api/node-api.js';
import type { KvExecutor } from './kv-executor.js';
import type { WatchesMetricsView } from '../metrics.js';
import type { NodeAccess } from './node-access.js';
import type { NodeTestBugs } from '../node-config.js';
import type { KvOperation } from '../../api/operations.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import type { NodeClock, NodeTimers } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';
import type { Router } from './router.js';
import type { CallSignal } from '../../api/call-signal.js';

/** An idle watcher checks that this node still leads its partition this often. */
const LEADER_CHECK_MS = 200;

export interface WatchServiceOptions {
  readonly id: number;
  readonly limits: Limits;
  readonly driver: RaftDriver<PartitionReplica>;
  readonly router: Router;
  readonly executor: KvExecutor;
  readonly access: NodeAccess;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
  /** The cluster's bucket hash (a split's range check); default defaultBucketHash. */
  readonly bucketHash?: BucketHashName;
  /** Planted defects (negative controls): hubNotResetOnMerge, hubNotToldOfInstall, staleWatchIgnoresRemoval. */
  readonly testBugs?: NodeTestBugs;
}

export class WatchService {
  private readonly hubs = new Map<number, { readonly replica: PartitionReplica; readonly hub: WatchHub }>();
  private open = 0;
  private readonly openByTenant = new Map<string, number>();
  /** One per running watcher: close() aborts them all. */
  private readonly running = new Set<AbortController>();
  private closed = false;
  /** The bytes held for watch clients, per stream, connection, tenant and node. */
  readonly memory: WatchMemory;
  /** Reads of history take turns, tenant by tenant, and batches are sent in slices (history-turns.ts). */
  private readonly reads: HistoryReadLine;
  private readonly pacer: SendPacer;
  /**
   * Opens take turns too: a burst of them (the hostile load run's top-ups, 25 watches on each of 8
   * connections in one read of each socket, mostly refused at the tenant's memory bound) was served
   * in one turn of the loop, up to 130 ms of event-loop stall; past 2 ms of opens in a turn, the
   * rest wait for a later one.
   */
  private readonly opens: SendPacer;

  constructor(private readonly options: WatchServiceOptions) {
    const { limits, clock, timers } = options;
    this.memory = new WatchMemory({
      bounds: { streamBytes: limits.watchStreamBytes, connectionBytes: limits.watchConnectionBytes, tenantBytes: limits.watchTenantBytes, nodeBytes: limits.watchNodeBytes },
      stallMs: limits.watchStallMs,
      monotonicMs: () => clock.monotonicMs(),
      after: (ms, run) => timers.after(ms, run),
    });
    this.reads = new HistoryReadLine({
      concurrent: limits.maxHistoryReadsPerNode,
      bytesPerSecond: limits.watchHistoryBytesPerSecond,
      burstBytes: limits.watchHistoryBurstBytes,
      nowMs: () => clock.monotonicMs(),
      after: (ms, run) => timers.after(ms, run),
    });
    this.pacer = new SendPacer(() => clock.monotonicMs(), (run) => timers.soon(run));
    this.opens = new SendPacer(() => clock.monotonicMs(), (run) => timers.soon(run));
  }

  /** Watchers running on this node (tests, metrics). */
  get openWatchers(): number {
    return this.open;
  }

  /** For the metrics scrape. */
  view(): WatchesMetricsView {
    return { open: this.open, streams: this.memory.openStreams, cutOffs: this.memory.cutOffs, memoryRefusals: this.memory.refusals };
  }

  /** Ends every running watch (the node is closing) and refuses new ones. */
  close(): void {
    this.closed = true;
    for (const controller of this.running) controller.abort();
  }

  async watch(request: api.WatchRequest, context: api.CallContext, sink: WatchSink): Promise<void> {
    while (this.opens.due()) await this.opens.pause();
    if (this.closed) throw new AtollError('UNAVAILABLE', 'the node is shutting down');
    const { access } = this.options;
    const tenant = await access.authorize('getByPrefix', context);
    try {
      const { target, barrier } = this.targetOf(tenant, request);
      if (request.startRevision !== undefined) validateRevisionNumber(request.startRevision, 'startRevision');
      const release = this.admit(tenant);
      let charge: WatchCharge | undefined;
      try {
        charge = this.memory.open(tenant, sink.transport ?? sink, sink.transport);
        // An in-process sink holds nothing once write returns: its messages count as written then.
        const counted: WatchSink =
          sink.transport !== undefined
            ? sink
            : {
                write: (message, written) => {
                  const accepted = sink.write(message);
                  written?.();
                  return accepted;
                },
                drained: (ms) => sink.drained(ms),
              };
        await this.serve(tenant, request, target, barrier, context, counted, charge);
      } catch (error) {
        // A consumer too slow to follow: its stream is closed now, dropping what is queued for it.
        if (error instanceof AtollError && error.code === 'WATCH_OVERFLOW' && error.details?.['reason'] === 'slow-consumer') charge?.cutOff();
        throw error;
      } finally {
        // The slot comes back with the memory: once everything queued was written or dropped.
        if (charge !== undefined) {
          await charge.settled();
          charge.close();
        }
        release();
      }
    } catch (error) {
      // A client that cancelled, even while the watch was starting, ended it: nothing to report.
      if (context.signal?.aborted === true) return;
      throw unmapError(tenant, error);
    }
  }

  private targetOf(tenant: string, request: api.WatchRequest): { target: WatchTarget; barrier: KvOperation } {
    const hasKey = request.key !== undefined && request.key !== '';
    const hasPrefix = request.prefix !== undefined && request.prefix !== '';
    if (hasKey === hasPrefix) throw new AtollError('INVALID_ARGUMENT', 'a watch names exactly one of key and prefix');
    if (hasKey) {
      const mapped = mapOperation(tenant, { kind: 'get', request: { key: request.key as string } });
      const key = (mapped.request as api.GetRequest).key;
      return { target: { key }, barrier: { kind: 'get', request: { key } } };
    }
    const mapped = mapOperation(tenant, { kind: 'getByPrefix', request: { prefix: request.prefix as string } });
    const prefix = (mapped.request as api.GetByPrefixRequest).prefix;
    return { target: { keyPrefix: prefixBucket(prefix).keyPrefix }, barrier: { kind: 'getByPrefix', request: { prefix, limit: 1 } } };
  }

  /** Takes a watcher slot (RESOURCE_EXHAUSTED past a bound); the returned function frees it once. */
  private admit(tenant: string): () => void {
    const { limits } = this.options;
    const ofTenant = this.openByTenant.get(tenant) ?? 0;
    if (this.open >= limits.maxWatchersPerNode) {
      throw new AtollError('RESOURCE_EXHAUSTED', `this node serves ${limits.maxWatchersPerNode} watches already; retry later or at another node`, { limit: limits.maxWatchersPerNode });
    }
    if (ofTenant >= limits.maxWatchersPerTenant) {
      throw new AtollError('RESOURCE_EXHAUSTED', `the tenant has ${limits.maxWatchersPerTenant} watches open at this node already`, { limit: limits.maxWatchersPerTenant });
    }
    this.open++;
    this.openByTenant.set(tenant, ofTenant + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.open--;
      const left = (this.openByTenant.get(tenant) ?? 1) - 1;
      if (left === 0) this.openByTenant.delete(tenant);
      else this.openByTenant.set(tenant, left);
    };
  }

  private async serve(tenant: string, request: api.WatchRequest, target: WatchTarget, barrier: KvOperation, context: api.CallContext, sink: WatchSink, charge: WatchCharge): Promise<void> {
    const { router, driver } = this.options;
    const partition = router.partitionOf(barrier, tenant);
    const replica = driver.groups.get(partition);
    const stale = request.stale === true;
    const checkLeader = (): void => {
      if (replica === undefined) throw router.notLeader(partition, router.remoteLeaderOf(partition) ?? 0, 'watches are served by the partition leader');
      // A stale watch needs only a replica here, but the replica it started on: a move that took
      // this node's copy away (or replaced it with a new one) leaves the captured store unfed for
      // good, so the watch ends and the client resumes at a replica that has the partition (issue 32).
      if (stale && this.options.testBugs?.staleWatchIgnoresRemoval !== true && driver.groups.get(partition) !== replica) {
        throw router.notLeader(partition, router.leaderOf(partition), 'this node no longer holds a replica of the partition');
      }
      // Nor a replica that has no configuration yet: a move's target awaiting its first snapshot
      // holds no history, and may never get one (whole-node simulator seed 66828: the move was of
      // a partition then merged away, and a stale watch resumed there waited for good).
      if (stale && replica.raw.voterList().length === 0) {
        throw router.notLeader(partition, router.leaderOf(partition), "this node's replica of the partition awaits its first snapshot");
      }
      if (stale) return;
      const status = replica.raw.status();
      if (status.role !== 'leader') {
        throw router.notLeader(partition, status.lead === this.options.id ? 0 : status.lead, 'watches are served by the partition leader');
      }
    };
    // A split that moved the watched bucket away ends the watch (the client resumes at the new
    // owner after its last revision, as after a leader change). Checked with the leader, at the top
    // of every watcher round, so it ends before this partition's revisions, which the new
    // partition's overlap after the split, pass the split: the range shrinks when the split
    // applies, before any later entry of this partition applies.
    const watched = barrier.kind === 'get' ? barrier.request.key : (barrier.request as api.GetByPrefixRequest).prefix;
    const checkServed = (): void => {
      // A merge ends it too, on any replica (merge-apply.ts): from R's freeze on nothing is
      // published here, and after the merge the watched keys change in the left partition only.
      const mergedInto = replica?.mvcc.mergedInto ?? replica?.mvcc.frozen?.into;
      if (mergedInto !== undefined) {
        throw new AtollError('PARTITION_MOVED', `partition ${partition} is being merged into partition ${mergedInto}: resume there`, { servedPartitionId: partition, mergedInto });
      }
      checkLeader();
      const range = replica?.mvcc.hashRange;
      if (range === undefined || keyInHashRange(watched, range, this.options.bucketHash ?? defaultBucketHash)) return;
      throw new AtollError('PARTITION_MOVED', `partition ${partition} no longer holds the watched keys (moved by a split): resume at their new partition`, { servedPartitionId: partition, rangeEnd: range.end });
    };
    checkLeader();
    const leader = replica as PartitionReplica;
    // A watch from before the partition's ring will read history: it takes its first read's
    // reservation now, before the barrier, so that a burst of such watches is refused here at no
    // cost but the refusal (the hostile load run opened 200 at once from revision 0: each took a
    // read barrier, and all but the few with room for a read were refused after it). A watch the
    // ring serves (a resume near the top) reserves nothing.
    const firstRead = this.reserveFirstRead(partition, leader, request.startRevision, charge);
    let handedOver = false;
    try {
      await this.barrierAndRun(tenant, request, target, stale, context, leader, partition, checkServed, sink, charge, firstRead, () => (handedOver = true));
    } finally {
      if (!handedOver) charge.release(firstRead);
    }
  }

  /** Takes a history read's reservation for a watch that starts below the ring (0 when it does not, or its stream is full); refuses the watch when its connection, tenant or node is full. */
  private reserveFirstRead(partition: number, replica: PartitionReplica, startRevision: number | undefined, charge: WatchCharge): number {
    if (startRevision === undefined) return 0;
    const entry = this.hubs.get(partition);
    const ringFloor = entry !== undefined && entry.replica === replica ? entry.hub.floor : replica.mvcc.revision;
    if (startRevision >= ringFloor) return 0;
    const { limits } = this.options;
    const reserve = watchReadReserveBytes({ maxChanges: limits.watchReadChanges, maxBytes: limits.watchReadBytes });
    if (charge.tryTake(reserve)) return reserve;
    if (charge.blockedAt !== 'stream') throw charge.refusal();
    return 0;
  }

  private async barrierAndRun(
    tenant: string,
    request: api.WatchRequest,
    target: WatchTarget,
    stale: boolean,
    context: api.CallContext,
    leader: PartitionReplica,
    partition: number,
    checkServed: () => void,
    sink: WatchSink,
    charge: WatchCharge,
    firstRead: number,
    handOver: () => void,
  ): Promise<void> {
    const { executor } = this.options;
    // A linearizable read barrier at this leader: the revision after it covers every acknowledged
    // write. It reads no data (a read of the watched keys copied a value per watch opened: the
    // hostile load run's watches from revision 0 each read a 200 KB one). A stale watch takes the
    // replica's applied revision instead, and may start above it (it waits).
    if (!stale) await executor.readBarrier(leader, { ...context, tenant });
    // This partition must hold the watched keys before its revision means anything to the watch: a
    // watch resumed here for a range not merged in yet, or split away, ends PARTITION_MOVED and
    // resumes there, not FUTURE_REVISION at this partition's lower revision (the read that was the
    // barrier checked the range; fault suite seed 205 found the barrier without it).
    checkServed();
    const readRevision = leader.mvcc.revision;
    const startRevision = request.startRevision ?? readRevision;
    if (startRevision > readRevision && !stale) {
      throw new AtollError('FUTURE_REVISION', `start revision ${startRevision} is above the current revision ${readRevision}`, {
        revision: startRevision,
        currentRevision: readRevision,
      });
    }
    const floor = leader.mvcc.compactedRevision;
    if (startRevision < floor) {
      throw new AtollError('COMPACTED', `revision ${startRevision} has been compacted; the oldest watchable start revision is ${floor}`, {
        revision: startRevision,
        compactedRevision: floor,
      });
    }
    const hub = this.hubOf(partition, leader);
    // Aborted by the caller's signal or by close().
    const controller = new AbortController();
    const onAbort = (): void => controller.abort();
    context.signal?.addEventListener('abort', onAbort, { once: true });
    if (context.signal?.aborted === true || this.closed) controller.abort();
    this.running.add(controller);
    const signal = controller.signal;
    try {
      handOver();
      await this.runOne(tenant, request, target, startRevision, leader, hub, checkServed, sink, signal, charge, firstRead);
    } finally {
      this.running.delete(controller);
      context.signal?.removeEventListener('abort', onAbort);
    }
  }

  private async runOne(
    tenant: string,
    request: api.WatchRequest,
    target: WatchTarget,
    startRevision: number,
    leader: PartitionReplica,
    hub: WatchHub,
    checkLeader: () => void,
    sink: WatchSink,
    signal: CallSignal,
    charge: WatchCharge,
    firstRead: number,
  ): Promise<void> {
    const { limits, clock, timers } = this.options;
    await runWatcher(
      {
        hub,
        revision: () => leader.mvcc.revision,
        changesSince: (watched, after, bounds) => leader.mvcc.changesSince(watched, after, bounds),
        checkLeader,
      },
      sink,
      {
        ...(this.options.testBugs?.hubNotToldOfInstall === true && { unguardedHub: true }),
        target,
        startRevision,
        keysOnly: request.keysOnly === true,
        progress: request.progress === true,
        progressIntervalMs: limits.watchProgressIntervalMs,
        leaderCheckMs: LEADER_CHECK_MS,
        stallMs: limits.watchStallMs,
        readBounds: { maxChanges: limits.watchReadChanges, maxBytes: limits.watchReadBytes },
        userKey: (key) => toUserKey(tenant, key),
        monotonicMs: () => clock.monotonicMs(),
        after: (ms, run) => timers.after(ms, run),
        signal,
        readTurn: (aborted) => this.reads.turn(tenant, aborted),
        pacer: this.pacer,
        budget: charge,
        ...(firstRead > 0 && { firstReadReserved: firstRead }),
      },
    );
  }

  private hubOf(partition: number, replica: PartitionReplica): WatchHub {
    let entry = this.hubs.get(partition);
    // Invariant: a hub is fed by the replica it serves. A replica that moved away and came back
    // (replica moves) is a new object with a new store: the old hub is never fed again, and a
    // watch waiting on it stalled (the membership fault run's watcher stopped one revision short).
    if (entry === undefined || entry.replica !== replica) {
      const created = new WatchHub(replica.mvcc.revision, { maxChanges: this.options.limits.watchRingChanges, maxBytes: this.options.limits.watchRingBytes });
      const bugs = this.options.testBugs;
      replica.mvcc.setCommitListener(
        (revision, changes) => created.publish(revision, changes),
        (revision, reason) => {
          // Negative controls: the defects of issue 32, a hub left as it was by a merge or an install.
          if (reason === 'merge' && bugs?.hubNotResetOnMerge === true) return;
          if (reason !== 'merge' && bugs?.hubNotToldOfInstall === true) return;
          created.reset(revision);
        },
      );
      entry = { replica, hub: created };
      this.hubs.set(partition, entry);
    }
    return entry.hub;
  }
}
