/**
 * The data half of a partition merge (issue 19, the inverse of split-plan.ts): the write
 * operations that fold the right partition R's MVCC state into its left neighbour L, in the same
 * engine. Pure planning over what both partitions store; MvccStore.applyMerge writes the plan in
 * ONE synced batch with both partitions' meta records, so a crash leaves the whole merge or none.
 *
 * What happens to each of R's records (keys are relative to the partition prefix, so they re-key
 * by swapping the prefix, storage/keyspace.ts):
 * - every version ('v'): put under L, deleted from R. L's and R's ranges are disjoint and a key's
 *   versions all share its bucket, so no key of R exists in L and every history moves whole;
 * - leases ('l'): none (the caller refuses a merge while R holds a lease, because a lease id names
 *   its partition, api/lease-id.ts);
 * - the dedup queue and records: see planMergedDedup below;
 * - everything else of R (meta records, evicted dedup entries): deleted.
 *
 * The dedup queue after a merge. Queue entries are keyed by the log index that recorded them, and
 * L's and R's indexes are numbered by different logs, so R's entries cannot keep their keys. The
 * merge (at L's index m) rewrites the whole live queue of both sides as one queue ending at m:
 * R's live entries first (oldest), then L's, at consecutive indexes m-N+1 .. m, with the floor at
 * m-N+1; every evicted entry of either side is deleted with its record. An id both sides know
 * keeps L's result (a request id names one request, so this does not happen with honest clients).
 * A recorded PARTITION_MOVED (nothing applied) is forgotten, so its retry applies in the merged
 * partition instead of being answered with the refusal again; the other side's record of the same
 * id (the retry that applied there) is kept.
 * When N > m, the oldest entries are evicted (dropped) so the queue fits under m.
 *
 * The expiry mark (dedup-table.ts: the oldest live entry's createdBeforeMs; timestamped ids at or
 * below it that the table does not know are refused as possibly evicted) must cover every id
 * either side evicted, now or later. So each moved R entry's createdBeforeMs becomes
 * max(its own, L's mark), and each L entry's becomes max(its own, R's newest creation time).
 * Invariants (asserted): the rewritten createdBeforeMs never decrease along the queue; the new
 * mark is at least both old marks; the newest creation time is at least both old ones.
 */
import assert from 'node:assert/strict';
import { concatBytes, encodeUint64BE, equalBytes } from '../storage/bytes.js';
import type { StorageEngine, WriteOperation } from '../storage/storage-engine.js';
import { decodeDedupEntry, encodeDedupEntry, type DedupEntry } from './dedup-record.js';
import type { DedupState } from './dedup-table.js';
import type { MvccKeyLayout } from './key-layout.js';
import { requestIdCreatedAtMs } from './request-id.js';

export interface MergeMovePlan {
  readonly operations: WriteOperation[];
  /** Distinct user keys moved from R (each with all its versions). */
  readonly movedKeys: number;
  readonly movedVersions: number;
  /** The dedup meta L has after the batch (the table reloads the derived times from storage). */
  readonly dedup: { readonly floorIndex: number; readonly count: number; readonly expiredThroughMs: number; readonly newestCreatedMs: number };
  /** Live dedup entries dropped: ids both sides knew, and the oldest ones past index m. */
  readonly droppedDedupEntries: number;
}

export interface MergeSide {
  readonly layout: MvccKeyLayout;
  /** The side's dedup state as its table holds it (the batch it last wrote). */
  readonly dedup: DedupState;
}

export async function planMergeMove(engine: StorageEngine, left: MergeSide, right: MergeSide, mergeIndex: number): Promise<MergeMovePlan> {
  assert(Number.isSafeInteger(mergeIndex) && mergeIndex >= 1, 'a merge index is a positive integer');
  const operations: WriteOperation[] = [];
  const rekey = (storageKey: Uint8Array): Uint8Array => concatBytes(left.layout.partitionPrefix, storageKey.subarray(right.layout.partitionPrefix.length));
  let movedKeys = 0;
  let movedVersions = 0;
  let lastKey: Uint8Array | undefined;
  for await (const [storageKey, record] of engine.iterate(right.layout.allVersionsRange())) {
    const parsed = right.layout.parseVersionKey(storageKey);
    if (lastKey === undefined || !equalBytes(lastKey, parsed.groupKey)) {
      lastKey = parsed.groupKey.slice();
      movedKeys++;
    }
    operations.push({ type: 'put', key: rekey(storageKey), value: record }, { type: 'del', key: storageKey.slice() });
    movedVersions++;
  }
  const dedup = await planMergedDedup(engine, left, right, mergeIndex);
  operations.push(...dedup.operations);
  // R keeps nothing: its meta records go too (its Raft state is the caller's, in the same batch).
  for (const key of right.layout.metaKeys()) operations.push({ type: 'del', key });
  return { operations, movedKeys, movedVersions, dedup: dedup.state, droppedDedupEntries: dedup.dropped };
}

interface LiveEntry {
  readonly entry: DedupEntry;
  readonly side: 'left' | 'right';
}

/** Every queue entry of a side (live and evicted): deleted, with its record, before the rewrite. */
async function deleteQueue(engine: StorageEngine, layout: MvccKeyLayout, operations: WriteOperation[]): Promise<void> {
  for await (const [storageKey] of engine.iterate(layout.dedupQueueRange(0))) operations.push({ type: 'del', key: storageKey.slice() });
  for await (const [storageKey] of engine.iterate(layout.allDedupRecordsRange())) operations.push({ type: 'del', key: storageKey.slice() });
}

async function liveEntries(engine: StorageEngine, side: MergeSide, name: 'left' | 'right'): Promise<LiveEntry[]> {
  const entries: LiveEntry[] = [];
  for await (const [, stored] of engine.iterate(side.layout.dedupQueueRange(side.dedup.floorIndex))) {
    entries.push({ entry: decodeStoredEntry(stored), side: name });
  }
  // The table's invariant: exactly `count` entries at or above the floor.
  assert.equal(entries.length, side.dedup.count, `the ${name} partition's dedup count does not match its live queue`);
  return entries;
}

async function planMergedDedup(
  engine: StorageEngine,
  left: MergeSide,
  right: MergeSide,
  mergeIndex: number,
): Promise<{ operations: WriteOperation[]; state: MergeMovePlan['dedup']; dropped: number }> {
  const operations: WriteOperation[] = [];
  const leftLive = await liveEntries(engine, left, 'left');
  const rightLive = await liveEntries(engine, right, 'right');
  await deleteQueue(engine, left.layout, operations);
  await deleteQueue(engine, right.layout, operations);
  // A recorded PARTITION_MOVED applied nothing; kept, it would answer the retry the merged
  // partition should now apply (a key of R that L once refused, or R's own refusals). Forgotten,
  // the retry applies once. It never hides the other side's record of the same id: a client whose
  // try L refused after the split retried at R, which applied it; that result must survive, or a
  // resend applies twice (simulator seed 8189).
  const moved = (live: LiveEntry): boolean => live.entry.result.error?.code === 'PARTITION_MOVED';
  const leftIds = new Set(leftLive.filter((live) => !moved(live)).map((live) => live.entry.requestId));
  const combined = [...rightLive.filter((live) => !leftIds.has(live.entry.requestId)), ...leftLive].filter((live) => !moved(live));
  let dropped = rightLive.length + leftLive.length - combined.length;
  // The queue must end at the merge index and start at index 1 or later.
  const kept = combined.length > mergeIndex ? combined.slice(combined.length - mergeIndex) : combined;
  dropped += combined.length - kept.length;
  const floorIndex = mergeIndex - kept.length + 1;
  let previousCreatedBefore = 0;
  let newestCreatedMs = 0;
  kept.forEach((live, offset) => {
    const raise = live.side === 'right' ? left.dedup.expiredThroughMs : right.dedup.newestCreatedMs;
    const createdBeforeMs = Math.max(live.entry.createdBeforeMs, raise);
    assert(createdBeforeMs >= previousCreatedBefore, 'merged dedup entries must keep createdBeforeMs in queue order');
    previousCreatedBefore = createdBeforeMs;
    newestCreatedMs = Math.max(newestCreatedMs, createdBeforeMs, requestIdCreatedAtMs(live.entry.requestId) ?? 0);
    const index = floorIndex + offset;
    // After the deletes above: in one batch the later operation on a key wins.
    operations.push(
      { type: 'put', key: left.layout.dedupQueueKey(index), value: encodeDedupEntry({ ...live.entry, createdBeforeMs }) },
      { type: 'put', key: left.layout.dedupRecordKey(live.entry.requestId), value: encodeUint64BE(index) },
    );
  });
  // With nothing live, the mark is 0 (dedup-table.ts derives it from the oldest live entry).
  const expiredThroughMs = kept.length === 0 ? 0 : Math.max(kept[0]!.entry.createdBeforeMs, kept[0]!.side === 'right' ? left.dedup.expiredThroughMs : right.dedup.newestCreatedMs);
  if (kept.length > 0) {
    assert(expiredThroughMs >= Math.max(left.dedup.expiredThroughMs, right.dedup.expiredThroughMs), 'a merge must not lower the dedup expiry mark');
    // Not the sides' newest creation times: a forgotten PARTITION_MOVED may have carried the
    // newest, and asserting on it failed the merge on every replica (found by a fuzz of MvccStore).
    // Forgetting it is safe: its id applied nothing, so a retry must apply. What the derived times
    // must still cover is every id that applied: its entry is kept, or evicted below the mark.
    const appliedNewestMs = Math.max(0, ...[...leftLive, ...rightLive].filter((live) => !moved(live)).map((live) => requestIdCreatedAtMs(live.entry.requestId) ?? 0));
    assert(newestCreatedMs >= Math.max(appliedNewestMs, left.dedup.expiredThroughMs, right.dedup.expiredThroughMs), 'a merge must not lower the newest creation time of an applied id');
  }
  operations.push(
    { type: 'put', key: left.layout.dedupFloorKey, value: encodeUint64BE(floorIndex) },
    { type: 'put', key: left.layout.dedupCountKey, value: encodeUint64BE(kept.length) },
  );
  return { operations, state: { floorIndex, count: kept.length, expiredThroughMs, newestCreatedMs }, dropped };
}

/** Entries in the engine were written by this code or checked on import: bad bytes are corruption. */
function decodeStoredEntry(stored: Uint8Array): DedupEntry {
  try {
    return decodeDedupEntry(stored);
  } catch (error) {
    assert.fail(`corrupt dedup queue entry: ${(error as Error).message}`);
  }
}

