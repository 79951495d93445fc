/**
 * Checking a transaction's commit (first committer wins): a key it writes, or under SERIALIZABLE
 * a key or a prefix it read, with a version above its snapshot revision is a TXN_CONFLICT, and so
 * is a read key that expired between its snapshot and its commit. Runs inside apply on every
 * replica, so it is bounded and decided from replicated state only.
 */
import { AtollError } from '../errors.js';
import { decodeUtf8 } from '../keys/utf8.js';
import { equalBytes } from '../storage/bytes.js';
import type { TxnCommand } from './commands.js';
import { findVersion } from './find-version.js';
import { compacted, conflict, futureRevision, validationTooLarge } from './mvcc-errors.js';
import type { MvccState } from './mvcc-state.js';
import { decodeVersionRecord } from './version-record.js';

/** What a serializable commit's prefix validation has examined so far (retained keys and versions). */
interface ValidationBudget {
  keys: number;
  versions: number;
}

/**
 * First committer wins. The checks read only versions above the snapshot revision, which is at
 * or above the compaction floor, and compaction never removes those, so every replica decides
 * the same whatever its physical compaction progress.
 */
export async function checkTxn(state: MvccState, txn: TxnCommand, commitTimeMs: number): Promise<void> {
  if (txn.snapshotRevision > state.revision) throw futureRevision(state, txn.snapshotRevision);
  if (txn.snapshotRevision < state.compactedRevision) throw compacted(state, txn.snapshotRevision);
  const keys = txn.writes.map((write) => write.key);
  if (txn.isolation === 'serializable') keys.push(...txn.readKeys);
  const serializableReads = txn.isolation === 'serializable' ? new Set(txn.readKeys) : new Set<string>();
  const snapshotTimeMs = txn.snapshotTimeMs ?? commitTimeMs;
  for (const key of keys) {
    const latest = await findVersion(state, key, state.revision);
    if (latest !== undefined && latest.revision > txn.snapshotRevision) throw conflict(txn, { key, modRevision: latest.revision });
    // Under SERIALIZABLE a read key live at the snapshot's time that has expired by the
    // commit's time changed as surely as if it had been deleted: the read is stale. (latest is
    // the version the transaction read: nothing newer exists, checked just above.)
    const expiresAtMs = latest?.stored.kind === 'value' ? latest.stored.expiresAtMs : undefined;
    if (serializableReads.has(key) && expiresAtMs !== undefined && snapshotTimeMs < expiresAtMs && expiresAtMs <= commitTimeMs) {
      throw new AtollError('TXN_CONFLICT', `the transaction read ${JSON.stringify(key)}, which expired after its snapshot and before its commit`, {
        snapshotRevision: txn.snapshotRevision,
        key,
        expiresAtMs,
        snapshotTimeMs,
        commitTimeMs,
      });
    }
  }
  if (txn.isolation !== 'serializable' || state.testBugs.skipPrefixValidation) return;
  // The scan must not overlap a compaction step: an iterator may or may not see a concurrent
  // removal, and one that saw a key's older value but not its removed tombstone would count a
  // version another replica does not. Wait for the step in flight (one bounded step); no step
  // starts while an apply runs (compactStorageStep defers).
  if (txn.readPrefixes.length > 0 && state.compactionStepInFlight !== undefined) await state.compactionStepInFlight.catch(() => undefined);
  const budget: ValidationBudget = { keys: 0, versions: 0 };
  for (const keyPrefix of txn.readPrefixes) await validateReadPrefix(state, txn, keyPrefix, budget, { snapshotTimeMs, commitTimeMs });
}

/**
 * Serializable validation of one read prefix: TXN_CONFLICT when a key under it has a version
 * above the snapshot revision (a change or a phantom). It runs inside apply on every replica, so
 * it is bounded: over all the commit's read prefixes it examines at most maxTxnPrefixKeys keys
 * and maxScanVersions versions (the bounds of a transaction's prefix read and of a scan page),
 * and past either it fails the commit with RESOURCE_EXHAUSTED and changes nothing.
 *
 * Determinism: the bound counts only *retained* versions, which are replicated state: every
 * version above the compaction floor, and a key's newest version at or below the floor when it
 * is a value. Physical compaction removes exactly the other versions (older ones below the
 * floor, and a newest tombstone at or below it), at its own pace on each replica, so those are
 * skipped uncounted. Every replica then counts the same versions in the same (key) order and
 * meets the same conflict or the same bound first. Versions above the snapshot revision are
 * above the floor (checkTxn refused a snapshot below it), so a conflict is always retained.
 *
 * Expiry: a key under the prefix whose version at the snapshot (its newest at or below the
 * snapshot revision) is a value live at the snapshot's time and expired by the commit's time
 * changed for the reader as surely as a delete would: TXN_CONFLICT, as for a read key. That
 * version is retained on every replica or absent on every one (a value newest at or below the
 * floor is kept; a tombstone there goes with every older version), so replicas agree.
 */
async function validateReadPrefix(
  state: MvccState,
  txn: TxnCommand,
  keyPrefix: string,
  budget: ValidationBudget,
  times: { readonly snapshotTimeMs: number; readonly commitTimeMs: number },
): Promise<void> {
  const floor = state.compactedRevision;
  // The group's version at the snapshot: its key and, when it is a value with a TTL, its expiry.
  let atSnapshotExpiresAtMs: number | undefined;
  let atSnapshotKey: Uint8Array | undefined;
  const checkExpiry = (): void => {
    const expiresAtMs = atSnapshotExpiresAtMs;
    atSnapshotExpiresAtMs = undefined;
    if (expiresAtMs === undefined || atSnapshotKey === undefined) return;
    if (times.snapshotTimeMs < expiresAtMs && expiresAtMs <= times.commitTimeMs) {
      const key = decodeUtf8(atSnapshotKey);
      throw new AtollError('TXN_CONFLICT', `the transaction read prefix ${JSON.stringify(keyPrefix)}, whose key ${JSON.stringify(key)} expired after its snapshot and before its commit`, {
        snapshotRevision: txn.snapshotRevision,
        keyPrefix,
        key,
        expiresAtMs,
        snapshotTimeMs: times.snapshotTimeMs,
        commitTimeMs: times.commitTimeMs,
      });
    }
  };
  // The group being scanned, and whether its newest version at or below the floor seen so far
  // is a value (retained unless a newer version at or below the floor follows).
  let groupKey: Uint8Array | undefined;
  let counted = false;
  let pendingAtFloor = false;
  const countVersion = (): void => {
    if (!counted) {
      counted = true;
      budget.keys++;
    }
    budget.versions++;
    if (budget.keys > state.limits.maxTxnPrefixKeys || budget.versions > state.limits.maxScanVersions) throw validationTooLarge(state.limits, txn, keyPrefix);
  };
  const settleAtFloor = (): void => {
    if (pendingAtFloor) countVersion();
    pendingAtFloor = false;
  };
  for await (const [storageKey, record] of state.engine.iterate(state.layout.versionsOfPrefix(keyPrefix))) {
    const parsed = state.layout.parseVersionKey(storageKey);
    if (groupKey === undefined || !equalBytes(parsed.groupKey, groupKey)) {
      settleAtFloor();
      checkExpiry();
      groupKey = parsed.groupKey.slice();
      counted = false;
    }
    if (parsed.revision <= txn.snapshotRevision) {
      // Ascending revisions: the last one at or below the snapshot is the version the reader saw.
      const version = decodeVersionRecord(record);
      atSnapshotExpiresAtMs = version.kind === 'value' ? version.expiresAtMs : undefined;
      atSnapshotKey = parsed.userKey;
    }
    if (parsed.revision <= floor) {
      // Versions come in ascending revision order: this one supersedes the pending one.
      pendingAtFloor = decodeVersionRecord(record).kind === 'value';
      continue;
    }
    settleAtFloor();
    countVersion();
    if (parsed.revision > txn.snapshotRevision) {
      throw conflict(txn, { keyPrefix, key: decodeUtf8(parsed.userKey), modRevision: parsed.revision });
    }
  }
  settleAtFloor();
  checkExpiry();
}
