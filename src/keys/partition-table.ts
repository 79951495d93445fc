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
