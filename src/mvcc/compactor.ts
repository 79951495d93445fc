/**
 * Physical compaction removes the versions no reader at or above the compaction floor needs: for
 * each key, every version older than its newest version at or below the floor, and that newest
 * one too when it is a tombstone. Versions above the floor are never touched.
 *
 * Applying a compact command only moves the floor (replicated, identical everywhere; commit.ts)
 * and marks the work pending; the removal runs beside the Raft loop in bounded steps
 * (compactStorageStep: at most compactionBatchOps stored versions examined and one storage write
 * each), so a large partition never stalls apply. Every replica removes at its own pace, which
 * changes no logical state: reads at or above the floor see the same versions before and after a
 * removal, and nothing apply decides depends on versions compaction may remove (see
 * txn-check.ts validateReadPrefix).
 *
 * Invariants of a pass (`MvccState.compactionPass`):
 * - Its floor is the store's floor when the pass began; the floor only rises, so the pass never
 *   removes a version a reader at or above the current floor needs. A pass that ends after the
 *   floor rose leaves the work pending and the next step starts a new pass at the new floor.
 * - The scan resumes at `resumeAt`, the first stored version it has not examined, and carries the
 *   key group it stopped inside. Applies meanwhile only add versions above the floor, which the
 *   pass never removes.
 * - It forgets a key in the key index only while the index still names the tombstone it removes
 *   (an apply may have written the key again since the scan saw it), and before the storage
 *   write, so a reader never looks for a version that is gone.
 * - No step runs while a snapshot export runs (an export whose floor is below a later pass's
 *   floor needs the versions between them) or while an import runs; an import waits for the
 *   step in flight and discards the pass (asserted: the epoch a pass began in is the one it ends in).
 */
import assert from 'node:assert/strict';
import { tenantOfInternalKey } from '../keys/tenant-keys.js';
import { decodeUtf8 } from '../keys/utf8.js';
import { equalBytes } from '../storage/bytes.js';
import type { WriteOperation } from '../storage/storage-engine.js';
import type { CompactionGroup, StorageCompactionStep } from './compaction-pass.js';
import type { MvccState } from './mvcc-state.js';
import { addUsage, versionBytes, type TenantUsageCount } from './tenant-usage.js';
import { decodeVersionRecord } from './version-record.js';

export interface StorageCompactionResult {
  readonly removedVersions: number;
  /** Evicted dedup results deleted (each with its record). */
  readonly removedDedupEntries: number;
  /** True when a snapshot export was running, so nothing was removed this time. */
  readonly deferred: boolean;
}

/**
 * One bounded step of the pending physical compaction (see above): examines at most
 * compactionBatchOps stored versions from where the previous step stopped and removes, in one
 * storage write, those no reader needs. `done` when nothing is pending any more; `deferred` when
 * an export (or import) runs, so the step did nothing. Safe alongside applies and reads; steps
 * must not overlap each other (asserted).
 */
export async function compactStorageStep(state: MvccState): Promise<StorageCompactionStep> {
  assert(state.compactionStepInFlight === undefined, 'compaction steps must not overlap');
  if (!state.storageCompactionPending) return { removedVersions: 0, done: true, deferred: false };
  // Not while an apply or import runs (see checkTxn), nor while an export needs the versions.
  if (state.exportsInFlight > 0 || state.importing || state.exclusive || state.needsSnapshot) return { removedVersions: 0, done: false, deferred: true };
  const step = runCompactionStep(state);
  state.compactionStepInFlight = step;
  try {
    return await step;
  } finally {
    state.compactionStepInFlight = undefined;
  }
}

async function runCompactionStep(state: MvccState): Promise<StorageCompactionStep> {
  state.compactionPass ??= { floor: state.compactedRevision, epoch: state.epoch, resumeAt: undefined, group: undefined };
  const pass = state.compactionPass;
  const maxExamined = state.limits.compactionBatchOps;
  const deletions: WriteOperation[] = [];
  // The history bytes the deletions free, per tenant: every version removed here is history (an
  // older version, or a newest tombstone), never a live value.
  const freed = new Map<string, TenantUsageCount>();
  const forgotten: Array<{ key: string; revision: number }> = [];
  const remove = (group: CompactionGroup, version: { storageKey: Uint8Array; bytes: number }): void => {
    group.tenant ??= tenantOfInternalKey(decodeUtf8(group.userKey));
    deletions.push({ type: 'del', key: version.storageKey });
    addUsage(freed, group.tenant, 0, 0, version.bytes);
  };
  const finishGroup = (group: CompactionGroup | undefined): void => {
    if (group?.newestAtFloor?.isTombstone !== true) return;
    // The key's last version goes: it leaves the key index (see MvccState.newestRevisionOf).
    // Readers see no difference: a tombstone and no version at all both read as "not found".
    if (!group.aboveFloor) forgotten.push({ key: decodeUtf8(group.userKey), revision: group.newestAtFloor.revision });
    remove(group, group.newestAtFloor);
  };
  const versions = state.layout.allVersionsRange();
  let from = pass.resumeAt;
  let examined = 0;
  let reachedEnd = true;
  // A key's versions sort by revision (key-layout.ts versionKey), so once the scan meets one
  // above the floor the rest of that key's are above it too, and a pass never removes those.
  // After SKIP_AFTER_ABOVE_FLOOR of them the scan goes on at the next key with a new iterator.
  // Before, it read them all, and one hot key's retained window (every version since the floor)
  // was read again at every pass (docs/performance.md, "A hot key's history"). Not at the first:
  // a new iterator costs about as much as reading 45 versions (through the write-behind layer),
  // and seeking past every key with one version above the floor made a pass over 6,000 such keys
  // 8 times slower.
  let aboveInGroup = 0;
  scan: for (;;) {
    const range = from === undefined ? versions : { ...versions, gte: from };
    let skipTo: Uint8Array | undefined;
    for await (const [storageKey, record] of state.engine.iterate({ ...range, limit: maxExamined - examined + 1 })) {
      if (examined === maxExamined) {
        pass.resumeAt = storageKey.slice();
        reachedEnd = false;
        break scan;
      }
      examined++;
      const parsed = state.layout.parseVersionKey(storageKey);
      let group = pass.group;
      if (group === undefined || !equalBytes(parsed.groupKey, group.groupKey)) {
        finishGroup(group);
        group = { groupKey: parsed.groupKey.slice(), userKey: parsed.userKey.slice(), aboveFloor: false };
        pass.group = group;
        aboveInGroup = 0;
      }
      if (parsed.revision > pass.floor) {
        group.aboveFloor = true;
        if (++aboveInGroup < SKIP_AFTER_ABOVE_FLOOR) continue;
        skipTo = afterAllVersionsOf(group.groupKey);
        break;
      }
      if (group.newestAtFloor !== undefined) remove(group, group.newestAtFloor);
      const version = decodeVersionRecord(record);
      group.newestAtFloor = {
        storageKey: storageKey.slice(),
        revision: parsed.revision,
        isTombstone: version.kind === 'tombstone',
        bytes: versionBytes(group.userKey.length, version),
      };
    }
    if (skipTo === undefined) break;
    from = skipTo;
  }
  if (reachedEnd) {
    finishGroup(pass.group);
    pass.group = undefined;
  }
  // An import cannot start while this step runs (it waits for it), so the state is the one scanned.
  // An import, a split, a merge and a freeze bump the epoch between steps and discard the pass.
  assert.equal(state.epoch, pass.epoch, 'a snapshot import overlapped a compaction step');
  for (const { key, revision } of forgotten) state.forgetRemovedKey(key, revision);
  if (deletions.length > 0) await state.engine.write(deletions);
  for (const [tenant, bytes] of freed) addUsage(state.usage, tenant, 0, 0, -bytes.historyBytes);
  if (reachedEnd) {
    state.compactionPass = undefined;
    // A floor that rose during the pass leaves versions below it for a new pass.
    if (state.compactedRevision === pass.floor) state.storageCompactionPending = false;
  }
  return { removedVersions: deletions.length, done: !state.storageCompactionPending, deferred: false };
}

/** Versions of one key above the floor a pass reads before it seeks past the key's others (see runCompactionStep). */
const SKIP_AFTER_ABOVE_FLOOR = 64;

/**
 * The first storage key past every version of the key whose versions start with `groupKey`: a
 * version key is the group key and a uint64BE revision (8 bytes), and group keys are
 * self-delimiting (ordered-escape.ts), so no other key's version starts with this one's.
 */
function afterAllVersionsOf(groupKey: Uint8Array): Uint8Array {
  const after = new Uint8Array(groupKey.length + 9);
  after.set(groupKey, 0);
  after.fill(0xff, groupKey.length, groupKey.length + 8);
  return after;
}

/**
 * Runs the pending physical compaction to its end (step after step; the node runs the steps
 * beside its loop instead), then deletes evicted dedup results that applies have not deleted yet
 * (they leave them while an export runs). While a snapshot export runs it does nothing
 * (`deferred`), so the export keeps every version and dedup result it needs. Safe to call at any
 * time; not alongside an apply.
 */
export async function compactStorage(state: MvccState): Promise<StorageCompactionResult> {
  if (state.compactionStepInFlight !== undefined) await state.compactionStepInFlight.catch(() => undefined);
  if (state.exportsInFlight > 0) return { removedVersions: 0, removedDedupEntries: 0, deferred: true };
  let removedVersions = 0;
  // Bounded: each step examines compactionBatchOps more versions of the partition, and no apply
  // runs meanwhile to raise the floor, so at most two passes over the stored versions happen.
  for (;;) {
    const step = await compactStorageStep(state);
    removedVersions += step.removedVersions;
    if (step.deferred) return { removedVersions, removedDedupEntries: 0, deferred: true };
    if (step.done) break;
  }
  state.enterExclusive();
  try {
    return { removedVersions, removedDedupEntries: await removeEvictedDedupEntries(state), deferred: false };
  } finally {
    state.exclusive = false;
  }
}

async function removeEvictedDedupEntries(state: MvccState): Promise<number> {
  assert(state.exclusive);
  // An export that was already running may need them. One that starts during the loop begins
  // at the floor, which only an apply moves (none runs now), so it needs none of them.
  if (state.exportsInFlight > 0) return 0;
  let removed = 0;
  // Each round deletes up to compactionBatchOps entries below the floor: the rounds are bounded.
  for (;;) {
    const removal = await state.dedup.planRemoval(state.limits.compactionBatchOps);
    if (removal.removedEntries === 0) return removed;
    await state.engine.write(removal.operations);
    removed += removal.removedEntries;
  }
}
