/**
 * Deciding an entry's writes before anything is written: the command is checked (validation,
 * ownership, a transaction's conflicts in txn-check.ts), each key's current version is looked up,
 * and the outcome lists the versions, lease records and usage changes commit.ts then writes. A
 * failure (bad input, a failed condition, a conflict) is an outcome too: apply never throws an
 * AtollError. Decided from the entry and the replicated state only, so every replica decides alike.
 */
import { AtollError } from '../errors.js';
import { tenantOfInternalKey } from '../keys/tenant-keys.js';
import { utf8ByteLength } from '../keys/utf8.js';
import type { WriteOperation } from '../storage/storage-engine.js';
import type {
  BatchCommand,
  Command,
  CompactCommand,
  ExpireCommand,
  LeaseGrantCommand,
  LeaseRevokeCommand,
  TxnCommand,
  WriteOp,
  WriteResult,
} from './commands.js';
import { failedOutcome, type Outcome } from './commit.js';
import { findVersion, liveVersion, type FoundVersion } from './find-version.js';
import { leaseNotFound } from './lease-table.js';
import { futureRevision } from './mvcc-errors.js';
import type { MvccState } from './mvcc-state.js';
import { checkOwnership, checkOwnsKey } from './ownership.js';
import { planWrite, type WritePlan } from './plan-write.js';
import { addUsage, type TenantUsageCount } from './tenant-usage.js';
import { checkTxn } from './txn-check.js';
import { validateCommand } from './validate-command.js';
import { encodeVersionRecord, expiredTombstone, leaseTombstone, type StoredVersion } from './version-record.js';

export async function decide(state: MvccState, command: Command, nowMs: number, index: number): Promise<Outcome> {
  try {
    validateCommand(command, state.limits);
    if (command.type === 'compact') return decideCompact(state, command);
    if (command.type === 'expire') return await decideExpire(state, command, nowMs);
    if (command.type === 'leaseGrant') return decideLeaseGrant(state, command, index);
    if (command.type === 'leaseRevoke') return await decideLeaseRevoke(state, command);
    checkOwnership(state, command);
    if (command.type !== 'txn') return await decideWrites(state, command, nowMs);
    await checkTxn(state, command, nowMs);
    // The writes are decided as the transaction saw them, at its snapshot clock: the checks
    // above guarantee no written key has a version newer than the snapshot, so each key's live
    // version at that time is the one the transaction read, and keepTtl, an increment's kept
    // expiry and ttlMs become absolute times of the snapshot (a key that expired meanwhile keeps
    // its past expiry: it is stored expired, never with no expiry).
    const outcome = await decideWrites(state, command, command.snapshotTimeMs ?? nowMs);
    return command.note === undefined || !outcome.applied ? outcome : { ...outcome, note: command.note };
  } catch (error) {
    if (!(error instanceof AtollError)) throw error;
    return failedOutcome(error);
  }
}

function decideCompact(state: MvccState, command: CompactCommand): Outcome {
  if (command.belowRevision > state.revision) throw futureRevision(state, command.belowRevision);
  // Lowering the floor cannot bring compacted versions back, so it is a no-op, not an error.
  if (command.belowRevision <= state.compactedRevision) return { applied: true, writes: [], operations: [] };
  return { applied: true, writes: [], operations: [], newCompactedRevision: command.belowRevision };
}

async function decideWrites(state: MvccState, command: WriteOp | BatchCommand | TxnCommand, nowMs: number): Promise<Outcome> {
  const ops = command.type === 'batch' || command.type === 'txn' ? command.writes : [command];
  // A put naming a lease needs the lease, of the key's own tenant (else the lease is not found).
  for (const op of ops) {
    if (op.type !== 'put' || op.lease === undefined) continue;
    if (state.leases.get(op.lease)?.tenant !== tenantOfInternalKey(op.key)) throw leaseNotFound(op.lease);
  }
  const newRevision = state.revision + 1;
  const plans: WritePlan[] = [];
  const stored: (FoundVersion | undefined)[] = [];
  for (const op of ops) {
    const found = await findVersion(state, op.key, state.revision);
    stored.push(found);
    plans.push(planWrite({ op, live: liveVersion(op.key, found, nowMs), newRevision, nowMs }));
  }
  const writes = plans.map((plan) => plan.result);
  // All or nothing: one failed condition and no write of the command takes effect.
  if (plans.some((plan) => !plan.result.conditionHeld)) {
    return { applied: false, writes: writes.map(withoutCurrent), operations: [] };
  }
  // Lease attachments: a put attaches its key to its lease (or detaches it, without one), a
  // delete detaches it; increment and extend keep it.
  const moves = ops.flatMap((op, index) =>
    plans[index]?.store === undefined || op.type === 'increment' || op.type === 'extend' ? [] : [{ key: op.key, lease: op.type === 'put' ? op.lease : undefined }],
  );
  return withLeaseMoves(state, outcomeOfPlans(state, plans, stored, newRevision), moves);
}

/** The outcome with the lease table change its key moves make (RESOURCE_EXHAUSTED past a lease's bound). */
function withLeaseMoves(state: MvccState, outcome: Outcome, moves: ReadonlyArray<{ readonly key: string; readonly lease: number | undefined }>): Outcome {
  const leaseChange = state.leases.planMoves(state.layout, moves);
  if (leaseChange === undefined) return outcome;
  return { ...outcome, operations: [...outcome.operations, ...leaseChange.operations], leaseChange };
}

/** Grants a lease whose id is the entry's index; it writes no version and creates no revision. */
function decideLeaseGrant(state: MvccState, command: LeaseGrantCommand, index: number): Outcome {
  checkOwnsKey(state, command.key);
  const leaseChange = state.leases.planGrant(state.layout, index, tenantOfInternalKey(command.key), command.ttlMs);
  return { applied: true, writes: [], operations: leaseChange.operations, leaseChange, leaseId: index };
}

/**
 * Ends a lease: a tombstone (reason "lease") for each attached key whose newest version is a
 * value (live or expired but not yet removed), all at one new revision, and the lease record
 * removed, in this one entry. At most leaseKeysMax keys, one lookup each.
 */
async function decideLeaseRevoke(state: MvccState, command: LeaseRevokeCommand): Promise<Outcome> {
  const record = state.leases.get(command.lease);
  if (record === undefined) throw leaseNotFound(command.lease);
  const newRevision = state.revision + 1;
  const plans: WritePlan[] = [];
  const stored: (FoundVersion | undefined)[] = [];
  for (const key of [...record.keys].sort()) {
    const found = await findVersion(state, key, state.revision);
    stored.push(found);
    plans.push(
      found?.stored.kind === 'value'
        ? { result: { type: 'delete', key, conditionHeld: true, deleted: true }, store: leaseTombstone }
        : { result: { type: 'delete', key, conditionHeld: false, deleted: false } },
    );
  }
  const outcome = outcomeOfPlans(state, plans, stored, newRevision);
  const leaseChange = state.leases.planRevoke(state.layout, command.lease);
  return { ...outcome, operations: [...outcome.operations, ...leaseChange.operations], leaseChange };
}

/**
 * Removes keys that have expired at the entry's time (the replicated clock): a tombstone for
 * each key whose newest version is a value with expiresAtMs <= nowMs, all at one new revision.
 * Keys rewritten, extended or deleted since the leader proposed it are left alone. Its cost is
 * one lookup per named key (at most maxBatchOps): it never scans the partition.
 */
async function decideExpire(state: MvccState, command: ExpireCommand, nowMs: number): Promise<Outcome> {
  const newRevision = state.revision + 1;
  const plans: WritePlan[] = [];
  const stored: (FoundVersion | undefined)[] = [];
  for (const key of command.keys) {
    checkOwnsKey(state, key);
    const found = await findVersion(state, key, state.revision);
    stored.push(found);
    const expiresAtMs = found?.stored.kind === 'value' ? found.stored.expiresAtMs : undefined;
    const expired = expiresAtMs !== undefined && expiresAtMs <= nowMs;
    plans.push(
      expired
        ? { result: { type: 'delete', key, conditionHeld: true, deleted: true }, store: expiredTombstone }
        : { result: { type: 'delete', key, conditionHeld: false, deleted: false } },
    );
  }
  // An expired key leaves its lease.
  const moves = plans.flatMap((plan) => (plan.store === undefined ? [] : [{ key: plan.result.key, lease: undefined }]));
  return withLeaseMoves(state, outcomeOfPlans(state, plans, stored, newRevision), moves);
}

/** The outcome of planned writes whose conditions were checked: their versions, usage and cache updates. */
function outcomeOfPlans(state: MvccState, plans: readonly WritePlan[], stored: readonly (FoundVersion | undefined)[], newRevision: number): Outcome {
  const writes = plans.map((plan) => plan.result);
  const operations: WriteOperation[] = [];
  const usage = new Map<string, TenantUsageCount>();
  const storedVersions: Array<{ key: string; stored: StoredVersion }> = [];
  for (const [index, plan] of plans.entries()) {
    if (plan.store === undefined) continue;
    storedVersions.push({ key: plan.result.key, stored: plan.store });
    const keyBytes = utf8ByteLength(plan.result.key);
    const before = stored[index]?.stored;
    const tenant = tenantOfInternalKey(plan.result.key);
    // The newest version becomes history: a value moves its bytes from live to history; a
    // tombstone was history already. The new version is live when a value, history when not.
    if (before?.kind === 'value') addUsage(usage, tenant, -1, -(keyBytes + before.value.length), keyBytes + before.value.length);
    if (plan.store.kind === 'value') addUsage(usage, tenant, 1, keyBytes + plan.store.value.length);
    else addUsage(usage, tenant, 0, 0, keyBytes);
    operations.push({
      type: 'put',
      key: state.layout.versionKey(plan.result.key, newRevision),
      value: encodeVersionRecord(plan.store),
    });
  }
  if (operations.length === 0) return { applied: true, writes, operations };
  return { applied: true, writes, operations, newRevision, usage, stored: storedVersions };
}

function withoutCurrent(result: WriteResult): WriteResult {
  if (result.current === undefined && result.counter === undefined && result.deleted !== true) return result;
  const { current: _current, counter: _counter, ...rest } = result;
  return { ...rest, ...(result.type === 'delete' && { deleted: false }) };
}
