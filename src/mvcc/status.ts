/** The status and statistics an MVCC store reports (no storage reads). */
import { assertNowMs, type MvccState, type MvccStatus } from './mvcc-state.js';

export interface DedupStatus {
  /** The live dedup records: the request ids a retry of which is recognised. */
  readonly recordCount: number;
  /** Results recorded by entries below this index are evicted. */
  readonly floorIndex: number;
  readonly window: number;
  /**
   * The expiry mark: the newest creation time among the evicted timestamped request ids (0: none).
   * An unknown timestamped id created at or before it is refused with REQUEST_ID_EXPIRED.
   */
  readonly expiredThroughMs: number;
}

export function statusOf(state: MvccState): MvccStatus {
  return {
    appliedIndex: state.appliedIndex,
    revision: state.revision,
    compactedRevision: state.compactedRevision,
    needsSnapshot: state.needsSnapshot,
  };
}

/** The key index's size and estimated bytes (key-index.ts), and whether the store uses it. */
export function keyIndexStatusOf(state: MvccState): { keys: number; bytes: number; maxBytes: number; complete: boolean } {
  const index = state.newestRevisionOf;
  return { keys: index.size, bytes: index.bytes, maxBytes: index.maxBytes, complete: state.keyIndexComplete };
}

/** The dedup table's in-memory read-ahead and eviction list, estimated bytes (dedup-table.ts). */
export function dedupMemoryOf(state: MvccState): { bytes: number; readAheadHeads: number } {
  return { bytes: state.dedup.memoryBytes, readAheadHeads: state.dedup.readAheadLength };
}

export function dedupStatusOf(state: MvccState): DedupStatus {
  return { recordCount: state.dedup.count, floorIndex: state.dedup.floorIndex, window: state.dedup.window, expiredThroughMs: state.dedup.expiredThroughMs };
}

/**
 * Up to `max` keys whose newest version is a value that has expired at `nowMs`, earliest first:
 * what the leader proposes in an `expire` command (apply checks each again). No storage read.
 */
export function expiredKeysOf(state: MvccState, nowMs: number, max: number): string[] {
  assertNowMs(nowMs);
  if (state.needsSnapshot) return [];
  return state.expiry.expiredKeys(nowMs, max);
}

/**
 * Up to `max` names of stored keys (live or deleted, in no particular order), from the in-memory
 * key index: what a leader picks a split point from. Empty without the key index.
 */
export function storedKeyNamesOf(state: MvccState, max: number): string[] {
  const names: string[] = [];
  if (!state.keyIndexComplete) return names;
  for (const key of state.newestRevisionOf.keys()) {
    if (names.length >= max) break;
    names.push(key);
  }
  return names;
}
