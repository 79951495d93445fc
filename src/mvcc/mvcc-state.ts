/**
 * The state of one partition's MVCC store (mvcc-store.ts): its data in the engine, the values of
 * its meta records, and the in-memory indexes kept beside them. The jobs that read and change it
 * are modules of their own, functions over this state:
 *
 *   apply.ts          applying a log entry, with exactly-once deduplication
 *   write-decide.ts   deciding an entry's writes (txn-check.ts: checking a transaction)
 *   commit.ts         writing an entry's batch and moving the indexes, revision and watch hook
 *   find-version.ts   the lookup of a key's version (version cache, key index, storage)
 *   reader.ts         reads: get, prefix pages, partition scans, history (changesSince)
 *   compactor.ts      physical compaction in bounded steps
 *   snapshot-io.ts    snapshot export and import (snapshot-check.ts: checking the chunks)
 *   range-ops.ts      split, merge and merge freeze
 *   status.ts         status and statistics
 *
 * The invariants between the data and its indexes are written next to the assertions that
 * enforce them (the check* and assert* members below); the ones no assertion checks say so.
 */
import assert from 'node:assert/strict';
import type { BucketHashName } from '../keys/bucket-hash.js';
import { validatePartitionCount } from '../keys/partition-table.js';
import { tenantOfInternalKey } from '../keys/tenant-keys.js';
import { decodeUtf8 } from '../keys/utf8.js';
import { defaultLimits, type Limits } from '../limits.js';
import { decodeUint64BE, equalBytes } from '../storage/bytes.js';
import type { StorageEngine } from '../storage/storage-engine.js';
import { decodeAppliedRecord } from './applied-record.js';
import type { CompactionPass, StorageCompactionStep } from './compaction-pass.js';
import { DedupTable, defaultDedupWindow, type DedupState } from './dedup-table.js';
import { ExpiryIndex } from './expiry-index.js';
import { KeyIndex, type KeyIndexBudget } from './key-index.js';
import { MvccKeyLayout } from './key-layout.js';
import { LeaseTable } from './lease-table.js';
import { decodeFreeze, decodeOwnedRange } from './range-records.js';
import { addUsage, versionBytes, type TenantUsageCount } from './tenant-usage.js';
import type { VersionCache } from './version-cache.js';
import { decodeVersionRecord, type StoredVersion } from './version-record.js';

export interface MvccStoreOptions {
  readonly engine: StorageEngine;
  /** The partition's key prefix in the shared engine (storage/keyspace.ts partitionKeyPrefix). */
  readonly prefix: Uint8Array;
  /** Must be identical on every replica of the partition (see limits.ts). */
  readonly limits?: Limits;
  /** Sync every apply batch to disk (default false; see the durability note in mvcc-store.ts). */
  readonly syncApply?: boolean;
  /**
   * The partition this store holds, out of how many. When given, keys that route elsewhere are
   * refused with WRONG_PARTITION (a misrouted request must not create a key no reader will find),
   * and prefixes must name a bucket of this partition. `hash` is the cluster's bucket hash (its
   * descriptor; default: a new cluster's); it is part of the replicated configuration, the same on
   * every replica, so ownership decided in apply stays deterministic.
   */
  readonly partition?: { readonly id: number; readonly count: number; readonly hash?: BucketHashName };
  /**
   * How many deduplicated results (entries applied with a request id) the partition keeps:
   * default 100_000. Past it the oldest, by apply order, is evicted: a retry of a plain id is then
   * applied again, one of a timestamped id fails with REQUEST_ID_EXPIRED (request-id.ts). It
   * decides outcomes, so like the limits it must be identical on every replica.
   */
  readonly dedupWindow?: number;
  /**
   * TEST ONLY: ignore request ids (after checking them), so every retry is applied again. It
   * exists as the negative control of exactly-once checks (a checker must see retries
   * double-count with it). Never set it in a real node.
   */
  readonly dedupDisabled?: boolean;
  /** TEST ONLY (a negative control): exported snapshots carry no dedup records. */
  readonly dedupForgetsOnSnapshot?: boolean;
  /** TEST ONLY (a negative control): applySplit copies the moved keys into the target but leaves them in the source too. */
  readonly splitKeepsMovedKeys?: boolean;
  /** TEST ONLY (a negative control): a SERIALIZABLE commit does not validate its read prefixes. */
  readonly serializableSkipsPrefixValidation?: boolean;
  /**
   * The node's cache of newest versions (version-cache.ts) and this store's id in it (unique
   * among the stores sharing the cache). Without it every lookup reads storage.
   */
  readonly versionCache?: { readonly cache: VersionCache; readonly storeId: number };
  /**
   * Keep every stored key's newest revision in memory (default true; see
   * MvccState.newestRevisionOf): about a hundred bytes plus the key per stored key. Without it a
   * lookup of a key's newest version that misses the cache costs a storage iterator. The tests run
   * stores without it as the reference the indexed stores must agree with.
   */
  readonly keyIndex?: boolean;
  /**
   * The key index's budget (key-index.ts; default unbounded): a number for this store alone, or a
   * budget several stores share (a node's). A store whose index would grow past it drops the index
   * and reads storage instead, until its next open, snapshot import or split.
   */
  readonly keyIndexMaxBytes?: number | KeyIndexBudget;
}

export interface MvccStatus {
  readonly appliedIndex: number;
  readonly revision: number;
  readonly compactedRevision: number;
  /** True when a snapshot import was interrupted: the state is unusable until one succeeds. */
  readonly needsSnapshot: boolean;
}

/** A version an entry stored (the commit listener's argument). */
export interface StoredChange {
  readonly key: string;
  readonly stored: StoredVersion;
}

/** Why a store's revision or history moved without a commit (setCommitListener's reset). */
export type RevisionResetReason = 'import' | 'merge' | 'merged-away';

export function assertNowMs(nowMs: number): void {
  assert(Number.isSafeInteger(nowMs) && nowMs >= 0, 'nowMs must be a non-negative safe integer');
}

/**
 * One partition's MVCC state, shared by the job modules (its fields are theirs to read and move;
 * src/mvcc/index.ts does not export it, so outside src/mvcc only MvccStore reaches it). Only one
 * exclusive job runs at a time (enterExclusive); reads, exports and compaction steps run beside it
 * and tell, by the epoch and the revision, whether it moved under them.
 */
export class MvccState {
  readonly layout: MvccKeyLayout;
  readonly limits: Limits;
  readonly syncApply: boolean;
  readonly partition: { readonly id: number; readonly count: number; readonly hash?: BucketHashName } | undefined;
  readonly dedup: DedupTable;
  readonly dedupDisabled: boolean;
  /** Negative controls' defects (MvccStoreOptions); all false in a real node. */
  readonly testBugs: { readonly dedupForgetsOnSnapshot: boolean; readonly skipPrefixValidation: boolean; readonly splitKeepsMovedKeys: boolean };
  /**
   * A recorded result must fit, with a full chunk, in one message, as a snapshot carries it.
   * Invariant (asserted in the constructor): at least one maximal key and value, so a plain
   * write fits.
   */
  readonly maxDedupEntryBytes: number;

  // Invariant (not asserted): these mirror the meta records of the last batch written (or are
  // zero for a new store); every job writes the records first and sets these after the write.
  // Invariant: compactedRevision <= revision (checkStoredStatus, assertFloorWithinRevision).
  appliedIndex: number;
  revision: number;
  compactedRevision: number;
  /** True while a snapshot import is unfinished (or a crash interrupted one): no apply, no read. */
  needsSnapshot: boolean;
  /** After open: the index of the snapshot whose import a crash interrupted, when the mark names it. */
  interruptedImportIndex: number | undefined;
  /**
   * The partition's replicated clock: the time every entry up to appliedIndex was applied at.
   * Invariant: it never decreases across applies (assertClockAdvances); only a snapshot import
   * replaces it, with the exporter's value at the snapshot's applied index.
   */
  appliedTimeMs: number;

  /** Set while an apply, physical compaction or import runs: they must not overlap (enterExclusive). */
  exclusive = false;
  exportsInFlight = 0;
  /** Bumped by every snapshot import (and split, merge, freeze), so a read that overlapped one can tell. */
  epoch = 0;
  /** Versions below the floor may still await physical removal (see compactor.ts). */
  storageCompactionPending = false;
  compactionPass: CompactionPass | undefined;
  compactionStepInFlight: Promise<StorageCompactionStep> | undefined;
  /** Set while an import, split or merge runs: no compaction step starts. */
  importing = false;
  /**
   * Stored keys, live bytes and history bytes per tenant. Invariant (not asserted here;
   * test/mvcc/usage.test.ts compares it with a recount): the sum over stored keys, as
   * rebuildKeyState computes it; every commit adds its entry's change and every compaction step
   * the history it freed.
   */
  usage = new Map<string, TenantUsageCount>();
  readonly cache: VersionCache | undefined;
  readonly cacheStoreId: number;
  /**
   * Every stored key's newest version revision (etcd keeps a similar in-memory index of its whole
   * keyspace), so the newest version of a key is one point read, or nothing at all for a key the
   * store never had, instead of a LevelDB iterator. Its invariant is at assertIndexedVersionGone.
   */
  newestRevisionOf: KeyIndex;
  keyIndexComplete = false;
  /**
   * The expiry of every key whose newest version is a value with one (expiry-index.ts), kept by
   * commit and rebuilt by rebuildKeyState, so the leader finds expired keys without a scan.
   * Invariant (not asserted; apply checks each expired key again): exactly those keys and times.
   */
  expiry = new ExpiryIndex();
  /**
   * The partition's leases (lease-table.ts): kept by commit, reloaded by rebuildKeyState.
   * Invariant (not asserted): the stored lease records, as of the last batch written.
   */
  leases = new LeaseTable();
  readonly keyIndexEnabled: boolean;
  /** The watch hook (commit.ts setCommitListener): every new revision, in commit order. */
  commitListener: ((revision: number, changes: ReadonlyArray<StoredChange>) => void) | undefined;
  /** Told whenever the revision or the history moves without a commit (see setCommitListener). */
  resetListener: ((revision: number, reason: RevisionResetReason) => void) | undefined;
  /**
   * True while the separate applied-index, applied-time and revision records of the format before
   * applied-record.ts may be stored: the next apply batch deletes them beside the 'applied' record.
   */
  legacyAppliedRecords = false;
  /**
   * The hash range this partition owns once a split made it data (the 'range' meta record, written
   * by applySplit and applyMerge and by a snapshot import that carries one), else undefined: the
   * partition then owns its place in the equal table (options.partition). Invariant (not
   * asserted): it mirrors the stored record.
   */
  ownedRange: { readonly start: number; readonly end: number } | undefined;
  /**
   * Set once applyMerge folded this partition into its left neighbour (that one's id): the store
   * is then empty on disk and inert. Invariant: nothing applies to it afterwards (assertCanApply),
   * and a read answers PARTITION_MOVED naming the neighbour.
   */
  mergedInto: number | undefined;
  /**
   * The merge freeze (applyFreeze; the 'merge-freeze' meta record, carried by snapshots as format
   * 6): once set, this partition is waiting to be merged into partition `into` and applies nothing
   * more. Invariant (not asserted): it mirrors the stored record, is never cleared but by the merge
   * that empties the partition (a freeze has no undo, so every replica's state at any applied
   * index at or past `index` is its state at `index`), and no write, read, split or second freeze
   * changes the state after it.
   */
  frozen: { readonly into: number; readonly index: number } | undefined;

  constructor(
    readonly engine: StorageEngine,
    layout: MvccKeyLayout,
    options: MvccStoreOptions,
    status: MvccStatus,
    dedupState: DedupState,
    appliedTimeMs: number,
  ) {
    this.layout = layout;
    this.limits = options.limits ?? defaultLimits;
    this.syncApply = options.syncApply ?? false;
    this.partition = options.partition;
    this.dedup = new DedupTable(engine, layout, options.dedupWindow ?? defaultDedupWindow, dedupState);
    this.dedupDisabled = options.dedupDisabled ?? false;
    this.testBugs = { dedupForgetsOnSnapshot: options.dedupForgetsOnSnapshot === true, skipPrefixValidation: options.serializableSkipsPrefixValidation === true, splitKeepsMovedKeys: options.splitKeepsMovedKeys === true };
    this.cache = options.versionCache?.cache;
    this.cacheStoreId = options.versionCache?.storeId ?? 0;
    this.keyIndexEnabled = options.keyIndex ?? true;
    this.newestRevisionOf = new KeyIndex(options.keyIndexMaxBytes);
    this.maxDedupEntryBytes = this.limits.maxMessageBytes - this.limits.snapshotChunkBytes - this.limits.messageOverheadBytes;
    assert(this.maxDedupEntryBytes >= this.limits.maxKeyBytes + this.limits.maxValueBytes, 'a recorded write must fit a snapshot message');
    if (this.partition !== undefined) {
      validatePartitionCount(this.partition.count);
      // A partition made by a split has an id past the equal table's; its range is its record.
      assert(Number.isInteger(this.partition.id) && this.partition.id >= 0);
    }
    this.appliedIndex = status.appliedIndex;
    this.revision = status.revision;
    this.compactedRevision = status.compactedRevision;
    this.needsSnapshot = status.needsSnapshot;
    this.appliedTimeMs = appliedTimeMs;
  }

  /**
   * Opens the partition's state from the engine (an empty partition when it has none yet), and
   * returns `wrap(state)` (MvccStore.open's facade): built here rather than after an await of this
   * function, so opening a store costs no extra turn of the event loop.
   */
  static async open<T>(options: MvccStoreOptions, wrap: (state: MvccState) => T): Promise<T> {
    const layout = new MvccKeyLayout(options.prefix);
    const readNumber = async (key: Uint8Array): Promise<number> => {
      const bytes = await options.engine.get(key);
      return bytes === undefined ? 0 : decodeUint64BE(bytes);
    };
    // One 'applied' record (applied-record.ts); a data directory from before it has three.
    const appliedBytes = await options.engine.get(layout.appliedKey);
    const legacy = appliedBytes === undefined ? await Promise.all([layout.appliedIndexKey, layout.revisionKey, layout.appliedTimeKey].map((key) => options.engine.get(key))) : [];
    const legacyNumber = (bytes: Uint8Array | undefined): number => (bytes === undefined ? 0 : decodeUint64BE(bytes));
    const applied =
      appliedBytes !== undefined
        ? decodeAppliedRecord(appliedBytes)
        : { appliedIndex: legacyNumber(legacy[0]), revision: legacyNumber(legacy[1]), appliedTimeMs: legacyNumber(legacy[2]) };
    let status: MvccStatus = {
      appliedIndex: applied.appliedIndex,
      revision: applied.revision,
      compactedRevision: await readNumber(layout.compactedRevisionKey),
      needsSnapshot: false,
    };
    const mark = await options.engine.get(layout.importInProgressKey);
    status = { ...status, needsSnapshot: mark !== undefined };
    MvccState.checkStoredStatus(status);
    const dedupState = await DedupTable.loadState(options.engine, layout);
    MvccState.checkStoredDedupFloor(dedupState, status);
    const state = new MvccState(options.engine, layout, options, status, dedupState, applied.appliedTimeMs);
    const rangeBytes = await options.engine.get(layout.rangeKey);
    if (rangeBytes !== undefined) state.ownedRange = decodeOwnedRange(rangeBytes);
    const freezeBytes = await options.engine.get(layout.freezeKey);
    if (freezeBytes !== undefined) state.frozen = decodeFreeze(freezeBytes);
    // Only a split or an import makes a partition past the equal table; it has its range record.
    if (options.partition !== undefined && rangeBytes === undefined && !status.needsSnapshot && status.appliedIndex > 0) {
      assert(options.partition.id < options.partition.count, 'a partition made by a split has its range record');
    }
    state.legacyAppliedRecords = legacy.some((bytes) => bytes !== undefined);
    if (mark !== undefined && mark.length === 8) state.interruptedImportIndex = decodeUint64BE(mark);
    if (!status.needsSnapshot) await state.rebuildKeyState();
    return wrap(state);
  }

  /** Invariant: the compaction floor is never above the revision (also kept by commit). */
  private static checkStoredStatus(status: MvccStatus): void {
    assert(status.compactedRevision <= status.revision, 'stored compaction floor is above the revision');
  }

  /**
   * Invariant: the dedup floor is at most one past the applied index (the table evicts only
   * results of entries applied), so every live dedup record names an applied entry.
   */
  private static checkStoredDedupFloor(dedupState: DedupState, status: MvccStatus): void {
    assert(dedupState.floorIndex <= status.appliedIndex + 1, 'stored dedup floor is above the applied index');
  }

  /**
   * Invariant (exclusivity): at most one apply, snapshot import, split, merge, freeze or the
   * dedup removal of compactStorage runs on a store at a time; reads, exports and compaction
   * steps may run beside them (a compaction step defers while `exclusive` is set). Every job that
   * enters leaves in a `finally`, by clearing `exclusive`.
   */
  enterExclusive(): void {
    assert(!this.exclusive, 'apply, storage compaction and snapshot import must not overlap');
    this.exclusive = true;
  }

  /**
   * Invariant: nothing applies to a store whose snapshot import is unfinished, nor to one merged
   * into its neighbour (it is empty on disk and inert).
   */
  assertCanApply(): void {
    assert(!this.needsSnapshot, 'apply on a partition whose snapshot import did not finish');
    assert(this.mergedInto === undefined, 'apply on a partition merged into its neighbour');
  }

  /** Invariant: the partition clock never moves backwards (apply takes the max with the previous time). */
  assertClockAdvances(timeMs: number): void {
    assert(Number.isSafeInteger(timeMs) && timeMs >= this.appliedTimeMs, 'the partition clock never moves backwards');
  }

  /** Invariant: an entry creates at most one revision, the next one; revisions are never skipped. */
  assertNextRevision(newRevision: number): void {
    assert.equal(newRevision, this.revision + 1, 'an entry creates at most one revision');
  }

  /** Invariant: compactedRevision <= revision, so a floor can only rise to the current revision. */
  assertFloorWithinRevision(newCompactedRevision: number): void {
    assert(newCompactedRevision <= this.revision, 'the compaction floor cannot pass the revision');
  }

  /**
   * The key index's invariant, while `keyIndexComplete`: `newestRevisionOf` maps exactly the keys
   * that have a stored version (a value or a tombstone) to the revision of their newest stored
   * version.
   * - A commit sets the written keys to the new revision in the same synchronous step that moves
   *   the store's revision, after its batch is written (as the version cache; indexStored).
   * - Physical compaction removes a key's newest version only when it is a tombstone at or below
   *   the floor with nothing above it; it removes the key from the index just before (while the
   *   index still names that tombstone; forgetRemovedKey), so a key may briefly be missing from
   *   the index while its tombstone is still stored: both read as "not found".
   * - An import empties it and marks it incomplete; rebuildKeyState (at open and at the end of an
   *   import, split or merge) rebuilds it from a scan of every stored version and marks it complete.
   * Asserted on every lookup that finds the indexed version missing: only an import that replaced
   * the store meanwhile (the epoch moved; the reader then fails), or a compaction step that removed
   * this tombstone meanwhile (it forgot the key first), explains it.
   */
  assertIndexedVersionGone(key: string, newest: number, epoch: number): void {
    if (!(this.epoch !== epoch || this.newestRevisionOf.get(key) !== newest)) assert.fail(`key index names version ${newest} of a key that has no such version`);
  }

  /**
   * Moves the key index, the expiry index and the version cache to the versions an entry stored at
   * `revision`, in the synchronous step of commit that moves the revision (see
   * assertIndexedVersionGone). The version cache's invariant: an entry is exactly the key's newest
   * version in this store, and a value (tombstones are not cached); a miss fills it only from a
   * lookup at the current revision that no commit or import overlapped (find-version.ts); an
   * import, split, merge or freeze clears this store's entries. Not asserted: the version-cache
   * differential test checks every entry.
   */
  indexStored(revision: number, stored: ReadonlyArray<{ readonly key: string; readonly stored: StoredVersion }>): void {
    if (this.keyIndexComplete) {
      for (const { key } of stored) {
        if (this.newestRevisionOf.set(key, revision)) continue;
        // Over its byte budget: drop the whole index (lookups read storage; same answers).
        this.keyIndexComplete = false;
        this.newestRevisionOf.clear();
        break;
      }
    }
    for (const { key, stored: version } of stored) this.expiry.set(key, version.kind === 'value' ? version.expiresAtMs : undefined);
    if (this.cache !== undefined) {
      for (const { key, stored: version } of stored) {
        if (version.kind === 'value') this.cache.set(this.cacheStoreId, key, { revision, stored: version });
        else this.cache.delete(this.cacheStoreId, key);
      }
    }
  }

  /** A compaction step removes the key's last version, the tombstone at `revision` (see assertIndexedVersionGone). */
  forgetRemovedKey(key: string, revision: number): void {
    if (this.newestRevisionOf.get(key) === revision) this.newestRevisionOf.delete(key);
  }

  /**
   * Recounts usage and rebuilds the key index, the expiry index and the leases from the stored
   * versions and records: at open and after a snapshot import, split or merge (nothing else runs
   * on the store meanwhile). It also decides whether physical compaction has work.
   */
  async rebuildKeyState(): Promise<void> {
    this.keyIndexComplete = false;
    const usage = new Map<string, TenantUsageCount>();
    // The old index goes first, so that its bytes are the budget's again for the new one.
    this.newestRevisionOf.clear();
    const newest = new KeyIndex(this.newestRevisionOf.budget);
    // False once a key did not fit the budget: the store then runs without an index.
    let indexFits = this.keyIndexEnabled;
    const expiry = new ExpiryIndex();
    // Per key: its newest version so far, and the bytes of the older ones (its history so far).
    let group: { groupKey: Uint8Array; userKey: Uint8Array; last: StoredVersion; revision: number; olderBytes: number; atFloor: number; atFloorTombstone: boolean } | undefined;
    // Whether some stored version is one physical compaction would remove (see compactor.ts).
    let removable = false;
    const floor = this.compactedRevision;
    const flush = (): void => {
      if (group === undefined) return;
      if (group.atFloor > 1 || group.atFloorTombstone) removable = true;
      const key = decodeUtf8(group.userKey);
      if (indexFits && !newest.set(key, group.revision)) {
        indexFits = false;
        newest.clear();
      }
      if (group.last.kind === 'value') expiry.set(key, group.last.expiresAtMs);
      const tenant = tenantOfInternalKey(key);
      const lastBytes = versionBytes(group.userKey.length, group.last);
      if (group.last.kind === 'value') addUsage(usage, tenant, 1, lastBytes, group.olderBytes);
      else addUsage(usage, tenant, 0, 0, group.olderBytes + lastBytes);
    };
    for await (const [storageKey, record] of this.engine.iterate(this.layout.allVersionsRange())) {
      const parsed = this.layout.parseVersionKey(storageKey);
      if (group === undefined || !equalBytes(parsed.groupKey, group.groupKey)) {
        flush();
        group = { groupKey: parsed.groupKey.slice(), userKey: parsed.userKey.slice(), last: decodeVersionRecord(record), revision: parsed.revision, olderBytes: 0, atFloor: 0, atFloorTombstone: false };
      } else {
        group.olderBytes += versionBytes(group.userKey.length, group.last);
        group.last = decodeVersionRecord(record);
        group.revision = parsed.revision;
      }
      if (parsed.revision <= floor) {
        group.atFloor++;
        group.atFloorTombstone = group.last.kind === 'tombstone';
      }
    }
    flush();
    this.usage = usage;
    this.expiry = expiry;
    this.leases = await LeaseTable.load(this.engine, this.layout);
    this.storageCompactionPending = removable;
    this.newestRevisionOf = newest;
    this.keyIndexComplete = indexFits;
  }
}
