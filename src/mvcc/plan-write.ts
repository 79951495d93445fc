/**
 * The decision for one write, as a pure function of the write, the key's live version (if any),
 * the revision the write would get and the command's nowMs. Keeping it free of storage makes
 * the key model's rules readable in one place:
 *
 * - A key is live when its newest version is a value whose expiry is still in the future
 *   (expiresAtMs > nowMs). Deleted, missing and expired keys are all "absent" to conditions.
 * - Writing a live key keeps its createRevision and adds 1 to its version; writing an absent key
 *   starts over: createRevision is the new revision, version is 1.
 * - A plain put clears the expiry unless keepTtl; increment keeps it unless ttlMs; extend sets it.
 */
import { AtollError } from '../errors.js';
import type { KeyVersion, WriteOp, WriteResult } from './commands.js';
import { formatInt64, isInt64, parseCanonicalInt64 } from './int64-text.js';
import { tombstone, type StoredVersion } from './version-record.js';
import { equalBytes } from '../storage/bytes.js';
import { fenceAfterPut } from './fence.js';

export interface WritePlan {
  /** The outcome to report, without `current` when nothing is written. */
  readonly result: WriteResult;
  /** The version to store at the new revision, when the write changes something. */
  readonly store?: StoredVersion;
}

interface PlanInput {
  readonly op: WriteOp;
  /** The key's live version, or undefined when it is absent. */
  readonly live: KeyVersion | undefined;
  readonly newRevision: number;
  readonly nowMs: number;
}

function nextVersion(live: KeyVersion | undefined, newRevision: number): { createRevision: number; version: number } {
  return live === undefined
    ? { createRevision: newRevision, version: 1 }
    : { createRevision: live.createRevision, version: live.version + 1 };
}

function storedValue(
  live: KeyVersion | undefined,
  newRevision: number,
  value: Uint8Array,
  expiresAtMs: number | undefined,
  fence: number | undefined = live?.fence,
): StoredVersion {
  const { createRevision, version } = nextVersion(live, newRevision);
  const base: StoredVersion =
    expiresAtMs === undefined
      ? { kind: 'value', createRevision, version, value }
      : { kind: 'value', createRevision, version, value, expiresAtMs };
  return fence === undefined ? base : { ...base, fence };
}

function currentOf(key: string, newRevision: number, stored: StoredVersion): KeyVersion | undefined {
  if (stored.kind !== 'value') return undefined;
  const { createRevision, version, value, expiresAtMs, fence } = stored;
  const base: KeyVersion =
    expiresAtMs === undefined
      ? { key, value, createRevision, modRevision: newRevision, version }
      : { key, value, createRevision, modRevision: newRevision, version, expiresAtMs };
  return fence === undefined ? base : { ...base, fence };
}

/** The modRevision conditions compare against: 0 for an absent key. */
function modRevisionOf(live: KeyVersion | undefined): number {
  return live?.modRevision ?? 0;
}

function holdsCommonConditions(
  op: { ifModRevision?: number; ifValue?: Uint8Array },
  live: KeyVersion | undefined,
): boolean {
  if (op.ifModRevision !== undefined && op.ifModRevision !== modRevisionOf(live)) return false;
  if (op.ifValue !== undefined && (live === undefined || !equalBytes(live.value, op.ifValue))) return false;
  return true;
}

/** Plans one write; throws NOT_INTEGER or OVERFLOW for an increment that cannot be done. */
export function planWrite({ op, live, newRevision, nowMs }: PlanInput): WritePlan {
  const base = { type: op.type, key: op.key };
  switch (op.type) {
    case 'put': {
      const conditionHeld =
        holdsCommonConditions(op, live) &&
        !(op.ifAbsent === true && live !== undefined) &&
        !(op.ifPresent === true && live === undefined);
      const previous = op.returnPrevious === true ? { previous: live ?? null } : {};
      if (!conditionHeld) return { result: { ...base, conditionHeld, ...previous } };
      // Checked after the other conditions: a put whose condition failed reports that, not FENCED.
      const fence = fenceAfterPut(op.key, op.ifFence, live);
      const expiresAtMs = op.ttlMs !== undefined ? nowMs + op.ttlMs : op.keepTtl === true ? live?.expiresAtMs : undefined;
      const store = storedValue(live, newRevision, op.value, expiresAtMs, fence);
      return { result: { ...base, conditionHeld, current: currentOf(op.key, newRevision, store)!, ...previous }, store };
    }
    case 'delete': {
      const conditionHeld = holdsCommonConditions(op, live);
      const previous = op.returnPrevious === true ? { previous: live ?? null } : {};
      if (!conditionHeld) return { result: { ...base, conditionHeld, deleted: false, ...previous } };
      // Deleting an absent key changes nothing, so it writes nothing and creates no revision.
      if (live === undefined) return { result: { ...base, conditionHeld, deleted: false, ...previous } };
      return { result: { ...base, conditionHeld, deleted: true, ...previous }, store: tombstone };
    }
    case 'increment': {
      const counter = incrementedCounter(op.key, live, op.delta);
      const expiresAtMs = op.ttlMs !== undefined ? nowMs + op.ttlMs : live?.expiresAtMs;
      const store = storedValue(live, newRevision, formatInt64(counter), expiresAtMs);
      return { result: { ...base, conditionHeld: true, current: currentOf(op.key, newRevision, store)!, counter }, store };
    }
    case 'extend': {
      if (live === undefined) return { result: { ...base, conditionHeld: false } };
      const store = storedValue(live, newRevision, live.value, nowMs + op.ttlMs);
      return { result: { ...base, conditionHeld: true, current: currentOf(op.key, newRevision, store)! }, store };
    }
  }
}

function incrementedCounter(key: string, live: KeyVersion | undefined, delta: bigint): bigint {
  const current = live === undefined ? 0n : parseCanonicalInt64(live.value);
  if (current === undefined) {
    throw new AtollError('NOT_INTEGER', 'the stored value is not a signed 64-bit decimal integer', { key });
  }
  const sum = current + delta;
  if (!isInt64(sum)) {
    throw new AtollError('OVERFLOW', 'the increment would take the counter outside the signed 64-bit range', {
      key,
      current: current.toString(),
      delta: delta.toString(),
    });
  }
  return sum;
}
