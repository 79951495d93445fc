/**
 * The MVCC state machine of one partition: the Raft group applies committed log entries to it in
 * index order, and reads are served from it at the latest or a past revision.
 *
 * It is pure logic over a StorageEngine: no clock (every command carries the leader's nowMs, every
 * read the reader's), no randomness, no network, no file system. Given the same entries, every
 * replica writes the same bytes.
 *
 * Durability: each entry's versions, the partition revision and the applied index are written in
 * one atomic batch, so after a crash the store is exactly the state after some applied index and
 * Raft replays from there. Batches are not synced by default: the Raft log is the durable record,
 * and a lost apply is redone by replay. (Raft must therefore not discard log entries past what a
 * synced write or a snapshot has made durable here; `syncApply` trades throughput for that.)
 *
 * Concurrency: one apply, physical compaction or snapshot import at a time (asserted); reads and
 * snapshot exports may run alongside them. A read fixes its revision first and ignores newer
 * versions, and versions at a revision are never rewritten, so it sees one consistent state.
 */
import assert from 'node:assert/strict';
import { AtollError } from '../errors.js';
import { bucketOf } from '../keys/bucket.js';
import { partitionOfBucket, validatePartitionCount } from '../keys/partition-table.js';
import { decodeUtf8 } from '../keys/utf8.js';
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
  KeyVersion,
  TxnCommand,
  WriteOp,
  WriteResult,
} from './commands.js';
import { MvccKeyLayout } from './key-layout.js';
import { planWrite } from './plan-write.js';
import {
  decodeSnapshotChunk,
  encodeSnapshotHeader,
  encodeSnapshotTrailer,
  SnapshotEntriesWriter,
  type SnapshotHeader,
} from './snapshot-format.js';
import { validateCommand, validateKeyPrefix, validateRevisionNumber } from './validate-command.js';
import { decodeVersionRecord, encodeVersionRecord, isWellFormedVersionRecord, type StoredVersion } from './version-record.js';

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
   * and prefixes must name a bucket of this partition.
   */
  readonly partition?: { readonly id: number; readonly count: number };
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

export interface StorageCompactionResult {
  readonly removedVersions: number;
  /** True when a snapshot export was running, so nothing was removed this time. */
  readonly deferred: boolean;
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
}

function assertNowMs(nowMs: number): void {
  assert(Number.isSafeInteger(nowMs) && nowMs >= 0, 'nowMs must be a non-negative safe integer');
}

/** The live version a stored version shows a reader at nowMs, or undefined when it shows none. */
function liveVersion(key: string, found: FoundVersion | undefined, nowMs: number): KeyVersion | undefined {
  if (found === undefined || found.stored.kind !== 'value') return undefined;
  const { createRevision, version, value, expiresAtMs } = found.stored;
  if (expiresAtMs !== undefined && expiresAtMs <= nowMs) return undefined;
  const base = { key, value, createRevision, modRevision: found.revision, version };
  return expiresAtMs === undefined ? base : { ...base, expiresAtMs };
}

export class MvccStore {
  private readonly layout: MvccKeyLayout;
  private readonly limits: Limits;
  private readonly syncApply: boolean;
  private readonly partition: { readonly id: number; readonly count: number } | undefined;

  // Invariant: these mirror the meta records of the last batch written (or are zero for a new store).
  // Invariant: compactedRevision <= revision.
  private appliedIndexValue: number;
  private revisionValue: number;
  private compactedRevisionValue: number;
  private needsSnapshotValue: boolean;

  /** Set while an apply, physical compaction or import runs: they must not overlap. */
  private exclusive = false;
  private exportsInFlight = 0;
  /** Bumped by every snapshot import, so a read that overlapped one can tell. */
  private epoch = 0;

  private constructor(
    private readonly engine: StorageEngine,
    layout: MvccKeyLayout,
    options: MvccStoreOptions,
    status: MvccStatus,
  ) {
    this.layout = layout;
    this.limits = options.limits ?? defaultLimits;
    this.syncApply = options.syncApply ?? false;
    this.partition = options.partition;
    if (this.partition !== undefined) {
      validatePartitionCount(this.partition.count);
      assert(Number.isInteger(this.partition.id) && this.partition.id >= 0 && this.partition.id < this.partition.count);
    }
    this.appliedIndexValue = status.appliedIndex;
    this.revisionValue = status.revision;
    this.compactedRevisionValue = status.compactedRevision;
    this.needsSnapshotValue = status.needsSnapshot;
  }

  /** Opens the partition's state from the engine (an empty partition when it has none yet). */
  static async open(options: MvccStoreOptions): Promise<MvccStore> {
    const layout = new MvccKeyLayout(options.prefix);
    const readNumber = async (key: Uint8Array): Promise<number> => {
      const bytes = await options.engine.get(key);
      return bytes === undefined ? 0 : decodeUint64BE(bytes);
    };
    const status: MvccStatus = {
      appliedIndex: await readNumber(layout.appliedIndexKey),
      revision: await readNumber(layout.revisionKey),
      compactedRevision: await readNumber(layout.compactedRevisionKey),
      needsSnapshot: (await options.engine.get(layout.importInProgressKey)) !== undefined,
    };
    assert(status.compactedRevision <= status.revision, 'stored compaction floor is above the revision');
    return new MvccStore(options.engine, layout, options, status);
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

  status(): MvccStatus {
    return {
      appliedIndex: this.appliedIndexValue,
      revision: this.revisionValue,
      compactedRevision: this.compactedRevisionValue,
      needsSnapshot: this.needsSnapshotValue,
    };
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
   * and only the applied index moves. Call validateCommand before proposing so bad input fails
   * early. Assertion errors (misuse, corruption) do throw.
   */
  async apply(command: Command, context: ApplyContext): Promise<ApplyResult> {
    assert(Number.isSafeInteger(context.index) && context.index >= 1, 'index must be a positive safe integer');
    assertNowMs(context.nowMs);
    assert(!this.needsSnapshotValue, 'apply on a partition whose snapshot import did not finish');
    if (context.index <= this.appliedIndexValue) {
      return { index: context.index, revision: this.revisionValue, applied: false, replayed: true, writes: [] };
    }
    this.enterExclusive();
    try {
      const outcome = await this.decide(command, context.nowMs);
      await this.commit(outcome, context.index);
      if (outcome.newCompactedRevision !== undefined) await this.removeCompactedVersions();
      return {
        index: context.index,
        revision: this.revisionValue,
        applied: outcome.applied,
        replayed: false,
        writes: outcome.writes,
        ...(outcome.error !== undefined && { error: outcome.error }),
      };
    } finally {
      this.exclusive = false;
    }
  }

  private enterExclusive(): void {
    assert(!this.exclusive, 'apply, storage compaction and snapshot import must not overlap');
    this.exclusive = true;
  }

  private async decide(command: Command, nowMs: number): Promise<Outcome> {
    try {
      validateCommand(command, this.limits);
      if (command.type === 'compact') return this.decideCompact(command);
      this.checkOwnership(command);
      if (command.type === 'txn') await this.checkTxn(command);
      return await this.decideWrites(command, nowMs);
    } catch (error) {
      if (!(error instanceof AtollError)) throw error;
      return { applied: false, error, writes: [], operations: [] };
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
    const owner = partitionOfBucket(bucketOf(key), this.partition.count);
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
    const newRevision = this.revisionValue + 1;
    const plans = [];
    for (const op of ops) {
      const live = liveVersion(op.key, await this.findVersion(op.key, this.revisionValue), nowMs);
      plans.push(planWrite({ op, live, newRevision, nowMs }));
    }
    const writes = plans.map((plan) => plan.result);
    // All or nothing: one failed condition and no write of the command takes effect.
    if (plans.some((plan) => !plan.result.conditionHeld)) {
      return { applied: false, writes: writes.map(withoutCurrent), operations: [] };
    }
    const operations: WriteOperation[] = [];
    for (const plan of plans) {
      if (plan.store === undefined) continue;
      operations.push({
        type: 'put',
        key: this.layout.versionKey(plan.result.key, newRevision),
        value: encodeVersionRecord(plan.store),
      });
    }
    if (operations.length === 0) return { applied: true, writes, operations };
    return { applied: true, writes, operations, newRevision };
  }

  /**
   * First committer wins. The checks read only versions above the snapshot revision, which is at
   * or above the compaction floor, and compaction never removes those, so every replica decides
   * the same whatever its physical compaction progress.
   */
  private async checkTxn(txn: TxnCommand): Promise<void> {
    if (txn.snapshotRevision > this.revisionValue) throw this.futureRevision(txn.snapshotRevision);
    if (txn.snapshotRevision < this.compactedRevisionValue) throw this.compacted(txn.snapshotRevision);
    const keys = txn.writes.map((write) => write.key);
    if (txn.isolation === 'serializable') keys.push(...txn.readKeys);
    for (const key of keys) {
      const latest = await this.findVersion(key, this.revisionValue);
      if (latest !== undefined && latest.revision > txn.snapshotRevision) throw this.conflict(txn, { key, modRevision: latest.revision });
    }
    if (txn.isolation !== 'serializable') return;
    for (const keyPrefix of txn.readPrefixes) {
      for await (const [storageKey] of this.engine.iterate(this.layout.versionsOfPrefix(keyPrefix))) {
        const parsed = this.layout.parseVersionKey(storageKey);
        if (parsed.revision > txn.snapshotRevision) {
          throw this.conflict(txn, { keyPrefix, key: decodeUtf8(parsed.userKey), modRevision: parsed.revision });
        }
      }
    }
  }

  private async commit(outcome: Outcome, index: number): Promise<void> {
    const operations = [...outcome.operations];
    operations.push({ type: 'put', key: this.layout.appliedIndexKey, value: encodeUint64BE(index) });
    if (outcome.newRevision !== undefined) {
      assert.equal(outcome.newRevision, this.revisionValue + 1, 'an entry creates at most one revision');
      operations.push({ type: 'put', key: this.layout.revisionKey, value: encodeUint64BE(outcome.newRevision) });
    }
    if (outcome.newCompactedRevision !== undefined) {
      assert(outcome.newCompactedRevision <= this.revisionValue, 'the compaction floor cannot pass the revision');
      operations.push({ type: 'put', key: this.layout.compactedRevisionKey, value: encodeUint64BE(outcome.newCompactedRevision) });
    }
    await this.engine.write(operations, { sync: this.syncApply });
    this.appliedIndexValue = index;
    if (outcome.newRevision !== undefined) this.revisionValue = outcome.newRevision;
    if (outcome.newCompactedRevision !== undefined) this.compactedRevisionValue = outcome.newCompactedRevision;
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  /** The newest stored version of `key` at or below `revision`, tombstones included. */
  private async findVersion(key: string, revision: number): Promise<FoundVersion | undefined> {
    const range = this.layout.versionsOfKeyUpTo(key, revision);
    for await (const [storageKey, record] of this.engine.iterate({ ...range, reverse: true, limit: 1 })) {
      return { revision: this.layout.parseVersionKey(storageKey).revision, stored: decodeVersionRecord(record) };
    }
    return undefined;
  }

  /** Checks and fixes the revision a read is served at. */
  private beginRead(options: ReadOptions): { revision: number; epoch: number } {
    assertNowMs(options.nowMs);
    if (this.needsSnapshotValue) {
      throw new AtollError('UNAVAILABLE', 'the partition is installing a snapshot; retry shortly');
    }
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
   * Removes the versions no reader at or above the compaction floor needs: for each key, every
   * version older than its newest version at or below the floor, and that newest one too when it
   * is a tombstone. Versions above the floor are never touched. Applying a compact command runs
   * this; it is also safe to call again at any time (it finishes work a crash interrupted).
   * While a snapshot export runs it does nothing, so the export keeps every version it needs.
   */
  async compactStorage(): Promise<StorageCompactionResult> {
    this.enterExclusive();
    try {
      return await this.removeCompactedVersions();
    } finally {
      this.exclusive = false;
    }
  }

  private async removeCompactedVersions(): Promise<StorageCompactionResult> {
    assert(this.exclusive);
    if (this.exportsInFlight > 0) return { removedVersions: 0, deferred: true };
    const floor = this.compactedRevisionValue;
    let pending: WriteOperation[] = [];
    let removedVersions = 0;
    const remove = async (storageKey: Uint8Array): Promise<void> => {
      pending.push({ type: 'del', key: storageKey });
      removedVersions++;
      if (pending.length >= this.limits.compactionBatchOps) {
        await this.engine.write(pending);
        pending = [];
      }
    };
    // Per key: the newest version at or below the floor seen so far, which a reader may still need.
    let group: { groupKey: Uint8Array; newestAtFloor?: { storageKey: Uint8Array; isTombstone: boolean } } | undefined;
    const finishGroup = async (): Promise<void> => {
      if (group?.newestAtFloor?.isTombstone === true) await remove(group.newestAtFloor.storageKey);
    };
    for await (const [storageKey, record] of this.engine.iterate(this.layout.allVersionsRange())) {
      const parsed = this.layout.parseVersionKey(storageKey);
      if (group === undefined || !equalBytes(parsed.groupKey, group.groupKey)) {
        await finishGroup();
        group = { groupKey: parsed.groupKey.slice() };
      }
      if (parsed.revision > floor) continue;
      if (group.newestAtFloor !== undefined) await remove(group.newestAtFloor.storageKey);
      group.newestAtFloor = { storageKey, isTombstone: decodeVersionRecord(record).kind === 'tombstone' };
    }
    await finishGroup();
    if (pending.length > 0) await this.engine.write(pending);
    return { removedVersions, deferred: false };
  }

  // ---------------------------------------------------------------------------------------------
  // Snapshots

  /**
   * The partition's state at the applied index when iteration starts, as bounded chunks: a header
   * (appliedIndex, revision, compactedRevision), entry chunks of about snapshotChunkBytes, and a
   * trailer. Applies may continue meanwhile; versions they add are left out. Iterate it to the
   * end or break out of it (so it is closed): an abandoned export keeps deferring compaction.
   */
  async *exportSnapshot(): AsyncIterable<Uint8Array> {
    assert(!this.needsSnapshotValue, 'cannot export an unfinished snapshot import');
    const header: SnapshotHeader = {
      appliedIndex: this.appliedIndexValue,
      revision: this.revisionValue,
      compactedRevision: this.compactedRevisionValue,
    };
    const epoch = this.epoch;
    this.exportsInFlight++;
    try {
      yield encodeSnapshotHeader(header);
      let chunk = new SnapshotEntriesWriter();
      let entryCount = 0;
      const prefixLength = this.layout.partitionPrefix.length;
      for await (const [storageKey, record] of this.engine.iterate(this.layout.allVersionsRange())) {
        // An import replaced the state under us (this node was sent a newer snapshot); the receiver retries.
        if (this.epoch !== epoch) throw new AtollError('UNAVAILABLE', 'the partition installed a snapshot during the export');
        if (this.layout.parseVersionKey(storageKey).revision > header.revision) continue;
        chunk.add(storageKey.subarray(prefixLength), record);
        entryCount++;
        if (chunk.byteLength >= this.limits.snapshotChunkBytes) {
          yield chunk.finish();
          chunk = new SnapshotEntriesWriter();
        }
      }
      if (chunk.count > 0) yield chunk.finish();
      yield encodeSnapshotTrailer(entryCount);
    } finally {
      this.exportsInFlight--;
    }
  }

  /**
   * Replaces the partition's state with a snapshot. It marks the import as in progress (synced),
   * deletes the partition's range, writes the entry chunks, then writes the meta records and
   * clears the mark in one synced batch. A crash or a malformed snapshot leaves the mark, and the
   * partition refuses reads and applies (needsSnapshot) until an import succeeds.
   * Throws INVALID_ARGUMENT for a malformed snapshot.
   */
  async importSnapshot(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<MvccStatus> {
    this.enterExclusive();
    this.epoch++;
    this.needsSnapshotValue = true;
    try {
      await this.engine.write([{ type: 'put', key: this.layout.importInProgressKey, value: new Uint8Array(0) }], { sync: true });
      await this.clearPartition();
      const header = await this.writeSnapshotChunks(chunks);
      await this.engine.write(
        [
          { type: 'put', key: this.layout.appliedIndexKey, value: encodeUint64BE(header.appliedIndex) },
          { type: 'put', key: this.layout.revisionKey, value: encodeUint64BE(header.revision) },
          { type: 'put', key: this.layout.compactedRevisionKey, value: encodeUint64BE(header.compactedRevision) },
          { type: 'del', key: this.layout.importInProgressKey },
        ],
        { sync: true },
      );
      this.appliedIndexValue = header.appliedIndex;
      this.revisionValue = header.revision;
      this.compactedRevisionValue = header.compactedRevision;
      this.needsSnapshotValue = false;
      return this.status();
    } finally {
      this.epoch++;
      this.exclusive = false;
    }
  }

  /** Deletes every key of the partition except the import mark. */
  private async clearPartition(): Promise<void> {
    const metaKeys = [this.layout.appliedIndexKey, this.layout.revisionKey, this.layout.compactedRevisionKey];
    await this.engine.write(metaKeys.map((key) => ({ type: 'del' as const, key })));
    const range = this.layout.allVersionsRange();
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

  private async writeSnapshotChunks(chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<SnapshotHeader> {
    const malformed = (reason: string): AtollError => new AtollError('INVALID_ARGUMENT', `malformed snapshot: ${reason}`);
    let header: SnapshotHeader | undefined;
    let trailerEntryCount: number | undefined;
    let entryCount = 0;
    for await (const bytes of chunks) {
      if (trailerEntryCount !== undefined) throw malformed('a chunk follows the trailer');
      const chunk = decodeSnapshotChunk(bytes);
      if (chunk.kind === 'header') {
        if (header !== undefined) throw malformed('a second header');
        if (chunk.header.compactedRevision > chunk.header.revision) throw malformed('the compaction floor is above the revision');
        header = chunk.header;
        continue;
      }
      if (header === undefined) throw malformed('the first chunk is not a header');
      if (chunk.kind === 'trailer') {
        trailerEntryCount = chunk.entryCount;
        continue;
      }
      const operations: WriteOperation[] = chunk.entries.map(([suffix, record]) => {
        const key = new Uint8Array(this.layout.partitionPrefix.length + suffix.length);
        key.set(this.layout.partitionPrefix, 0);
        key.set(suffix, this.layout.partitionPrefix.length);
        if (!this.isImportableVersion(key, record, header!.revision)) throw malformed('an entry is not a valid version');
        return { type: 'put', key, value: record };
      });
      entryCount += operations.length;
      await this.engine.write(operations);
    }
    if (header === undefined) throw malformed('it is empty');
    if (trailerEntryCount === undefined) throw malformed('it ended without a trailer (truncated?)');
    if (trailerEntryCount !== entryCount) throw malformed(`the trailer counts ${trailerEntryCount} entries, got ${entryCount}`);
    return header;
  }

  private isImportableVersion(key: Uint8Array, record: Uint8Array, maxRevision: number): boolean {
    if (!this.layout.isVersionKey(key) || !isWellFormedVersionRecord(record)) return false;
    try {
      const parsed = this.layout.parseVersionKey(key);
      decodeUtf8(parsed.userKey);
      return parsed.revision >= 1 && parsed.revision <= maxRevision;
    } catch {
      return false;
    }
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
