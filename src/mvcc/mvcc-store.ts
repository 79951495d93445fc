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
import { tenantOfInternalKey } from '../keys/tenant-keys.js';
import { decodeUtf8 } from '../keys/utf8.js';
import { encodeUint64BE, equalBytes } from '../storage/bytes.js';
import type { KeyRange, StorageEngine, WriteOperation } from '../storage/storage-engine.js';
import { encodeAppliedRecord } from './applied-record.js';
import { apply } from './apply.js';
import type { ApplyContext, ApplyResult, Command } from './commands.js';
import { commit, emptyOutcome, failedOutcome, setCommitListener } from './commit.js';
import type { CompactionGroup, StorageCompactionStep } from './compaction-pass.js';
import { DedupTable, defaultDedupWindow, emptyDedupState, type DedupMeta } from './dedup-table.js';
import { KeyIndex } from './key-index.js';
import { encodeLeaseRecord, type LeaseRecord } from './lease-table.js';
import { planMergeMove } from './merge-plan.js';
import { assertNowMs, MvccState, type MvccStatus, type MvccStoreOptions, type RevisionResetReason, type StoredChange } from './mvcc-state.js';
import { hashRangeOf } from './ownership.js';
import { encodeFreeze, encodeOwnedRange } from './range-records.js';
import { changesSince, exists, get, getByPrefix, scanPartition, type GetResult, type PrefixPage, type PrefixReadOptions, type ReadOptions, type StoredChangeAt } from './reader.js';
import { checkedSnapshotHeader, finishSnapshotPlan, newSnapshotPlan, planSnapshotChunk, snapshotCheck } from './snapshot-check.js';
import { encodeSnapshotHeader, encodeSnapshotTrailer, snapshotVersionOf, SnapshotEntriesWriter, type SnapshotHeader } from './snapshot-format.js';
import { keyInHashRange, planSplitMove } from './split-plan.js';
import { dedupMemoryOf, dedupStatusOf, expiredKeysOf, keyIndexStatusOf, statusOf, storedKeyNamesOf, type DedupStatus } from './status.js';
import { addUsage, versionBytes, type TenantUsageCount } from './tenant-usage.js';
import { decodeVersionRecord } from './version-record.js';

export { defaultDedupWindow };
export type { DedupStatus, GetResult, MvccStatus, MvccStoreOptions, PrefixPage, PrefixReadOptions, ReadOptions };
export type { RevisionResetReason, StorageCompactionStep, StoredChange, StoredChangeAt, TenantUsageCount };

export interface ImportOptions {
  /**
   * The chunks (an array) passed checkSnapshot already, unchanged since, and describe this applied
   * index: the whole-snapshot check before the import is skipped (each chunk is still checked as
   * it is written), so a caller that checked them does not pay twice for a large snapshot.
   */
  readonly checkedIndex?: number;
  /**
   * Operations written in the synced batch that ends the import (with the store's meta records and
   * the removal of the import mark): the Raft log's record of the snapshot, so that the store and
   * the log take the snapshot in one atomic write (PartitionReplica.stage).
   */
  readonly alsoWrite?: readonly WriteOperation[];
  /**
   * More operations for that same batch, chosen from the range the snapshot carries (undefined:
   * the equal-table place): a replica whose range shrank opens the partition after it
   * (src/node/split-heal.ts), and its record of that must land with the import.
   */
  readonly alsoWriteFor?: (range: { readonly start: number; readonly end: number } | undefined) => readonly WriteOperation[];
}

export interface StorageCompactionResult {
  readonly removedVersions: number;
  /** Evicted dedup results deleted (each with its record). */
  readonly removedDedupEntries: number;
  /** True when a snapshot export was running, so nothing was removed this time. */
  readonly deferred: boolean;
}

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
  // Compaction

  /**
   * Physical compaction removes the versions no reader at or above the compaction floor needs: for
   * each key, every version older than its newest version at or below the floor, and that newest
   * one too when it is a tombstone. Versions above the floor are never touched.
   *
   * Applying a compact command only moves the floor (replicated, identical everywhere) and marks
   * the work pending; the removal runs beside the Raft loop in bounded steps (compactStorageStep:
   * at most compactionBatchOps stored versions examined and one storage write each), so a large
   * partition never stalls apply. Every replica removes at its own pace, which changes no logical
   * state: reads at or above the floor see the same versions before and after a removal, and
   * nothing apply decides depends on versions compaction may remove (see validateReadPrefix).
   *
   * Invariants of a pass (`compactionPass`):
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
   *   step in flight and discards the pass.
   */
  get storageCompactionPending(): boolean {
    return this.state.storageCompactionPending;
  }

  /**
   * One bounded step of the pending physical compaction (see above): examines at most
   * compactionBatchOps stored versions from where the previous step stopped and removes, in one
   * storage write, those no reader needs. `done` when nothing is pending any more; `deferred` when
   * an export (or import) runs, so the step did nothing. Safe alongside applies and reads; steps
   * must not overlap each other (asserted).
   */
  async compactStorageStep(): Promise<StorageCompactionStep> {
    assert(this.state.compactionStepInFlight === undefined, 'compaction steps must not overlap');
    if (!this.state.storageCompactionPending) return { removedVersions: 0, done: true, deferred: false };
    // Not while an apply or import runs (see checkTxn), nor while an export needs the versions.
    if (this.state.exportsInFlight > 0 || this.state.importing || this.state.exclusive || this.state.needsSnapshot) return { removedVersions: 0, done: false, deferred: true };
    const step = this.runCompactionStep();
    this.state.compactionStepInFlight = step;
    try {
      return await step;
    } finally {
      this.state.compactionStepInFlight = undefined;
    }
  }

  private async runCompactionStep(): Promise<StorageCompactionStep> {
    this.state.compactionPass ??= { floor: this.state.compactedRevision, epoch: this.state.epoch, resumeAt: undefined, group: undefined };
    const pass = this.state.compactionPass;
    const maxExamined = this.state.limits.compactionBatchOps;
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
      // The key's last version goes: it leaves the key index (see newestRevisionOf). Readers see
      // no difference: a tombstone and no version at all both read as "not found".
      if (!group.aboveFloor) forgotten.push({ key: decodeUtf8(group.userKey), revision: group.newestAtFloor.revision });
      remove(group, group.newestAtFloor);
    };
    const versions = this.state.layout.allVersionsRange();
    const range = pass.resumeAt === undefined ? versions : { ...versions, gte: pass.resumeAt };
    let examined = 0;
    let reachedEnd = true;
    for await (const [storageKey, record] of this.state.engine.iterate({ ...range, limit: maxExamined + 1 })) {
      if (examined === maxExamined) {
        pass.resumeAt = storageKey.slice();
        reachedEnd = false;
        break;
      }
      examined++;
      const parsed = this.state.layout.parseVersionKey(storageKey);
      let group = pass.group;
      if (group === undefined || !equalBytes(parsed.groupKey, group.groupKey)) {
        finishGroup(group);
        group = { groupKey: parsed.groupKey.slice(), userKey: parsed.userKey.slice(), aboveFloor: false };
        pass.group = group;
      }
      if (parsed.revision > pass.floor) {
        group.aboveFloor = true;
        continue;
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
    if (reachedEnd) {
      finishGroup(pass.group);
      pass.group = undefined;
    }
    // An import cannot start while this step runs (it waits for it), so the state is the one scanned.
    assert.equal(this.state.epoch, pass.epoch, 'a snapshot import overlapped a compaction step');
    for (const { key, revision } of forgotten) this.state.forgetRemovedKey(key, revision);
    if (deletions.length > 0) await this.state.engine.write(deletions);
    for (const [tenant, bytes] of freed) addUsage(this.state.usage, tenant, 0, 0, -bytes.historyBytes);
    if (reachedEnd) {
      this.state.compactionPass = undefined;
      // A floor that rose during the pass leaves versions below it for a new pass.
      if (this.state.compactedRevision === pass.floor) this.state.storageCompactionPending = false;
    }
    return { removedVersions: deletions.length, done: !this.state.storageCompactionPending, deferred: false };
  }

  /**
   * Runs the pending physical compaction to its end (step after step; the node runs the steps
   * beside its loop instead), then deletes evicted dedup results that applies have not deleted yet
   * (they leave them while an export runs). While a snapshot export runs it does nothing
   * (`deferred`), so the export keeps every version and dedup result it needs. Safe to call at any
   * time; not alongside an apply.
   */
  async compactStorage(): Promise<StorageCompactionResult> {
    if (this.state.compactionStepInFlight !== undefined) await this.state.compactionStepInFlight.catch(() => undefined);
    if (this.state.exportsInFlight > 0) return { removedVersions: 0, removedDedupEntries: 0, deferred: true };
    let removedVersions = 0;
    // Bounded: each step examines compactionBatchOps more versions of the partition, and no apply
    // runs meanwhile to raise the floor, so at most two passes over the stored versions happen.
    for (;;) {
      const step = await this.compactStorageStep();
      removedVersions += step.removedVersions;
      if (step.deferred) return { removedVersions, removedDedupEntries: 0, deferred: true };
      if (step.done) break;
    }
    this.state.enterExclusive();
    try {
      return { removedVersions, removedDedupEntries: await this.removeEvictedDedupEntries(), deferred: false };
    } finally {
      this.state.exclusive = false;
    }
  }

  private async removeEvictedDedupEntries(): Promise<number> {
    assert(this.state.exclusive);
    // An export that was already running may need them. One that starts during the loop begins
    // at the floor, which only an apply moves (none runs now), so it needs none of them.
    if (this.state.exportsInFlight > 0) return 0;
    let removed = 0;
    // Each round deletes up to compactionBatchOps entries below the floor: the rounds are bounded.
    for (;;) {
      const removal = await this.state.dedup.planRemoval(this.state.limits.compactionBatchOps);
      if (removal.removedEntries === 0) return removed;
      await this.state.engine.write(removal.operations);
      removed += removal.removedEntries;
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Snapshots

  /**
   * The partition's state at the applied index when iteration starts, as bounded chunks: a header
   * (appliedIndex, revision, compactedRevision), entry chunks of about snapshotChunkBytes (the
   * live dedup results, then the versions), and a trailer. Applies may continue meanwhile; the
   * versions and dedup results they add are left out, and the dedup results they evict stay on
   * disk until the export ends. Iterate it to the end or break out of it (so it is closed): an
   * abandoned export keeps deferring compaction.
   */
  async *exportSnapshot(): AsyncIterable<Uint8Array> {
    assert(!this.state.needsSnapshot, 'cannot export an unfinished snapshot import');
    const header: SnapshotHeader = {
      appliedIndex: this.state.appliedIndex,
      revision: this.state.revision,
      compactedRevision: this.state.compactedRevision,
      appliedTimeMs: this.state.appliedTimeMs,
      // A partition whose range is data (a split) sends it, so the receiver owns the same range.
      ...(this.state.ownedRange !== undefined && { range: this.state.ownedRange }),
      // A frozen partition sends its freeze (format 6, which needs the range even for an equal one).
      ...(this.state.frozen !== undefined && { range: this.hashRange, freeze: this.state.frozen }),
    };
    const version = snapshotVersionOf(header);
    const dedupRange = this.state.dedup.exportRange(header.appliedIndex);
    // The leases as of the header's index: the table's records are immutable (a change replaces
    // them), so this list stays that state while applies go on. Reading the stored records later
    // could show a grant or revocation past the index, which the receiver then replays again.
    const leases = this.state.leases.all();
    const epoch = this.state.epoch;
    this.state.exportsInFlight++;
    try {
      yield encodeSnapshotHeader(header);
      let chunk = new SnapshotEntriesWriter(version);
      let entryCount = 0;
      const prefixLength = this.state.layout.partitionPrefix.length;
      // Key order: the leases ('l', in id order), the dedup queue ('q'), then the versions ('v').
      for (const record of leases) {
        chunk.add(this.state.layout.leaseKey(record.id).subarray(prefixLength), encodeLeaseRecord(record));
        entryCount++;
        if (chunk.byteLength >= this.state.limits.snapshotChunkBytes) {
          yield chunk.finish();
          chunk = new SnapshotEntriesWriter(version);
        }
      }
      const ranges = this.state.testBugs.dedupForgetsOnSnapshot ? [this.state.layout.allVersionsRange()] : [dedupRange, this.state.layout.allVersionsRange()];
      for (const range of ranges) {
        for await (const [storageKey, record] of this.state.engine.iterate(range)) {
          // An import replaced the state under us (this node was sent a newer snapshot); the receiver retries.
          if (this.state.epoch !== epoch) throw new AtollError('UNAVAILABLE', 'the partition installed a snapshot during the export');
          if (this.state.layout.isVersionKey(storageKey) && this.state.layout.parseVersionKey(storageKey).revision > header.revision) continue;
          chunk.add(storageKey.subarray(prefixLength), record);
          entryCount++;
          if (chunk.byteLength >= this.state.limits.snapshotChunkBytes) {
            yield chunk.finish();
            chunk = new SnapshotEntriesWriter(version);
          }
        }
      }
      if (chunk.count > 0) yield chunk.finish();
      yield encodeSnapshotTrailer(entryCount, version);
    } finally {
      this.state.exportsInFlight--;
    }
  }

  /**
   * Replaces the partition's state with a snapshot. It marks the import as in progress (synced),
   * deletes the partition's range, writes the entry chunks, then writes the meta records and
   * clears the mark in one synced batch. A crash or a malformed snapshot leaves the mark, and the
   * partition refuses reads and applies (needsSnapshot) until an import succeeds, or until
   * discardInterruptedImport empties it. `options.alsoWrite` joins the final batch. The mark's
   * value is the snapshot's applied index when the chunks are an array (interruptedImportIndex).
   * Dedup records are rebuilt from the snapshot's dedup queue entries (format version 2); a
   * version 1 snapshot has none, and the partition then starts with no dedup results.
   * Throws INVALID_ARGUMENT for a malformed snapshot.
   */
  async importSnapshot(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, options: ImportOptions = {}): Promise<MvccStatus> {
    // Chunks in memory (a snapshot from a peer) are checked whole before anything is deleted, so a
    // malformed one changes nothing; a stream can only be checked as it is written.
    const checkedIndex =
      options.checkedIndex ?? (Array.isArray(chunks) ? checkedSnapshotHeader(this.state.layout, chunks as readonly Uint8Array[]).appliedIndex : undefined);
    // The mark names the index being installed when it is known (diagnostics after a crash).
    const mark = checkedIndex === undefined ? new Uint8Array(0) : encodeUint64BE(checkedIndex);
    // A compaction step in flight finishes first; none starts until the import ends, and the pass
    // it belonged to is discarded (rebuildKeyState decides what the imported state needs).
    this.state.importing = true;
    if (this.state.compactionStepInFlight !== undefined) await this.state.compactionStepInFlight.catch(() => undefined);
    this.state.compactionPass = undefined;
    this.state.storageCompactionPending = false;
    this.state.enterExclusive();
    this.state.epoch++;
    this.state.needsSnapshot = true;
    this.state.cache?.clear(this.state.cacheStoreId);
    this.state.keyIndexComplete = false;
    this.state.newestRevisionOf = new KeyIndex(this.state.newestRevisionOf.maxBytes);
    this.state.expiry.clear();
    this.state.leases.clear();
    try {
      await this.state.engine.write([{ type: 'put', key: this.state.layout.importInProgressKey, value: mark }], { sync: true });
      await this.clearPartition();
      const { header, dedupState } = await this.writeSnapshotChunks(chunks);
      await this.state.engine.write(
        [
          { type: 'put', key: this.state.layout.appliedIndexKey, value: encodeUint64BE(header.appliedIndex) },
          { type: 'put', key: this.state.layout.revisionKey, value: encodeUint64BE(header.revision) },
          { type: 'put', key: this.state.layout.compactedRevisionKey, value: encodeUint64BE(header.compactedRevision) },
          { type: 'put', key: this.state.layout.appliedTimeKey, value: encodeUint64BE(header.appliedTimeMs ?? 0) },
          // clearPartition deleted the range record: a snapshot without a range means the equal one.
          ...(header.range !== undefined ? [{ type: 'put' as const, key: this.state.layout.rangeKey, value: encodeOwnedRange(header.range) }] : []),
          ...(header.freeze !== undefined ? [{ type: 'put' as const, key: this.state.layout.freezeKey, value: encodeFreeze(header.freeze) }] : []),
          ...this.state.dedup.metaOperations(dedupState),
          { type: 'del', key: this.state.layout.importInProgressKey },
          // The caller's records (the Raft log's record of the snapshot) land with the import's end.
          ...(options.alsoWrite ?? []),
          ...(options.alsoWriteFor?.(header.range) ?? []),
        ],
        { sync: true },
      );
      this.state.appliedIndex = header.appliedIndex;
      this.state.revision = header.revision;
      this.state.compactedRevision = header.compactedRevision;
      // The snapshot replaces the state, its clock included: the exporter's time at its index.
      this.state.appliedTimeMs = header.appliedTimeMs ?? 0;
      this.state.ownedRange = header.range;
      this.state.frozen = header.freeze;
      this.state.resetListener?.(this.state.revision, 'import');
      // The expiry mark and newest creation time come from the imported queue entries.
      this.state.dedup.adopt(await DedupTable.loadState(this.state.engine, this.state.layout));
      await this.state.rebuildKeyState();
      this.state.needsSnapshot = false;
      return this.status();
    } finally {
      this.state.epoch++;
      this.state.cache?.clear(this.state.cacheStoreId);
      this.state.exclusive = false;
      this.state.importing = false;
    }
  }

  /**
   * Undoes an import a crash interrupted (needsSnapshot after open): deletes every key of the
   * partition, then, in one synced batch, clears the import mark together with `alsoWrite` (the
   * caller's reset of its Raft log). The partition is then empty at applied index 0. A crash
   * before that batch leaves the mark, so the next open discards again.
   */
  async discardInterruptedImport(alsoWrite: readonly WriteOperation[]): Promise<MvccStatus> {
    assert(this.state.needsSnapshot, 'only an interrupted import is discarded');
    this.state.enterExclusive();
    this.state.epoch++;
    this.state.cache?.clear(this.state.cacheStoreId);
    try {
      await this.clearPartition();
      await this.state.engine.write([{ type: 'del', key: this.state.layout.importInProgressKey }, ...alsoWrite], { sync: true });
      this.state.appliedIndex = 0;
      this.state.revision = 0;
      this.state.compactedRevision = 0;
      this.state.appliedTimeMs = 0;
      this.state.ownedRange = undefined;
      this.state.frozen = undefined;
      this.state.expiry.clear();
      this.state.leases.clear();
      this.state.interruptedImportIndex = undefined;
      this.state.resetListener?.(0, 'import');
      await this.state.rebuildKeyState();
      this.state.needsSnapshot = false;
      return this.status();
    } finally {
      this.state.epoch++;
      this.state.exclusive = false;
    }
  }

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

  /** Deletes every key of the partition except the import mark. */
  private async clearPartition(): Promise<void> {
    await this.state.engine.write(this.state.layout.metaKeys().map((key) => ({ type: 'del' as const, key })));
    // An import writes the separate applied records: the next apply batch replaces them.
    this.state.legacyAppliedRecords = true;
    this.state.dedup.adopt(emptyDedupState);
    for (const range of this.state.layout.dataRanges()) await this.deleteRange(range);
  }

  private async deleteRange(range: KeyRange): Promise<void> {
    if (this.state.engine.deleteRange !== undefined) {
      await this.state.engine.deleteRange(range);
      return;
    }
    let pending: WriteOperation[] = [];
    for await (const [storageKey] of this.state.engine.iterate(range)) {
      pending.push({ type: 'del', key: storageKey });
      if (pending.length >= this.state.limits.compactionBatchOps) {
        await this.state.engine.write(pending);
        pending = [];
      }
    }
    if (pending.length > 0) await this.state.engine.write(pending);
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

  /** Checks and writes a snapshot's chunks, one engine write per chunk. */
  private async writeSnapshotChunks(
    chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  ): Promise<{ header: SnapshotHeader; dedupState: DedupMeta }> {
    const plan = newSnapshotPlan();
    for await (const bytes of chunks) {
      const operations = planSnapshotChunk(this.state.layout, plan, bytes);
      if (operations.length > 0) await this.state.engine.write(operations);
    }
    return finishSnapshotPlan(plan);
  }

}
