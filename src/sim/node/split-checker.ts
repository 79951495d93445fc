/**
 * The partition-range checker (issue 19: splits make ranges data). Once faults stopped and the
 * replicas caught up, it reads every up node's replicas between loop iterations: each replica's
 * hash range (its store's replicated range record) and every live key it stores (scanPartition,
 * no ownership check), and checks
 * - key-in-own-range: every key a replica stores hashes into that replica's range (a split moved
 *   the keys of [mid, end) out of the source, and no key is left behind in it);
 * - one-owner-per-node: on one node no two replicas' ranges overlap and no key is stored in two;
 * - equal-range-at-equal-index: replicas of a partition at the same applied index own the same range;
 * - ranges-tile-hash-space: the partitions' ranges (each as its most advanced replica has it)
 *   are disjoint and cover the whole hash space, so every key is served by exactly one partition.
 * (That both halves of a split have RF voters is the membership checker's rf-replicas invariant,
 * which covers every partition a split made.) It runs on every seed: without splits the ranges
 * are the equal table's.
 */
import { bucketOf } from '../../keys/bucket.js';
import { bucketHash, hashSpaceSize, type BucketHashName } from '../../keys/bucket-hash.js';
import type { CheckFailure } from './node-checkers.js';
import type { SimCluster } from './sim-cluster.js';
import type { Workload } from './workload.js';

interface Range {
  readonly start: number;
  readonly end: number;
}

interface ReplicaKeys {
  readonly node: number;
  readonly partition: number;
  readonly appliedIndex: number;
  readonly range: Range | undefined;
  readonly keys: readonly string[];
}

/** Pages of one replica's scan (500 keys each): the workload stores far fewer keys. */
const MAX_PAGES = 100;

async function replicaKeys(node: number, cluster: SimCluster): Promise<ReplicaKeys[]> {
  const api = cluster.apiOf(node);
  if (api === undefined) return [];
  const moments = await api.betweenIterations((replicas) =>
    [...replicas.values()]
      .filter((replica) => !replica.mvcc.needsSnapshot)
      .map((replica) => ({ partition: replica.id, appliedIndex: replica.appliedIndex, range: replica.mvcc.hashRange, mvcc: replica.mvcc, revision: replica.mvcc.revision })),
  );
  const result: ReplicaKeys[] = [];
  for (const moment of moments) {
    const keys: string[] = [];
    let after: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const read = await moment.mvcc.scanPartition('', { nowMs: 0, revision: moment.revision, limit: 500, ...(after !== undefined && { after }) });
      keys.push(...read.items.map((item) => item.key));
      if (!read.more || read.continueAfter === undefined) break;
      after = read.continueAfter;
    }
    result.push({ node, partition: moment.partition, appliedIndex: moment.appliedIndex, range: moment.range, keys });
  }
  return result;
}

const show = (range: Range | undefined): string => (range === undefined ? 'none' : `[${range.start}, ${range.end})`);

/** The invariants of the file comment over what the up nodes hold now; `hash` is the cluster's bucket hash. */
export async function checkPartitionRanges(cluster: SimCluster, workload: Workload, hash: BucketHashName): Promise<CheckFailure[]> {
  const failures: CheckFailure[] = [];
  const fail = (invariant: string, message: string): void => {
    if (failures.filter((f) => f.invariant === invariant).length < 3) failures.push({ checker: 'split', invariant, message });
  };
  const all: ReplicaKeys[] = [];
  for (const node of cluster.nodeIds) {
    const taken = await Promise.race([replicaKeys(node, cluster).catch(() => undefined), workload.sleep(5_000).then(() => undefined)]);
    if (taken !== undefined) all.push(...taken);
  }
  for (const node of cluster.nodeIds) {
    const replicas = all.filter((r) => r.node === node);
    const owner = new Map<string, number>();
    for (const replica of replicas) {
      const range = replica.range;
      if (range === undefined) {
        fail('key-in-own-range', `node ${node} partition ${replica.partition}: no hash range`);
        continue;
      }
      for (const key of replica.keys) {
        const h = bucketHash(bucketOf(key), hash);
        // Invariant: a replica stores only keys of its own range.
        if (h < range.start || h >= range.end) fail('key-in-own-range', `node ${node} partition ${replica.partition} ${show(range)} holds key ${key} (hash ${h})`);
        // Invariant: one node stores a key in one partition at most.
        const other = owner.get(key);
        if (other !== undefined) fail('one-owner-per-node', `node ${node}: key ${key} is stored in partitions ${other} and ${replica.partition}`);
        owner.set(key, replica.partition);
      }
    }
    // Invariant: the ranges of one node's replicas do not overlap.
    const ranges = replicas.flatMap((r) => (r.range === undefined ? [] : [{ partition: r.partition, ...r.range }])).sort((a, b) => a.start - b.start);
    for (let i = 1; i < ranges.length; i++) {
      const [a, b] = [ranges[i - 1]!, ranges[i]!];
      if (b.start < a.end) fail('one-owner-per-node', `node ${node}: partitions ${a.partition} ${show(a)} and ${b.partition} ${show(b)} overlap`);
    }
  }
  // Invariant: replicas of a partition at one applied index agree on its range.
  const byPartition = new Map<number, ReplicaKeys[]>();
  for (const replica of all) byPartition.set(replica.partition, [...(byPartition.get(replica.partition) ?? []), replica]);
  for (const [partition, replicas] of byPartition) {
    for (const a of replicas) {
      const differing = replicas.find((b) => b.appliedIndex === a.appliedIndex && show(b.range) !== show(a.range));
      if (differing !== undefined) fail('equal-range-at-equal-index', `partition ${partition} at index ${a.appliedIndex}: node ${a.node} owns ${show(a.range)}, node ${differing.node} ${show(differing.range)}`);
    }
  }
  // Invariant: the partitions' ranges tile [0, hashSpaceSize): each hash has exactly one owner.
  const newest = [...byPartition].map(([partition, replicas]) => ({ partition, range: replicas.reduce((a, b) => (b.appliedIndex > a.appliedIndex ? b : a)).range }));
  const tiles = newest.flatMap((p) => (p.range === undefined ? [] : [{ partition: p.partition, ...p.range }])).sort((a, b) => a.start - b.start);
  let next = 0;
  for (const tile of tiles) {
    if (tile.start !== next) fail('ranges-tile-hash-space', `partition ${tile.partition} ${show(tile)} does not start where the previous range ended (${next}): ${tiles.map((t) => `${t.partition}${show(t)}`).join(' ')}`);
    next = Math.max(next, tile.end);
  }
  if (next !== hashSpaceSize) fail('ranges-tile-hash-space', `the ranges end at ${next}, not ${hashSpaceSize}: ${tiles.map((t) => `${t.partition}${show(t)}`).join(' ')}`);
  return failures;
}
