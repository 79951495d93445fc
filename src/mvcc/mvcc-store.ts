/**
 * The MVCC state machine of one partition: the Raft group applies committed log entries to it in
 * index order, and reads are served from it at the latest or a past revision.
 *
 * It is pure logic over a StorageEngine: no clock (every command carries the leader's nowMs, every
 * read the reader's), no randomness, no network, no file system. Given the same entries, every
 * replica writes the same bytes.
 *
 * Time: the partition has one replicated, monotonic clock, `appliedTimeMs`. Each entry is applied
 * at max(its proposer's nowMs, the previous entry's time) (and, for a transaction, its snapshot
 * time), expiry is decided at that time, and the time is stored with the applied index in the
 * same batch, so it survives restarts and travels in snapshots. A leader whose clock is behind
 * the previous leader's therefore cannot make an expired key live again through apply; readers
 * use max(their clock, appliedTimeMs) for the same reason (node/kv-executor.ts).
 *
 * Durability: each entry's versions, the partition revision and the applied index are written in
 * one atomic batch, so after a crash the store is exactly the state after some applied index and
 * Raft replays from there. Batches are not synced by default: the Raft log is the durable record,
 * and a lost apply is redone by replay. (Raft must therefore not discard log entries past what a
 * synced write or a snapshot has made durable here; `syncApply` trades throughput for that.)
 *
 * Concurrency: one apply or snapshot import at a time (asserted); reads, snapshot exports and
 * physical compaction steps (compactStorageStep) may run alongside applies; an import waits for
 * the compaction step in flight. A read fixes its revision first and ignores newer
 * versions, and versions at a revision are never rewritten, so it sees one consistent state.
 *
 * Deduplication (exactly-once writes across client retries, Raft thesis §6.3): an entry applied
 * with a request id records its result in the same batch (dedup-table.ts); a later entry with
 * the same id is not applied again and gets that result back (`duplicate: true`). The record is
 * replicated state like the versions: it survives restarts, travels in snapshots, and is evicted
 * by apply order once `dedupWindow` newer ones exist, identically on every replica. A timestamped
 * request id (request-id.ts) that is unknown but created no later than the newest evicted one is
 * refused with REQUEST_ID_EXPIRED: it may have applied before, and it never applies a second time.
 */
import assert from 'node:assert/strict';
import { AtollError } from '../errors.js';
import { defaultBucketHash } from '../keys/bucket-hash.js';
import { encodeUint64BE } from '../storage/bytes.js';
import type { StorageEngine, WriteOperation } from '../storage/storage-engine.js';
import { encodeAppliedRecord } from './applied-record.js';
import { apply } from './apply.js';
import type { ApplyContext, ApplyResult, Command } from './commands.js';
import { commit, emptyOutcome, failedOutcome, setCommitListener } from './commit.js';
import type { StorageCompactionStep } from './compaction-pass.js';
import { compactStorage, compactStorageStep, type StorageCompactionResult } from './compactor.js';
import { DedupTable, defaultDedupWindow, emptyDedupState } from './dedup-table.js';
import type { LeaseRecord } from './lease-table.js';
import { planMergeMove } from './merge-plan.js';
import { assertNowMs, MvccState, type MvccStatus, type MvccStoreOptions, type RevisionResetReason, type StoredChange } from './mvcc-state.js';
import { hashRangeOf } from './ownership.js';
import { encodeFreeze, encodeOwnedRange } from './range-records.js';
import { changesSince, exists, get, getByPrefix, scanPartition, type GetResult, type PrefixPage, type PrefixReadOptions, type ReadOptions, type StoredChangeAt } from './reader.js';
import { checkedSnapshotHeader, snapshotCheck } from './snapshot-check.js';
import type { SnapshotHeader } from './snapshot-format.js';
import { discardInterruptedImport, exportSnapshot, importSnapshot, type ImportOptions } from './snapshot-io.js';
import { keyInHashRange, planSplitMove } from './split-plan.js';
import { dedupMemoryOf, dedupStatusOf, expiredKeysOf, keyIndexStatusOf, statusOf, storedKeyNamesOf, type DedupStatus } from './status.js';
import type { TenantUsageCount } from './tenant-usage.js';

export { defaultDedupWindow };
export type { DedupStatus, GetResult, ImportOptions, MvccStatus, MvccStoreOptions, PrefixPage, PrefixReadOptions, ReadOptions };
export type { RevisionResetReason, StorageCompactionResult, StorageCompactionStep, StoredChange, StoredChangeAt, TenantUsageCount };

export class MvccStore {
  /** The engine the store lives in (the state's; kept as a field for callers that reach for it). */
  private readonly engine: StorageEngine;

  private constructor(private readonly state: MvccState) {
    this.engine = state.engine;
  }

  /** Opens the partition's state from the engine (an empty partition when it has none yet). */
  static open(options: MvccStoreOptions): Promise<MvccStore> {
    return MvccState.open(options, (state) => new MvccStore(state));
  }

  /** Stored keys, live bytes and history bytes per tenant (see TenantUsageCount). */
  usageByTenant(): ReadonlyMap<string, Readonly<TenantUsageCount>> {
    return this.state.usage;
  }

  get appliedIndex(): number {
    return this.state.appliedIndex;
  }

  get revision(): number {
    return this.state.revision;
  }

  get compactedRevision(): number {
    return this.state.compactedRevision;
  }

  get needsSnapshot(): boolean {
    return this.state.needsSnapshot;
  }

  /** After open: the index of the snapshot whose import a crash interrupted, when the mark names it. */
  get interruptedImportIndex(): number | undefined {
    return this.state.interruptedImportIndex;
  }

  /**
   * The partition's replicated clock (Unix epoch ms): the time the last applied entry was applied
   * at. It never decreases, survives restarts and snapshot installs, and is identical on every
   * replica at the same applied index. Readers take max(their clock, this) as their time.
   */
  get appliedTimeMs(): number {
    return this.state.appliedTimeMs;
  }

  /** Keys whose newest version expired at `nowMs`, earliest first, for the leader's `expire` (status.ts expiredKeysOf). */
  expiredKeys(nowMs: number, max: number): string[] {
    return expiredKeysOf(this.state, nowMs, max);
  }

  /** A lease of the partition by local id, or undefined (never granted, revoked or expired). */
  lease(id: number): LeaseRecord | undefined {
    return this.state.leases.get(id);
  }

  /** Every lease of the partition, in grant order (the leader's lease keeper walks them). */
  allLeases(): LeaseRecord[] {
    return this.state.leases.all();
  }

  /** How many leases each tenant holds in the partition (published with its usage, for the lease quota). */
  leaseCountsByTenant(): ReadonlyMap<string, number> {
    return this.state.leases.countsByTenant();
  }

  status(): MvccStatus {
    return statusOf(this.state);
  }

  /** The key index's size and estimated bytes (key-index.ts), and whether the store uses it. */
  keyIndexStatus(): { keys: number; bytes: number; maxBytes: number; complete: boolean } {
    return keyIndexStatusOf(this.state);
  }

  /** The dedup table's in-memory read-ahead and eviction list, estimated bytes (dedup-table.ts). */
  dedupMemory(): { bytes: number; readAheadHeads: number } {
    return dedupMemoryOf(this.state);
  }

  dedupStatus(): DedupStatus {
    return dedupStatusOf(this.state);
  }

  /** Up to `max` stored key names from the key index, for choosing a split point (status.ts storedKeyNamesOf). */
  storedKeyNames(max: number): string[] {
    return storedKeyNamesOf(this.state, max);
  }

  // ---------------------------------------------------------------------------------------------
  // Applying log entries (apply.ts, write-decide.ts, txn-check.ts, commit.ts)

  /**
   * Applies one committed log entry. Entries must come in increasing index order; indexes may skip
   * (Raft entries that are not commands). An entry at or below the applied index was applied
   * before a restart and is ignored (`replayed: true`).
   *
   * apply never throws an AtollError: a committed entry must be consumed even when it fails, so a
   * failure (bad input, NOT_INTEGER, OVERFLOW, TXN_CONFLICT, ...) comes back in `result.error`,
   * and only the applied index moves. Call validateCommand (and validateRequestId) before
   * proposing so bad input fails early. Assertion errors (misuse, corruption) do throw.
   *
   * With `context.requestId`, the result is recorded in the same batch, failures included (a
   * retried compare-and-swap that failed fails again, it is not tried again) except a
   * transaction's TXN_CONFLICT, which changed nothing and may be retried; an entry whose id
   * is recorded returns that result with `duplicate: true`. A replay is still only a replay.
   * An unrecorded timestamped id created at or before the dedup expiry mark fails with
   * REQUEST_ID_EXPIRED, and one created more than requestIdMaxAheadMs after the entry's nowMs with
   * INVALID_ARGUMENT; both change nothing and record nothing.
   */
  apply(command: Command, context: ApplyContext): Promise<ApplyResult> {
    return apply(this.state, command, context);
  }

  /**
   * Tells `listener` about each revision as it commits, and `reset` whenever the revision or the
   * history moves without a commit (import, merge): see commit.ts setCommitListener.
   */
  setCommitListener(
    listener: ((revision: number, changes: ReadonlyArray<StoredChange>) => void) | undefined,
    reset?: (revision: number, reason: RevisionResetReason) => void,
  ): void {
    setCommitListener(this.state, listener, reset);
  }

  // ---------------------------------------------------------------------------------------------
  // Reads (reader.ts)

  get(key: string, options: ReadOptions): Promise<GetResult> {
    return get(this.state, key, options);
  }

  exists(key: string, options: ReadOptions): Promise<boolean> {
    return exists(this.state, key, options);
  }

  /** A page of the live keys starting with `keyPrefix` at one revision (reader.ts getByPrefix). */
  getByPrefix(keyPrefix: string, options: PrefixReadOptions): Promise<PrefixPage> {
    return getByPrefix(this.state, keyPrefix, options);
  }

  /** A page of ALL the partition's live keys starting with `keyPrefix`, for backups (reader.ts scanPartition). */
  scanPartition(keyPrefix: string, options: PrefixReadOptions): Promise<PrefixPage> {
    return scanPartition(this.state, keyPrefix, options);
  }

  /** The retained history of a key or prefix after a revision, bounded (reader.ts changesSince). */
  changesSince(
    target: { readonly key: string } | { readonly keyPrefix: string },
    after: number,
    bounds: { readonly maxChanges: number; readonly maxBytes: number },
  ): Promise<{ changes: StoredChangeAt[]; through: number }> {
    return changesSince(this.state, target, after, bounds);
  }

  // ---------------------------------------------------------------------------------------------
  // Physical compaction (compactor.ts)

  /** Whether versions below the compaction floor may still await physical removal. */
  get storageCompactionPending(): boolean {
    return this.state.storageCompactionPending;
  }

  /** One bounded step of the pending physical compaction; safe alongside applies and reads. */
  compactStorageStep(): Promise<StorageCompactionStep> {
    return compactStorageStep(this.state);
  }

  /** Runs the pending physical compaction to its end, then deletes evicted dedup results. Not alongside an apply. */
  compactStorage(): Promise<StorageCompactionResult> {
    return compactStorage(this.state);
  }

  // ---------------------------------------------------------------------------------------------
  // Snapshots (snapshot-io.ts, snapshot-check.ts)

  /** The partition's state at the applied index when iteration starts, as bounded chunks (snapshot-io.ts). */
  exportSnapshot(): AsyncIterable<Uint8Array> {
    return exportSnapshot(this.state);
  }

  /** Replaces the partition's state with a snapshot, crash-safely (snapshot-io.ts importSnapshot). */
  importSnapshot(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, options: ImportOptions = {}): Promise<MvccStatus> {
    return importSnapshot(this.state, chunks, options);
  }

  /** Undoes an import a crash interrupted: the partition is then empty at applied index 0 (snapshot-io.ts). */
  discardInterruptedImport(alsoWrite: readonly WriteOperation[]): Promise<MvccStatus> {
    return discardInterruptedImport(this.state, alsoWrite);
  }

  /**
   * Checks a whole snapshot without writing anything: every check importSnapshot makes of the
   * chunks and their entries. Throws INVALID_ARGUMENT (malformed snapshot) like the import would.
   * Synchronous, so a Raft group can refuse a snapshot before it adopts it.
   */
  checkSnapshot(chunks: readonly Uint8Array[]): void {
    checkedSnapshotHeader(this.state.layout, chunks);
  }

  /**
   * checkSnapshot one chunk at a time, in order (a transfer checks each chunk as it arrives):
   * add() throws INVALID_ARGUMENT as soon as a chunk is malformed, finish() when the whole is.
   */
  snapshotCheck(): { add(chunk: Uint8Array): void; finish(): SnapshotHeader } {
    return snapshotCheck(this.state.layout);
  }

  // ---------------------------------------------------------------------------------------------
  // Range changes (range-ops.ts)

  /**
   * The hash range this partition owns: its range record once a split made it data, else its
   * place in the equal table; undefined for a store without options.partition.
   */
  get hashRange(): { readonly start: number; readonly end: number } | undefined {
    return hashRangeOf(this.state);
  }

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
  async applySplit(
    target: MvccStore | undefined,
    context: { readonly index: number; readonly nowMs: number; readonly mid: number; readonly refusal?: AtollError },
    alsoWrite: readonly WriteOperation[] = [],
  ): Promise<{ readonly refused?: AtollError; readonly movedKeys: number; readonly movedVersions: number }> {
    assert(Number.isSafeInteger(context.index) && context.index >= 1, 'index must be a positive safe integer');
    assertNowMs(context.nowMs);
    assert(!this.state.needsSnapshot && target?.state.needsSnapshot !== true, 'split on a partition whose snapshot import did not finish');
    assert(target === undefined ? context.refusal !== undefined : target !== this && target.state.engine === this.state.engine, 'a split moves keys within one engine');
    const range = this.hashRange;
    assert(range !== undefined && (target === undefined || target.state.partition !== undefined), 'a split needs partitioned stores');
    if (context.index <= this.state.appliedIndex) return { movedKeys: 0, movedVersions: 0 };
    // The target is new: nothing applied, nothing stored (asserted, not refused: the node made it).
    assert.equal(target?.state.appliedIndex ?? 0, 0, 'a split target starts empty');
    assert.equal(target?.state.revision ?? 0, 0, 'a split target starts empty');
    const hash = this.state.partition?.hash ?? defaultBucketHash;
    const moved = { start: context.mid, end: range.end };
    const nowMs = Math.max(context.nowMs, this.state.appliedTimeMs);
    this.state.importing = true;
    if (this.state.compactionStepInFlight !== undefined) await this.state.compactionStepInFlight.catch(() => undefined);
    this.state.enterExclusive();
    target?.state.enterExclusive();
    try {
      let refusal: AtollError | undefined = context.refusal;
      if (refusal !== undefined || target === undefined) {
        // Decided by the caller from replicated state.
      } else if (this.state.frozen !== undefined) {
        refusal = new AtollError('SPLIT_REFUSED', `partition ${this.state.partition?.id ?? '?'} is frozen for a merge`, { reason: 'in-progress' });
      } else if (!Number.isInteger(context.mid) || context.mid <= range.start || context.mid >= range.end) {
        refusal = new AtollError('SPLIT_REFUSED', `split point ${context.mid} is not strictly inside [${range.start}, ${range.end})`, { reason: 'bad-split-point' });
      } else if (this.state.leases.all().some((lease) => [...lease.keys].some((key) => keyInHashRange(key, moved, hash)))) {
        refusal = new AtollError('SPLIT_REFUSED', 'a key attached to a lease would move: revoke the lease or wait for it to expire', { reason: 'leased-keys' });
      }
      if (refusal !== undefined || target === undefined) {
        refusal ??= new AtollError('SPLIT_REFUSED', 'no target', { reason: 'no-target' });
        await commit(this.state, failedOutcome(refusal), context.index, nowMs);
        return { refused: refusal, movedKeys: 0, movedVersions: 0 };
      }
      const plan = await planSplitMove(this.state.engine, this.state.layout, target.state.layout, moved, hash);
      const kept = { start: range.start, end: context.mid };
      const appliedHere = encodeAppliedRecord({ appliedIndex: context.index, appliedTimeMs: nowMs, revision: this.state.revision });
      const operations: WriteOperation[] = [
        ...(this.state.testBugs.splitKeepsMovedKeys === true ? plan.operations.filter((op) => op.type !== 'del') : plan.operations),
        { type: 'put', key: this.state.layout.appliedKey, value: appliedHere },
        { type: 'put', key: this.state.layout.rangeKey, value: encodeOwnedRange(kept) },
        { type: 'put', key: target.state.layout.appliedKey, value: appliedHere },
        { type: 'put', key: target.state.layout.compactedRevisionKey, value: encodeUint64BE(this.state.compactedRevision) },
        { type: 'put', key: target.state.layout.rangeKey, value: encodeOwnedRange(moved) },
        ...alsoWrite,
      ];
      if (this.state.legacyAppliedRecords) for (const key of [this.state.layout.appliedIndexKey, this.state.layout.appliedTimeKey, this.state.layout.revisionKey]) operations.push({ type: 'del', key });
      await this.state.engine.write(operations, { sync: true });
      // The in-memory state follows the batch: both sides rebuild theirs from what is stored.
      this.state.legacyAppliedRecords = false;
      this.state.appliedIndex = context.index;
      this.state.appliedTimeMs = nowMs;
      this.state.ownedRange = kept;
      target.state.appliedIndex = context.index;
      target.state.appliedTimeMs = nowMs;
      target.state.revision = this.state.revision;
      target.state.compactedRevision = this.state.compactedRevision;
      target.state.ownedRange = moved;
      target.state.dedup.adopt(await DedupTable.loadState(this.state.engine, target.state.layout));
      this.state.epoch++;
      target.state.epoch++;
      this.state.cache?.clear(this.state.cacheStoreId);
      target.state.cache?.clear(target.state.cacheStoreId);
      await this.state.rebuildKeyState();
      await target.state.rebuildKeyState();
      return { movedKeys: plan.movedKeys, movedVersions: plan.movedVersions };
    } finally {
      this.state.exclusive = false;
      if (target !== undefined) target.state.exclusive = false;
      this.state.importing = false;
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
  async applyMerge(
    right: MvccStore | undefined,
    context: { readonly index: number; readonly nowMs: number; readonly freezeIndex: number; readonly refusal?: AtollError },
    alsoWrite: readonly WriteOperation[] = [],
  ): Promise<{ readonly refused?: AtollError; readonly movedKeys: number; readonly movedVersions: number; readonly droppedDedupEntries: number }> {
    assert(Number.isSafeInteger(context.index) && context.index >= 1, 'index must be a positive safe integer');
    assertNowMs(context.nowMs);
    assert(!this.state.needsSnapshot && right?.state.needsSnapshot !== true, 'merge on a partition whose snapshot import did not finish');
    assert(right === undefined ? context.refusal !== undefined : right !== this && right.state.engine === this.state.engine, 'a merge moves keys within one engine');
    assert(this.state.mergedInto === undefined && right?.state.mergedInto === undefined, 'a merged-away partition takes no part in another merge');
    const range = this.hashRange;
    assert(range !== undefined && (right === undefined || right.state.partition !== undefined), 'a merge needs partitioned stores');
    const nothing = { movedKeys: 0, movedVersions: 0, droppedDedupEntries: 0 };
    if (context.index <= this.state.appliedIndex) return nothing;
    const nowMs = Math.max(context.nowMs, this.state.appliedTimeMs, right?.state.appliedTimeMs ?? 0);
    this.state.importing = true;
    if (right !== undefined) right.state.importing = true;
    if (this.state.compactionStepInFlight !== undefined) await this.state.compactionStepInFlight.catch(() => undefined);
    if (right?.state.compactionStepInFlight !== undefined) await right.state.compactionStepInFlight.catch(() => undefined);
    this.state.enterExclusive();
    right?.state.enterExclusive();
    try {
      let refusal = context.refusal;
      const rightRange = right?.hashRange;
      if (refusal !== undefined || right === undefined) {
        // Decided by the caller from replicated state.
      } else if (right.state.frozen === undefined || right.state.frozen.into !== this.state.partition?.id || right.state.frozen.index !== context.freezeIndex) {
        refusal = new AtollError('MERGE_REFUSED', `partition ${right.state.partition?.id ?? '?'} is not frozen into partition ${this.state.partition?.id ?? '?'} at index ${context.freezeIndex}`, { reason: 'not-frozen' });
      } else if (rightRange === undefined || rightRange.start !== range.end) {
        refusal = new AtollError('MERGE_REFUSED', `partition ${right.state.partition?.id ?? '?'} does not start where partition ${this.state.partition?.id ?? '?'} ends (${range.end})`, { reason: 'not-adjacent' });
      } else if (right.state.leases.all().length > 0) {
        refusal = new AtollError('MERGE_REFUSED', `partition ${right.state.partition?.id ?? '?'} holds leases: revoke them or wait for them to expire`, { reason: 'leased-keys' });
      }
      if (refusal !== undefined || right === undefined || rightRange === undefined) {
        refusal ??= new AtollError('MERGE_REFUSED', 'no right partition', { reason: 'no-right' });
        await commit(this.state, failedOutcome(refusal), context.index, nowMs);
        return { refused: refusal, ...nothing };
      }
      // The caller brought right through its freeze (merge-apply.ts); past it nothing changes.
      assert(right.state.appliedIndex >= context.freezeIndex, 'a merge reads the right partition at or past its freeze index');
      const plan = await planMergeMove(this.state.engine, { layout: this.state.layout, dedup: this.state.dedup.currentState() }, { layout: right.state.layout, dedup: right.state.dedup.currentState() }, context.index);
      const merged = { start: range.start, end: rightRange.end };
      const revision = Math.max(this.state.revision, right.state.revision);
      const compactedRevision = Math.max(this.state.compactedRevision, right.state.compactedRevision);
      const operations: WriteOperation[] = [
        ...plan.operations,
        { type: 'put', key: this.state.layout.appliedKey, value: encodeAppliedRecord({ appliedIndex: context.index, appliedTimeMs: nowMs, revision }) },
        { type: 'put', key: this.state.layout.compactedRevisionKey, value: encodeUint64BE(compactedRevision) },
        { type: 'put', key: this.state.layout.rangeKey, value: encodeOwnedRange(merged) },
        ...alsoWrite,
      ];
      if (this.state.legacyAppliedRecords) for (const key of [this.state.layout.appliedIndexKey, this.state.layout.appliedTimeKey, this.state.layout.revisionKey]) operations.push({ type: 'del', key });
      // Exports of either side that read on would mix the states before and after: they fail.
      this.state.epoch++;
      right.state.epoch++;
      await this.state.engine.write(operations, { sync: true });
      // The in-memory state follows the batch.
      this.state.legacyAppliedRecords = false;
      this.state.appliedIndex = context.index;
      this.state.appliedTimeMs = nowMs;
      this.state.revision = revision;
      this.state.compactedRevision = compactedRevision;
      this.state.ownedRange = merged;
      this.state.dedup.adopt(await DedupTable.loadState(this.state.engine, this.state.layout));
      assert.equal(this.state.dedup.count, plan.dedup.count, 'the merged dedup queue is what the plan wrote');
      right.state.mergedInto = this.state.partition?.id ?? 0;
      // Both histories changed without a commit: the left one gained the right's versions at
      // revisions its listener may already hold, the right one is gone.
      this.state.resetListener?.(revision, 'merge');
      right.state.resetListener?.(right.state.revision, 'merged-away');
      right.state.dedup.adopt(emptyDedupState);
      this.state.cache?.clear(this.state.cacheStoreId);
      right.state.cache?.clear(right.state.cacheStoreId);
      await this.state.rebuildKeyState();
      await right.state.rebuildKeyState();
      return { movedKeys: plan.movedKeys, movedVersions: plan.movedVersions, droppedDedupEntries: plan.droppedDedupEntries };
    } finally {
      this.state.exclusive = false;
      this.state.importing = false;
      if (right !== undefined) {
        right.state.exclusive = false;
        right.state.importing = false;
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
  async applyFreeze(context: { readonly index: number; readonly nowMs: number; readonly into: number; readonly refusal?: AtollError }): Promise<{ readonly refused?: AtollError; readonly freezeIndex: number }> {
    assert(Number.isSafeInteger(context.index) && context.index >= 1, 'index must be a positive safe integer');
    assertNowMs(context.nowMs);
    assert(Number.isInteger(context.into) && context.into >= 0 && context.into < 2 ** 32, 'a freeze names a partition id');
    assert(!this.state.needsSnapshot && this.state.mergedInto === undefined, 'freeze on a partition that is not live');
    if (context.index <= this.state.appliedIndex) return { freezeIndex: this.state.frozen?.index ?? 0 };
    const nowMs = Math.max(context.nowMs, this.state.appliedTimeMs);
    this.state.enterExclusive();
    try {
      const frozen = this.state.frozen;
      let refusal = context.refusal;
      if (refusal === undefined && frozen !== undefined && frozen.into !== context.into) {
        refusal = new AtollError('MERGE_REFUSED', `partition ${this.state.partition?.id ?? '?'} is frozen for a merge into partition ${frozen.into}`, { reason: 'frozen', mergedInto: frozen.into });
      } else if (refusal === undefined && frozen === undefined && this.state.leases.all().length > 0) {
        refusal = new AtollError('MERGE_REFUSED', `partition ${this.state.partition?.id ?? '?'} holds leases: revoke them or wait for them to expire`, { reason: 'leased-keys' });
      }
      if (refusal !== undefined) {
        await commit(this.state, failedOutcome(refusal), context.index, nowMs);
        return { refused: refusal, freezeIndex: 0 };
      }
      if (frozen !== undefined) {
        await commit(this.state, emptyOutcome, context.index, nowMs);
        return { freezeIndex: frozen.index };
      }
      const freeze = { into: context.into, index: context.index };
      await commit(this.state, { ...emptyOutcome, operations: [{ type: 'put', key: this.state.layout.freezeKey, value: encodeFreeze(freeze) }] }, context.index, nowMs);
      this.state.frozen = freeze;
      // Reads that began before the freeze must not answer after it: the keys may move at any time.
      this.state.epoch++;
      this.state.cache?.clear(this.state.cacheStoreId);
      return { freezeIndex: freeze.index };
    } finally {
      this.state.exclusive = false;
    }
  }

  /** The merge freeze (applyFreeze), or undefined while the partition is live. */
  get frozen(): { readonly into: number; readonly index: number } | undefined {
    return this.state.frozen;
  }

  /** The partition this one was merged into (applyMerge), or undefined while it is live. */
  get mergedInto(): number | undefined {
    return this.state.mergedInto;
  }
}
