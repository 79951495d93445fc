/**
 * Applying one committed log entry, with exactly-once deduplication of client retries (Raft
 * thesis §6.3): the entry's request id is checked against the dedup table (dedup-table.ts), a
 * recorded id answers its recorded result, an unknown one is decided (write-decide.ts) and its
 * outcome recorded in the same batch commit.ts writes.
 */
import assert from 'node:assert/strict';
import { AtollError } from '../errors.js';
import type { ApplyContext, ApplyResult, Command, TxnCommand } from './commands.js';
import { commit, emptyOutcome, failedOutcome, type Outcome } from './commit.js';
import { encodeDedupEntry, type RecordedResult } from './dedup-record.js';
import type { DedupPlan, FoundResult } from './dedup-table.js';
import { frozenError } from './mvcc-errors.js';
import { assertNowMs, type MvccState } from './mvcc-state.js';
import { requestIdCreatedAtMs, requestIdMaxAheadMs } from './request-id.js';
import { validateRequestId } from './validate-command.js';
import { decide } from './write-decide.js';

/** What to do about an entry's request id. */
type DedupRequest =
  | { readonly kind: 'none' }
  | { readonly kind: 'invalid'; readonly error: AtollError }
  | { readonly kind: 'deduplicated'; readonly requestId: string };

const noDedup: DedupRequest = Object.freeze({ kind: 'none' });

/** A well-formed transaction's snapshot time, else 0 (a malformed command fails in decide). */
function txnSnapshotTimeOf(command: Command): number {
  const time = (command as { type?: unknown; snapshotTimeMs?: unknown } | null)?.type === 'txn' ? (command as TxnCommand).snapshotTimeMs : undefined;
  return typeof time === 'number' && Number.isSafeInteger(time) && time >= 0 ? time : 0;
}

/** MvccStore.apply (see there). */
export async function apply(state: MvccState, command: Command, context: ApplyContext): Promise<ApplyResult> {
  assert(Number.isSafeInteger(context.index) && context.index >= 1, 'index must be a positive safe integer');
  assertNowMs(context.nowMs);
  state.assertCanApply();
  if (context.index <= state.appliedIndex) {
    return { index: context.index, revision: state.revision, applied: false, replayed: true, duplicate: false, writes: [] };
  }
  state.enterExclusive();
  try {
    if (state.frozen !== undefined) {
      // Frozen for a merge: refused, and NOT recorded for deduplication (a recorded refusal would
      // travel into the merged partition and answer the retry there); only the applied index moves.
      const failed = failedOutcome(frozenError(state));
      await commit(state, failed, context.index, Math.max(context.nowMs, state.appliedTimeMs));
      return resultOf(state, context.index, failed);
    }
    // The entry's time on the partition clock: never before the previous entry's, nor before a
    // transaction's snapshot (the commit comes after it). Every replica computes the same.
    const nowMs = Math.max(context.nowMs, state.appliedTimeMs, txnSnapshotTimeOf(command));
    return await applyNewEntry(state, command, { ...context, nowMs });
  } finally {
    state.exclusive = false;
  }
}

async function applyNewEntry(state: MvccState, command: Command, context: ApplyContext): Promise<ApplyResult> {
  const request = dedupRequestOf(state, command, context.requestId);
  if (request.kind === 'invalid') {
    const failed = failedOutcome(request.error);
    await commit(state, failed, context.index, context.nowMs);
    return resultOf(state, context.index, failed);
  }
  if (request.kind === 'deduplicated') {
    const found = await state.dedup.find(request.requestId);
    if (found !== undefined) return answerDuplicate(state, found, context.index, context.nowMs);
    const refused = refusedRequestId(state, request.requestId, context.nowMs);
    if (refused !== undefined) {
      const failed = failedOutcome(refused);
      await commit(state, failed, context.index, context.nowMs);
      return resultOf(state, context.index, failed);
    }
  }
  const decided = await decide(state, command, context.nowMs, context.index);
  // A transaction that lost a conflict changed nothing and is not recorded, so a retry with the
  // same id (a script re-run at a newer snapshot) can still commit exactly once.
  const record = request.kind === 'deduplicated' && decided.error?.code !== 'TXN_CONFLICT';
  const { outcome, dedupPlan } =
    record
      ? await planDedupRecord(state, request.requestId, context.index, decided)
      : { outcome: decided, dedupPlan: undefined };
  await commit(state, outcome, context.index, context.nowMs, dedupPlan);
  return resultOf(state, context.index, outcome);
}

/** The result of an entry just committed with `outcome`. */
function resultOf(state: MvccState, index: number, outcome: Outcome): ApplyResult {
  return {
    index,
    revision: state.revision,
    applied: outcome.applied,
    replayed: false,
    duplicate: false,
    writes: outcome.writes,
    ...(outcome.error !== undefined && { error: outcome.error }),
    ...(outcome.note !== undefined && { note: outcome.note }),
    ...(outcome.leaseId !== undefined && { leaseId: outcome.leaseId }),
  };
}

/** Compact is idempotent and not a client request, so its request id, if any, is ignored. */
function dedupRequestOf(state: MvccState, command: Command, requestId: string | undefined): DedupRequest {
  if (requestId === undefined || (command as { type?: unknown } | null)?.type === 'compact') return noDedup;
  try {
    validateRequestId(requestId);
  } catch (error) {
    if (!(error instanceof AtollError)) throw error;
    return { kind: 'invalid', error };
  }
  return state.dedupDisabled ? noDedup : { kind: 'deduplicated', requestId };
}

/**
 * Why an unrecorded request id must not apply, if it must not. Invariant (exactly-once): a
 * timestamped id that was ever recorded is either found (its result is live) or evicted, and
 * eviction raised the expiry mark to at least its creation time; so an unrecorded id at or
 * below the mark is refused, and a recorded id never applies twice. Decided from the entry
 * (its id and nowMs) and the replicated dedup state only, so every replica decides alike.
 */
function refusedRequestId(state: MvccState, requestId: string, nowMs: number): AtollError | undefined {
  const createdAtMs = requestIdCreatedAtMs(requestId);
  if (createdAtMs === undefined) return undefined;
  if (createdAtMs > nowMs + requestIdMaxAheadMs) {
    return new AtollError(
      'INVALID_ARGUMENT',
      `the request id was created at ${createdAtMs}, more than ${requestIdMaxAheadMs} ms after the partition's time ${nowMs}: the client's clock is ahead; use a new id from a correct clock`,
      { createdAtMs, partitionNowMs: nowMs, maxAheadMs: requestIdMaxAheadMs },
    );
  }
  const expiredThroughMs = state.dedup.expiredThroughMs;
  if (createdAtMs <= expiredThroughMs) {
    return new AtollError(
      'REQUEST_ID_EXPIRED',
      `the request id was created at ${createdAtMs}, no later than the newest id the partition no longer remembers (${expiredThroughMs}): ` +
        'it may have applied before and is not applied again; find out whether it did, or send a new request with a new id',
      { createdAtMs, expiredThroughMs },
    );
  }
  return undefined;
}

async function answerDuplicate(state: MvccState, found: FoundResult, index: number, nowMs: number): Promise<ApplyResult> {
  await commit(state, emptyOutcome, index, nowMs);
  const { revision, applied, error, writes, note } = found.result;
  return {
    index,
    revision,
    applied,
    replayed: false,
    duplicate: true,
    originalIndex: found.index,
    writes,
    ...(error !== undefined && { error }),
    ...(note !== undefined && { note }),
  };
}

/**
 * Plans recording the outcome under the request id. An outcome too large to record (a batch
 * returning many large previous values) is replaced by a RESOURCE_EXHAUSTED failure, which is
 * recorded instead: every replica computes the same size, so every replica fails it alike.
 */
async function planDedupRecord(state: MvccState, requestId: string, index: number, decided: Outcome): Promise<{ outcome: Outcome; dedupPlan: DedupPlan }> {
  let outcome = decided;
  const createdBeforeMs = state.dedup.newestCreatedMs;
  let encodedEntry = encodeDedupEntry({ requestId, createdBeforeMs, result: recordedResultOf(state, outcome) });
  if (encodedEntry.length > state.maxDedupEntryBytes) {
    outcome = failedOutcome(
      new AtollError('RESOURCE_EXHAUSTED', `the result of a request with a request id must encode in at most ${state.maxDedupEntryBytes} bytes`, {
        resultBytes: encodedEntry.length,
        maxResultBytes: state.maxDedupEntryBytes,
      }),
    );
    encodedEntry = encodeDedupEntry({ requestId, createdBeforeMs, result: recordedResultOf(state, outcome) });
    assert(encodedEntry.length <= state.maxDedupEntryBytes);
  }
  const dedupPlan = await state.dedup.planRecord({
    requestId,
    index,
    encodedEntry,
    removeEvicted: state.exportsInFlight === 0,
    removalLimit: state.limits.compactionBatchOps,
  });
  return { outcome, dedupPlan };
}

function recordedResultOf(state: MvccState, outcome: Outcome): RecordedResult {
  const revision = outcome.newRevision ?? state.revision;
  return {
    revision,
    applied: outcome.applied,
    writes: outcome.writes,
    ...(outcome.error !== undefined && { error: outcome.error }),
    ...(outcome.note !== undefined && { note: outcome.note }),
  };
}
