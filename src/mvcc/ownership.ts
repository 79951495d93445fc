/**
 * Which keys a partition owns: its range record once a split or a merge made its range data,
 * else its place in the equal table. Apply refuses writes, and reads refuse keys, that route
 * elsewhere (WRONG_PARTITION, or PARTITION_MOVED for a key a split moved away).
 */
import { AtollError } from '../errors.js';
import { bucketOf } from '../keys/bucket.js';
import { defaultBucketHash } from '../keys/bucket-hash.js';
import { equalRangeOf, partitionOfBucket } from '../keys/partition-table.js';
import type { BatchCommand, TxnCommand, WriteOp } from './commands.js';
import type { MvccState } from './mvcc-state.js';
import { keyInHashRange } from './split-plan.js';

/** Every key and prefix a write command names must be the partition's. */
export function checkOwnership(state: MvccState, command: WriteOp | BatchCommand | TxnCommand): void {
  if (state.partition === undefined) return;
  const writes = command.type === 'batch' || command.type === 'txn' ? command.writes : [command];
  for (const write of writes) checkOwnsKey(state, write.key);
  if (command.type !== 'txn') return;
  for (const key of command.readKeys) checkOwnsKey(state, key);
  for (const keyPrefix of command.readPrefixes) checkOwnsPrefix(state, keyPrefix);
}

export function checkOwnsKey(state: MvccState, key: string): void {
  if (state.partition === undefined) return;
  if (state.ownedRange !== undefined) {
    // Ranges are data: a key outside this partition's range went to another partition by a split.
    if (keyInHashRange(key, state.ownedRange, state.partition.hash ?? defaultBucketHash)) return;
    throw new AtollError('PARTITION_MOVED', `key is outside partition ${state.partition.id}'s range (moved by a split): refresh the partition table`, {
      key,
      servedPartitionId: state.partition.id,
      // The first hash of the next partition: a router that did not know that start learns it.
      rangeEnd: state.ownedRange.end,
    });
  }
  const owner = partitionOfBucket(bucketOf(key), state.partition.count, state.partition.hash);
  if (owner !== state.partition.id) {
    throw new AtollError('WRONG_PARTITION', `key belongs to partition ${owner}, not ${state.partition.id}`, {
      key,
      partitionId: owner,
      servedPartitionId: state.partition.id,
    });
  }
}

/** A prefix without "/" could match keys of many buckets, so a partition cannot serve it. */
export function checkOwnsPrefix(state: MvccState, keyPrefix: string): void {
  if (state.partition === undefined) return;
  if (!keyPrefix.includes('/')) {
    throw new AtollError('PREFIX_SPANS_BUCKETS', 'a prefix served by one partition must contain "/" after its bucket (see prefixBucket)', {
      keyPrefix,
    });
  }
  checkOwnsKey(state, keyPrefix);
}

/**
 * The hash range this partition owns: its range record once a split made it data, else its
 * place in the equal table; undefined for a store without options.partition.
 */
export function hashRangeOf(state: MvccState): { readonly start: number; readonly end: number } | undefined {
  if (state.ownedRange !== undefined) return state.ownedRange;
  if (state.partition === undefined || state.partition.id >= state.partition.count) return undefined;
  const { start, end } = equalRangeOf(state.partition.id, state.partition.count);
  return { start, end };
}
