/**
 * The data half of a partition split (issue 19): the write operations that move the keys of a
 * hash range from one partition's MVCC state to a new partition's, in the same engine. Pure
 * planning over the source's stored keys; MvccStore.applySplit writes them in one synced batch
 * with both partitions' meta records, so a crash leaves either the whole split or none of it.
 *
 * What moves and what is copied (keys are relative to the partition prefix, so they re-key by
 * swapping the prefix, storage/keyspace.ts):
 * - every version ('v') of every key whose bucket hash is in the moved range: put under the
 *   target, deleted from the source. All versions of a key share its bucket, so a key's history
 *   moves whole, and so does a bucket's (a bucket never splits);
 * - the dedup queue ('q') and records ('r'), with the floor and count: copied, not moved, so a
 *   retried request of either side is still answered from its recorded result after the split
 *   (a queue entry keeps its source log index; the target starts at the split's index, so every
 *   copied index is at or below its applied index, as the dedup table requires).
 * Leases ('l') stay in the source; the caller refuses a split that would move a leased key.
 */
import { bucketOf } from '../keys/bucket.js';
import { bucketHash, type BucketHashName } from '../keys/bucket-hash.js';
import { decodeUtf8 } from '../keys/utf8.js';
import { concatBytes, equalBytes } from '../storage/bytes.js';
import type { KeyRange, StorageEngine, WriteOperation } from '../storage/storage-engine.js';
import type { MvccKeyLayout } from './key-layout.js';

export interface SplitMovePlan {
  readonly operations: WriteOperation[];
  /** Distinct user keys moved (each with all its versions). */
  readonly movedKeys: number;
  readonly movedVersions: number;
}

/** True when the key's bucket hash is in [range.start, range.end). */
export function keyInHashRange(key: string, range: { readonly start: number; readonly end: number }, hash: BucketHashName): boolean {
  const value = bucketHash(bucketOf(key), hash);
  return value >= range.start && value < range.end;
}

export async function planSplitMove(
  engine: StorageEngine,
  source: MvccKeyLayout,
  target: MvccKeyLayout,
  moved: { readonly start: number; readonly end: number },
  hash: BucketHashName,
): Promise<SplitMovePlan> {
  const operations: WriteOperation[] = [];
  const rekey = (storageKey: Uint8Array): Uint8Array => concatBytes(target.partitionPrefix, storageKey.subarray(source.partitionPrefix.length));
  let movedKeys = 0;
  let movedVersions = 0;
  let group: { key: Uint8Array; moves: boolean } | undefined;
  for await (const [storageKey, record] of engine.iterate(source.allVersionsRange())) {
    const parsed = source.parseVersionKey(storageKey);
    if (group === undefined || !equalBytes(group.key, parsed.groupKey)) {
      group = { key: parsed.groupKey.slice(), moves: keyInHashRange(decodeUtf8(parsed.userKey), moved, hash) };
      if (group.moves) movedKeys++;
    }
    if (!group.moves) continue;
    operations.push({ type: 'put', key: rekey(storageKey), value: record }, { type: 'del', key: storageKey.slice() });
    movedVersions++;
  }
  const copied: KeyRange[] = [source.dedupQueueRange(0), source.allDedupRecordsRange()];
  for (const range of copied) {
    for await (const [storageKey, record] of engine.iterate(range)) operations.push({ type: 'put', key: rekey(storageKey), value: record });
  }
  for (const metaKey of [source.dedupFloorKey, source.dedupCountKey]) {
    const value = await engine.get(metaKey);
    if (value !== undefined) operations.push({ type: 'put', key: rekey(metaKey), value });
  }
  return { operations, movedKeys, movedVersions };
}
