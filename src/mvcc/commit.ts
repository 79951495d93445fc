/**
 * Committing an entry: its one batch (the dedup record, the versions, the lease records, the meta
 * records), then, in the same synchronous step after the write, the in-memory state (applied index
 * and clock, dedup table, leases, revision, key index, expiry index, version cache, compaction
 * floor, usage) and the watch hook.
 */
import type { AtollError } from '../errors.js';
import { encodeUint64BE } from '../storage/bytes.js';
import type { WriteOperation } from '../storage/storage-engine.js';
import { encodeAppliedRecord } from './applied-record.js';
import type { WriteResult } from './commands.js';
import type { DedupPlan } from './dedup-table.js';
import type { LeaseChange } from './lease-table.js';
import type { MvccState, RevisionResetReason, StoredChange } from './mvcc-state.js';
import { addUsage, type TenantUsageCount } from './tenant-usage.js';
import type { StoredVersion } from './version-record.js';

/** What apply decided before writing. */
export interface Outcome {
  readonly applied: boolean;
  readonly error?: AtollError;
  readonly writes: WriteResult[];
  readonly operations: WriteOperation[];
  readonly newRevision?: number;
  readonly newCompactedRevision?: number;
  readonly note?: Uint8Array;
  /** How the entry changes stored keys and bytes, per tenant. */
  readonly usage?: ReadonlyMap<string, TenantUsageCount>;
  /** The versions the entry stores, in order (for the version cache). */
  readonly stored?: ReadonlyArray<{ readonly key: string; readonly stored: StoredVersion }>;
  /** How the entry changes the lease table (its storage writes are in `operations`). */
  readonly leaseChange?: LeaseChange;
  /** For leaseGrant: the new lease's id. */
  readonly leaseId?: number;
}

export function failedOutcome(error: AtollError): Outcome {
  return { applied: false, error, writes: [], operations: [] };
}

/** An entry that changes nothing but the applied index (a duplicate). */
export const emptyOutcome: Outcome = Object.freeze({ applied: false, writes: [], operations: [] });

/**
 * Writes the entry's batch: the dedup plan's operations, the versions, then the meta records,
 * among them the applied index and the entry's time (`timeMs`) together.
 */
export async function commit(state: MvccState, outcome: Outcome, index: number, timeMs: number, dedupPlan?: DedupPlan): Promise<void> {
  state.assertClockAdvances(timeMs);
  const operations = [...(dedupPlan?.operations ?? []), ...outcome.operations];
  if (outcome.newRevision !== undefined) state.assertNextRevision(outcome.newRevision);
  // Applied index, time and revision in one record (applied-record.ts): one operation, not three.
  const appliedRecord = { appliedIndex: index, appliedTimeMs: timeMs, revision: outcome.newRevision ?? state.revision };
  operations.push({ type: 'put', key: state.layout.appliedKey, value: encodeAppliedRecord(appliedRecord) });
  // The separate records of the old format (or of a snapshot import) go in the same batch.
  const dropsLegacy = state.legacyAppliedRecords;
  if (dropsLegacy) for (const key of [state.layout.appliedIndexKey, state.layout.appliedTimeKey, state.layout.revisionKey]) operations.push({ type: 'del', key });
  if (outcome.newCompactedRevision !== undefined) {
    state.assertFloorWithinRevision(outcome.newCompactedRevision);
    operations.push({ type: 'put', key: state.layout.compactedRevisionKey, value: encodeUint64BE(outcome.newCompactedRevision) });
  }
  await state.engine.write(operations, { sync: state.syncApply });
  if (dropsLegacy) state.legacyAppliedRecords = false;
  state.appliedIndex = index;
  state.appliedTimeMs = timeMs;
  if (dedupPlan !== undefined) state.dedup.adopt(dedupPlan.state);
  if (outcome.leaseChange !== undefined) state.leases.apply(outcome.leaseChange);
  if (outcome.newRevision !== undefined) {
    state.revision = outcome.newRevision;
    // Same synchronous step as the revision move: the key index and cache invariants.
    state.indexStored(outcome.newRevision, outcome.stored ?? []);
  }
  if (outcome.newCompactedRevision !== undefined) {
    state.compactedRevision = outcome.newCompactedRevision;
    // The removal runs beside the loop, in bounded steps (compactor.ts).
    state.storageCompactionPending = true;
  }
  for (const [tenant, delta] of outcome.usage ?? []) addUsage(state.usage, tenant, delta.keys, delta.bytes, delta.historyBytes);
  // Watchers (src/watch): every new revision, with every version it stored, in commit order.
  if (outcome.newRevision !== undefined) state.commitListener?.(outcome.newRevision, outcome.stored ?? []);
}

/**
 * Tells `listener` about each revision as it commits (synchronously, in revision order, after the
 * store moved to it), with the versions the entry stored. One listener per store (the watch hub).
 *
 * `reset` is told, synchronously in the same step that changes the in-memory revision (so no
 * reader ever sees the store's revision ahead of what its listener was told), every time the
 * store's revision or retained history moves WITHOUT a commit (issue 32): a snapshot import or
 * the discard of an interrupted one ('import'), a merge that brought the right side's history in
 * at revisions the left side had already passed ('merge'), and the right side of a merge, which
 * holds nothing from then on ('merged-away'). After a reset, nothing the listener cached about
 * revisions at or below `revision` may be trusted: the store's own history is the truth.
 */
export function setCommitListener(
  state: MvccState,
  listener: ((revision: number, changes: ReadonlyArray<StoredChange>) => void) | undefined,
  reset?: (revision: number, reason: RevisionResetReason) => void,
): void {
  state.commitListener = listener;
  state.resetListener = listener === undefined ? undefined : reset;
}
