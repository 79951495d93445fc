/**
 * Automatic splits (issue 19; off by default): a periodic job that, on each partition this node
 * LEADS, compares the partition's size and load with the node's thresholds and, when one is
 * exceeded, splits it through the same call `atoll cluster split` makes (split-admin.ts), so every
 * rule and refusal of a manual split holds. The thresholds (--auto-split-keys, --auto-split-rps):
 *
 * - keys: the partition's stored keys (live or deleted), read from its key index's size, which the
 *   store keeps exact while the index is complete (MvccStore.keyIndexStatus): a number, no scan.
 *   A store whose index was dropped (over its memory share) has no cheap count and is not sized.
 * - load: the partition's decayed request rate at this node (src/hotkeys, LoadTracker.rateOf); the
 *   leader serves every linearizable request of its partitions, so it sees nearly all of them.
 *
 * The split point: by key count, the split's own (the median bucket hash of the stored keys); by
 * load, where the requests divide most evenly among the hottest keys' buckets (loadSplitPoint),
 * when those keys carry at least half the partition's rate. An automatic split insists on keys on
 * both sides: a partition whose keys all sit in one bucket would
 * otherwise be cut at its range's midpoint again and again without relief, so it is refused
 * (SPLIT_REFUSED 'single-bucket') and left alone for a while.
 *
 * Invariants (asserted in round() and split(); test/node/auto-split.test.ts):
 * - At most one automatic split is in flight per node (`inFlight`), and two start at least
 *   `pauseMs` apart (`nextAllowedMs`), whatever their outcome.
 * - A split is started only on a partition this node leads, with no replica move (learners or a
 *   move coordinated here), a range wider than one hash, and only while the node knows fewer than
 *   limits.maxPartitionCount partitions.
 * - A refused or failed partition waits `retryAfterMs` before it is tried again; the map of such
 *   partitions only holds partitions this node hosts (pruned every round), so it is bounded.
 */
import assert from 'node:assert/strict';
import type { Logger } from 'pino';
import { isAtollError } from '../../errors.js';
import type { LoadTracker } from '../../hotkeys/index.js';
import { bucketOf } from '../../keys/bucket.js';
import { bucketHash, type BucketHashName } from '../../keys/bucket-hash.js';
import { chooseLoadSplitPoint } from '../../keys/partition-table.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import type { NodeClock, NodeTimers, TimerHandle } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';
import type { SplitPartitionResult } from '../../api/node-api.js';
import type { SplitAdmin } from './split-admin.js';

/** A node's automatic-split settings (--auto-split-*); a threshold left out is not checked. */
export interface AutoSplitConfig {
  /** Split a led partition that stores more than this many keys (live or deleted). */
  readonly maxKeys?: number;
  /** Split a led partition whose request rate at this node exceeds this many per second. */
  readonly maxRequestsPerSecond?: number;
  /** Least time between two automatic splits this node starts (default AUTO_SPLIT_DEFAULTS.pauseMs). */
  readonly pauseMs?: number;
}

/** Hottest keys a load split point is chosen from (the tracker's capacity per partition). */
const LOAD_POINT_KEYS = 64;
/** Share of the partition's rate those keys must carry for their point to be used. */
const LOAD_POINT_COVERAGE = 0.5;

export const AUTO_SPLIT_DEFAULTS = Object.freeze({
  /** How often the job looks at the led partitions. */
  roundMs: 1_000,
  pauseMs: 10_000,
  /** One split call's deadline: the entry commits and applies on a quorum. */
  splitDeadlineMs: 10_000,
  /** A partition whose split was refused or failed is left alone this long. */
  retryAfterMs: 60_000,
});

/** Whether `config` turns automatic splits on (some threshold is set). */
export function autoSplitEnabled(config: AutoSplitConfig | undefined): config is AutoSplitConfig {
  return config !== undefined && (config.maxKeys !== undefined || config.maxRequestsPerSecond !== undefined);
}

export interface AutoSplitterOptions {
  readonly config: AutoSplitConfig;
  readonly driver: RaftDriver<PartitionReplica>;
  readonly splits: Pick<SplitAdmin, 'split'>;
  readonly load: Pick<LoadTracker, 'rateOf' | 'hottestKeys'>;
  /** The cluster's bucket hash (a load split point is a bucket hash of the hottest keys). */
  readonly hashFunction: BucketHashName;
  /** Partitions the node knows now (the equal table's and the split ones: range-routing.ts). */
  knownPartitionCount(): number;
  readonly maxPartitionCount: number;
  /** True while a replica move of the partition is coordinated here. */
  moveInProgress(partition: number): boolean;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
  readonly logger: Logger;
}

/** Why a partition is due: the threshold it passed, with the measure. */
interface Candidate {
  readonly replica: PartitionReplica;
  readonly reason: 'keys' | 'load';
  readonly keys: number;
  readonly requestsPerSecond: number;
  /** How far past its threshold (a ratio), to split the most overdue first. */
  readonly excess: number;
}

export class AutoSplitter {
  private timer: TimerHandle | undefined;
  private inFlight = false;
  /** No automatic split starts before this (monotonic ms). */
  private nextAllowedMs = Number.NEGATIVE_INFINITY;
  /** Partitions refused or failed lately, and when they may be tried again (monotonic ms). */
  private readonly retryAt = new Map<number, number>();
  /** Automatic splits this node started and saw applied (metrics, tests). */
  splitsDone = 0;
  /** The newest one (ClusterInfo readers, tests). */
  lastSplit: (SplitPartitionResult & { readonly reason: string; readonly atMs: number }) | undefined;

  constructor(private readonly options: AutoSplitterOptions) {
    const { maxKeys, maxRequestsPerSecond, pauseMs } = options.config;
    assert(maxKeys === undefined || (Number.isSafeInteger(maxKeys) && maxKeys >= 1), 'maxKeys is a positive integer');
    assert(maxRequestsPerSecond === undefined || (Number.isFinite(maxRequestsPerSecond) && maxRequestsPerSecond > 0), 'maxRequestsPerSecond is positive');
    assert(pauseMs === undefined || (Number.isFinite(pauseMs) && pauseMs >= 0), 'pauseMs is not negative');
  }

  /** Starts the periodic job; nothing runs (no timer at all) when no threshold is set. */
  start(): void {
    if (!autoSplitEnabled(this.options.config) || this.timer !== undefined) return;
    this.timer = this.options.timers.every(AUTO_SPLIT_DEFAULTS.roundMs, () => this.round());
  }

  stop(): void {
    this.timer?.cancel();
    this.timer = undefined;
  }

  /** One look at the led partitions; starts at most one split. Exposed for tests. */
  round(): void {
    const { clock, driver } = this.options;
    const nowMs = clock.monotonicMs();
    for (const partition of this.retryAt.keys()) if (!driver.groups.has(partition) || this.retryAt.get(partition)! <= nowMs) this.retryAt.delete(partition);
    assert(this.retryAt.size <= driver.groups.size, 'only hosted partitions wait for a retry');
    if (this.inFlight || nowMs < this.nextAllowedMs || driver.closed) return;
    if (this.options.knownPartitionCount() >= this.options.maxPartitionCount) return;
    const candidate = this.mostOverdue(nowMs);
    if (candidate !== undefined) void this.split(candidate, nowMs);
  }

  private mostOverdue(nowMs: number): Candidate | undefined {
    const { config, load } = this.options;
    let best: Candidate | undefined;
    for (const replica of this.options.driver.groups.values()) {
      if (this.retryAt.has(replica.id) || replica.raw.role !== 'leader') continue;
      const range = replica.mvcc.hashRange;
      if (range === undefined || range.end - range.start < 2) continue;
      const index = replica.mvcc.keyIndexStatus();
      const keys = index.complete ? index.keys : 0;
      const requestsPerSecond = config.maxRequestsPerSecond === undefined ? 0 : load.rateOf(replica.id, nowMs);
      const byKeys = config.maxKeys !== undefined && index.complete ? keys / config.maxKeys : 0;
      const byLoad = config.maxRequestsPerSecond !== undefined ? requestsPerSecond / config.maxRequestsPerSecond : 0;
      const excess = Math.max(byKeys, byLoad);
      if (excess <= 1 || (best !== undefined && best.excess >= excess)) continue;
      // Checked last (status() builds objects): the split refuses a partition that is moving anyway.
      if (replica.raw.status().confState.learners.length > 0 || this.options.moveInProgress(replica.id)) continue;
      best = { replica, reason: byKeys >= byLoad ? 'keys' : 'load', keys, requestsPerSecond, excess };
    }
    return best;
  }

  private async split(candidate: Candidate, startedMs: number): Promise<void> {
    const { clock, logger, config } = this.options;
    assert(!this.inFlight, 'at most one automatic split in flight per node');
    this.inFlight = true;
    this.nextAllowedMs = startedMs + (config.pauseMs ?? AUTO_SPLIT_DEFAULTS.pauseMs);
    const partition = candidate.replica.id;
    const measures = { partition, reason: candidate.reason, keys: candidate.keys, requestsPerSecond: Math.round(candidate.requestsPerSecond) };
    try {
      const pointHint = candidate.reason === 'load' ? this.loadSplitPoint(candidate, startedMs) : undefined;
      const result = await this.options.splits.split(partition, clock.wallMs() + AUTO_SPLIT_DEFAULTS.splitDeadlineMs, { needsKeysOnBothSides: true, ...(pointHint !== undefined && { pointHint }) });
      this.splitsDone++;
      this.lastSplit = { ...result, reason: candidate.reason, atMs: clock.wallMs() };
      logger.info({ ...measures, newPartition: result.newPartition, start: result.start, mid: result.mid, end: result.end, maxKeys: config.maxKeys, maxRequestsPerSecond: config.maxRequestsPerSecond }, 'automatic split');
    } catch (error) {
      this.retryAt.set(partition, clock.monotonicMs() + AUTO_SPLIT_DEFAULTS.retryAfterMs);
      const code = isAtollError(error) ? error.code : 'INTERNAL';
      const reason = isAtollError(error) ? error.details?.['reason'] : undefined;
      logger[code === 'SPLIT_REFUSED' || code === 'NOT_LEADER' ? 'info' : 'warn']({ ...measures, code, reason, err: error instanceof Error ? error.message : String(error) }, 'automatic split not done; the partition waits before another try');
    } finally {
      this.inFlight = false;
    }
  }

  /**
   * A split by load cuts where the requests divide, not where the keys do: the point that splits
   * the hottest keys' rates most evenly (chooseLoadSplitPoint), when those keys carry at least
   * LOAD_POINT_COVERAGE of the partition's rate (else the keys' median stands in for the load's:
   * the tracker cannot see how the rest spreads).
   */
  private loadSplitPoint(candidate: Candidate, nowMs: number): number | undefined {
    const range = candidate.replica.mvcc.hashRange;
    if (range === undefined || candidate.requestsPerSecond <= 0) return undefined;
    const keys = this.options.load.hottestKeys(candidate.replica.id, LOAD_POINT_KEYS, nowMs);
    const covered = keys.reduce((sum, key) => sum + key.requestsPerSecond, 0);
    if (covered < LOAD_POINT_COVERAGE * candidate.requestsPerSecond) return undefined;
    return chooseLoadSplitPoint(range, keys.map((key) => ({ hash: bucketHash(bucketOf(key.key), this.options.hashFunction), weight: key.requestsPerSecond })));
  }

  /** Whether a split is running now (tests). */
  get splitting(): boolean {
    return this.inFlight;
  }
}
