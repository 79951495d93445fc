/**
 * Checking a snapshot's chunks (snapshot-format.ts) against one partition's key layout and turning
 * them into the writes that install them: every check importSnapshot makes, so a snapshot can be
 * checked whole before anything is deleted (checkSnapshot), chunk by chunk as a transfer
 * receives it (snapshotCheck), or as it is written (snapshot-io.ts). A malformed snapshot is
 * INVALID_ARGUMENT.
 */
import { AtollError } from '../errors.js';
import { decodeUtf8 } from '../keys/utf8.js';
import { concatBytes, encodeUint64BE } from '../storage/bytes.js';
import type { WriteOperation } from '../storage/storage-engine.js';
import { decodeDedupEntry } from './dedup-record.js';
import type { DedupMeta } from './dedup-table.js';
import type { MvccKeyLayout } from './key-layout.js';
import { decodeLeaseRecord } from './lease-table.js';
import { decodeSnapshotChunk, type SnapshotHeader } from './snapshot-format.js';
import { isWellFormedVersionRecord } from './version-record.js';

/** The dedup queue entries a snapshot import has written so far. */
interface ImportedDedupEntries {
  readonly requestIds: Set<string>;
  readonly indexes: Set<number>;
  /**
   * The last entry imported. Entries must come in increasing index order with non-decreasing
   * createdBeforeMs, as an export writes them: the dedup table relies on it (its expiry mark,
   * the oldest live entry's createdBeforeMs, never decreases as entries are evicted).
   */
  last: { readonly index: number; readonly createdBeforeMs: number } | undefined;
}

/** What importing a snapshot has checked so far. */
export interface SnapshotPlan {
  header: SnapshotHeader | undefined;
  formatVersion: number | undefined;
  trailerEntryCount: number | undefined;
  entryCount: number;
  readonly imported: ImportedDedupEntries;
}

export function newSnapshotPlan(): SnapshotPlan {
  return { header: undefined, formatVersion: undefined, trailerEntryCount: undefined, entryCount: 0, imported: { requestIds: new Set(), indexes: new Set(), last: undefined } };
}

function malformedSnapshot(reason: string): AtollError {
  return new AtollError('INVALID_ARGUMENT', `malformed snapshot: ${reason}`);
}

/**
 * checkSnapshot one chunk at a time, in order (a transfer checks each chunk as it arrives):
 * add() throws INVALID_ARGUMENT as soon as a chunk is malformed, finish() when the whole is.
 */
export function snapshotCheck(layout: MvccKeyLayout): { add(chunk: Uint8Array): void; finish(): SnapshotHeader } {
  const plan = newSnapshotPlan();
  return { add: (bytes) => void planSnapshotChunk(layout, plan, bytes), finish: () => finishSnapshotPlan(plan).header };
}

/** Checks a whole snapshot without writing anything; returns its header. */
export function checkedSnapshotHeader(layout: MvccKeyLayout, chunks: readonly Uint8Array[]): SnapshotHeader {
  const plan = newSnapshotPlan();
  for (const bytes of chunks) planSnapshotChunk(layout, plan, bytes);
  return finishSnapshotPlan(plan).header;
}

/** Checks one chunk against what came before it; returns the writes it stands for. */
export function planSnapshotChunk(layout: MvccKeyLayout, plan: SnapshotPlan, bytes: Uint8Array): WriteOperation[] {
  if (plan.trailerEntryCount !== undefined) throw malformedSnapshot('a chunk follows the trailer');
  const chunk = decodeSnapshotChunk(bytes);
  if (plan.formatVersion !== undefined && chunk.formatVersion !== plan.formatVersion) throw malformedSnapshot('its chunks have different format versions');
  plan.formatVersion = chunk.formatVersion;
  if (chunk.kind === 'header') {
    if (plan.header !== undefined) throw malformedSnapshot('a second header');
    if (chunk.header.compactedRevision > chunk.header.revision) throw malformedSnapshot('the compaction floor is above the revision');
    plan.header = chunk.header;
    return [];
  }
  const header = plan.header;
  if (header === undefined) throw malformedSnapshot('the first chunk is not a header');
  if (chunk.kind === 'trailer') {
    plan.trailerEntryCount = chunk.entryCount;
    return [];
  }
  const operations: WriteOperation[] = [];
  for (const [suffix, record] of chunk.entries) {
    const key = concatBytes(layout.partitionPrefix, suffix);
    if (isImportableVersion(layout, key, record, header.revision)) {
      operations.push({ type: 'put', key, value: record });
      continue;
    }
    // Lease records exist from format version 4 on.
    if (chunk.formatVersion >= 4 && isImportableLease(layout, key, record)) {
      operations.push({ type: 'put', key, value: record });
      continue;
    }
    // Dedup entries exist from format version 2 on.
    const dedupOperations = chunk.formatVersion >= 2 ? importableDedupEntry(layout, key, record, header, plan.imported) : undefined;
    if (dedupOperations === undefined) throw malformedSnapshot('an entry is neither a valid version nor a valid dedup entry');
    operations.push(...dedupOperations);
  }
  plan.entryCount += chunk.entries.length;
  return operations;
}

export function finishSnapshotPlan(plan: SnapshotPlan): { header: SnapshotHeader; dedupState: DedupMeta } {
  const header = plan.header;
  if (header === undefined) throw malformedSnapshot('it is empty');
  if (plan.trailerEntryCount === undefined) throw malformedSnapshot('it ended without a trailer (truncated?)');
  if (plan.trailerEntryCount !== plan.entryCount) throw malformedSnapshot(`the trailer counts ${plan.trailerEntryCount} entries, got ${plan.entryCount}`);
  // Every imported entry is live: the exporter sent none below its floor.
  return { header, dedupState: { floorIndex: 0, count: plan.imported.indexes.size } };
}

function isImportableLease(layout: MvccKeyLayout, key: Uint8Array, record: Uint8Array): boolean {
  const id = layout.parseLeaseKey(key);
  if (id === undefined) return false;
  try {
    decodeLeaseRecord(id, record);
    return true;
  } catch {
    return false;
  }
}

function isImportableVersion(layout: MvccKeyLayout, key: Uint8Array, record: Uint8Array, maxRevision: number): boolean {
  if (!layout.isVersionKey(key) || !isWellFormedVersionRecord(record)) return false;
  try {
    const parsed = layout.parseVersionKey(key);
    decodeUtf8(parsed.userKey);
    return parsed.revision >= 1 && parsed.revision <= maxRevision;
  } catch {
    return false;
  }
}

/**
 * The operations that install one snapshot dedup queue entry and its rebuilt record, or
 * undefined when the entry is not valid at the snapshot's applied index and revision, or its
 * index or request id came before (one entry per index, one per id: the count relies on it), or
 * it is out of order (see ImportedDedupEntries.last).
 */
function importableDedupEntry(
  layout: MvccKeyLayout,
  key: Uint8Array,
  record: Uint8Array,
  header: SnapshotHeader,
  imported: ImportedDedupEntries,
): WriteOperation[] | undefined {
  const index = layout.maybeParseDedupQueueKey(key);
  if (index === undefined || index < 1 || index > header.appliedIndex || imported.indexes.has(index)) return undefined;
  let requestId: string;
  let createdBeforeMs: number;
  try {
    const entry = decodeDedupEntry(record);
    if (entry.result.revision > header.revision) return undefined;
    requestId = entry.requestId;
    createdBeforeMs = entry.createdBeforeMs;
  } catch (error) {
    if (!(error instanceof AtollError)) throw error;
    return undefined;
  }
  if (imported.requestIds.has(requestId)) return undefined;
  const last = imported.last;
  if (last !== undefined && (index <= last.index || createdBeforeMs < last.createdBeforeMs)) return undefined;
  imported.last = { index, createdBeforeMs };
  imported.requestIds.add(requestId);
  imported.indexes.add(index);
  return [
    { type: 'put', key, value: record },
    { type: 'put', key: layout.dedupRecordKey(requestId), value: encodeUint64BE(index) },
  ];
}
