/**
 * Range changes of a partition (issue 19), each applied at one entry of the partition's log in
 * ONE synced batch, and each answering a result its caller (src/node/apply/split-apply.ts,
 * merge-apply.ts) acts on:
 * - split: the keys of [mid, end) move to a new partition in the same engine (split-plan.ts);
 * - freeze: the right partition of a merge stops applying and waits to be merged;
 * - merge: the frozen right partition folds into its left neighbour (merge-plan.ts).
 * Each is decided from the entry and replicated state only, so every replica agrees; a refusal
 * changes nothing but the applied index. A merge tells the watch hook of both sides about their
 * histories' reset (MvccState.resetListener) in the step that moves their in-memory state, as an
 * import does: a result handed back to the caller would arrive after the awaits that follow, and
 * a reader could see the merged revision first.
 */
import assert from 'node:assert/strict';
import { AtollError } from '../errors.js';
import { defaultBucketHash } from '../keys/bucket-hash.js';
import { encodeUint64BE } from '../storage/bytes.js';
import type { WriteOperation } from '../storage/storage-engine.js';
import { encodeAppliedRecord } from './applied-record.js';
import { commit, emptyOutcome, failedOutcome } from './commit.js';
import { DedupTable, emptyDedupState } from './dedup-table.js';
import { planMergeMove } from './merge-plan.js';
import { assertNowMs, type MvccState } from './mvcc-state.js';
import { hashRangeOf } from './ownership.js';
import { encodeFreeze, encodeOwnedRange } from './range-records.js';
import { keyInHashRange, planSplitMove } from './split-plan.js';

/**
 * Applies a split entry at `context.index` (issue 19): the keys of [mid, end) of this partition's
 * range move to `target`, a new, empty partition in the same engine, which starts at the same
 * index, time and revision with range [mid, end) (split-plan.ts says what moves and what is
 * copied). This partition keeps [start, mid) and from then on refuses the rest with
 * PARTITION_MOVED. Everything lands in ONE synced batch with `alsoWrite` (the new group's initial
 * Raft state): a crash leaves the whole split or none of it, and the entry is applied again.
 * The outcome depends only on the entry and the replicated state, so every replica agrees. A
 * refused split (SPLIT_REFUSED: mid not strictly inside the range, or a leased key would move)
 * changes nothing but the applied index, and is returned as `refused`; so does a refusal the
 * caller decided from replicated state (`target` is then absent).
 */
export async function applySplit(
  state: MvccState,
  target: MvccState | undefined,
  context: { readonly index: number; readonly nowMs: number; readonly mid: number; readonly refusal?: AtollError },
  alsoWrite: readonly WriteOperation[] = [],
): Promise<{ readonly refused?: AtollError; readonly movedKeys: number; readonly movedVersions: number }> {
  assert(Number.isSafeInteger(context.index) && context.index >= 1, 'index must be a positive safe integer');
  assertNowMs(context.nowMs);
  assert(!state.needsSnapshot && target?.needsSnapshot !== true, 'split on a partition whose snapshot import did not finish');
  assert(target === undefined ? context.refusal !== undefined : target !== state && target.engine === state.engine, 'a split moves keys within one engine');
  const range = hashRangeOf(state);
  assert(range !== undefined && (target === undefined || target.partition !== undefined), 'a split needs partitioned stores');
  if (context.index <= state.appliedIndex) return { movedKeys: 0, movedVersions: 0 };
  // The target is new: nothing applied, nothing stored (asserted, not refused: the node made it).
  assert.equal(target?.appliedIndex ?? 0, 0, 'a split target starts empty');
  assert.equal(target?.revision ?? 0, 0, 'a split target starts empty');
  const hash = state.partition?.hash ?? defaultBucketHash;
  const moved = { start: context.mid, end: range.end };
  const nowMs = Math.max(context.nowMs, state.appliedTimeMs);
  state.importing = true;
  if (state.compactionStepInFlight !== undefined) await state.compactionStepInFlight.catch(() => undefined);
  state.enterExclusive();
  target?.enterExclusive();
  try {
    let refusal: AtollError | undefined = context.refusal;
    if (refusal !== undefined || target === undefined) {
      // Decided by the caller from replicated state.
    } else if (state.frozen !== undefined) {
      refusal = new AtollError('SPLIT_REFUSED', `partition ${state.partition?.id ?? '?'} is frozen for a merge`, { reason: 'in-progress' });
    } else if (!Number.isInteger(context.mid) || context.mid <= range.start || context.mid >= range.end) {
      refusal = new AtollError('SPLIT_REFUSED', `split point ${context.mid} is not strictly inside [${range.start}, ${range.end})`, { reason: 'bad-split-point' });
    } else if (state.leases.all().some((lease) => [...lease.keys].some((key) => keyInHashRange(key, moved, hash)))) {
      refusal = new AtollError('SPLIT_REFUSED', 'a key attached to a lease would move: revoke the lease or wait for it to expire', { reason: 'leased-keys' });
    }
    if (refusal !== undefined || target === undefined) {
      refusal ??= new AtollError('SPLIT_REFUSED', 'no target', { reason: 'no-target' });
      await commit(state, failedOutcome(refusal), context.index, nowMs);
      return { refused: refusal, movedKeys: 0, movedVersions: 0 };
    }
    const plan = await planSplitMove(state.engine, state.layout, target.layout, moved, hash);
    const kept = { start: range.start, end: context.mid };
    const appliedHere = encodeAppliedRecord({ appliedIndex: context.index, appliedTimeMs: nowMs, revision: state.revision });
    const operations: WriteOperation[] = [
      ...(state.testBugs.splitKeepsMovedKeys === true ? plan.operations.filter((op) => op.type !== 'del') : plan.operations),
      { type: 'put', key: state.layout.appliedKey, value: appliedHere },
      { type: 'put', key: state.layout.rangeKey, value: encodeOwnedRange(kept) },
      { type: 'put', key: target.layout.appliedKey, value: appliedHere },
      { type: 'put', key: target.layout.compactedRevisionKey, value: encodeUint64BE(state.compactedRevision) },
      { type: 'put', key: target.layout.rangeKey, value: encodeOwnedRange(moved) },
      ...alsoWrite,
    ];
    if (state.legacyAppliedRecords) for (const key of [state.layout.appliedIndexKey, state.layout.appliedTimeKey, state.layout.revisionKey]) operations.push({ type: 'del', key });
    await state.engine.write(operations, { sync: true });
    // The in-memory state follows the batch: both sides rebuild theirs from what is stored.
    state.legacyAppliedRecords = false;
    state.appliedIndex = context.index;
    state.appliedTimeMs = nowMs;
    state.ownedRange = kept;
    target.appliedIndex = context.index;
    target.appliedTimeMs = nowMs;
    target.revision = state.revision;
    target.compactedRevision = state.compactedRevision;
    target.ownedRange = moved;
    target.dedup.adopt(await DedupTable.loadState(state.engine, target.layout));
    // A storage compaction pass in progress scanned the store before the split: it starts over
    // (as after an import). Kept, its next step failed its epoch check, and so did every later one.
    state.epoch++;
    target.epoch++;
    state.compactionPass = undefined;
    target.compactionPass = undefined;
    state.cache?.clear(state.cacheStoreId);
    target.cache?.clear(target.cacheStoreId);
    await state.rebuildKeyState();
    await target.rebuildKeyState();
    return { movedKeys: plan.movedKeys, movedVersions: plan.movedVersions };
  } finally {
    state.exclusive = false;
    if (target !== undefined) target.exclusive = false;
    state.importing = false;
  }
}

/**
 * Applies a merge at `context.index` of this partition's log (issue 19, the inverse of
 * applySplit): `right`, the partition whose range starts where this one's ends, frozen by the
 * caller at its final applied index (nothing applies to it any more), is folded into this one
 * (merge-plan.ts says what moves, what is rewritten and what is deleted). This partition then
 * owns [start, right's end), at revision max(both), compaction floor max(both) and clock
 * max(both, the entry's), and `right` is left empty and inert (mergedInto: its reads answer
 * PARTITION_MOVED, an apply on it is a programmer error). Everything lands in ONE synced batch
 * with `alsoWrite` (the caller deletes right's Raft state there): a crash leaves the whole
 * merge or none of it, and the entry is applied again. In-flight snapshot exports of either
 * side are failed (epoch), as an import fails them. The caller must not run an apply of
 * `right` concurrently (the node loop applies groups in parallel: the applier has to wait for
 * right's apply of the Ready in flight); the exclusivity assertion stops the node if it does.
 *
 * The outcome depends only on the entry, this partition's replicated state and right's state at
 * its freeze index, so every replica agrees. Refusals (MERGE_REFUSED, changing nothing but this
 * partition's applied index): 'not-adjacent' when right's range does not start at this range's
 * end, 'leased-keys' while right holds a lease (a lease id names its partition), and any refusal
 * the caller decided from replicated state (`right` is then absent).
 */
export async function applyMerge(
  state: MvccState,
  right: MvccState | undefined,
  context: { readonly index: number; readonly nowMs: number; readonly freezeIndex: number; readonly refusal?: AtollError },
  alsoWrite: readonly WriteOperation[] = [],
): Promise<{ readonly refused?: AtollError; readonly movedKeys: number; readonly movedVersions: number; readonly droppedDedupEntries: number }> {
  assert(Number.isSafeInteger(context.index) && context.index >= 1, 'index must be a positive safe integer');
  assertNowMs(context.nowMs);
  assert(!state.needsSnapshot && right?.needsSnapshot !== true, 'merge on a partition whose snapshot import did not finish');
  assert(right === undefined ? context.refusal !== undefined : right !== state && right.engine === state.engine, 'a merge moves keys within one engine');
  assert(state.mergedInto === undefined && right?.mergedInto === undefined, 'a merged-away partition takes no part in another merge');
  const range = hashRangeOf(state);
  assert(range !== undefined && (right === undefined || right.partition !== undefined), 'a merge needs partitioned stores');
  const nothing = { movedKeys: 0, movedVersions: 0, droppedDedupEntries: 0 };
  if (context.index <= state.appliedIndex) return nothing;
  const nowMs = Math.max(context.nowMs, state.appliedTimeMs, right?.appliedTimeMs ?? 0);
  state.importing = true;
  if (right !== undefined) right.importing = true;
  if (state.compactionStepInFlight !== undefined) await state.compactionStepInFlight.catch(() => undefined);
  if (right?.compactionStepInFlight !== undefined) await right.compactionStepInFlight.catch(() => undefined);
  state.enterExclusive();
  right?.enterExclusive();
  try {
    let refusal = context.refusal;
    const rightRange = right === undefined ? undefined : hashRangeOf(right);
    if (refusal !== undefined || right === undefined) {
      // Decided by the caller from replicated state.
    } else if (right.frozen === undefined || right.frozen.into !== state.partition?.id || right.frozen.index !== context.freezeIndex) {
      refusal = new AtollError('MERGE_REFUSED', `partition ${right.partition?.id ?? '?'} is not frozen into partition ${state.partition?.id ?? '?'} at index ${context.freezeIndex}`, { reason: 'not-frozen' });
    } else if (rightRange === undefined || rightRange.start !== range.end) {
      refusal = new AtollError('MERGE_REFUSED', `partition ${right.partition?.id ?? '?'} does not start where partition ${state.partition?.id ?? '?'} ends (${range.end})`, { reason: 'not-adjacent' });
    } else if (right.leases.all().length > 0) {
      refusal = new AtollError('MERGE_REFUSED', `partition ${right.partition?.id ?? '?'} holds leases: revoke them or wait for them to expire`, { reason: 'leased-keys' });
    }
    if (refusal !== undefined || right === undefined || rightRange === undefined) {
      refusal ??= new AtollError('MERGE_REFUSED', 'no right partition', { reason: 'no-right' });
      await commit(state, failedOutcome(refusal), context.index, nowMs);
      return { refused: refusal, ...nothing };
    }
    // The caller brought right through its freeze (merge-apply.ts); past it nothing changes.
    assert(right.appliedIndex >= context.freezeIndex, 'a merge reads the right partition at or past its freeze index');
    const plan = await planMergeMove(state.engine, { layout: state.layout, dedup: state.dedup.currentState() }, { layout: right.layout, dedup: right.dedup.currentState() }, context.index);
    const merged = { start: range.start, end: rightRange.end };
    const revision = Math.max(state.revision, right.revision);
    const compactedRevision = Math.max(state.compactedRevision, right.compactedRevision);
    const operations: WriteOperation[] = [
      ...plan.operations,
      { type: 'put', key: state.layout.appliedKey, value: encodeAppliedRecord({ appliedIndex: context.index, appliedTimeMs: nowMs, revision }) },
      { type: 'put', key: state.layout.compactedRevisionKey, value: encodeUint64BE(compactedRevision) },
      { type: 'put', key: state.layout.rangeKey, value: encodeOwnedRange(merged) },
      ...alsoWrite,
    ];
    if (state.legacyAppliedRecords) for (const key of [state.layout.appliedIndexKey, state.layout.appliedTimeKey, state.layout.revisionKey]) operations.push({ type: 'del', key });
    // Exports of either side that read on would mix the states before and after: they fail.
    state.epoch++;
    right.epoch++;
    state.compactionPass = undefined;
    right.compactionPass = undefined;
    await state.engine.write(operations, { sync: true });
    // The in-memory state follows the batch.
    state.legacyAppliedRecords = false;
    state.appliedIndex = context.index;
    state.appliedTimeMs = nowMs;
    state.revision = revision;
    state.compactedRevision = compactedRevision;
    state.ownedRange = merged;
    state.dedup.adopt(await DedupTable.loadState(state.engine, state.layout));
    // Invariant (merge): the merged dedup queue is exactly what the plan wrote.
    assert.equal(state.dedup.count, plan.dedup.count, 'the merged dedup queue is what the plan wrote');
    right.mergedInto = state.partition?.id ?? 0;
    // Both histories changed without a commit: the left one gained the right's versions at
    // revisions its listener may already hold, the right one is gone.
    state.resetListener?.(revision, 'merge');
    right.resetListener?.(right.revision, 'merged-away');
    right.dedup.adopt(emptyDedupState);
    state.cache?.clear(state.cacheStoreId);
    right.cache?.clear(right.cacheStoreId);
    await state.rebuildKeyState();
    await right.rebuildKeyState();
    return { movedKeys: plan.movedKeys, movedVersions: plan.movedVersions, droppedDedupEntries: plan.droppedDedupEntries };
  } finally {
    state.exclusive = false;
    state.importing = false;
    if (right !== undefined) {
      right.exclusive = false;
      right.importing = false;
    }
  }
}

/**
 * Applies a merge freeze at `context.index` (issue 19; merge-entry.ts): from this entry on the
 * partition applies nothing (every later entry is refused with PARTITION_MOVED, unrecorded),
 * serves no read, cannot split, and waits for partition `into`, its left neighbour, to merge it
 * at this index. A second freeze into the same partition changes nothing but the applied index
 * (the merge admin may run again after a crash) and answers the first freeze's index. Refusals
 * (MERGE_REFUSED, nothing but the applied index changes): 'frozen' when frozen into another
 * partition, 'leased-keys' while it holds a lease, and the caller's (`context.refusal`, decided
 * from replicated state, e.g. 'in-progress' while the group has learners).
 */
export async function applyFreeze(
  state: MvccState,
  context: { readonly index: number; readonly nowMs: number; readonly into: number; readonly refusal?: AtollError },
): Promise<{ readonly refused?: AtollError; readonly freezeIndex: number }> {
  assert(Number.isSafeInteger(context.index) && context.index >= 1, 'index must be a positive safe integer');
  assertNowMs(context.nowMs);
  assert(Number.isInteger(context.into) && context.into >= 0 && context.into < 2 ** 32, 'a freeze names a partition id');
  assert(!state.needsSnapshot && state.mergedInto === undefined, 'freeze on a partition that is not live');
  if (context.index <= state.appliedIndex) return { freezeIndex: state.frozen?.index ?? 0 };
  const nowMs = Math.max(context.nowMs, state.appliedTimeMs);
  state.enterExclusive();
  try {
    const frozen = state.frozen;
    let refusal = context.refusal;
    if (refusal === undefined && frozen !== undefined && frozen.into !== context.into) {
      refusal = new AtollError('MERGE_REFUSED', `partition ${state.partition?.id ?? '?'} is frozen for a merge into partition ${frozen.into}`, { reason: 'frozen', mergedInto: frozen.into });
    } else if (refusal === undefined && frozen === undefined && state.leases.all().length > 0) {
      refusal = new AtollError('MERGE_REFUSED', `partition ${state.partition?.id ?? '?'} holds leases: revoke them or wait for them to expire`, { reason: 'leased-keys' });
    }
    if (refusal !== undefined) {
      await commit(state, failedOutcome(refusal), context.index, nowMs);
      return { refused: refusal, freezeIndex: 0 };
    }
    if (frozen !== undefined) {
      await commit(state, emptyOutcome, context.index, nowMs);
      return { freezeIndex: frozen.index };
    }
    const freeze = { into: context.into, index: context.index };
    await commit(state, { ...emptyOutcome, operations: [{ type: 'put', key: state.layout.freezeKey, value: encodeFreeze(freeze) }] }, context.index, nowMs);
    state.frozen = freeze;
    // Reads that began before the freeze must not answer after it: the keys may move at any time.
    state.epoch++;
    state.compactionPass = undefined;
    state.cache?.clear(state.cacheStoreId);
    return { freezeIndex: freeze.index };
  } finally {
    state.exclusive = false;
  }
}
