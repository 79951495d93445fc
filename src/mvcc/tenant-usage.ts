/**
 * What each tenant stores in a partition (MvccState.usage): counted by rebuildKeyState, moved by
 * every commit and by physical compaction.
 */
import type { StoredVersion } from './version-record.js';

/**
 * What one tenant stores in the partition: keys whose newest version is a value (expired or not:
 * expiry is time, and an expired key's bytes stay until it is overwritten, deleted and compacted),
 * and their key and value bytes; and the bytes of its retained history: every stored version that
 * is not its key's newest (superseded values and tombstones) and every newest-version tombstone,
 * measured as live bytes are (key bytes, plus value bytes for a value). History is freed only by
 * physical compaction (versions below the compaction floor). These are statistics: they never
 * change what is stored or read.
 */
export interface TenantUsageCount {
  keys: number;
  bytes: number;
  historyBytes: number;
}

export function addUsage(into: Map<string, TenantUsageCount>, tenant: string, keys: number, bytes: number, historyBytes = 0): void {
  const current = into.get(tenant) ?? { keys: 0, bytes: 0, historyBytes: 0 };
  current.keys += keys;
  current.bytes += bytes;
  current.historyBytes += historyBytes;
  if (current.keys === 0 && current.bytes === 0 && current.historyBytes === 0) into.delete(tenant);
  else into.set(tenant, current);
}

/** The bytes one stored version counts for, live or as history: its key's, plus its value's. */
export function versionBytes(keyBytes: number, stored: StoredVersion): number {
  return keyBytes + (stored.kind === 'value' ? stored.value.length : 0);
}
