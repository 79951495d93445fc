/**
 * Reads of the MVCC store: a key, a page of a prefix or of the whole partition, and the retained
 * history (changesSince, for watches). A read fixes its revision first (beginRead) and ignores
 * newer versions, and versions at a revision are never rewritten, so it sees one consistent
 * state; one that overlapped a snapshot import, or a compaction past its revision, fails (endRead).
 */
import assert from 'node:assert/strict';
import { AtollError } from '../errors.js';
import { decodeUtf8, utf8ByteLength } from '../keys/utf8.js';
import { validateKey } from '../keys/validate-key.js';
import { compareBytes, equalBytes } from '../storage/bytes.js';
import type { KeyRange } from '../storage/storage-engine.js';
import type { KeyVersion } from './commands.js';
import { findVersion, liveVersion, type FoundVersion } from './find-version.js';
import { compacted, frozenError, futureRevision, mergedAwayError } from './mvcc-errors.js';
import { assertNowMs, type MvccState, type StoredChange } from './mvcc-state.js';
import { checkOwnsKey, checkOwnsPrefix } from './ownership.js';
import { versionBytes } from './tenant-usage.js';
import { validateKeyPrefix, validateRevisionNumber } from './validate-command.js';
import { decodeVersionRecord } from './version-record.js';

export interface ReadOptions {
  /** Read at this past revision instead of the latest. */
  readonly revision?: number;
  /** The reader's clock, Unix epoch milliseconds: keys with expiresAtMs <= nowMs are invisible. */
  readonly nowMs: number;
  /** get: the key was validated already (a checked request's, src/api/checked-operation.ts); it is not again. */
  readonly keyChecked?: boolean;
}

export interface GetResult {
  /** Whether the key is live at the revision. A missing key is an answer, not an error. */
  readonly found: boolean;
  /** The value when found; an empty value is still found. */
  readonly value?: Uint8Array;
  /** 0 when not found. */
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  readonly expiresAtMs?: number;
  /** The revision the read was served at. */
  readonly revision: number;
}

export interface PrefixReadOptions extends ReadOptions {
  /** At most this many keys (default defaultPageSize, at most maxPageSize). */
  readonly limit?: number;
  /** Continue after this key: pass the previous page's continueAfter and its revision. */
  readonly after?: string;
}

export interface PrefixPage {
  /** Live keys in UTF-8 byte order (Unicode code point order). */
  readonly items: KeyVersion[];
  /** The revision every item was read at; pass it back with continueAfter for the next page. */
  readonly revision: number;
  /** Whether another page may hold more keys. */
  readonly more: boolean;
  /** When more: the key to pass as `after`. */
  readonly continueAfter?: string;
}

/** A stored version and its revision (changesSince). */
export interface StoredChangeAt extends StoredChange {
  readonly revision: number;
}

function byRevisionThenKey(a: StoredChangeAt, b: StoredChangeAt): number {
  return a.revision - b.revision || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

/** Checks and fixes the revision a read is served at. */
function beginRead(state: MvccState, options: ReadOptions): { revision: number; epoch: number } {
  assertNowMs(options.nowMs);
  if (state.needsSnapshot) {
    throw new AtollError('UNAVAILABLE', 'the partition is installing a snapshot; retry shortly');
  }
  if (state.mergedInto !== undefined) throw mergedAwayError(state);
  if (state.frozen !== undefined) throw frozenError(state);
  const revision = options.revision ?? state.revision;
  if (options.revision !== undefined) validateRevisionNumber(options.revision, 'revision');
  if (revision > state.revision) throw futureRevision(state, revision);
  if (revision < state.compactedRevision) throw compacted(state, revision);
  return { revision, epoch: state.epoch };
}

/** A read that overlapped a snapshot import or a compaction past its revision is not trusted. */
function endRead(state: MvccState, read: { revision: number; epoch: number }): void {
  if (read.epoch !== state.epoch || state.needsSnapshot) {
    throw new AtollError('UNAVAILABLE', 'the partition installed a snapshot during the read; retry');
  }
  if (read.revision < state.compactedRevision) throw compacted(state, read.revision);
}

export async function get(state: MvccState, key: string, options: ReadOptions): Promise<GetResult> {
  if (options.keyChecked !== true) validateKey(key);
  checkOwnsKey(state, key);
  const read = beginRead(state, options);
  const live = liveVersion(key, await findVersion(state, key, read.revision), options.nowMs);
  endRead(state, read);
  if (live === undefined) return { found: false, createRevision: 0, modRevision: 0, version: 0, revision: read.revision };
  const { value, createRevision, modRevision, version, expiresAtMs } = live;
  const result = { found: true, value, createRevision, modRevision, version, revision: read.revision };
  return expiresAtMs === undefined ? result : { ...result, expiresAtMs };
}

export async function exists(state: MvccState, key: string, options: ReadOptions): Promise<boolean> {
  return (await get(state, key, options)).found;
}

/**
 * The live keys starting with `keyPrefix` at one revision, a page at a time. A page examines at
 * most about maxScanVersions stored versions; a prefix full of deleted or expired keys can
 * therefore return a short (even empty) page with `more: true`.
 */
export async function getByPrefix(state: MvccState, keyPrefix: string, options: PrefixReadOptions): Promise<PrefixPage> {
  validateKeyPrefix(keyPrefix, state.limits);
  const limit = options.limit ?? state.limits.defaultPageSize;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > state.limits.maxPageSize) {
    throw new AtollError('INVALID_ARGUMENT', `limit must be an integer in [1, ${state.limits.maxPageSize}]`, { limit });
  }
  if (options.after !== undefined) validateKey(options.after);
  checkOwnsPrefix(state, keyPrefix);
  const read = beginRead(state, options);
  const range = scanRange(state, keyPrefix, options.after);
  const page = range === undefined ? { items: [], more: false } : await scan(state, range, read.revision, limit, options.nowMs);
  endRead(state, read);
  return { ...page, revision: read.revision };
}

/**
 * A page of ALL the partition's live keys starting with `keyPrefix` (may be "" or a tenant tag,
 * which no bucket owns: no ownership check), for backups. Same paging rules as getByPrefix.
 */
export async function scanPartition(state: MvccState, keyPrefix: string, options: PrefixReadOptions): Promise<PrefixPage> {
  const limit = options.limit ?? state.limits.defaultPageSize;
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > state.limits.maxPageSize) {
    throw new AtollError('INVALID_ARGUMENT', `limit must be an integer in [1, ${state.limits.maxPageSize}]`, { limit });
  }
  if (options.after !== undefined) validateKey(options.after);
  const read = beginRead(state, options);
  const range = scanRange(state, keyPrefix, options.after);
  const page = range === undefined ? { items: [], more: false } : await scan(state, range, read.revision, limit, options.nowMs);
  endRead(state, read);
  return { ...page, revision: read.revision };
}

function scanRange(state: MvccState, keyPrefix: string, after: string | undefined): KeyRange | undefined {
  const range = state.layout.versionsOfPrefix(keyPrefix);
  if (after === undefined) return range;
  const resume = state.layout.afterKey(after);
  const gte = range.gte === undefined || compareBytes(resume, range.gte) > 0 ? resume : range.gte;
  if (range.lt !== undefined && compareBytes(gte, range.lt) >= 0) return undefined;
  return { ...range, gte };
}

async function scan(
  state: MvccState,
  range: KeyRange,
  revision: number,
  limit: number,
  nowMs: number,
): Promise<{ items: KeyVersion[]; more: boolean; continueAfter?: string }> {
  const items: KeyVersion[] = [];
  let group: { groupKey: Uint8Array; userKey: Uint8Array; visible?: FoundVersion } | undefined;
  let examined = 0;
  let stoppedAfter: Uint8Array | undefined;

  const flushGroup = (): void => {
    if (group === undefined) return;
    const live = liveVersion(decodeUtf8(group.userKey), group.visible, nowMs);
    if (live !== undefined) items.push(live);
  };

  for await (const [storageKey, record] of state.engine.iterate(range)) {
    const parsed = state.layout.parseVersionKey(storageKey);
    if (group === undefined || !equalBytes(parsed.groupKey, group.groupKey)) {
      flushGroup();
      // limit + 1 live keys tell us, exactly, that another page exists.
      if (items.length > limit) break;
      if (group !== undefined && examined >= state.limits.maxScanVersions) {
        stoppedAfter = group.userKey;
        group = undefined;
        break;
      }
      group = { groupKey: parsed.groupKey.slice(), userKey: parsed.userKey };
    }
    examined++;
    // Versions come in ascending revision order, so the last one at or below the read revision wins.
    if (parsed.revision <= revision) group.visible = { revision: parsed.revision, stored: decodeVersionRecord(record) };
  }
  if (stoppedAfter === undefined && items.length <= limit) flushGroup();

  if (items.length > limit) {
    items.length = limit;
    return { items, more: true, continueAfter: items[limit - 1]!.key };
  }
  if (stoppedAfter !== undefined) return { items, more: true, continueAfter: decodeUtf8(stoppedAfter) };
  return { items, more: false };
}

/**
 * The retained history under `keyPrefix` (or of exactly `key`): every stored version with a
 * revision in (after, through], sorted by revision (then key), where `through` is the current
 * revision unless the answer would exceed maxChanges versions or maxBytes of keys and values;
 * then `through` is lowered to the highest revision whose versions all fit, but never below the
 * first revision with a version (one revision's versions always come whole). Every version
 * above `after` is retained when after >= the compaction floor (compaction removes only versions
 * older than the newest at or below the floor); below it the answer is COMPACTED. A read that
 * overlapped an import is UNAVAILABLE. Examines every version under the prefix (memory stays
 * bounded by maxChanges and maxBytes; time grows with the prefix's retained history).
 */
export async function changesSince(
  state: MvccState,
  target: { readonly key: string } | { readonly keyPrefix: string },
  after: number,
  bounds: { readonly maxChanges: number; readonly maxBytes: number },
): Promise<{ changes: StoredChangeAt[]; through: number }> {
  assert(bounds.maxChanges >= 1 && bounds.maxBytes >= 1, 'changesSince bounds must be positive');
  validateRevisionNumber(after, 'start revision');
  const read = beginRead(state, { revision: after, nowMs: 0 });
  let through = state.revision;
  const range = 'key' in target ? state.layout.versionsOfKeyUpTo(target.key, through) : state.layout.versionsOfPrefix(target.keyPrefix);
  let changes: StoredChangeAt[] = [];
  let bytes = 0;
  for await (const [storageKey, record] of state.engine.iterate(range)) {
    const parsed = state.layout.parseVersionKey(storageKey);
    if (parsed.revision <= after || parsed.revision > through) continue;
    const stored = decodeVersionRecord(record);
    const key = decodeUtf8(parsed.userKey);
    changes.push({ key, revision: parsed.revision, stored });
    bytes += versionBytes(parsed.userKey.length, stored);
    if (changes.length <= bounds.maxChanges && bytes <= bounds.maxBytes) continue;
    // Over a bound: keep the lowest revisions that fit, whole revisions only.
    changes.sort(byRevisionThenKey);
    let kept = 0;
    let keptBytes = 0;
    for (const change of changes) {
      const size = versionBytes(utf8ByteLength(change.key), change.stored);
      if (kept + 1 > bounds.maxChanges || keptBytes + size > bounds.maxBytes) break;
      kept++;
      keptBytes += size;
    }
    const cut = changes[kept]!.revision;
    through = cut === changes[0]!.revision ? cut : cut - 1;
    changes = changes.filter((change) => change.revision <= through);
    bytes = changes.reduce((sum, change) => sum + versionBytes(utf8ByteLength(change.key), change.stored), 0);
  }
  endRead(state, read);
  changes.sort(byRevisionThenKey);
  return { changes, through };
}
