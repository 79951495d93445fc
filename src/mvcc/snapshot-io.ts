/**
 * Snapshot export and import of one partition's state (the chunk format is snapshot-format.ts,
 * the checks snapshot-check.ts), and the discard of an import a crash interrupted.
 */
import assert from 'node:assert/strict';
import { AtollError } from '../errors.js';
import { encodeUint64BE } from '../storage/bytes.js';
import type { KeyRange, WriteOperation } from '../storage/storage-engine.js';
import { DedupTable, emptyDedupState, type DedupMeta } from './dedup-table.js';
import { encodeLeaseRecord } from './lease-table.js';
import type { MvccState, MvccStatus } from './mvcc-state.js';
import { hashRangeOf } from './ownership.js';
import { encodeFreeze, encodeOwnedRange } from './range-records.js';
import { checkedSnapshotHeader, finishSnapshotPlan, newSnapshotPlan, planSnapshotChunk } from './snapshot-check.js';
import { encodeSnapshotHeader, encodeSnapshotTrailer, snapshotVersionOf, SnapshotEntriesWriter, type SnapshotHeader } from './snapshot-format.js';
import { statusOf } from './status.js';

export interface ImportOptions {
  /**
   * The chunks (an array) passed checkSnapshot already, unchanged since, and describe this applied
   * index: the whole-snapshot check before the import is skipped (each chunk is still checked as
   * it is written), so a caller that checked them does not pay twice for a large snapshot.
   */
  readonly checkedIndex?: number;
  /**
   * Operations written in the synced batch that ends the import (with the store's meta records and
   * the removal of the import mark): the Raft log's record of the snapshot, so that the store and
   * the log take the snapshot in one atomic write (PartitionReplica.stage).
   */
  readonly alsoWrite?: readonly WriteOperation[];
  /**
   * More operations for that same batch, chosen from the range the snapshot carries (undefined:
   * the equal-table place): a replica whose range shrank opens the partition after it
   * (src/node/apply/split-heal.ts), and its record of that must land with the import.
   */
  readonly alsoWriteFor?: (range: { readonly start: number; readonly end: number } | undefined) => readonly WriteOperation[];
}

/**
 * The partition's state at the applied index when iteration starts, as bounded chunks: a header
 * (appliedIndex, revision, compactedRevision), entry chunks of about snapshotChunkBytes (the
 * live dedup results, then the versions), and a trailer. Applies may continue meanwhile; the
 * versions and dedup results they add are left out, and the dedup results they evict stay on
 * disk until the export ends. Iterate it to the end or break out of it (so it is closed): an
 * abandoned export keeps deferring compaction.
 */
export async function* exportSnapshot(state: MvccState): AsyncIterable<Uint8Array> {
  assert(!state.needsSnapshot, 'cannot export an unfinished snapshot import');
  const header: SnapshotHeader = {
    appliedIndex: state.appliedIndex,
    revision: state.revision,
    compactedRevision: state.compactedRevision,
    appliedTimeMs: state.appliedTimeMs,
    // A partition whose range is data (a split) sends it, so the receiver owns the same range.
    ...(state.ownedRange !== undefined && { range: state.ownedRange }),
    // A frozen partition sends its freeze (format 6, which needs the range even for an equal one).
    ...(state.frozen !== undefined && { range: hashRangeOf(state), freeze: state.frozen }),
  };
  const version = snapshotVersionOf(header);
  const dedupRange = state.dedup.exportRange(header.appliedIndex);
  // The leases as of the header's index: the table's records are immutable (a change replaces
  // them), so this list stays that state while applies go on. Reading the stored records later
  // could show a grant or revocation past the index, which the receiver then replays again.
  const leases = state.leases.all();
  const epoch = state.epoch;
  state.exportsInFlight++;
  try {
    yield encodeSnapshotHeader(header);
    let chunk = new SnapshotEntriesWriter(version);
    let entryCount = 0;
    const prefixLength = state.layout.partitionPrefix.length;
    // Key order: the leases ('l', in id order), the dedup queue ('q'), then the versions ('v').
    for (const record of leases) {
      chunk.add(state.layout.leaseKey(record.id).subarray(prefixLength), encodeLeaseRecord(record));
      entryCount++;
      if (chunk.byteLength >= state.limits.snapshotChunkBytes) {
        yield chunk.finish();
        chunk = new SnapshotEntriesWriter(version);
      }
    }
    const ranges = state.testBugs.dedupForgetsOnSnapshot ? [state.layout.allVersionsRange()] : [dedupRange, state.layout.allVersionsRange()];
    for (const range of ranges) {
      for await (const [storageKey, record] of state.engine.iterate(range)) {
        // An import replaced the state under us (this node was sent a newer snapshot); the receiver retries.
        if (state.epoch !== epoch) throw new AtollError('UNAVAILABLE', 'the partition installed a snapshot during the export');
        if (state.layout.isVersionKey(storageKey) && state.layout.parseVersionKey(storageKey).revision > header.revision) continue;
        chunk.add(storageKey.subarray(prefixLength), record);
        entryCount++;
        if (chunk.byteLength >= state.limits.snapshotChunkBytes) {
          yield chunk.finish();
          chunk = new SnapshotEntriesWriter(version);
        }
      }
    }
    if (chunk.count > 0) yield chunk.finish();
    yield encodeSnapshotTrailer(entryCount, version);
  } finally {
    state.exportsInFlight--;
  }
}

/**
 * Replaces the partition's state with a snapshot. It marks the import as in progress (synced),
 * deletes the partition's range, writes the entry chunks, then writes the meta records and
 * clears the mark in one synced batch. A crash or a malformed snapshot leaves the mark, and the
 * partition refuses reads and applies (needsSnapshot) until an import succeeds, or until
 * discardInterruptedImport empties it. `options.alsoWrite` joins the final batch. The mark's
 * value is the snapshot's applied index when the chunks are an array (interruptedImportIndex).
 * Dedup records are rebuilt from the snapshot's dedup queue entries (format version 2); a
 * version 1 snapshot has none, and the partition then starts with no dedup results.
 * Throws INVALID_ARGUMENT for a malformed snapshot.
 */
export async function importSnapshot(state: MvccState, chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, options: ImportOptions = {}): Promise<MvccStatus> {
  // Chunks in memory (a snapshot from a peer) are checked whole before anything is deleted, so a
  // malformed one changes nothing; a stream can only be checked as it is written.
  const checkedIndex =
    options.checkedIndex ?? (Array.isArray(chunks) ? checkedSnapshotHeader(state.layout, chunks as readonly Uint8Array[]).appliedIndex : undefined);
  // The mark names the index being installed when it is known (diagnostics after a crash).
  const mark = checkedIndex === undefined ? new Uint8Array(0) : encodeUint64BE(checkedIndex);
  // A compaction step in flight finishes first; none starts until the import ends, and the pass
  // it belonged to is discarded (rebuildKeyState decides what the imported state needs).
  state.importing = true;
  if (state.compactionStepInFlight !== undefined) await state.compactionStepInFlight.catch(() => undefined);
  state.compactionPass = undefined;
  state.storageCompactionPending = false;
  state.enterExclusive();
  state.epoch++;
  state.needsSnapshot = true;
  state.cache?.clear(state.cacheStoreId);
  state.keyIndexComplete = false;
  state.newestRevisionOf.clear();
  state.expiry.clear();
  state.leases.clear();
  try {
    await state.engine.write([{ type: 'put', key: state.layout.importInProgressKey, value: mark }], { sync: true });
    await clearPartition(state);
    const { header, dedupState } = await writeSnapshotChunks(state, chunks);
    await state.engine.write(
      [
        { type: 'put', key: state.layout.appliedIndexKey, value: encodeUint64BE(header.appliedIndex) },
        { type: 'put', key: state.layout.revisionKey, value: encodeUint64BE(header.revision) },
        { type: 'put', key: state.layout.compactedRevisionKey, value: encodeUint64BE(header.compactedRevision) },
        { type: 'put', key: state.layout.appliedTimeKey, value: encodeUint64BE(header.appliedTimeMs ?? 0) },
        // clearPartition deleted the range record: a snapshot without a range means the equal one.
        ...(header.range !== undefined ? [{ type: 'put' as const, key: state.layout.rangeKey, value: encodeOwnedRange(header.range) }] : []),
        ...(header.freeze !== undefined ? [{ type: 'put' as const, key: state.layout.freezeKey, value: encodeFreeze(header.freeze) }] : []),
        ...state.dedup.metaOperations(dedupState),
        { type: 'del', key: state.layout.importInProgressKey },
        // The caller's records (the Raft log's record of the snapshot) land with the import's end.
        ...(options.alsoWrite ?? []),
        ...(options.alsoWriteFor?.(header.range) ?? []),
      ],
      { sync: true },
    );
    state.appliedIndex = header.appliedIndex;
    state.revision = header.revision;
    state.compactedRevision = header.compactedRevision;
    // The snapshot replaces the state, its clock included: the exporter's time at its index.
    state.appliedTimeMs = header.appliedTimeMs ?? 0;
    state.ownedRange = header.range;
    state.frozen = header.freeze;
    state.resetListener?.(state.revision, 'import');
    // The expiry mark and newest creation time come from the imported queue entries.
    state.dedup.adopt(await DedupTable.loadState(state.engine, state.layout));
    await state.rebuildKeyState();
    state.needsSnapshot = false;
    return statusOf(state);
  } finally {
    state.epoch++;
    state.cache?.clear(state.cacheStoreId);
    state.exclusive = false;
    state.importing = false;
  }
}

/**
 * Undoes an import a crash interrupted (needsSnapshot after open): deletes every key of the
 * partition, then, in one synced batch, clears the import mark together with `alsoWrite` (the
 * caller's reset of its Raft log). The partition is then empty at applied index 0. A crash
 * before that batch leaves the mark, so the next open discards again.
 */
export async function discardInterruptedImport(state: MvccState, alsoWrite: readonly WriteOperation[]): Promise<MvccStatus> {
  assert(state.needsSnapshot, 'only an interrupted import is discarded');
  state.enterExclusive();
  state.epoch++;
  state.cache?.clear(state.cacheStoreId);
  try {
    await clearPartition(state);
    await state.engine.write([{ type: 'del', key: state.layout.importInProgressKey }, ...alsoWrite], { sync: true });
    state.appliedIndex = 0;
    state.revision = 0;
    state.compactedRevision = 0;
    state.appliedTimeMs = 0;
    state.ownedRange = undefined;
    state.frozen = undefined;
    state.expiry.clear();
    state.leases.clear();
    state.interruptedImportIndex = undefined;
    state.resetListener?.(0, 'import');
    await state.rebuildKeyState();
    state.needsSnapshot = false;
    return statusOf(state);
  } finally {
    state.epoch++;
    state.exclusive = false;
  }
}

/** Deletes every key of the partition except the import mark. */
async function clearPartition(state: MvccState): Promise<void> {
  await state.engine.write(state.layout.metaKeys().map((key) => ({ type: 'del' as const, key })));
  // An import writes the separate applied records: the next apply batch replaces them.
  state.legacyAppliedRecords = true;
  state.dedup.adopt(emptyDedupState);
  for (const range of state.layout.dataRanges()) await deleteRange(state, range);
}

async function deleteRange(state: MvccState, range: KeyRange): Promise<void> {
  if (state.engine.deleteRange !== undefined) {
    await state.engine.deleteRange(range);
    return;
  }
  let pending: WriteOperation[] = [];
  for await (const [storageKey] of state.engine.iterate(range)) {
    pending.push({ type: 'del', key: storageKey });
    if (pending.length >= state.limits.compactionBatchOps) {
      await state.engine.write(pending);
      pending = [];
    }
  }
  if (pending.length > 0) await state.engine.write(pending);
}

/** Checks and writes a snapshot's chunks, one engine write per chunk. */
async function writeSnapshotChunks(
  state: MvccState,
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
): Promise<{ header: SnapshotHeader; dedupState: DedupMeta }> {
  const plan = newSnapshotPlan();
  for await (const bytes of chunks) {
    const operations = planSnapshotChunk(state.layout, plan, bytes);
    if (operations.length > 0) await state.engine.write(operations);
  }
  return finishSnapshotPlan(plan);
}
