/**
 * Range-based consistent hashing: the routing contract a client in any language can implement.
 *
 *   bucket    = the key's text before its first "/" (the whole key if it has no "/")
 *   hash      = the cluster's bucket hash over utf8(bucket): murmur3_32 for clusters created now,
 *               fnv1a32 for older ones; ClusterInfo.hash_function names it   (see bucket-hash.ts)
 *   partition = floor(hash * P / 2^32)      i.e. (uint64(hash) * P) >> 32 in integer arithmetic
 *
 * where P is the partition count, 1 <= P <= 65536. Partition i owns the hash range
 * [start_i, end_i) with
 *
 *   start_i = ceil(i * 2^32 / P)            i.e. (i * 2^32 + P - 1) / P in integer arithmetic
 *   end_i   = start_{i+1},   end_{P-1} = 2^32
 *
 * so the P ranges are contiguous, never overlap, cover [0, 2^32) exactly, and differ in size by
 * at most one. The ceiling in start_i is what makes the table and the one-line formula agree on
 * every hash: for an integer h, h >= ceil(x) exactly when h >= x.
 *
 * Example, P = 4: [0, 1073741824), [1073741824, 2147483648), [2147483648, 3221225472),
 * [3221225472, 4294967296).
 */
import assert from 'node:assert/strict';
import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import { bucketOf } from './bucket.js';
import { bucketHash, defaultBucketHash, hashSpaceSize, type BucketHashName } from './bucket-hash.js';

export interface PartitionRange {
  readonly id: number;
  /** First hash the partition owns. */
  readonly start: number;
  /** First hash past the partition's range (exclusive). */
  readonly end: number;
}

/** Throws INVALID_ARGUMENT unless the partition count is an integer in [1, maxPartitionCount]. */
export function validatePartitionCount(partitionCount: number): void {
  if (!Number.isSafeInteger(partitionCount) || partitionCount < 1 || partitionCount > limits.maxPartitionCount) {
    throw new AtollError(
      'INVALID_ARGUMENT',
      `the partition count must be an integer in [1, ${limits.maxPartitionCount}], got ${partitionCount}`,
      { partitionCount, maxPartitionCount: limits.maxPartitionCount },
    );
  }
}

/** The first hash owned by partition `id` of `partitionCount`. */
function rangeStart(id: number, partitionCount: number): number {
  // id * 2^32 < 2^48 for any allowed count, so the double arithmetic here is exact.
  return Math.ceil((id * hashSpaceSize) / partitionCount);
}

/** Partition `id`'s range in the equal table of `partitionCount` (without building the table). */
export function equalRangeOf(id: number, partitionCount: number): PartitionRange {
  validatePartitionCount(partitionCount);
  assert(Number.isInteger(id) && id >= 0 && id < partitionCount, 'a partition of the equal table');
  return { id, start: rangeStart(id, partitionCount), end: rangeStart(id + 1, partitionCount) };
}

/** The P equal, contiguous hash ranges, in partition order. */
export function partitionTable(partitionCount: number): PartitionRange[] {
  validatePartitionCount(partitionCount);
  const table: PartitionRange[] = [];
  for (let id = 0; id < partitionCount; id++) {
    table.push({ id, start: rangeStart(id, partitionCount), end: rangeStart(id + 1, partitionCount) });
  }
  assert.equal(table[0]!.start, 0);
  assert.equal(table[partitionCount - 1]!.end, hashSpaceSize);
  return table;
}

/** The partition that owns a hash. */
export function partitionOfHash(hash: number, partitionCount: number): number {
  assert(Number.isInteger(hash) && hash >= 0 && hash < hashSpaceSize, 'hash must be in [0, 2^32)');
  validatePartitionCount(partitionCount);
  // hash * P < 2^48, exact in a double.
  return Math.floor((hash * partitionCount) / hashSpaceSize);
}

/** The partition of a bucket under the cluster's hash (default: the hash a new cluster uses). */
export function partitionOfBucket(bucket: string, partitionCount: number, hash: BucketHashName = defaultBucketHash): number {
  return partitionOfHash(bucketHash(bucket, hash), partitionCount);
}

/** The partition of a key: the partition of its bucket. */
export function partitionOf(key: string, partitionCount: number, hash: BucketHashName = defaultBucketHash): number {
  return partitionOfBucket(bucketOf(key), partitionCount, hash);
}

/**
 * Ranges as data (partition splits, issue 19). Once a partition splits, the table is no longer P
 * equal ranges: it is any list of contiguous ranges with distinct ids, and a partition id no longer
 * says where its range is. A cluster starts from partitionTable(P) (so existing data directories
 * route exactly as before); each split replaces one range [start, end) by [start, mid) under the
 * same id and [mid, end) under a new id. Because a bucket's keys all share one hash, a boundary
 * between two hashes never separates the keys of one bucket: a bucket never splits.
 */

/** Partition ids are uint32 in storage (storage/keyspace.ts); ids stay below this. */
export const partitionIdLimit = 2 ** 32 - 1;

/** Why a range table or a split was refused: details.reason of the INVALID_ARGUMENT / SPLIT_REFUSED error. */
function invalidTable(reason: string, message: string, details: Record<string, unknown> = {}): AtollError {
  return new AtollError('INVALID_ARGUMENT', `partition range table: ${message}`, { reason, ...details });
}

/** True when `hash` is in [range.start, range.end). */
export function rangeContains(range: Pick<PartitionRange, 'start' | 'end'>, hash: number): boolean {
  return hash >= range.start && hash < range.end;
}

/**
 * An immutable partition table of arbitrary contiguous ranges, sorted by start, found by binary
 * search. Invariants (checked by RangeTable.of, which every constructor goes through):
 * - at least one range, and at most limits.maxPartitionCount;
 * - ranges[0].start = 0, ranges[i].end = ranges[i+1].start, ranges[last].end = 2^32, and every
 *   range is non-empty (start < end): every hash has exactly one owner;
 * - ids are distinct integers in [0, partitionIdLimit).
 */
export class RangeTable {
  private readonly byId: ReadonlyMap<number, PartitionRange>;

  private constructor(readonly ranges: readonly PartitionRange[]) {
    this.byId = new Map(ranges.map((range) => [range.id, range]));
  }

  /** The table of the given ranges (any order); INVALID_ARGUMENT with details.reason if they are not a valid table. */
  static of(ranges: readonly PartitionRange[]): RangeTable {
    if (!Array.isArray(ranges) || ranges.length === 0) throw invalidTable('empty', 'no ranges');
    if (ranges.length > limits.maxPartitionCount) throw invalidTable('too-many', `more than ${limits.maxPartitionCount} ranges`, { count: ranges.length });
    const sorted = ranges.map((range) => ({ id: range.id, start: range.start, end: range.end })).sort((a, b) => a.start - b.start);
    const ids = new Set<number>();
    let expectedStart = 0;
    for (const range of sorted) {
      if (!Number.isInteger(range.id) || range.id < 0 || range.id >= partitionIdLimit) throw invalidTable('bad-id', `bad partition id ${String(range.id)}`);
      if (ids.has(range.id)) throw invalidTable('duplicate-id', `partition ${range.id} appears twice`, { partition: range.id });
      ids.add(range.id);
      if (!Number.isInteger(range.start) || !Number.isInteger(range.end) || range.start !== expectedStart || range.end <= range.start || range.end > hashSpaceSize) {
        throw invalidTable('not-contiguous', `partition ${range.id}'s range [${range.start}, ${range.end}) does not continue at ${expectedStart}`, { partition: range.id });
      }
      expectedStart = range.end;
    }
    if (expectedStart !== hashSpaceSize) throw invalidTable('not-covering', `the ranges end at ${expectedStart}, not 2^32`);
    return new RangeTable(Object.freeze(sorted.map((range) => Object.freeze(range))));
  }

  /** The initial table of a cluster created with `partitionCount` partitions (equal ranges). */
  static equal(partitionCount: number): RangeTable {
    return RangeTable.of(partitionTable(partitionCount));
  }

  get size(): number {
    return this.ranges.length;
  }

  /** The highest partition id in the table. */
  get maxId(): number {
    let max = 0;
    for (const range of this.ranges) max = Math.max(max, range.id);
    return max;
  }

  rangeOf(id: number): PartitionRange | undefined {
    return this.byId.get(id);
  }

  /** The range that owns a hash (binary search over the sorted starts). */
  ownerOfHash(hash: number): PartitionRange {
    assert(Number.isInteger(hash) && hash >= 0 && hash < hashSpaceSize, 'hash must be in [0, 2^32)');
    let low = 0;
    let high = this.ranges.length - 1;
    // Invariant: ranges[low].start <= hash < ranges[high].end.
    while (low < high) {
      const middle = (low + high + 1) >>> 1;
      if (this.ranges[middle]!.start <= hash) low = middle;
      else high = middle - 1;
    }
    const owner = this.ranges[low]!;
    assert(rangeContains(owner, hash), 'the range table has a gap');
    return owner;
  }

  /** The partition id that owns a bucket under the cluster's hash. */
  partitionOfBucket(bucket: string, hash: BucketHashName = defaultBucketHash): number {
    return this.ownerOfHash(bucketHash(bucket, hash)).id;
  }

  /** The partition id that owns a key (its bucket's). */
  partitionOf(key: string, hash: BucketHashName = defaultBucketHash): number {
    return this.partitionOfBucket(bucketOf(key), hash);
  }

  /**
   * The table after partition `id` splits at `mid` and [mid, end) becomes partition `newId`.
   * SPLIT_REFUSED (details.reason) and no change when: the id is unknown ('unknown-partition'),
   * mid is not strictly inside the range ('bad-split-point'; this also refuses a partition of a
   * single hash, i.e. a single bucket), or newId is taken or invalid ('bad-new-id').
   */
  split(id: number, mid: number, newId: number): RangeTable {
    const range = this.byId.get(id);
    if (range === undefined) throw splitRefused('unknown-partition', `partition ${id} is not in the table`, { partition: id });
    if (!Number.isInteger(mid) || mid <= range.start || mid >= range.end) {
      throw splitRefused('bad-split-point', `partition ${id}'s range [${range.start}, ${range.end}) cannot split at ${String(mid)}`, { partition: id, mid });
    }
    if (!Number.isInteger(newId) || newId < 0 || newId >= partitionIdLimit || this.byId.has(newId)) {
      throw splitRefused('bad-new-id', `partition id ${String(newId)} is taken or invalid`, { partition: id, newId });
    }
    const ranges = this.ranges.flatMap((each) => (each.id === id ? [{ id, start: range.start, end: mid }, { id: newId, start: mid, end: range.end }] : [each]));
    const table = RangeTable.of(ranges);
    // The split moved exactly [mid, end) from `id` to `newId` and nothing else.
    assert.equal(table.size, this.size + 1);
    assert.equal(table.ownerOfHash(mid).id, newId);
    assert.equal(table.ownerOfHash(mid - 1).id, id);
    return table;
  }
}

function splitRefused(reason: string, message: string, details: Record<string, unknown>): AtollError {
  return new AtollError('SPLIT_REFUSED', `split refused: ${message}`, { reason, ...details });
}

/**
 * Where a partition with range `range` splits, given the bucket hashes of its live keys (any
 * order, repeats allowed): the median distinct hash when there are at least two (so each side
 * keeps at least one bucket), else the range's midpoint; undefined when the range holds a single
 * hash (one bucket: it cannot split). The result is always strictly inside the range, so both
 * sides are non-empty, and it is a function of its inputs only (every replica agrees).
 */
/**
 * The split point that divides a range's LOAD most evenly (automatic splits by request rate): of
 * the distinct bucket hashes inside the range, each weighted by the requests its keys drew, the
 * one that, as the new partition's first hash, leaves the heavier side lightest (the first such on
 * a tie). Each side keeps at least one bucket; undefined with fewer than two distinct hashes of
 * positive weight inside the range (then nothing divides the load).
 */
export function chooseLoadSplitPoint(range: Pick<PartitionRange, 'start' | 'end'>, weighted: Iterable<{ readonly hash: number; readonly weight: number }>): number | undefined {
  if (range.end - range.start < 2) return undefined;
  const byHash = new Map<number, number>();
  for (const { hash, weight } of weighted) if (rangeContains(range, hash) && weight > 0) byHash.set(hash, (byHash.get(hash) ?? 0) + weight);
  const hashes = [...byHash.keys()].sort((a, b) => a - b);
  if (hashes.length < 2) return undefined;
  const total = [...byHash.values()].reduce((sum, weight) => sum + weight, 0);
  let left = 0;
  let best = 1;
  let bestHeavier = Number.POSITIVE_INFINITY;
  for (let at = 1; at < hashes.length; at++) {
    left += byHash.get(hashes[at - 1]!)!;
    const heavier = Math.max(left, total - left);
    if (heavier < bestHeavier) {
      best = at;
      bestHeavier = heavier;
    }
  }
  const point = hashes[best]!;
  assert(point > range.start && point < range.end, 'a split point is strictly inside its range');
  return point;
}

export function chooseSplitPoint(range: Pick<PartitionRange, 'start' | 'end'>, bucketHashes: Iterable<number>): number | undefined {
  if (range.end - range.start < 2) return undefined;
  const distinct = [...new Set([...bucketHashes].filter((hash) => rangeContains(range, hash)))].sort((a, b) => a - b);
  const mid = distinct.length >= 2 ? distinct[distinct.length >> 1]! : range.start + Math.floor((range.end - range.start) / 2);
  assert(mid > range.start && mid < range.end, 'a split point is strictly inside its range');
  return mid;
}
