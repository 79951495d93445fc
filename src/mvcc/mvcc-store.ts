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
import { bucketOf } from '../keys/bucket.js';
import { defaultBucketHash, type BucketHashName } from '../keys/bucket-hash.js';
import { equalRangeOf, partitionOfBucket, validatePartitionCount } from '../keys/partition-table.js';
import { keyInHashRange, planSplitMove } from './split-plan.js';
import { planMergeMove } from './merge-plan.js';
import { tenantOfInternalKey } from '../keys/tenant-keys.js';
import { decodeUtf8, utf8ByteLength } from '../keys/utf8.js';
import { validateKey } from '../keys/validate-key.js';
import { defaultLimits, type Limits } from '../limits.js';
import { compareBytes, decodeUint64BE, encodeUint64BE, equalBytes } from '../storage/bytes.js';
import type { KeyRange, StorageEngine, WriteOperation } from '../storage/storage-engine.js';
import type {
  ApplyContext,
  ApplyResult,
  BatchCommand,
  Command,
  CompactCommand,
  ExpireCommand,
  LeaseGrantCommand,
  LeaseRevokeCommand,
  KeyVersion,
  TxnCommand,
  WriteOp,
  WriteResult,
} from './commands.js';
import { encodeDedupEntry, type RecordedResult } from './dedup-record.js';
import { DedupTable, defaultDedupWindow, emptyDedupState, type DedupMeta, type DedupPlan, type DedupState, type FoundResult } from './dedup-table.js';
import { decodeAppliedRecord, encodeAppliedRecord } from './applied-record.js';
import { ExpiryIndex } from './expiry-index.js';
import { MvccKeyLayout } from './key-layout.js';
import { encodeLeaseRecord, leaseNotFound, LeaseTable, type LeaseChange, type LeaseRecord } from './lease-table.js';
import { planWrite, type WritePlan } from './plan-write.js';
import { requestIdCreatedAtMs, requestIdMaxAheadMs } from './request-id.js';
import { checkedSnapshotHeader, finishSnapshotPlan, newSnapshotPlan, planSnapshotChunk, snapshotCheck } from './snapshot-check.js';
import { encodeSnapshotHeader, encodeSnapshotTrailer, snapshotVersionOf, SnapshotEntriesWriter, type SnapshotHeader } from './snapshot-format.js';
import { validateCommand, validateKeyPrefix, validateRequestId, validateRevisionNumber } from './validate-command.js';
import type { VersionCache } from './version-cache.js';
import { KeyIndex } from './key-index.js';
import { decodeVersionRecord, encodeVersionRecord, expiredTombstone, leaseTombstone, type StoredVersion } from './version-record.js';
import { decodeFreeze, decodeOwnedRange, encodeFreeze, encodeOwnedRange } from './range-records.js';
import { addUsage, versionBytes, type TenantUsageCount } from './tenant-usage.js';

export interface MvccStoreOptions {
  readonly engine: StorageEngine;
  /** The partition's key prefix in the shared engine (storage/keyspace.ts partitionKeyPrefix). */
  readonly prefix: Uint8Array;
  /** Must be identical on every replica of the partition (see limits.ts). */
  readonly limits?: Limits;
  /** Sync every apply batch to disk (default false; see the durability note above). */
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
   * Keep every stored key's newest revision in memory (default true; see newestRevisionOf): about
   * a hundred bytes plus the key per stored key. Without it a lookup of a key's newest version
   * that misses the cache costs a storage iterator. The tests run stores without it as the
   * reference the indexed stores must agree with.
   */
  readonly keyIndex?: boolean;
  /**
   * The key index's budget (key-index.ts; default unbounded): a store whose index would grow past
   * it drops the index and reads storage instead, until its next open or snapshot import.
   */
  readonly keyIndexMaxBytes?: number;
}

export { defaultDedupWindow };
export type { TenantUsageCount };

export interface DedupStatus {
  /** The live dedup records: the request ids a retry of which is recognised. */
  readonly recordCount: number;
  /** Results recorded by entries below this index are evicted. */
  readonly floorIndex: number;
  readonly window: number;
  /**
   * The expiry mark: the newest creation time among the evicted timestamped request ids (0: none).
   * An unknown timestamped id created at or before it is refused with REQUEST_ID_EXPIRED.
   */
  readonly expiredThroughMs: number;
}

export interface ReadOptions {
  /** Read at this past revision instead of the latest. */
  readonly revision?: number;
  /** The reader's clock, Unix epoch milliseconds: keys with expiresAtMs <= nowMs are invisible. */
  readonly nowMs: number;
}

export interface GetResult {
  /** Whether the key is live at the revision. A missing key is an answer, not an error. */
  readonly found: boolean;
  /** The value when found; an empty value is still found. */
  readonly value?: Uint8Array;
  /** 0 when not found. */
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  readonly expiresAtMs?: number;
  /** The revision the read was served at. */
  readonly revision: number;
}

export interface PrefixReadOptions extends ReadOptions {
  /** At most this many keys (default defaultPageSize, at most maxPageSize). */
  readonly limit?: number;
  /** Continue after this key: pass the previous page's continueAfter and its revision. */
  readonly after?: string;
}

export interface PrefixPage {
  /** Live keys in UTF-8 byte order (Unicode code point order). */
  readonly items: KeyVersion[];
  /** The revision every item was read at; pass it back with continueAfter for the next page. */
  readonly revision: number;
  /** Whether another page may hold more keys. */
  readonly more: boolean;
  /** When more: the key to pass as `after`. */
  readonly continueAfter?: string;
}

export interface MvccStatus {
  readonly appliedIndex: number;
  readonly revision: number;
  readonly compactedRevision: number;
  /** True when a snapshot import was interrupted: the state is unusable until one succeeds. */
  readonly needsSnapshot: boolean;
}

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

export interface StorageCompactionStep {
  readonly removedVersions: number;
  /** True when no physical compaction is pending any more. */
  readonly done: boolean;
  /** True when a snapshot export or import runs, so the step did nothing. */
  readonly deferred: boolean;
}

/** A physical compaction pass in progress (see MvccStore.compactStorageStep). */
interface CompactionPass {
  /** The floor this pass removes below: the store's floor when it began (at or below the current one). */
  readonly floor: number;
  /** The import epoch it began in (an import discards it). */
  readonly epoch: number;
  /** The first stored version the pass has not examined; undefined: the first of the partition. */
  resumeAt: Uint8Array | undefined;
  /** The key group the previous step stopped inside. */
  group: CompactionGroup | undefined;
}

/** Per key: the newest version at or below the pass's floor seen so far, which a reader may still need. */
interface CompactionGroup {
  readonly groupKey: Uint8Array;
  readonly userKey: Uint8Array;
  /** Decoded from userKey on the group's first removal. */
  tenant?: string;
  aboveFloor: boolean;
  newestAtFloor?: { readonly storageKey: Uint8Array; readonly revision: number; readonly isTombstone: boolean; readonly bytes: number };
}

/** The newest stored version of a key at some revision. */
interface FoundVersion {
  readonly revision: number;
  readonly stored: StoredVersion;
}

/** What apply decided before writing. */
interface Outcome {
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

/** What a serializable commit's prefix validation has examined so far (retained keys and versions). */
interface ValidationBudget {
  keys: number;
  versions: number;
}

/** What to do about an entry's request id. */
type DedupRequest =
  | { readonly kind: 'none' }
  | { readonly kind: 'invalid'; readonly error: AtollError }
  | { readonly kind: 'deduplicated'; readonly requestId: string };

const noDedup: DedupRequest = Object.freeze({ kind: 'none' });

function failedOutcome(error: AtollError): Outcome {
  return { applied: false, error, writes: [], operations: [] };
}

/** An entry that changes nothing but the applied index (a duplicate). */
const emptyOutcome: Outcome = Object.freeze({ applied: false, writes: [], operations: [] });

/** A well-formed transaction's snapshot time, else 0 (a malformed command fails in decide). */
function txnSnapshotTimeOf(command: Command): number {
  const time = (command as { type?: unknown; snapshotTimeMs?: unknown } | null)?.type === 'txn' ? (command as TxnCommand).snapshotTimeMs : undefined;
  return typeof time === 'number' && Number.isSafeInteger(time) && time >= 0 ? time : 0;
}

function assertNowMs(nowMs: number): void {
  assert(Number.isSafeInteger(nowMs) && nowMs >= 0, 'nowMs must be a non-negative safe integer');
}

/** The live version a stored version shows a reader at nowMs, or undefined when it shows none. */
function liveVersion(key: string, found: FoundVersion | undefined, nowMs: number): KeyVersion | undefined {
  if (found === undefined || found.stored.kind !== 'value') return undefined;
  const { createRevision, version, value, expiresAtMs, fence } = found.stored;
  if (expiresAtMs !== undefined && expiresAtMs <= nowMs) return undefined;
  const base = { key, value, createRevision, modRevision: found.revision, version, ...(fence !== undefined && { fence }) };
  return expiresAtMs === undefined ? base : { ...base, expiresAtMs };
}

/** A version an entry stored (the commit listener's argument). */
export interface StoredChange {
  readonly key: string;
  readonly stored: StoredVersion;
}

/** Why a store's revision or history moved without a commit (setCommitListener's reset). */
export type RevisionResetReason = 'import' | 'merge' | 'merged-away';

/** A stored version and its revision (changesSince). */
export interface StoredChangeAt extends StoredChange {
  readonly revision: number;
}

function byRevisionThenKey(a: StoredChangeAt, b: StoredChangeAt): number {
  return a.revision - b.revision || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);
}

export class MvccStore {
  private readonly layout: MvccKeyLayout;
  private readonly limits: Limits;
  private readonly syncApply: boolean;
  private readonly partition: { readonly id: number; readonly count: number; readonly hash?: BucketHashName } | undefined;
  private readonly dedup: DedupTable;
  private readonly dedupDisabled: boolean;
  /** Negative controls' defects (MvccStoreOptions); both false in a real node. */
  private readonly testBugs: { readonly dedupForgetsOnSnapshot: boolean; readonly skipPrefixValidation: boolean; readonly splitKeepsMovedKeys: boolean };
  /**
   * A recorded result must fit, with a full chunk, in one message, as a snapshot carries it.
   * Invariant (from assertLimits): at least one maximal key and value, so a plain write fits.
   */
  private readonly maxDedupEntryBytes: number;

  // Invariant: these mirror the meta records of the last batch written (or are zero for a new store).
  // Invariant: compactedRevision <= revision.
  private appliedIndexValue: number;
  private revisionValue: number;
  private compactedRevisionValue: number;
  private needsSnapshotValue: boolean;
  private interruptedImportIndexValue: number | undefined;
  /**
   * The partition's replicated clock: the time every entry up to appliedIndex was applied at.
   * Invariant: it never decreases across applies (asserted in commit); only a snapshot import
   * replaces it, with the exporter's value at the snapshot's applied index.
   */
  private appliedTimeValue: number;

  /** Set while an apply, physical compaction or import runs: they must not overlap. */
  private exclusive = false;
  private exportsInFlight = 0;
  /** Bumped by every snapshot import, so a read that overlapped one can tell. */
  private epoch = 0;
  /** Versions below the floor may still await physical removal (see compactStorageStep). */
  private storageCompactionPendingValue = false;
  private compactionPass: CompactionPass | undefined;
  private compactionStepInFlight: Promise<StorageCompactionStep> | undefined;
  /** Set while importSnapshot runs: no compaction step starts. */
  private importing = false;
  /** Invariant: the sum over stored keys, as rebuildKeyState computes it (kept by every apply). */
  private usage = new Map<string, TenantUsageCount>();
  private readonly cache: VersionCache | undefined;
  private readonly cacheStoreId: number;
  /**
   * Every stored key's newest version revision (etcd keeps a similar in-memory index of its whole
   * keyspace), so the newest version of a key is one point read, or nothing at all for a key the
   * store never had, instead of a LevelDB iterator.
   * Invariant, while `keyIndexComplete`: `newestRevisionOf` maps exactly the keys that have a
   * stored version (a value or a tombstone) to the revision of their newest stored version.
   * - A commit sets the written keys to the new revision in the same synchronous step that moves
   *   the store's revision, after its batch is written (as the version cache).
   * - Physical compaction removes a key's newest version only when it is a tombstone at or below
   *   the floor with nothing above it; it removes the key from the index just before (while the
   *   index still names that tombstone), so a key may briefly be missing from the index while its
   *   tombstone is still stored: both read as "not found".
   * - An import empties it and marks it incomplete; rebuildKeyState (at open and at the end of an
   *   import) rebuilds it from a scan of every stored version and marks it complete.
   */
  private newestRevisionOf: KeyIndex;
  private keyIndexComplete = false;
  /**
   * The expiry of every key whose newest version is a value with one (expiry-index.ts), kept by
   * commit and rebuilt by rebuildKeyState, so the leader finds expired keys without a scan.
   */
  private expiry = new ExpiryIndex();
  /** The partition's leases (lease-table.ts): kept by commit, reloaded by rebuildKeyState. */
  private leases = new LeaseTable();
  private readonly keyIndexEnabled: boolean;
  private commitListener: ((revision: number, changes: ReadonlyArray<StoredChange>) => void) | undefined;
  /** Told whenever the revision or the history moves without a commit (see setCommitListener). */
  private resetListener: ((revision: number, reason: RevisionResetReason) => void) | undefined;
  /**
   * True while the separate applied-index, applied-time and revision records of the format before
   * applied-record.ts may be stored: the next apply batch deletes them beside the 'applied' record.
   */
  private legacyAppliedRecords = false;
  /**
   * The hash range this partition owns once a split made it data (the 'range' meta record, written
   * by applySplit and by a snapshot import that carries one), else undefined: the partition then
   * owns its place in the equal table (options.partition). Invariant: it mirrors the stored record.
   */
  private ownedRange: { readonly start: number; readonly end: number } | undefined;
  /**
   * Set once applyMerge folded this partition into its left neighbour (that one's id): the store
   * is then empty on disk and inert. Invariant: nothing applies to it afterwards (asserted), and a
   * read answers PARTITION_MOVED naming the neighbour.
   */
  private mergedIntoValue: number | undefined;
  /**
   * The merge freeze (applyFreeze; the 'merge-freeze' meta record, carried by snapshots as format
   * 6): once set, this partition is waiting to be merged into partition `into` and applies nothing
   * more. Invariant: it mirrors the stored record, is never cleared but by the merge that empties
   * the partition (a freeze has no undo, so every replica's state at any applied index at or past
   * `index` is its state at `index`), and no write, read, split or second freeze changes the state
   * after it.
   */
  private frozenValue: { readonly into: number; readonly index: number } | undefined;

  private constructor(
    private readonly engine: StorageEngine,
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
    this.appliedIndexValue = status.appliedIndex;
    this.revisionValue = status.revision;
    this.compactedRevisionValue = status.compactedRevision;
    this.needsSnapshotValue = status.needsSnapshot;
    this.appliedTimeValue = appliedTimeMs;
  }

  /** Opens the partition's state from the engine (an empty partition when it has none yet). */
  static async open(options: MvccStoreOptions): Promise<MvccStore> {
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
    assert(status.compactedRevision <= status.revision, 'stored compaction floor is above the revision');
    const dedupState = await DedupTable.loadState(options.engine, layout);
    assert(dedupState.floorIndex <= status.appliedIndex + 1, 'stored dedup floor is above the applied index');
    const store = new MvccStore(options.engine, layout, options, status, dedupState, applied.appliedTimeMs);
    const rangeBytes = await options.engine.get(layout.rangeKey);
    if (rangeBytes !== undefined) store.ownedRange = decodeOwnedRange(rangeBytes);
    const freezeBytes = await options.engine.get(layout.freezeKey);
    if (freezeBytes !== undefined) store.frozenValue = decodeFreeze(freezeBytes);
    // Only a split or an import makes a partition past the equal table; it has its range record.
    if (options.partition !== undefined && rangeBytes === undefined && !status.needsSnapshot && status.appliedIndex > 0) {
      assert(options.partition.id < options.partition.count, 'a partition made by a split has its range record');
    }
    store.legacyAppliedRecords = legacy.some((bytes) => bytes !== undefined);
    if (mark !== undefined && mark.length === 8) store.interruptedImportIndexValue = decodeUint64BE(mark);
    if (!status.needsSnapshot) await store.rebuildKeyState();
    return store;
  }

  /** Stored keys, live bytes and history bytes per tenant (see TenantUsageCount). */
  usageByTenant(): ReadonlyMap<string, Readonly<TenantUsageCount>> {
    return this.usage;
  }

  /**
   * Recounts usage and rebuilds the key index from the stored versions: at open and after a
   * snapshot import (nothing else runs on the store meanwhile).
   */
  private async rebuildKeyState(): Promise<void> {
    this.keyIndexComplete = false;
    const usage = new Map<string, TenantUsageCount>();
    const newest = new KeyIndex(this.newestRevisionOf.maxBytes);
    // False once a key did not fit the budget: the store then runs without an index.
    let indexFits = this.keyIndexEnabled;
    const expiry = new ExpiryIndex();
    // Per key: its newest version so far, and the bytes of the older ones (its history so far).
    let group: { groupKey: Uint8Array; userKey: Uint8Array; last: StoredVersion; revision: number; olderBytes: number; atFloor: number; atFloorTombstone: boolean } | undefined;
    // Whether some stored version is one physical compaction would remove (see compactStorageStep).
    let removable = false;
    const floor = this.compactedRevisionValue;
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
    this.storageCompactionPendingValue = removable;
    this.newestRevisionOf = newest;
    this.keyIndexComplete = indexFits;
  }

  get appliedIndex(): number {
    return this.appliedIndexValue;
  }

  get revision(): number {
    return this.revisionValue;
  }

  get compactedRevision(): number {
    return this.compactedRevisionValue;
  }

  get needsSnapshot(): boolean {
    return this.needsSnapshotValue;
  }

  /** After open: the index of the snapshot whose import a crash interrupted, when the mark names it. */
  get interruptedImportIndex(): number | undefined {
    return this.interruptedImportIndexValue;
  }

  /**
   * The partition's replicated clock (Unix epoch ms): the time the last applied entry was applied
   * at. It never decreases, survives restarts and snapshot installs, and is identical on every
   * replica at the same applied index. Readers take max(their clock, this) as their time.
   */
  get appliedTimeMs(): number {
    return this.appliedTimeValue;
  }

  /**
   * Up to `max` keys whose newest version is a value that has expired at `nowMs`, earliest first:
   * what the leader proposes in an `expire` command (apply checks each again). No storage read.
   */
  expiredKeys(nowMs: number, max: number): string[] {
    assertNowMs(nowMs);
    if (this.needsSnapshotValue) return [];
    return this.expiry.expiredKeys(nowMs, max);
  }

  /** A lease of the partition by local id, or undefined (never granted, revoked or expired). */
  lease(id: number): LeaseRecord | undefined {
    return this.leases.get(id);
  }

  /** Every lease of the partition, in grant order (the leader's lease keeper walks them). */
  allLeases(): LeaseRecord[] {
    return this.leases.all();
  }

  /** How many leases each tenant holds in the partition (published with its usage, for the lease quota). */
  leaseCountsByTenant(): ReadonlyMap<string, number> {
    return this.leases.countsByTenant();
  }

  status(): MvccStatus {
    return {
      appliedIndex: this.appliedIndexValue,
      revision: this.revisionValue,
      compactedRevision: this.compactedRevisionValue,
      needsSnapshot: this.needsSnapshotValue,
    };
  }

  /** The key index's size and estimated bytes (key-index.ts), and whether the store uses it. */
  keyIndexStatus(): { keys: number; bytes: number; maxBytes: number; complete: boolean } {
    const index = this.newestRevisionOf;
    return { keys: index.size, bytes: index.bytes, maxBytes: index.maxBytes, complete: this.keyIndexComplete };
  }

  /** The dedup table's in-memory read-ahead and eviction list, estimated bytes (dedup-table.ts). */
  dedupMemory(): { bytes: number; readAheadHeads: number } {
    return { bytes: this.dedup.memoryBytes, readAheadHeads: this.dedup.readAheadLength };
  }

  dedupStatus(): DedupStatus {
    return { recordCount: this.dedup.count, floorIndex: this.dedup.floorIndex, window: this.dedup.window, expiredThroughMs: this.dedup.expiredThroughMs };
  }

  // ---------------------------------------------------------------------------------------------
  // Applying log entries

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
  async apply(command: Command, context: ApplyContext): Promise<ApplyResult> {
    assert(Number.isSafeInteger(context.index) && context.index >= 1, 'index must be a positive safe integer');
    assertNowMs(context.nowMs);
    assert(!this.needsSnapshotValue, 'apply on a partition whose snapshot import did not finish');
    assert(this.mergedIntoValue === undefined, 'apply on a partition merged into its neighbour');
    if (context.index <= this.appliedIndexValue) {
      return { index: context.index, revision: this.revisionValue, applied: false, replayed: true, duplicate: false, writes: [] };
    }
    this.enterExclusive();
    try {
      if (this.frozenValue !== undefined) {
        // Frozen for a merge: refused, and NOT recorded for deduplication (a recorded refusal would
        // travel into the merged partition and answer the retry there); only the applied index moves.
        const failed = failedOutcome(this.frozenError());
        await this.commit(failed, context.index, Math.max(context.nowMs, this.appliedTimeValue));
        return this.resultOf(context.index, failed);
      }
      // The entry's time on the partition clock: never before the previous entry's, nor before a
      // transaction's snapshot (the commit comes after it). Every replica computes the same.
      const nowMs = Math.max(context.nowMs, this.appliedTimeValue, txnSnapshotTimeOf(command));
      return await this.applyNewEntry(command, { ...context, nowMs });
    } finally {
      this.exclusive = false;
    }
  }

  private async applyNewEntry(command: Command, context: ApplyContext): Promise<ApplyResult> {
    const request = this.dedupRequestOf(command, context.requestId);
    if (request.kind === 'invalid') {
      const failed = failedOutcome(request.error);
      await this.commit(failed, context.index, context.nowMs);
      return this.resultOf(context.index, failed);
    }
    if (request.kind === 'deduplicated') {
      const found = await this.dedup.find(request.requestId);
      if (found !== undefined) return this.answerDuplicate(found, context.index, context.nowMs);
      const refused = this.refusedRequestId(request.requestId, context.nowMs);
      if (refused !== undefined) {
        const failed = failedOutcome(refused);
        await this.commit(failed, context.index, context.nowMs);
        return this.resultOf(context.index, failed);
      }
    }
    const decided = await this.decide(command, context.nowMs, context.index);
    // A transaction that lost a conflict changed nothing and is not recorded, so a retry with the
    // same id (a script re-run at a newer snapshot) can still commit exactly once.
    const record = request.kind === 'deduplicated' && decided.error?.code !== 'TXN_CONFLICT';
    const { outcome, dedupPlan } =
      record
        ? await this.planDedupRecord(request.requestId, context.index, decided)
        : { outcome: decided, dedupPlan: undefined };
    await this.commit(outcome, context.index, context.nowMs, dedupPlan);
    return this.resultOf(context.index, outcome);
  }

  /** The result of an entry just committed with `outcome`. */
  private resultOf(index: number, outcome: Outcome): ApplyResult {
    return {
      index,
      revision: this.revisionValue,
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
  private dedupRequestOf(command: Command, requestId: string | undefined): DedupRequest {
    if (requestId === undefined || (command as { type?: unknown } | null)?.type === 'compact') return noDedup;
    try {
      validateRequestId(requestId);
    } catch (error) {
      if (!(error instanceof AtollError)) throw error;
      return { kind: 'invalid', error };
    }
    return this.dedupDisabled ? noDedup : { kind: 'deduplicated', requestId };
  }

  /**
   * Why an unrecorded request id must not apply, if it must not. Invariant (exactly-once): a
   * timestamped id that was ever recorded is either found (its result is live) or evicted, and
   * eviction raised the expiry mark to at least its creation time; so an unrecorded id at or
   * below the mark is refused, and a recorded id never applies twice. Decided from the entry
   * (its id and nowMs) and the replicated dedup state only, so every replica decides alike.
   */
  private refusedRequestId(requestId: string, nowMs: number): AtollError | undefined {
    const createdAtMs = requestIdCreatedAtMs(requestId);
    if (createdAtMs === undefined) return undefined;
    if (createdAtMs > nowMs + requestIdMaxAheadMs) {
      return new AtollError(
        'INVALID_ARGUMENT',
        `the request id was created at ${createdAtMs}, more than ${requestIdMaxAheadMs} ms after the partition's time ${nowMs}: the client's clock is ahead; use a new id from a correct clock`,
        { createdAtMs, partitionNowMs: nowMs, maxAheadMs: requestIdMaxAheadMs },
      );
    }
    const expiredThroughMs = this.dedup.expiredThroughMs;
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

  private async answerDuplicate(found: FoundResult, index: number, nowMs: number): Promise<ApplyResult> {
    await this.commit(emptyOutcome, index, nowMs);
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
  private async planDedupRecord(requestId: string, index: number, decided: Outcome): Promise<{ outcome: Outcome; dedupPlan: DedupPlan }> {
    let outcome = decided;
    const createdBeforeMs = this.dedup.newestCreatedMs;
    let encodedEntry = encodeDedupEntry({ requestId, createdBeforeMs, result: this.recordedResultOf(outcome) });
    if (encodedEntry.length > this.maxDedupEntryBytes) {
      outcome = failedOutcome(
        new AtollError('RESOURCE_EXHAUSTED', `the result of a request with a request id must encode in at most ${this.maxDedupEntryBytes} bytes`, {
          resultBytes: encodedEntry.length,
          maxResultBytes: this.maxDedupEntryBytes,
        }),
      );
      encodedEntry = encodeDedupEntry({ requestId, createdBeforeMs, result: this.recordedResultOf(outcome) });
      assert(encodedEntry.length <= this.maxDedupEntryBytes);
    }
    const dedupPlan = await this.dedup.planRecord({
      requestId,
      index,
      encodedEntry,
      removeEvicted: this.exportsInFlight === 0,
      removalLimit: this.limits.compactionBatchOps,
    });
    return { outcome, dedupPlan };
  }

  private recordedResultOf(outcome: Outcome): RecordedResult {
    const revision = outcome.newRevision ?? this.revisionValue;
    return {
      revision,
      applied: outcome.applied,
      writes: outcome.writes,
      ...(outcome.error !== undefined && { error: outcome.error }),
      ...(outcome.note !== undefined && { note: outcome.note }),
    };
  }

  private enterExclusive(): void {
    assert(!this.exclusive, 'apply, storage compaction and snapshot import must not overlap');
    this.exclusive = true;
  }

  private async decide(command: Command, nowMs: number, index: number): Promise<Outcome> {
    try {
      validateCommand(command, this.limits);
      if (command.type === 'compact') return this.decideCompact(command);
      if (command.type === 'expire') return await this.decideExpire(command, nowMs);
      if (command.type === 'leaseGrant') return this.decideLeaseGrant(command, index);
      if (command.type === 'leaseRevoke') return await this.decideLeaseRevoke(command);
      this.checkOwnership(command);
      if (command.type !== 'txn') return await this.decideWrites(command, nowMs);
      await this.checkTxn(command, nowMs);
      // The writes are decided as the transaction saw them, at its snapshot clock: the checks
      // above guarantee no written key has a version newer than the snapshot, so each key's live
      // version at that time is the one the transaction read, and keepTtl, an increment's kept
      // expiry and ttlMs become absolute times of the snapshot (a key that expired meanwhile keeps
      // its past expiry: it is stored expired, never with no expiry).
      const outcome = await this.decideWrites(command, command.snapshotTimeMs ?? nowMs);
      return command.note === undefined || !outcome.applied ? outcome : { ...outcome, note: command.note };
    } catch (error) {
      if (!(error instanceof AtollError)) throw error;
      return failedOutcome(error);
    }
  }

  private checkOwnership(command: WriteOp | BatchCommand | TxnCommand): void {
    if (this.partition === undefined) return;
    const writes = command.type === 'batch' || command.type === 'txn' ? command.writes : [command];
    for (const write of writes) this.checkOwnsKey(write.key);
    if (command.type !== 'txn') return;
    for (const key of command.readKeys) this.checkOwnsKey(key);
    for (const keyPrefix of command.readPrefixes) this.checkOwnsPrefix(keyPrefix);
  }

  private checkOwnsKey(key: string): void {
    if (this.partition === undefined) return;
    if (this.ownedRange !== undefined) {
      // Ranges are data: a key outside this partition's range went to another partition by a split.
      if (keyInHashRange(key, this.ownedRange, this.partition.hash ?? defaultBucketHash)) return;
      throw new AtollError('PARTITION_MOVED', `key is outside partition ${this.partition.id}'s range (moved by a split): refresh the partition table`, {
        key,
        servedPartitionId: this.partition.id,
        // The first hash of the next partition: a router that did not know that start learns it.
        rangeEnd: this.ownedRange.end,
      });
    }
    const owner = partitionOfBucket(bucketOf(key), this.partition.count, this.partition.hash);
    if (owner !== this.partition.id) {
      throw new AtollError('WRONG_PARTITION', `key belongs to partition ${owner}, not ${this.partition.id}`, {
        key,
        partitionId: owner,
        servedPartitionId: this.partition.id,
      });
    }
  }

  /** A prefix without "/" could match keys of many buckets, so a partition cannot serve it. */
  private checkOwnsPrefix(keyPrefix: string): void {
    if (this.partition === undefined) return;
    if (!keyPrefix.includes('/')) {
      throw new AtollError('PREFIX_SPANS_BUCKETS', 'a prefix served by one partition must contain "/" after its bucket (see prefixBucket)', {
        keyPrefix,
      });
    }
    this.checkOwnsKey(keyPrefix);
  }

  private decideCompact(command: CompactCommand): Outcome {
    if (command.belowRevision > this.revisionValue) throw this.futureRevision(command.belowRevision);
    // Lowering the floor cannot bring compacted versions back, so it is a no-op, not an error.
    if (command.belowRevision <= this.compactedRevisionValue) return { applied: true, writes: [], operations: [] };
    return { applied: true, writes: [], operations: [], newCompactedRevision: command.belowRevision };
  }

  private async decideWrites(command: WriteOp | BatchCommand | TxnCommand, nowMs: number): Promise<Outcome> {
    const ops = command.type === 'batch' || command.type === 'txn' ? command.writes : [command];
    // A put naming a lease needs the lease, of the key's own tenant (else the lease is not found).
    for (const op of ops) {
      if (op.type !== 'put' || op.lease === undefined) continue;
      if (this.leases.get(op.lease)?.tenant !== tenantOfInternalKey(op.key)) throw leaseNotFound(op.lease);
    }
    const newRevision = this.revisionValue + 1;
    const plans: WritePlan[] = [];
    const stored: (FoundVersion | undefined)[] = [];
    for (const op of ops) {
      const found = await this.findVersion(op.key, this.revisionValue);
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
    return this.withLeaseMoves(this.outcomeOfPlans(plans, stored, newRevision), moves);
  }

  /** The outcome with the lease table change its key moves make (RESOURCE_EXHAUSTED past a lease's bound). */
  private withLeaseMoves(outcome: Outcome, moves: ReadonlyArray<{ readonly key: string; readonly lease: number | undefined }>): Outcome {
    const leaseChange = this.leases.planMoves(this.layout, moves);
    if (leaseChange === undefined) return outcome;
    return { ...outcome, operations: [...outcome.operations, ...leaseChange.operations], leaseChange };
  }

  /** Grants a lease whose id is the entry's index; it writes no version and creates no revision. */
  private decideLeaseGrant(command: LeaseGrantCommand, index: number): Outcome {
    this.checkOwnsKey(command.key);
    const leaseChange = this.leases.planGrant(this.layout, index, tenantOfInternalKey(command.key), command.ttlMs);
    return { applied: true, writes: [], operations: leaseChange.operations, leaseChange, leaseId: index };
  }

  /**
   * Ends a lease: a tombstone (reason "lease") for each attached key whose newest version is a
   * value (live or expired but not yet removed), all at one new revision, and the lease record
   * removed, in this one entry. At most leaseKeysMax keys, one lookup each.
   */
  private async decideLeaseRevoke(command: LeaseRevokeCommand): Promise<Outcome> {
    const record = this.leases.get(command.lease);
    if (record === undefined) throw leaseNotFound(command.lease);
    const newRevision = this.revisionValue + 1;
    const plans: WritePlan[] = [];
    const stored: (FoundVersion | undefined)[] = [];
    for (const key of [...record.keys].sort()) {
      const found = await this.findVersion(key, this.revisionValue);
      stored.push(found);
      plans.push(
        found?.stored.kind === 'value'
          ? { result: { type: 'delete', key, conditionHeld: true, deleted: true }, store: leaseTombstone }
          : { result: { type: 'delete', key, conditionHeld: false, deleted: false } },
      );
    }
    const outcome = this.outcomeOfPlans(plans, stored, newRevision);
    const leaseChange = this.leases.planRevoke(this.layout, command.lease);
    return { ...outcome, operations: [...outcome.operations, ...leaseChange.operations], leaseChange };
  }

  /**
   * Removes keys that have expired at the entry's time (the replicated clock): a tombstone for
   * each key whose newest version is a value with expiresAtMs <= nowMs, all at one new revision.
   * Keys rewritten, extended or deleted since the leader proposed it are left alone. Its cost is
   * one lookup per named key (at most maxBatchOps): it never scans the partition.
   */
  private async decideExpire(command: ExpireCommand, nowMs: number): Promise<Outcome> {
    const newRevision = this.revisionValue + 1;
    const plans: WritePlan[] = [];
    const stored: (FoundVersion | undefined)[] = [];
    for (const key of command.keys) {
      this.checkOwnsKey(key);
      const found = await this.findVersion(key, this.revisionValue);
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
    return this.withLeaseMoves(this.outcomeOfPlans(plans, stored, newRevision), moves);
  }

  /** The outcome of planned writes whose conditions were checked: their versions, usage and cache updates. */
  private outcomeOfPlans(plans: readonly WritePlan[], stored: readonly (FoundVersion | undefined)[], newRevision: number): Outcome {
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
        key: this.layout.versionKey(plan.result.key, newRevision),
        value: encodeVersionRecord(plan.store),
      });
    }
    if (operations.length === 0) return { applied: true, writes, operations };
    return { applied: true, writes, operations, newRevision, usage, stored: storedVersions };
  }

  /**
   * First committer wins. The checks read only versions above the snapshot revision, which is at
   * or above the compaction floor, and compaction never removes those, so every replica decides
   * the same whatever its physical compaction progress.
   */
  private async checkTxn(txn: TxnCommand, commitTimeMs: number): Promise<void> {
    if (txn.snapshotRevision > this.revisionValue) throw this.futureRevision(txn.snapshotRevision);
    if (txn.snapshotRevision < this.compactedRevisionValue) throw this.compacted(txn.snapshotRevision);
    const keys = txn.writes.map((write) => write.key);
    if (txn.isolation === 'serializable') keys.push(...txn.readKeys);
    const serializableReads = txn.isolation === 'serializable' ? new Set(txn.readKeys) : new Set<string>();
    const snapshotTimeMs = txn.snapshotTimeMs ?? commitTimeMs;
    for (const key of keys) {
      const latest = await this.findVersion(key, this.revisionValue);
      if (latest !== undefined && latest.revision > txn.snapshotRevision) throw this.conflict(txn, { key, modRevision: latest.revision });
      // Under SERIALIZABLE a read key live at the snapshot's time that has expired by the
      // commit's time changed as surely as if it had been deleted: the read is stale. (latest is
      // the version the transaction read: nothing newer exists, checked just above.)
      const expiresAtMs = latest?.stored.kind === 'value' ? latest.stored.expiresAtMs : undefined;
      if (serializableReads.has(key) && expiresAtMs !== undefined && snapshotTimeMs < expiresAtMs && expiresAtMs <= commitTimeMs) {
        throw new AtollError('TXN_CONFLICT', `the transaction read ${JSON.stringify(key)}, which expired after its snapshot and before its commit`, {
          snapshotRevision: txn.snapshotRevision,
          key,
          expiresAtMs,
          snapshotTimeMs,
          commitTimeMs,
        });
      }
    }
    if (txn.isolation !== 'serializable' || this.testBugs.skipPrefixValidation) return;
    // The scan must not overlap a compaction step: an iterator may or may not see a concurrent
    // removal, and one that saw a key's older value but not its removed tombstone would count a
    // version another replica does not. Wait for the step in flight (one bounded step); no step
    // starts while an apply runs (compactStorageStep defers).
    if (txn.readPrefixes.length > 0 && this.compactionStepInFlight !== undefined) await this.compactionStepInFlight.catch(() => undefined);
    const budget: ValidationBudget = { keys: 0, versions: 0 };
    for (const keyPrefix of txn.readPrefixes) await this.validateReadPrefix(txn, keyPrefix, budget, { snapshotTimeMs, commitTimeMs });
  }

  /**
   * Serializable validation of one read prefix: TXN_CONFLICT when a key under it has a version
   * above the snapshot revision (a change or a phantom). It runs inside apply on every replica, so
   * it is bounded: over all the commit's read prefixes it examines at most maxTxnPrefixKeys keys
   * and maxScanVersions versions (the bounds of a transaction's prefix read and of a scan page),
   * and past either it fails the commit with RESOURCE_EXHAUSTED and changes nothing.
   *
   * Determinism: the bound counts only *retained* versions, which are replicated state: every
   * version above the compaction floor, and a key's newest version at or below the floor when it
   * is a value. Physical compaction removes exactly the other versions (older ones below the
   * floor, and a newest tombstone at or below it), at its own pace on each replica, so those are
   * skipped uncounted. Every replica then counts the same versions in the same (key) order and
   * meets the same conflict or the same bound first. Versions above the snapshot revision are
   * above the floor (checkTxn refused a snapshot below it), so a conflict is always retained.
   *
   * Expiry: a key under the prefix whose version at the snapshot (its newest at or below the
   * snapshot revision) is a value live at the snapshot's time and expired by the commit's time
   * changed for the reader as surely as a delete would: TXN_CONFLICT, as for a read key. That
   * version is retained on every replica or absent on every one (a value newest at or below the
   * floor is kept; a tombstone there goes with every older version), so replicas agree.
   */
  private async validateReadPrefix(
    txn: TxnCommand,
    keyPrefix: string,
    budget: ValidationBudget,
    times: { readonly snapshotTimeMs: number; readonly commitTimeMs: number },
  ): Promise<void> {
    const floor = this.compactedRevisionValue;
    // The group's version at the snapshot: its key and, when it is a value with a TTL, its expiry.
    let atSnapshotExpiresAtMs: number | undefined;
    let atSnapshotKey: Uint8Array | undefined;
    const checkExpiry = (): void => {
      const expiresAtMs = atSnapshotExpiresAtMs;
      atSnapshotExpiresAtMs = undefined;
      if (expiresAtMs === undefined || atSnapshotKey === undefined) return;
      if (times.snapshotTimeMs < expiresAtMs && expiresAtMs <= times.commitTimeMs) {
        const key = decodeUtf8(atSnapshotKey);
        throw new AtollError('TXN_CONFLICT', `the transaction read prefix ${JSON.stringify(keyPrefix)}, whose key ${JSON.stringify(key)} expired after its snapshot and before its commit`, {
          snapshotRevision: txn.snapshotRevision,
          keyPrefix,
          key,
          expiresAtMs,
          snapshotTimeMs: times.snapshotTimeMs,
          commitTimeMs: times.commitTimeMs,
        });
      }
    };
    // The group being scanned, and whether its newest version at or below the floor seen so far
    // is a value (retained unless a newer version at or below the floor follows).
    let groupKey: Uint8Array | undefined;
    let counted = false;
    let pendingAtFloor = false;
    const countVersion = (): void => {
      if (!counted) {
        counted = true;
        budget.keys++;
      }
      budget.versions++;
      if (budget.keys > this.limits.maxTxnPrefixKeys || budget.versions > this.limits.maxScanVersions) throw this.validationTooLarge(txn, keyPrefix);
    };
    const settleAtFloor = (): void => {
      if (pendingAtFloor) countVersion();
      pendingAtFloor = false;
    };
    for await (const [storageKey, record] of this.engine.iterate(this.layout.versionsOfPrefix(keyPrefix))) {
      const parsed = this.layout.parseVersionKey(storageKey);
      if (groupKey === undefined || !equalBytes(parsed.groupKey, groupKey)) {
        settleAtFloor();
        checkExpiry();
        groupKey = parsed.groupKey.slice();
        counted = false;
      }
      if (parsed.revision <= txn.snapshotRevision) {
        // Ascending revisions: the last one at or below the snapshot is the version the reader saw.
        const version = decodeVersionRecord(record);
        atSnapshotExpiresAtMs = version.kind === 'value' ? version.expiresAtMs : undefined;
        atSnapshotKey = parsed.userKey;
      }
      if (parsed.revision <= floor) {
        // Versions come in ascending revision order: this one supersedes the pending one.
        pendingAtFloor = decodeVersionRecord(record).kind === 'value';
        continue;
      }
      settleAtFloor();
      countVersion();
      if (parsed.revision > txn.snapshotRevision) {
        throw this.conflict(txn, { keyPrefix, key: decodeUtf8(parsed.userKey), modRevision: parsed.revision });
      }
    }
    settleAtFloor();
    checkExpiry();
  }

  /**
   * Writes the entry's batch: the dedup plan's operations, the versions, then the meta records,
   * among them the applied index and the entry's time (`timeMs`) together.
   */
  private async commit(outcome: Outcome, index: number, timeMs: number, dedupPlan?: DedupPlan): Promise<void> {
    // The partition clock never moves backwards (apply takes the max with the previous time).
    assert(Number.isSafeInteger(timeMs) && timeMs >= this.appliedTimeValue, 'the partition clock never moves backwards');
    const operations = [...(dedupPlan?.operations ?? []), ...outcome.operations];
    if (outcome.newRevision !== undefined) assert.equal(outcome.newRevision, this.revisionValue + 1, 'an entry creates at most one revision');
    // Applied index, time and revision in one record (applied-record.ts): one operation, not three.
    const appliedRecord = { appliedIndex: index, appliedTimeMs: timeMs, revision: outcome.newRevision ?? this.revisionValue };
    operations.push({ type: 'put', key: this.layout.appliedKey, value: encodeAppliedRecord(appliedRecord) });
    // The separate records of the old format (or of a snapshot import) go in the same batch.
    const dropsLegacy = this.legacyAppliedRecords;
    if (dropsLegacy) for (const key of [this.layout.appliedIndexKey, this.layout.appliedTimeKey, this.layout.revisionKey]) operations.push({ type: 'del', key });
    if (outcome.newCompactedRevision !== undefined) {
      assert(outcome.newCompactedRevision <= this.revisionValue, 'the compaction floor cannot pass the revision');
      operations.push({ type: 'put', key: this.layout.compactedRevisionKey, value: encodeUint64BE(outcome.newCompactedRevision) });
    }
    await this.engine.write(operations, { sync: this.syncApply });
    if (dropsLegacy) this.legacyAppliedRecords = false;
    this.appliedIndexValue = index;
    this.appliedTimeValue = timeMs;
    if (dedupPlan !== undefined) this.dedup.adopt(dedupPlan.state);
    if (outcome.leaseChange !== undefined) this.leases.apply(outcome.leaseChange);
    if (outcome.newRevision !== undefined) {
      this.revisionValue = outcome.newRevision;
      // Same synchronous step as the revision move: the key index and cache invariants.
      if (this.keyIndexComplete) {
        for (const { key } of outcome.stored ?? []) {
          if (this.newestRevisionOf.set(key, outcome.newRevision)) continue;
          // Over its byte budget: drop the whole index (lookups read storage; same answers).
          this.keyIndexComplete = false;
          this.newestRevisionOf.clear();
          break;
        }
      }
      for (const { key, stored } of outcome.stored ?? []) this.expiry.set(key, stored.kind === 'value' ? stored.expiresAtMs : undefined);
      if (this.cache !== undefined) {
        for (const { key, stored } of outcome.stored ?? []) {
          if (stored.kind === 'value') this.cache.set(this.cacheStoreId, key, { revision: outcome.newRevision, stored });
          else this.cache.delete(this.cacheStoreId, key);
        }
      }
    }
    if (outcome.newCompactedRevision !== undefined) {
      this.compactedRevisionValue = outcome.newCompactedRevision;
      // The removal runs beside the loop, in bounded steps (compactStorageStep).
      this.storageCompactionPendingValue = true;
    }
    for (const [tenant, delta] of outcome.usage ?? []) addUsage(this.usage, tenant, delta.keys, delta.bytes, delta.historyBytes);
    // Watchers (src/watch): every new revision, with every version it stored, in commit order.
    if (outcome.newRevision !== undefined) this.commitListener?.(outcome.newRevision, outcome.stored ?? []);
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
  setCommitListener(
    listener: ((revision: number, changes: ReadonlyArray<StoredChange>) => void) | undefined,
    reset?: (revision: number, reason: RevisionResetReason) => void,
  ): void {
    this.commitListener = listener;
    this.resetListener = listener === undefined ? undefined : reset;
  }

  /**
   * The retained history under `keyPrefix` (or of exactly `key`): every stored version with a
   * revision in (after, through], sorted by revision (then key), where `through` is the current
   * revision unless the answer would exceed maxChanges versions or maxBytes of keys and values;
   * then `through` is lowered to the highest revision whose versions all fit, but never below the
   * first revision with a version (one revision's versions always come whole). Every version
   * above `after` is retained when after >= the compaction floor (compaction removes only versions
   * older than the newest at or below the floor); below it the answer is COMPACTED. A read that
   * overlapped an import is UNAVAILABLE. Examines every version under the prefix (memory stays
   * bounded by maxChanges and maxBytes; time grows with the prefix's retained history).
   */
  async changesSince(
    target: { readonly key: string } | { readonly keyPrefix: string },
    after: number,
    bounds: { readonly maxChanges: number; readonly maxBytes: number },
  ): Promise<{ changes: StoredChangeAt[]; through: number }> {
    assert(bounds.maxChanges >= 1 && bounds.maxBytes >= 1, 'changesSince bounds must be positive');
    validateRevisionNumber(after, 'start revision');
    const read = this.beginRead({ revision: after, nowMs: 0 });
    let through = this.revisionValue;
    const range = 'key' in target ? this.layout.versionsOfKeyUpTo(target.key, through) : this.layout.versionsOfPrefix(target.keyPrefix);
    let changes: StoredChangeAt[] = [];
    let bytes = 0;
    for await (const [storageKey, record] of this.engine.iterate(range)) {
      const parsed = this.layout.parseVersionKey(storageKey);
      if (parsed.revision <= after || parsed.revision > through) continue;
      const stored = decodeVersionRecord(record);
      const key = decodeUtf8(parsed.userKey);
      changes.push({ key, revision: parsed.revision, stored });
      bytes += versionBytes(parsed.userKey.length, stored);
      if (changes.length <= bounds.maxChanges && bytes <= bounds.maxBytes) continue;
      // Over a bound: keep the lowest revisions that fit, whole revisions only.
      changes.sort(byRevisionThenKey);
      let kept = 0;
      let keptBytes = 0;
      for (const change of changes) {
        const size = versionBytes(utf8ByteLength(change.key), change.stored);
        if (kept + 1 > bounds.maxChanges || keptBytes + size > bounds.maxBytes) break;
        kept++;
        keptBytes += size;
      }
      const cut = changes[kept]!.revision;
      through = cut === changes[0]!.revision ? cut : cut - 1;
      changes = changes.filter((change) => change.revision <= through);
      bytes = changes.reduce((sum, change) => sum + versionBytes(utf8ByteLength(change.key), change.stored), 0);
    }
    this.endRead(read);
    changes.sort(byRevisionThenKey);
    return { changes, through };
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  /** The newest stored version of `key` at or below `revision`, tombstones included. */
  private async findVersion(key: string, revision: number): Promise<FoundVersion | undefined> {
    const cached = this.cache?.get(this.cacheStoreId, key);
    if (cached !== undefined && cached.revision <= revision) return cached;
    const atRevision = this.revisionValue;
    const epoch = this.epoch;
    let found: FoundVersion | undefined;
    const newest = this.keyIndexComplete ? this.newestRevisionOf.get(key) : undefined;
    if (this.keyIndexComplete && newest === undefined) return undefined;
    if (newest !== undefined && newest <= revision) {
      // The newest version is the newest at or below `revision`: one point read.
      const storageKey = this.layout.versionKey(key, newest);
      const record = this.engine.getSync !== undefined ? this.engine.getSync(storageKey) : await this.engine.get(storageKey);
      if (record === undefined) {
        // Only an import that replaced the store meanwhile (the reader then fails), or a compaction
        // step that removed this tombstone meanwhile (it forgets the key first), explains it.
        if (!(this.epoch !== epoch || this.newestRevisionOf.get(key) !== newest)) assert.fail(`key index names version ${newest} of a key that has no such version`);
        return undefined;
      }
      found = { revision: newest, stored: decodeVersionRecord(record) };
    } else {
      const range = this.layout.versionsOfKeyUpTo(key, revision);
      for await (const [storageKey, record] of this.engine.iterate({ ...range, reverse: true, limit: 1 })) {
        found = { revision: this.layout.parseVersionKey(storageKey).revision, stored: decodeVersionRecord(record) };
      }
    }
    // Fill the cache only from a lookup at the current revision that no commit or import overlapped.
    if (
      this.cache !== undefined &&
      found?.stored.kind === 'value' &&
      revision === atRevision &&
      this.revisionValue === atRevision &&
      this.epoch === epoch &&
      !this.needsSnapshotValue
    ) {
      this.cache.set(this.cacheStoreId, key, { revision: found.revision, stored: found.stored });
    }
    return found;
  }

  /** Checks and fixes the revision a read is served at. */
  private beginRead(options: ReadOptions): { revision: number; epoch: number } {
    assertNowMs(options.nowMs);
    if (this.needsSnapshotValue) {
      throw new AtollError('UNAVAILABLE', 'the partition is installing a snapshot; retry shortly');
    }
    if (this.mergedIntoValue !== undefined) throw this.mergedAwayError();
    if (this.frozenValue !== undefined) throw this.frozenError();
    const revision = options.revision ?? this.revisionValue;
    if (options.revision !== undefined) validateRevisionNumber(options.revision, 'revision');
    if (revision > this.revisionValue) throw this.futureRevision(revision);
    if (revision < this.compactedRevisionValue) throw this.compacted(revision);
    return { revision, epoch: this.epoch };
  }

  /** A read that overlapped a snapshot import or a compaction past its revision is not trusted. */
  private endRead(read: { revision: number; epoch: number }): void {
    if (read.epoch !== this.epoch || this.needsSnapshotValue) {
      throw new AtollError('UNAVAILABLE', 'the partition installed a snapshot during the read; retry');
    }
    if (read.revision < this.compactedRevisionValue) throw this.compacted(read.revision);
  }

  async get(key: string, options: ReadOptions): Promise<GetResult> {
    validateKey(key);
    this.checkOwnsKey(key);
    const read = this.beginRead(options);
    const live = liveVersion(key, await this.findVersion(key, read.revision), options.nowMs);
    this.endRead(read);
    if (live === undefined) return { found: false, createRevision: 0, modRevision: 0, version: 0, revision: read.revision };
    const { value, createRevision, modRevision, version, expiresAtMs } = live;
    const result = { found: true, value, createRevision, modRevision, version, revision: read.revision };
    return expiresAtMs === undefined ? result : { ...result, expiresAtMs };
  }

  async exists(key: string, options: ReadOptions): Promise<boolean> {
    return (await this.get(key, options)).found;
  }

  /**
   * The live keys starting with `keyPrefix` at one revision, a page at a time. A page examines at
   * most about maxScanVersions stored versions; a prefix full of deleted or expired keys can
   * therefore return a short (even empty) page with `more: true`.
   */
  async getByPrefix(keyPrefix: string, options: PrefixReadOptions): Promise<PrefixPage> {
    validateKeyPrefix(keyPrefix, this.limits);
    const limit = options.limit ?? this.limits.defaultPageSize;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > this.limits.maxPageSize) {
      throw new AtollError('INVALID_ARGUMENT', `limit must be an integer in [1, ${this.limits.maxPageSize}]`, { limit });
    }
    if (options.after !== undefined) validateKey(options.after);
    this.checkOwnsPrefix(keyPrefix);
    const read = this.beginRead(options);
    const range = this.scanRange(keyPrefix, options.after);
    const page = range === undefined ? { items: [], more: false } : await this.scan(range, read.revision, limit, options.nowMs);
    this.endRead(read);
    return { ...page, revision: read.revision };
  }

  /**
   * A page of ALL the partition's live keys starting with `keyPrefix` (may be "" or a tenant tag,
   * which no bucket owns: no ownership check), for backups. Same paging rules as getByPrefix.
   */
  async scanPartition(keyPrefix: string, options: PrefixReadOptions): Promise<PrefixPage> {
    const limit = options.limit ?? this.limits.defaultPageSize;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > this.limits.maxPageSize) {
      throw new AtollError('INVALID_ARGUMENT', `limit must be an integer in [1, ${this.limits.maxPageSize}]`, { limit });
    }
    if (options.after !== undefined) validateKey(options.after);
    const read = this.beginRead(options);
    const range = this.scanRange(keyPrefix, options.after);
    const page = range === undefined ? { items: [], more: false } : await this.scan(range, read.revision, limit, options.nowMs);
    this.endRead(read);
    return { ...page, revision: read.revision };
  }

  private scanRange(keyPrefix: string, after: string | undefined): KeyRange | undefined {
    const range = this.layout.versionsOfPrefix(keyPrefix);
    if (after === undefined) return range;
    const resume = this.layout.afterKey(after);
    const gte = range.gte === undefined || compareBytes(resume, range.gte) > 0 ? resume : range.gte;
    if (range.lt !== undefined && compareBytes(gte, range.lt) >= 0) return undefined;
    return { ...range, gte };
  }

  private async scan(
    range: KeyRange,
    revision: number,
    limit: number,
    nowMs: number,
  ): Promise<{ items: KeyVersion[]; more: boolean; continueAfter?: string }> {
    const items: KeyVersion[] = [];
    let group: { groupKey: Uint8Array; userKey: Uint8Array; visible?: FoundVersion } | undefined;
    let examined = 0;
    let stoppedAfter: Uint8Array | undefined;

    const flushGroup = (): void => {
      if (group === undefined) return;
      const live = liveVersion(decodeUtf8(group.userKey), group.visible, nowMs);
      if (live !== undefined) items.push(live);
    };

    for await (const [storageKey, record] of this.engine.iterate(range)) {
      const parsed = this.layout.parseVersionKey(storageKey);
      if (group === undefined || !equalBytes(parsed.groupKey, group.groupKey)) {
        flushGroup();
        // limit + 1 live keys tell us, exactly, that another page exists.
        if (items.length > limit) break;
        if (group !== undefined && examined >= this.limits.maxScanVersions) {
          stoppedAfter = group.userKey;
          group = undefined;
          break;
        }
        group = { groupKey: parsed.groupKey.slice(), userKey: parsed.userKey };
      }
      examined++;
      // Versions come in ascending revision order, so the last one at or below the read revision wins.
      if (parsed.revision <= revision) group.visible = { revision: parsed.revision, stored: decodeVersionRecord(record) };
    }
    if (stoppedAfter === undefined && items.length <= limit) flushGroup();

    if (items.length > limit) {
      items.length = limit;
      return { items, more: true, continueAfter: items[limit - 1]!.key };
    }
    if (stoppedAfter !== undefined) return { items, more: true, continueAfter: decodeUtf8(stoppedAfter) };
    return { items, more: false };
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
    return this.storageCompactionPendingValue;
  }

  /**
   * One bounded step of the pending physical compaction (see above): examines at most
   * compactionBatchOps stored versions from where the previous step stopped and removes, in one
   * storage write, those no reader needs. `done` when nothing is pending any more; `deferred` when
   * an export (or import) runs, so the step did nothing. Safe alongside applies and reads; steps
   * must not overlap each other (asserted).
   */
  async compactStorageStep(): Promise<StorageCompactionStep> {
    assert(this.compactionStepInFlight === undefined, 'compaction steps must not overlap');
    if (!this.storageCompactionPendingValue) return { removedVersions: 0, done: true, deferred: false };
    // Not while an apply or import runs (see checkTxn), nor while an export needs the versions.
    if (this.exportsInFlight > 0 || this.importing || this.exclusive || this.needsSnapshotValue) return { removedVersions: 0, done: false, deferred: true };
    const step = this.runCompactionStep();
    this.compactionStepInFlight = step;
    try {
      return await step;
    } finally {
      this.compactionStepInFlight = undefined;
    }
  }

  private async runCompactionStep(): Promise<StorageCompactionStep> {
    this.compactionPass ??= { floor: this.compactedRevisionValue, epoch: this.epoch, resumeAt: undefined, group: undefined };
    const pass = this.compactionPass;
    const maxExamined = this.limits.compactionBatchOps;
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
    const versions = this.layout.allVersionsRange();
    const range = pass.resumeAt === undefined ? versions : { ...versions, gte: pass.resumeAt };
    let examined = 0;
    let reachedEnd = true;
    for await (const [storageKey, record] of this.engine.iterate({ ...range, limit: maxExamined + 1 })) {
      if (examined === maxExamined) {
        pass.resumeAt = storageKey.slice();
        reachedEnd = false;
        break;
      }
      examined++;
      const parsed = this.layout.parseVersionKey(storageKey);
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
    assert.equal(this.epoch, pass.epoch, 'a snapshot import overlapped a compaction step');
    for (const { key, revision } of forgotten) if (this.newestRevisionOf.get(key) === revision) this.newestRevisionOf.delete(key);
    if (deletions.length > 0) await this.engine.write(deletions);
    for (const [tenant, bytes] of freed) addUsage(this.usage, tenant, 0, 0, -bytes.historyBytes);
    if (reachedEnd) {
      this.compactionPass = undefined;
      // A floor that rose during the pass leaves versions below it for a new pass.
      if (this.compactedRevisionValue === pass.floor) this.storageCompactionPendingValue = false;
    }
    return { removedVersions: deletions.length, done: !this.storageCompactionPendingValue, deferred: false };
  }

  /**
   * Runs the pending physical compaction to its end (step after step; the node runs the steps
   * beside its loop instead), then deletes evicted dedup results that applies have not deleted yet
   * (they leave them while an export runs). While a snapshot export runs it does nothing
   * (`deferred`), so the export keeps every version and dedup result it needs. Safe to call at any
   * time; not alongside an apply.
   */
  async compactStorage(): Promise<StorageCompactionResult> {
    if (this.compactionStepInFlight !== undefined) await this.compactionStepInFlight.catch(() => undefined);
    if (this.exportsInFlight > 0) return { removedVersions: 0, removedDedupEntries: 0, deferred: true };
    let removedVersions = 0;
    // Bounded: each step examines compactionBatchOps more versions of the partition, and no apply
    // runs meanwhile to raise the floor, so at most two passes over the stored versions happen.
    for (;;) {
      const step = await this.compactStorageStep();
      removedVersions += step.removedVersions;
      if (step.deferred) return { removedVersions, removedDedupEntries: 0, deferred: true };
      if (step.done) break;
    }
    this.enterExclusive();
    try {
      return { removedVersions, removedDedupEntries: await this.removeEvictedDedupEntries(), deferred: false };
    } finally {
      this.exclusive = false;
    }
  }

  private async removeEvictedDedupEntries(): Promise<number> {
    assert(this.exclusive);
    // An export that was already running may need them. One that starts during the loop begins
    // at the floor, which only an apply moves (none runs now), so it needs none of them.
    if (this.exportsInFlight > 0) return 0;
    let removed = 0;
    // Each round deletes up to compactionBatchOps entries below the floor: the rounds are bounded.
    for (;;) {
      const removal = await this.dedup.planRemoval(this.limits.compactionBatchOps);
      if (removal.removedEntries === 0) return removed;
      await this.engine.write(removal.operations);
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
    assert(!this.needsSnapshotValue, 'cannot export an unfinished snapshot import');
    const header: SnapshotHeader = {
      appliedIndex: this.appliedIndexValue,
      revision: this.revisionValue,
      compactedRevision: this.compactedRevisionValue,
      appliedTimeMs: this.appliedTimeValue,
      // A partition whose range is data (a split) sends it, so the receiver owns the same range.
      ...(this.ownedRange !== undefined && { range: this.ownedRange }),
      // A frozen partition sends its freeze (format 6, which needs the range even for an equal one).
      ...(this.frozenValue !== undefined && { range: this.hashRange, freeze: this.frozenValue }),
    };
    const version = snapshotVersionOf(header);
    const dedupRange = this.dedup.exportRange(header.appliedIndex);
    // The leases as of the header's index: the table's records are immutable (a change replaces
    // them), so this list stays that state while applies go on. Reading the stored records later
    // could show a grant or revocation past the index, which the receiver then replays again.
    const leases = this.leases.all();
    const epoch = this.epoch;
    this.exportsInFlight++;
    try {
      yield encodeSnapshotHeader(header);
      let chunk = new SnapshotEntriesWriter(version);
      let entryCount = 0;
      const prefixLength = this.layout.partitionPrefix.length;
      // Key order: the leases ('l', in id order), the dedup queue ('q'), then the versions ('v').
      for (const record of leases) {
        chunk.add(this.layout.leaseKey(record.id).subarray(prefixLength), encodeLeaseRecord(record));
        entryCount++;
        if (chunk.byteLength >= this.limits.snapshotChunkBytes) {
          yield chunk.finish();
          chunk = new SnapshotEntriesWriter(version);
        }
      }
      const ranges = this.testBugs.dedupForgetsOnSnapshot ? [this.layout.allVersionsRange()] : [dedupRange, this.layout.allVersionsRange()];
      for (const range of ranges) {
        for await (const [storageKey, record] of this.engine.iterate(range)) {
          // An import replaced the state under us (this node was sent a newer snapshot); the receiver retries.
          if (this.epoch !== epoch) throw new AtollError('UNAVAILABLE', 'the partition installed a snapshot during the export');
          if (this.layout.isVersionKey(storageKey) && this.layout.parseVersionKey(storageKey).revision > header.revision) continue;
          chunk.add(storageKey.subarray(prefixLength), record);
          entryCount++;
          if (chunk.byteLength >= this.limits.snapshotChunkBytes) {
            yield chunk.finish();
            chunk = new SnapshotEntriesWriter(version);
          }
        }
      }
      if (chunk.count > 0) yield chunk.finish();
      yield encodeSnapshotTrailer(entryCount, version);
    } finally {
      this.exportsInFlight--;
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
      options.checkedIndex ?? (Array.isArray(chunks) ? checkedSnapshotHeader(this.layout, chunks as readonly Uint8Array[]).appliedIndex : undefined);
    // The mark names the index being installed when it is known (diagnostics after a crash).
    const mark = checkedIndex === undefined ? new Uint8Array(0) : encodeUint64BE(checkedIndex);
    // A compaction step in flight finishes first; none starts until the import ends, and the pass
    // it belonged to is discarded (rebuildKeyState decides what the imported state needs).
    this.importing = true;
    if (this.compactionStepInFlight !== undefined) await this.compactionStepInFlight.catch(() => undefined);
    this.compactionPass = undefined;
    this.storageCompactionPendingValue = false;
    this.enterExclusive();
    this.epoch++;
    this.needsSnapshotValue = true;
    this.cache?.clear(this.cacheStoreId);
    this.keyIndexComplete = false;
    this.newestRevisionOf = new KeyIndex(this.newestRevisionOf.maxBytes);
    this.expiry.clear();
    this.leases.clear();
    try {
      await this.engine.write([{ type: 'put', key: this.layout.importInProgressKey, value: mark }], { sync: true });
      await this.clearPartition();
      const { header, dedupState } = await this.writeSnapshotChunks(chunks);
      await this.engine.write(
        [
          { type: 'put', key: this.layout.appliedIndexKey, value: encodeUint64BE(header.appliedIndex) },
          { type: 'put', key: this.layout.revisionKey, value: encodeUint64BE(header.revision) },
          { type: 'put', key: this.layout.compactedRevisionKey, value: encodeUint64BE(header.compactedRevision) },
          { type: 'put', key: this.layout.appliedTimeKey, value: encodeUint64BE(header.appliedTimeMs ?? 0) },
          // clearPartition deleted the range record: a snapshot without a range means the equal one.
          ...(header.range !== undefined ? [{ type: 'put' as const, key: this.layout.rangeKey, value: encodeOwnedRange(header.range) }] : []),
          ...(header.freeze !== undefined ? [{ type: 'put' as const, key: this.layout.freezeKey, value: encodeFreeze(header.freeze) }] : []),
          ...this.dedup.metaOperations(dedupState),
          { type: 'del', key: this.layout.importInProgressKey },
          // The caller's records (the Raft log's record of the snapshot) land with the import's end.
          ...(options.alsoWrite ?? []),
          ...(options.alsoWriteFor?.(header.range) ?? []),
        ],
        { sync: true },
      );
      this.appliedIndexValue = header.appliedIndex;
      this.revisionValue = header.revision;
      this.compactedRevisionValue = header.compactedRevision;
      // The snapshot replaces the state, its clock included: the exporter's time at its index.
      this.appliedTimeValue = header.appliedTimeMs ?? 0;
      this.ownedRange = header.range;
      this.frozenValue = header.freeze;
      this.resetListener?.(this.revisionValue, 'import');
      // The expiry mark and newest creation time come from the imported queue entries.
      this.dedup.adopt(await DedupTable.loadState(this.engine, this.layout));
      await this.rebuildKeyState();
      this.needsSnapshotValue = false;
      return this.status();
    } finally {
      this.epoch++;
      this.cache?.clear(this.cacheStoreId);
      this.exclusive = false;
      this.importing = false;
    }
  }

  /**
   * Undoes an import a crash interrupted (needsSnapshot after open): deletes every key of the
   * partition, then, in one synced batch, clears the import mark together with `alsoWrite` (the
   * caller's reset of its Raft log). The partition is then empty at applied index 0. A crash
   * before that batch leaves the mark, so the next open discards again.
   */
  async discardInterruptedImport(alsoWrite: readonly WriteOperation[]): Promise<MvccStatus> {
    assert(this.needsSnapshotValue, 'only an interrupted import is discarded');
    this.enterExclusive();
    this.epoch++;
    this.cache?.clear(this.cacheStoreId);
    try {
      await this.clearPartition();
      await this.engine.write([{ type: 'del', key: this.layout.importInProgressKey }, ...alsoWrite], { sync: true });
      this.appliedIndexValue = 0;
      this.revisionValue = 0;
      this.compactedRevisionValue = 0;
      this.appliedTimeValue = 0;
      this.ownedRange = undefined;
      this.frozenValue = undefined;
      this.expiry.clear();
      this.leases.clear();
      this.interruptedImportIndexValue = undefined;
      this.resetListener?.(0, 'import');
      await this.rebuildKeyState();
      this.needsSnapshotValue = false;
      return this.status();
    } finally {
      this.epoch++;
      this.exclusive = false;
    }
  }

  /**
   * Up to `max` names of stored keys (live or deleted, in no particular order), from the in-memory
   * key index: what a leader picks a split point from. Empty without the key index.
   */
  storedKeyNames(max: number): string[] {
    const names: string[] = [];
    if (!this.keyIndexComplete) return names;
    for (const key of this.newestRevisionOf.keys()) {
      if (names.length >= max) break;
      names.push(key);
    }
    return names;
  }

  /**
   * The hash range this partition owns: its range record once a split made it data, else its
   * place in the equal table; undefined for a store without options.partition.
   */
  get hashRange(): { readonly start: number; readonly end: number } | undefined {
    if (this.ownedRange !== undefined) return this.ownedRange;
    if (this.partition === undefined || this.partition.id >= this.partition.count) return undefined;
    const { start, end } = equalRangeOf(this.partition.id, this.partition.count);
    return { start, end };
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
    assert(!this.needsSnapshotValue && target?.needsSnapshotValue !== true, 'split on a partition whose snapshot import did not finish');
    assert(target === undefined ? context.refusal !== undefined : target !== this && target.engine === this.engine, 'a split moves keys within one engine');
    const range = this.hashRange;
    assert(range !== undefined && (target === undefined || target.partition !== undefined), 'a split needs partitioned stores');
    if (context.index <= this.appliedIndexValue) return { movedKeys: 0, movedVersions: 0 };
    // The target is new: nothing applied, nothing stored (asserted, not refused: the node made it).
    assert.equal(target?.appliedIndexValue ?? 0, 0, 'a split target starts empty');
    assert.equal(target?.revisionValue ?? 0, 0, 'a split target starts empty');
    const hash = this.partition?.hash ?? defaultBucketHash;
    const moved = { start: context.mid, end: range.end };
    const nowMs = Math.max(context.nowMs, this.appliedTimeValue);
    this.importing = true;
    if (this.compactionStepInFlight !== undefined) await this.compactionStepInFlight.catch(() => undefined);
    this.enterExclusive();
    target?.enterExclusive();
    try {
      let refusal: AtollError | undefined = context.refusal;
      if (refusal !== undefined || target === undefined) {
        // Decided by the caller from replicated state.
      } else if (this.frozenValue !== undefined) {
        refusal = new AtollError('SPLIT_REFUSED', `partition ${this.partition?.id ?? '?'} is frozen for a merge`, { reason: 'in-progress' });
      } else if (!Number.isInteger(context.mid) || context.mid <= range.start || context.mid >= range.end) {
        refusal = new AtollError('SPLIT_REFUSED', `split point ${context.mid} is not strictly inside [${range.start}, ${range.end})`, { reason: 'bad-split-point' });
      } else if (this.leases.all().some((lease) => [...lease.keys].some((key) => keyInHashRange(key, moved, hash)))) {
        refusal = new AtollError('SPLIT_REFUSED', 'a key attached to a lease would move: revoke the lease or wait for it to expire', { reason: 'leased-keys' });
      }
      if (refusal !== undefined || target === undefined) {
        refusal ??= new AtollError('SPLIT_REFUSED', 'no target', { reason: 'no-target' });
        await this.commit(failedOutcome(refusal), context.index, nowMs);
        return { refused: refusal, movedKeys: 0, movedVersions: 0 };
      }
      const plan = await planSplitMove(this.engine, this.layout, target.layout, moved, hash);
      const kept = { start: range.start, end: context.mid };
      const appliedHere = encodeAppliedRecord({ appliedIndex: context.index, appliedTimeMs: nowMs, revision: this.revisionValue });
      const operations: WriteOperation[] = [
        ...(this.testBugs.splitKeepsMovedKeys === true ? plan.operations.filter((op) => op.type !== 'del') : plan.operations),
        { type: 'put', key: this.layout.appliedKey, value: appliedHere },
        { type: 'put', key: this.layout.rangeKey, value: encodeOwnedRange(kept) },
        { type: 'put', key: target.layout.appliedKey, value: appliedHere },
        { type: 'put', key: target.layout.compactedRevisionKey, value: encodeUint64BE(this.compactedRevisionValue) },
        { type: 'put', key: target.layout.rangeKey, value: encodeOwnedRange(moved) },
        ...alsoWrite,
      ];
      if (this.legacyAppliedRecords) for (const key of [this.layout.appliedIndexKey, this.layout.appliedTimeKey, this.layout.revisionKey]) operations.push({ type: 'del', key });
      await this.engine.write(operations, { sync: true });
      // The in-memory state follows the batch: both sides rebuild theirs from what is stored.
      this.legacyAppliedRecords = false;
      this.appliedIndexValue = context.index;
      this.appliedTimeValue = nowMs;
      this.ownedRange = kept;
      target.appliedIndexValue = context.index;
      target.appliedTimeValue = nowMs;
      target.revisionValue = this.revisionValue;
      target.compactedRevisionValue = this.compactedRevisionValue;
      target.ownedRange = moved;
      target.dedup.adopt(await DedupTable.loadState(this.engine, target.layout));
      this.epoch++;
      target.epoch++;
      this.cache?.clear(this.cacheStoreId);
      target.cache?.clear(target.cacheStoreId);
      await this.rebuildKeyState();
      await target.rebuildKeyState();
      return { movedKeys: plan.movedKeys, movedVersions: plan.movedVersions };
    } finally {
      this.exclusive = false;
      if (target !== undefined) target.exclusive = false;
      this.importing = false;
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
    assert(!this.needsSnapshotValue && right?.needsSnapshotValue !== true, 'merge on a partition whose snapshot import did not finish');
    assert(right === undefined ? context.refusal !== undefined : right !== this && right.engine === this.engine, 'a merge moves keys within one engine');
    assert(this.mergedIntoValue === undefined && right?.mergedIntoValue === undefined, 'a merged-away partition takes no part in another merge');
    const range = this.hashRange;
    assert(range !== undefined && (right === undefined || right.partition !== undefined), 'a merge needs partitioned stores');
    const nothing = { movedKeys: 0, movedVersions: 0, droppedDedupEntries: 0 };
    if (context.index <= this.appliedIndexValue) return nothing;
    const nowMs = Math.max(context.nowMs, this.appliedTimeValue, right?.appliedTimeValue ?? 0);
    this.importing = true;
    if (right !== undefined) right.importing = true;
    if (this.compactionStepInFlight !== undefined) await this.compactionStepInFlight.catch(() => undefined);
    if (right?.compactionStepInFlight !== undefined) await right.compactionStepInFlight.catch(() => undefined);
    this.enterExclusive();
    right?.enterExclusive();
    try {
      let refusal = context.refusal;
      const rightRange = right?.hashRange;
      if (refusal !== undefined || right === undefined) {
        // Decided by the caller from replicated state.
      } else if (right.frozenValue === undefined || right.frozenValue.into !== this.partition?.id || right.frozenValue.index !== context.freezeIndex) {
        refusal = new AtollError('MERGE_REFUSED', `partition ${right.partition?.id ?? '?'} is not frozen into partition ${this.partition?.id ?? '?'} at index ${context.freezeIndex}`, { reason: 'not-frozen' });
      } else if (rightRange === undefined || rightRange.start !== range.end) {
        refusal = new AtollError('MERGE_REFUSED', `partition ${right.partition?.id ?? '?'} does not start where partition ${this.partition?.id ?? '?'} ends (${range.end})`, { reason: 'not-adjacent' });
      } else if (right.leases.all().length > 0) {
        refusal = new AtollError('MERGE_REFUSED', `partition ${right.partition?.id ?? '?'} holds leases: revoke them or wait for them to expire`, { reason: 'leased-keys' });
      }
      if (refusal !== undefined || right === undefined || rightRange === undefined) {
        refusal ??= new AtollError('MERGE_REFUSED', 'no right partition', { reason: 'no-right' });
        await this.commit(failedOutcome(refusal), context.index, nowMs);
        return { refused: refusal, ...nothing };
      }
      // The caller brought right through its freeze (merge-apply.ts); past it nothing changes.
      assert(right.appliedIndexValue >= context.freezeIndex, 'a merge reads the right partition at or past its freeze index');
      const plan = await planMergeMove(this.engine, { layout: this.layout, dedup: this.dedup.currentState() }, { layout: right.layout, dedup: right.dedup.currentState() }, context.index);
      const merged = { start: range.start, end: rightRange.end };
      const revision = Math.max(this.revisionValue, right.revisionValue);
      const compactedRevision = Math.max(this.compactedRevisionValue, right.compactedRevisionValue);
      const operations: WriteOperation[] = [
        ...plan.operations,
        { type: 'put', key: this.layout.appliedKey, value: encodeAppliedRecord({ appliedIndex: context.index, appliedTimeMs: nowMs, revision }) },
        { type: 'put', key: this.layout.compactedRevisionKey, value: encodeUint64BE(compactedRevision) },
        { type: 'put', key: this.layout.rangeKey, value: encodeOwnedRange(merged) },
        ...alsoWrite,
      ];
      if (this.legacyAppliedRecords) for (const key of [this.layout.appliedIndexKey, this.layout.appliedTimeKey, this.layout.revisionKey]) operations.push({ type: 'del', key });
      // Exports of either side that read on would mix the states before and after: they fail.
      this.epoch++;
      right.epoch++;
      await this.engine.write(operations, { sync: true });
      // The in-memory state follows the batch.
      this.legacyAppliedRecords = false;
      this.appliedIndexValue = context.index;
      this.appliedTimeValue = nowMs;
      this.revisionValue = revision;
      this.compactedRevisionValue = compactedRevision;
      this.ownedRange = merged;
      this.dedup.adopt(await DedupTable.loadState(this.engine, this.layout));
      assert.equal(this.dedup.count, plan.dedup.count, 'the merged dedup queue is what the plan wrote');
      right.mergedIntoValue = this.partition?.id ?? 0;
      // Both histories changed without a commit: the left one gained the right's versions at
      // revisions its listener may already hold, the right one is gone.
      this.resetListener?.(revision, 'merge');
      right.resetListener?.(right.revisionValue, 'merged-away');
      right.dedup.adopt(emptyDedupState);
      this.cache?.clear(this.cacheStoreId);
      right.cache?.clear(right.cacheStoreId);
      await this.rebuildKeyState();
      await right.rebuildKeyState();
      return { movedKeys: plan.movedKeys, movedVersions: plan.movedVersions, droppedDedupEntries: plan.droppedDedupEntries };
    } finally {
      this.exclusive = false;
      this.importing = false;
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
  async applyFreeze(context: { readonly index: number; readonly nowMs: number; readonly into: number; readonly refusal?: AtollError }): Promise<{ readonly refused?: AtollError; readonly freezeIndex: number }> {
    assert(Number.isSafeInteger(context.index) && context.index >= 1, 'index must be a positive safe integer');
    assertNowMs(context.nowMs);
    assert(Number.isInteger(context.into) && context.into >= 0 && context.into < 2 ** 32, 'a freeze names a partition id');
    assert(!this.needsSnapshotValue && this.mergedIntoValue === undefined, 'freeze on a partition that is not live');
    if (context.index <= this.appliedIndexValue) return { freezeIndex: this.frozenValue?.index ?? 0 };
    const nowMs = Math.max(context.nowMs, this.appliedTimeValue);
    this.enterExclusive();
    try {
      const frozen = this.frozenValue;
      let refusal = context.refusal;
      if (refusal === undefined && frozen !== undefined && frozen.into !== context.into) {
        refusal = new AtollError('MERGE_REFUSED', `partition ${this.partition?.id ?? '?'} is frozen for a merge into partition ${frozen.into}`, { reason: 'frozen', mergedInto: frozen.into });
      } else if (refusal === undefined && frozen === undefined && this.leases.all().length > 0) {
        refusal = new AtollError('MERGE_REFUSED', `partition ${this.partition?.id ?? '?'} holds leases: revoke them or wait for them to expire`, { reason: 'leased-keys' });
      }
      if (refusal !== undefined) {
        await this.commit(failedOutcome(refusal), context.index, nowMs);
        return { refused: refusal, freezeIndex: 0 };
      }
      if (frozen !== undefined) {
        await this.commit(emptyOutcome, context.index, nowMs);
        return { freezeIndex: frozen.index };
      }
      const freeze = { into: context.into, index: context.index };
      await this.commit({ ...emptyOutcome, operations: [{ type: 'put', key: this.layout.freezeKey, value: encodeFreeze(freeze) }] }, context.index, nowMs);
      this.frozenValue = freeze;
      // Reads that began before the freeze must not answer after it: the keys may move at any time.
      this.epoch++;
      this.cache?.clear(this.cacheStoreId);
      return { freezeIndex: freeze.index };
    } finally {
      this.exclusive = false;
    }
  }

  /** The merge freeze (applyFreeze), or undefined while the partition is live. */
  get frozen(): { readonly into: number; readonly index: number } | undefined {
    return this.frozenValue;
  }

  private frozenError(): AtollError {
    const into = this.frozenValue?.into;
    // reason 'frozen': not merged yet, so the range keeps its own group (router.ts keeps its start).
    return new AtollError('PARTITION_MOVED', `partition ${this.partition?.id ?? '?'} is being merged into partition ${into ?? '?'}: refresh the partition table and retry`, {
      servedPartitionId: this.partition?.id, mergedInto: into, reason: 'frozen',
    });
  }

  private mergedAwayError(): AtollError {
    return new AtollError('PARTITION_MOVED', `partition ${this.partition?.id ?? '?'} was merged into partition ${this.mergedIntoValue ?? '?'}: refresh the partition table`, {
      servedPartitionId: this.partition?.id,
      mergedInto: this.mergedIntoValue,
    });
  }

  /** The partition this one was merged into (applyMerge), or undefined while it is live. */
  get mergedInto(): number | undefined {
    return this.mergedIntoValue;
  }

  /** Deletes every key of the partition except the import mark. */
  private async clearPartition(): Promise<void> {
    await this.engine.write(this.layout.metaKeys().map((key) => ({ type: 'del' as const, key })));
    // An import writes the separate applied records: the next apply batch replaces them.
    this.legacyAppliedRecords = true;
    this.dedup.adopt(emptyDedupState);
    for (const range of this.layout.dataRanges()) await this.deleteRange(range);
  }

  private async deleteRange(range: KeyRange): Promise<void> {
    if (this.engine.deleteRange !== undefined) {
      await this.engine.deleteRange(range);
      return;
    }
    let pending: WriteOperation[] = [];
    for await (const [storageKey] of this.engine.iterate(range)) {
      pending.push({ type: 'del', key: storageKey });
      if (pending.length >= this.limits.compactionBatchOps) {
        await this.engine.write(pending);
        pending = [];
      }
    }
    if (pending.length > 0) await this.engine.write(pending);
  }

  /**
   * Checks a whole snapshot without writing anything: every check importSnapshot makes of the
   * chunks and their entries. Throws INVALID_ARGUMENT (malformed snapshot) like the import would.
   * Synchronous, so a Raft group can refuse a snapshot before it adopts it.
   */
  checkSnapshot(chunks: readonly Uint8Array[]): void {
    checkedSnapshotHeader(this.layout, chunks);
  }

  /**
   * checkSnapshot one chunk at a time, in order (a transfer checks each chunk as it arrives):
   * add() throws INVALID_ARGUMENT as soon as a chunk is malformed, finish() when the whole is.
   */
  snapshotCheck(): { add(chunk: Uint8Array): void; finish(): SnapshotHeader } {
    return snapshotCheck(this.layout);
  }

  /** Checks and writes a snapshot's chunks, one engine write per chunk. */
  private async writeSnapshotChunks(
    chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  ): Promise<{ header: SnapshotHeader; dedupState: DedupMeta }> {
    const plan = newSnapshotPlan();
    for await (const bytes of chunks) {
      const operations = planSnapshotChunk(this.layout, plan, bytes);
      if (operations.length > 0) await this.engine.write(operations);
    }
    return finishSnapshotPlan(plan);
  }

  // ---------------------------------------------------------------------------------------------
  // Errors

  private futureRevision(revision: number): AtollError {
    return new AtollError('FUTURE_REVISION', `revision ${revision} is above the current revision ${this.revisionValue}`, {
      revision,
      currentRevision: this.revisionValue,
    });
  }

  private compacted(revision: number): AtollError {
    return new AtollError(
      'COMPACTED',
      `revision ${revision} has been compacted; the oldest readable revision is ${this.compactedRevisionValue}`,
      { revision, compactedRevision: this.compactedRevisionValue },
    );
  }

  private validationTooLarge(txn: TxnCommand, keyPrefix: string): AtollError {
    return new AtollError(
      'RESOURCE_EXHAUSTED',
      `a serializable commit validates at most ${this.limits.maxTxnPrefixKeys} keys and ${this.limits.maxScanVersions} versions under its read prefixes`,
      { keyPrefix, snapshotRevision: txn.snapshotRevision, maxKeys: this.limits.maxTxnPrefixKeys, maxVersions: this.limits.maxScanVersions },
    );
  }

  private conflict(txn: TxnCommand, details: Record<string, unknown>): AtollError {
    return new AtollError('TXN_CONFLICT', `the transaction conflicts with a write after its snapshot revision ${txn.snapshotRevision}`, {
      snapshotRevision: txn.snapshotRevision,
      ...details,
    });
  }
}

function withoutCurrent(result: WriteResult): WriteResult {
  if (result.current === undefined && result.counter === undefined && result.deleted !== true) return result;
  const { current: _current, counter: _counter, ...rest } = result;
  return { ...rest, ...(result.type === 'delete' && { deleted: false }) };
}
