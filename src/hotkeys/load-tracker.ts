/**
 * A node's view of request load: one DecayingTopK per partition (created at its first request),
 * and the bounded report ClusterInfo carries.
 *
 * Memory: at most `capacity` keys per partition, so at most maxPartitions * capacity keys in all,
 * whatever the traffic. Report size: at most `keysPerPartition` keys per partition and
 * `maxReportedKeys` in all (the hottest partitions get theirs first), each cut to `maxKeyChars`
 * characters, so a report of many partitions with 4 KiB keys still fits one gRPC message.
 */
import assert from 'node:assert/strict';
import { DecayingTopK, type KeyRate } from './decaying-top-k.js';

export interface LoadTrackerOptions {
  /** Keys tracked per partition (Space-Saving capacity): errors are at most 1/capacity of its keyed rate. */
  readonly capacity: number;
  /** Requests count half after this long. */
  readonly halfLifeMs: number;
  /** Partition ids must be below this (the cluster's partition count). */
  readonly maxPartitions: number;
  readonly keysPerPartition: number;
  readonly maxReportedKeys: number;
  readonly maxKeyChars: number;
}

export const defaultLoadTrackerOptions = Object.freeze({
  capacity: 64,
  halfLifeMs: 5_000,
  keysPerPartition: 8,
  maxReportedKeys: 1_024,
  maxKeyChars: 256,
});

/** One reported hot key. */
export interface KeyLoad extends KeyRate {
  /** True when `key` was cut to maxKeyChars characters for the report. */
  readonly truncated: boolean;
}

export interface PartitionLoad {
  /** Every request the node recorded for the partition, per second, decayed. */
  readonly requestsPerSecond: number;
  /** The hottest keys, hottest first (possibly fewer than were asked for: see the report bounds). */
  readonly topKeys: readonly KeyLoad[];
}

export interface LoadReport {
  /** The load of one partition; zero for a partition without recorded requests. */
  of(partition: number): PartitionLoad;
}

/** Keys slower than this are decayed history, not load: they are left out of reports. */
const minReportedRate = 0.001;

const idle: PartitionLoad = Object.freeze({ requestsPerSecond: 0, topKeys: Object.freeze([]) });

export class LoadTracker {
  private readonly options: LoadTrackerOptions;
  // Invariant: every key is an integer in [0, options.maxPartitions).
  private readonly partitions = new Map<number, DecayingTopK>();

  constructor(options: Partial<LoadTrackerOptions> & Pick<LoadTrackerOptions, 'maxPartitions'>) {
    this.options = { ...defaultLoadTrackerOptions, ...options };
    const { keysPerPartition, capacity, maxReportedKeys, maxKeyChars, maxPartitions } = this.options;
    assert(Number.isSafeInteger(maxPartitions) && maxPartitions >= 1, 'maxPartitions must be a positive integer');
    assert(Number.isSafeInteger(keysPerPartition) && keysPerPartition >= 0 && keysPerPartition <= capacity, 'keysPerPartition must be in [0, capacity]');
    assert(Number.isSafeInteger(maxReportedKeys) && maxReportedKeys >= 0, 'maxReportedKeys must be a non-negative integer');
    assert(Number.isSafeInteger(maxKeyChars) && maxKeyChars >= 2, 'maxKeyChars must be at least 2');
  }

  /** Records one request for `partition` at `nowMs`: by key, or (key undefined) in the rate only. */
  record(partition: number, key: string | undefined, nowMs: number): void {
    // Partition ids are uint32 (a split's new partition has its first hash as id, src/node/replica/split-entry.ts).
    if (!(Number.isSafeInteger(partition) && partition >= 0 && partition <= 0xffff_ffff)) assert.fail(`no partition ${partition}`);
    let tracker = this.partitions.get(partition);
    if (tracker === undefined) {
      // Invariant: at most maxPartitions trackers (splits add partitions past the initial count).
      if (this.partitions.size >= this.options.maxPartitions && partition >= this.options.maxPartitions) return;
      tracker = new DecayingTopK({ capacity: this.options.capacity, halfLifeMs: this.options.halfLifeMs });
      this.partitions.set(partition, tracker);
    }
    tracker.record(key, nowMs);
  }

  /** Keys held over all partitions (the memory bound's measure). */
  get trackedKeys(): number {
    let total = 0;
    for (const tracker of this.partitions.values()) total += tracker.size;
    return total;
  }

  /** One partition's hottest keys at `nowMs`, hottest first, at most `limit` (untruncated: for split points). */
  hottestKeys(partition: number, limit: number, nowMs: number): KeyRate[] {
    return this.partitions.get(partition)?.top(limit, nowMs) ?? [];
  }

  /** One partition's decayed request rate at `nowMs` (0 when it saw none), without ranking its keys (metrics). */
  rateOf(partition: number, nowMs: number): number {
    return this.partitions.get(partition)?.totalRate(nowMs) ?? 0;
  }

  /** Every partition's load at `nowMs`, within the report bounds. */
  report(nowMs: number): LoadReport {
    const rates = [...this.partitions].map(([partition, tracker]) => ({ partition, tracker, rate: tracker.totalRate(nowMs) }));
    // The key budget goes to the hottest partitions first; ties by id keep reports deterministic.
    rates.sort((a, b) => b.rate - a.rate || a.partition - b.partition);
    const loads = new Map<number, PartitionLoad>();
    let budget = this.options.maxReportedKeys;
    for (const { partition, tracker, rate } of rates) {
      const keys = tracker
        .top(Math.min(this.options.keysPerPartition, budget), nowMs)
        .filter((key) => key.requestsPerSecond >= minReportedRate)
        .map((key) => this.reported(key));
      budget -= keys.length;
      loads.set(partition, { requestsPerSecond: rate, topKeys: keys });
    }
    return { of: (partition) => loads.get(partition) ?? idle };
  }

  private reported(rate: KeyRate): KeyLoad {
    const key = cutKey(rate.key, this.options.maxKeyChars);
    return { key, requestsPerSecond: rate.requestsPerSecond, errorPerSecond: rate.errorPerSecond, truncated: key.length !== rate.key.length };
  }
}

/** The first `maxChars` UTF-16 units of `key`, one fewer rather than half a surrogate pair. */
export function cutKey(key: string, maxChars: number): string {
  if (key.length <= maxChars) return key;
  const last = key.charCodeAt(maxChars - 1);
  const endsInHighSurrogate = last >= 0xd800 && last <= 0xdbff;
  return key.slice(0, endsInHighSurrogate ? maxChars - 1 : maxChars);
}
