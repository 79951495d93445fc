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
 * use max(their clock, appliedTimeMs) for the same reason (node/service/kv-executor.ts).
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
 *
 * This file is the store's public face: MvccStore keeps its API and hands each call to the module
 * of its job, all over one MvccState (mvcc-state.ts lists the modules and keeps the invariants).
 */
import type { AtollError } from '../errors.js';
import type { StorageEngine, WriteOperation } from '../storage/storage-engine.js';
import { apply } from './apply.js';
import type { ApplyContext, ApplyResult, Command } from './commands.js';
import { setCommitListener } from './commit.js';
import type { StorageCompactionStep } from './compaction-pass.js';
import { compactStorage, compactStorageStep, type StorageCompactionResult } from './compactor.js';
import { defaultDedupWindow } from './dedup-table.js';
import type { LeaseRecord } from './lease-table.js';
import { MvccState, type MvccStatus, type MvccStoreOptions, type RevisionResetReason, type StoredChange } from './mvcc-state.js';
import { hashRangeOf } from './ownership.js';
import { applyFreeze, applyMerge, applySplit } from './range-ops.js';
import { changesSince, exists, get, getByPrefix, scanPartition, type GetResult, type PrefixPage, type PrefixReadOptions, type ReadOptions, type StoredChangeAt } from './reader.js';
import { checkedSnapshotHeader, snapshotCheck } from './snapshot-check.js';
import type { SnapshotHeader } from './snapshot-format.js';
import { discardInterruptedImport, exportSnapshot, importSnapshot, type ImportOptions } from './snapshot-io.js';
import { dedupMemoryOf, dedupStatusOf, expiredKeysOf, keyIndexStatusOf, statusOf, storedKeyNamesOf, type DedupStatus } from './status.js';
import type { TenantUsageCount } from './tenant-usage.js';

export { defaultDedupWindow };
export type { DedupStatus, GetResult, ImportOptions, MvccStatus, MvccStoreOptions, PrefixPage, PrefixReadOptions, ReadOptions };
export type { RevisionResetReason, StorageCompactionResult, StorageCompactionStep, StoredChange, StoredChangeAt, TenantUsageCount };

/**
 * The MVCC state machine of one partition (see the top of this file). Every method hands its call
 * straight to its job's module and returns that module's answer unchanged, promise included (no
 * extra await), so errors, results and the order of storage calls are the modules'.
 */
export class MvccStore {
  /**
   * The engine the store lives in (the state's). Private and unused here, but kept as a field:
   * test/mvcc/incremental-compaction.test.ts reopens a store's engine by reading it through a cast.
   */
  private readonly engine: StorageEngine;

  private imports = 0;

  private constructor(private readonly state: MvccState) {
    this.engine = state.engine;
  }

  /** Opens the partition's state from the engine (an empty partition when it has none yet). */
  static open(options: MvccStoreOptions): Promise<MvccStore> {
    return MvccState.open(options, (state) => new MvccStore(state));
  }

  // ---------------------------------------------------------------------------------------------
  // Status (status.ts)

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

  status(): MvccStatus {
    return statusOf(this.state);
  }

  /** Stored keys, live bytes and history bytes per tenant (see TenantUsageCount). */
  usageByTenant(): ReadonlyMap<string, Readonly<TenantUsageCount>> {
    return this.state.usage;
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

  /** Throws what a lease grant for `tenant` would be refused with as of the applied state (LeaseTable.checkRoom). */
  checkLeaseRoom(tenant: string): void {
    this.state.leases.checkRoom(tenant);
  }

  /** How many leases each tenant holds in the partition (published with its usage, for the lease quota). */
  leaseCountsByTenant(): ReadonlyMap<string, number> {
    return this.state.leases.countsByTenant();
  }

  /** The key index's size and estimated bytes (key-index.ts), and whether the store uses it. */
  keyIndexStatus(): { keys: number; bytes: number; maxBytes: number; complete: boolean } {
    return keyIndexStatusOf(this.state);
  }

  /**
   * Gives the key index's bytes back to its budget, which the node's other stores share: the node
   * no longer runs this store (its replica was removed or replaced). Lookups read storage from now
   * on, with the same answers.
   */
  releaseKeyIndex(): void {
    this.state.keyIndexComplete = false;
    this.state.newestRevisionOf.clear();
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

  /** Snapshot imports this store began since it opened: an import replaces state no revision records. */
  get importsBegun(): number {
    return this.imports;
  }

  /** Replaces the partition's state with a snapshot, crash-safely (snapshot-io.ts importSnapshot). */
  importSnapshot(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, options: ImportOptions = {}): Promise<MvccStatus> {
    this.imports++;
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

  /** The merge freeze (applyFreeze), or undefined while the partition is live. */
  get frozen(): { readonly into: number; readonly index: number } | undefined {
    return this.state.frozen;
  }

  /** The partition this one was merged into (applyMerge), or undefined while it is live. */
  get mergedInto(): number | undefined {
    return this.state.mergedInto;
  }

  /** Applies a split entry: the keys of [mid, end) move to `target`, a new, empty store (range-ops.ts applySplit). */
  applySplit(
    target: MvccStore | undefined,
    context: { readonly index: number; readonly nowMs: number; readonly mid: number; readonly refusal?: AtollError },
    alsoWrite: readonly WriteOperation[] = [],
  ): Promise<{ readonly refused?: AtollError; readonly movedKeys: number; readonly movedVersions: number }> {
    return applySplit(this.state, target?.state, context, alsoWrite);
  }

  /** Applies a merge entry: the frozen `right` neighbour folds into this store (range-ops.ts applyMerge). */
  applyMerge(
    right: MvccStore | undefined,
    context: { readonly index: number; readonly nowMs: number; readonly freezeIndex: number; readonly refusal?: AtollError },
    alsoWrite: readonly WriteOperation[] = [],
  ): Promise<{ readonly refused?: AtollError; readonly movedKeys: number; readonly movedVersions: number; readonly droppedDedupEntries: number }> {
    return applyMerge(this.state, right?.state, context, alsoWrite);
  }

  /** Applies a merge freeze: from this entry on the store applies nothing until merged (range-ops.ts applyFreeze). */
  applyFreeze(context: { readonly index: number; readonly nowMs: number; readonly into: number; readonly refusal?: AtollError }): Promise<{ readonly refused?: AtollError; readonly freezeIndex: number }> {
    return applyFreeze(this.state, context);
  }
}
