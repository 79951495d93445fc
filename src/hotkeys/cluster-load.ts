/**
 * The cluster's load from every node's ClusterInfo: what `atoll top` shows.
 *
 * Each node reports what it served itself: a partition's leader every request, a follower only
 * the stale and transaction reads it answered locally. So a partition's load is the sum of the
 * nodes' reports, and so is a key's (Space-Saving summaries merge by adding counts and errors;
 * a key missing from one node's short report adds nothing, which can only underestimate it).
 * Nodes that did not answer are simply absent: their share is missing from the totals.
 */
import assert from 'node:assert/strict';
import type { KeyLoad } from './load-tracker.js';

/** The part of one node's ClusterInfo this needs (ClusterInfoResponse fits). */
export interface NodeLoadView {
  readonly nodeId: number;
  readonly partitions: readonly {
    readonly id: number;
    readonly leader: number;
    readonly requestsPerSecond?: number;
    readonly topKeys?: readonly KeyLoad[];
  }[];
}

export interface HotPartition {
  readonly id: number;
  /** The leader, as its own node reports it when it answered; 0 when unknown. */
  readonly leader: number;
  readonly requestsPerSecond: number;
  /** Fraction of the cluster's requests, 0..1. */
  readonly share: number;
}

export interface HotKey extends KeyLoad {
  readonly partition: number;
  /** Fraction of the cluster's requests, 0..1. */
  readonly share: number;
}

export interface ClusterLoad {
  readonly totalRequestsPerSecond: number;
  /** Hottest first, at most `limit`. */
  readonly partitions: readonly HotPartition[];
  /** Hottest first, at most `limit`. */
  readonly keys: readonly HotKey[];
}

interface KeyTotal {
  partition: number;
  key: string;
  truncated: boolean;
  requestsPerSecond: number;
  errorPerSecond: number;
}

export function mergeClusterLoad(views: readonly NodeLoadView[], limit: number): ClusterLoad {
  assert(Number.isSafeInteger(limit) && limit >= 0, 'limit must be a non-negative integer');
  const partitionRates = new Map<number, number>();
  const leaders = new Map<number, number>();
  const keys = new Map<string, KeyTotal>();
  for (const view of views) {
    for (const partition of view.partitions) {
      partitionRates.set(partition.id, (partitionRates.get(partition.id) ?? 0) + (partition.requestsPerSecond ?? 0));
      // A node's word on who leads wins when it names itself; otherwise the first opinion stands.
      if (partition.leader === view.nodeId || (partition.leader !== 0 && !leaders.has(partition.id))) leaders.set(partition.id, partition.leader);
      for (const load of partition.topKeys ?? []) addKey(keys, partition.id, load);
    }
  }
  const total = [...partitionRates.values()].reduce((sum, rate) => sum + rate, 0);
  const shareOf = (rate: number): number => (total > 0 ? rate / total : 0);
  const partitions = [...partitionRates]
    .map(([id, rate]) => ({ id, leader: leaders.get(id) ?? 0, requestsPerSecond: rate, share: shareOf(rate) }))
    .sort((a, b) => b.requestsPerSecond - a.requestsPerSecond || a.id - b.id)
    .slice(0, limit);
  const hotKeys = [...keys.values()]
    .sort((a, b) => b.requestsPerSecond - a.requestsPerSecond || a.partition - b.partition || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .slice(0, limit)
    .map((entry) => ({ ...entry, share: shareOf(entry.requestsPerSecond) }));
  return { totalRequestsPerSecond: total, partitions, keys: hotKeys };
}

function addKey(keys: Map<string, KeyTotal>, partition: number, load: KeyLoad): void {
  const id = JSON.stringify([partition, load.truncated, load.key]);
  const entry = keys.get(id);
  if (entry === undefined) {
    keys.set(id, { partition, key: load.key, truncated: load.truncated, requestsPerSecond: load.requestsPerSecond, errorPerSecond: load.errorPerSecond });
  } else {
    entry.requestsPerSecond += load.requestsPerSecond;
    entry.errorPerSecond += load.errorPerSecond;
  }
}
