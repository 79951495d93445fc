/**
 * The lookup of a key's version, shared by reads (reader.ts) and by apply's decisions
 * (write-decide.ts, txn-check.ts): the version cache first, then the key index (one point read,
 * or no read for a key the store never had), else a storage iterator.
 */
import type { KeyVersion } from './commands.js';
import type { MvccState } from './mvcc-state.js';
import { decodeVersionRecord, type StoredVersion } from './version-record.js';

/** The newest stored version of a key at some revision. */
export interface FoundVersion {
  readonly revision: number;
  readonly stored: StoredVersion;
}

/** The newest stored version of `key` at or below `revision`, tombstones included. */
export async function findVersion(state: MvccState, key: string, revision: number): Promise<FoundVersion | undefined> {
  const cached = state.cache?.get(state.cacheStoreId, key);
  if (cached !== undefined && cached.revision <= revision) return cached;
  const atRevision = state.revision;
  const epoch = state.epoch;
  let found: FoundVersion | undefined;
  const newest = state.keyIndexComplete ? state.newestRevisionOf.get(key) : undefined;
  if (state.keyIndexComplete && newest === undefined) return undefined;
  if (newest !== undefined && newest <= revision) {
    // The newest version is the newest at or below `revision`: one point read.
    const storageKey = state.layout.versionKey(key, newest);
    const record = state.engine.getSync !== undefined ? state.engine.getSync(storageKey) : await state.engine.get(storageKey);
    if (record === undefined) {
      state.assertIndexedVersionGone(key, newest, epoch);
      return undefined;
    }
    found = { revision: newest, stored: decodeVersionRecord(record) };
  } else {
    const range = state.layout.versionsOfKeyUpTo(key, revision);
    for await (const [storageKey, record] of state.engine.iterate({ ...range, reverse: true, limit: 1 })) {
      found = { revision: state.layout.parseVersionKey(storageKey).revision, stored: decodeVersionRecord(record) };
    }
  }
  // Fill the cache only from a lookup at the current revision that no commit or import overlapped.
  if (
    state.cache !== undefined &&
    found?.stored.kind === 'value' &&
    revision === atRevision &&
    state.revision === atRevision &&
    state.epoch === epoch &&
    !state.needsSnapshot
  ) {
    state.cache.set(state.cacheStoreId, key, { revision: found.revision, stored: found.stored });
  }
  return found;
}

/** The live version a stored version shows a reader at nowMs, or undefined when it shows none. */
export function liveVersion(key: string, found: FoundVersion | undefined, nowMs: number): KeyVersion | undefined {
  if (found === undefined || found.stored.kind !== 'value') return undefined;
  const { createRevision, version, value, expiresAtMs, fence } = found.stored;
  if (expiresAtMs !== undefined && expiresAtMs <= nowMs) return undefined;
  const base = { key, value, createRevision, modRevision: found.revision, version, ...(fence !== undefined && { fence }) };
  return expiresAtMs === undefined ? base : { ...base, expiresAtMs };
}
