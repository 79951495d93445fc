/**
 * The partition's memory of deduplicated requests (Raft thesis §6.3, client sessions): for each
 * recent request id, the result its first entry produced. It is part of the replicated state:
 * it changes only in apply batches, by rules that depend only on the applied sequence, so every
 * replica recognises the same retries, after a restart or a snapshot install too.
 *
 * Storage (key-layout.ts): the queue entry P 'q' index holds the id and the encoded result and
 * is never rewritten; the record P 'r' id points at it. Eviction is by apply order: the window
 * keeps the newest `window` entries, and evicting the oldest only raises the dedup floor (a meta
 * record). Evicted entries are deleted later, and only while no snapshot export runs: an export
 * copies the queue entries at or above the floor it started with, so they must stay put until it
 * ends. Deleting only below the committed floor keeps that true for exports that start later.
 *
 * Expiry (request-id.ts): a plain id whose result was evicted is unknown again, and a resend
 * applies again. A timestamped id carries its creation time, and the table keeps the expiry mark
 * `expiredThroughMs`, the newest creation time among the timestamped ids it evicted; an unknown
 * timestamped id created at or before the mark may be one of them, so the store refuses it with
 * REQUEST_ID_EXPIRED instead of applying it. The mark is not a record of its own: each queue entry
 * stores `createdBeforeMs`, the newest creation time among the ids recorded before it (by apply
 * order), and since eviction goes by apply order the oldest live entry's `createdBeforeMs` is
 * exactly the mark. So it changes only in apply batches, is rebuilt from the queue on open, and a
 * snapshot (which carries the live entries) carries it too.
 *
 * MvccStore drives it: the table plans operations, the store writes them in its apply batch and
 * then calls adopt() with the state that batch wrote.
 */
import assert from 'node:assert/strict';
import { decodeUint64BE, encodeUint64BE } from '../storage/bytes.js';
import type { KeyRange, StorageEngine, WriteOperation } from '../storage/storage-engine.js';
import { decodeDedupEntry, readDedupEntryHead, readDedupEntryRequestId, type DedupEntry, type RecordedResult } from './dedup-record.js';
import type { MvccKeyLayout } from './key-layout.js';
import { requestIdCreatedAtMs } from './request-id.js';

/** The default number of deduplicated results a partition keeps (MvccStoreOptions.dedupWindow). */
export const defaultDedupWindow = 100_000;

/**
 * One apply evicts at most this many entries. Normally it evicts one (it adds one to a full
 * window); more only after the window shrank or a snapshot brought more, and the excess then
 * goes a few entries per apply so no batch grows without bound.
 */
const evictionsPerApplyMax = 8;

/** The dedup meta records (floor and count), as a batch writes them. */
export interface DedupMeta {
  /** Queue entries below this index are evicted. */
  readonly floorIndex: number;
  /** The live queue entries: those at or above floorIndex. */
  readonly count: number;
}

/**
 * The whole dedup state. The two times are derived from the queue entries (see the file comment),
 * never stored on their own. Invariants:
 * - newestCreatedMs is the newest creation time among all timestamped ids ever recorded here
 *   (0: none), and every queue entry's createdBeforeMs is what it was when the entry was recorded;
 * - expiredThroughMs is the newest creation time among the timestamped ids whose entries are
 *   evicted (0: none): the createdBeforeMs of the oldest live entry;
 * - 0 <= expiredThroughMs <= newestCreatedMs, and neither ever decreases (an import replaces both
 *   with the exporter's, which are at least as new as what the importer applied before), except
 *   that a merge may lower newestCreatedMs by forgetting recorded PARTITION_MOVED refusals, whose
 *   ids applied nothing (merge-plan.ts).
 */
export interface DedupState extends DedupMeta {
  readonly expiredThroughMs: number;
  readonly newestCreatedMs: number;
}

export const emptyDedupState: DedupState = Object.freeze({ floorIndex: 0, count: 0, expiredThroughMs: 0, newestCreatedMs: 0 });

export interface DedupPlan {
  /** Deletes of evicted entries first, then the new entry and its record, then the meta records. */
  readonly operations: WriteOperation[];
  readonly state: DedupState;
}

export interface FoundResult {
  /** The index of the entry that produced the result. */
  readonly index: number;
  readonly result: RecordedResult;
}

/** How many live queue indexes one read fetches ahead for evictions. */
const readAheadIndexes = 256;
/**
 * The read-ahead never holds more heads than this. It used to take every new entry while it held
 * the whole live queue, which from an empty table is always, so it grew to the window (100,000
 * heads of about 40 bytes per partition: 256 MB per node at 64 partitions). Past the cap it is
 * refilled from storage, readAheadIndexes at a time, as a table that starts full always was.
 */
export const dedupReadAheadMax = 2 * readAheadIndexes;

/** A live queue entry as the read-ahead keeps it: enough to move the floor and the mark past it. */
interface LiveHead {
  readonly index: number;
  readonly createdBeforeMs: number;
}

export class DedupTable {
  // Invariant: mirrors the dedup meta records of the last batch written.
  // Invariant: state.count queue entries lie at or above state.floorIndex, each pointed at by its record.
  private state: DedupState;
  /**
   * Read-ahead of the live queue, so a full window does not cost an iterator per apply.
   * Invariant: `oldestLive` is a prefix of the live queue's entries (those at or above the floor),
   * ascending by index, each with its stored createdBeforeMs. Only this table's own plans keep it
   * (see adopt); any other state empties it. Bounded: oldestLive.length <= dedupReadAheadMax.
   */
  private oldestLive: LiveHead[] = [];
  /** The state the last planRecord planned, and how that plan changes `oldestLive` once adopted. */
  private planned: { state: DedupState; evictions: number; appended: LiveHead | undefined } | undefined;
  /**
   * When `belowFloorExact`, `evictedToRemove` lists exactly the queue entries below the floor
   * (evicted by this table's own plans, not yet deleted), so removal needs no scan. Unknown after
   * a load or an import until a scan finds them all.
   */
  private belowFloorExact = false;
  private evictedToRemove: number[] = [];

  constructor(
    private readonly engine: StorageEngine,
    private readonly layout: MvccKeyLayout,
    readonly window: number,
    state: DedupState,
  ) {
    assert(Number.isSafeInteger(window) && window >= 1, 'dedupWindow must be a positive integer');
    this.state = state;
  }

  /** The state the engine holds: the meta records, and the times derived from the queue entries. */
  static async loadState(engine: StorageEngine, layout: MvccKeyLayout): Promise<DedupState> {
    const floor = await engine.get(layout.dedupFloorKey);
    const count = await engine.get(layout.dedupCountKey);
    const floorIndex = floor === undefined ? 0 : decodeUint64BE(floor);
    let expiredThroughMs = 0;
    let newestCreatedMs = 0;
    // The oldest live entry carries the mark; the newest entry (always live) carries, with its own
    // id's creation time, the newest creation time recorded.
    for await (const [, stored] of engine.iterate({ ...layout.dedupQueueRange(floorIndex), limit: 1 })) {
      expiredThroughMs = decodeStoredHead(stored).createdBeforeMs;
    }
    for await (const [, stored] of engine.iterate({ ...layout.dedupQueueRange(floorIndex), reverse: true, limit: 1 })) {
      const head = decodeStoredHead(stored);
      newestCreatedMs = Math.max(head.createdBeforeMs, requestIdCreatedAtMs(head.requestId) ?? 0);
    }
    assert(expiredThroughMs <= newestCreatedMs, 'the dedup expiry mark is above the newest recorded creation time');
    return { floorIndex, count: count === undefined ? 0 : decodeUint64BE(count), expiredThroughMs, newestCreatedMs };
  }

  get floorIndex(): number {
    return this.state.floorIndex;
  }

  get count(): number {
    return this.state.count;
  }

  /** Timestamped ids created at or before this time that find() does not know may have been evicted. */
  get expiredThroughMs(): number {
    return this.state.expiredThroughMs;
  }

  /** The createdBeforeMs of the next entry recorded (its DedupEntry field). */
  /** Heads held in memory by the read-ahead (tests and metrics). */
  get readAheadLength(): number {
    return this.oldestLive.length;
  }

  /** Estimated heap bytes of the in-memory shortcuts: 48 per read-ahead head, 8 per evicted index. */
  get memoryBytes(): number {
    return 48 * this.oldestLive.length + 8 * this.evictedToRemove.length;
  }

  get newestCreatedMs(): number {
    return this.state.newestCreatedMs;
  }

  /** The whole state the last batch wrote (a merge plans from both sides', merge-plan.ts). */
  currentState(): DedupState {
    return this.state;
  }

  /** Takes the state the last batch wrote (after an apply or an import). */
  adopt(state: DedupState): void {
    assert(state.floorIndex >= 0 && state.count >= 0);
    assert(state.expiredThroughMs >= 0 && state.expiredThroughMs <= state.newestCreatedMs, 'dedup expiry mark out of order');
    const planned = this.planned;
    this.planned = undefined;
    if (planned !== undefined && planned.state === state) {
      for (const head of this.oldestLive.splice(0, planned.evictions)) this.evictedToRemove.push(head.index);
      if (planned.appended !== undefined) this.oldestLive.push(planned.appended);
      assert(this.oldestLive.length <= dedupReadAheadMax, 'the dedup read-ahead outgrew its bound');
    } else {
      this.oldestLive = [];
      this.belowFloorExact = false;
      this.evictedToRemove = [];
    }
    this.state = state;
  }

  /** The recorded result of a request id, unless it was never recorded or has been evicted. */
  async find(requestId: string): Promise<FoundResult | undefined> {
    // Almost every request id is new: a lookup on this thread (when the engine has one) answers
    // that without a trip through LevelDB's thread pool.
    const pointer = await this.lookup(this.layout.dedupRecordKey(requestId));
    if (pointer === undefined) return undefined;
    const index = decodeUint64BE(pointer);
    if (index < this.state.floorIndex) return undefined;
    const stored = await this.lookup(this.layout.dedupQueueKey(index));
    assert(stored !== undefined, 'a live dedup record points at a missing queue entry');
    const entry = decodeStoredEntry(stored);
    assert.equal(entry.requestId, requestId, 'a dedup record points at the queue entry of another request id');
    return { index, result: entry.result };
  }

  private async lookup(key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.engine.getSync !== undefined ? this.engine.getSync(key) : this.engine.get(key);
  }

  /**
   * Plans recording `encodedEntry` (the result of the entry at `index`, encoded with
   * createdBeforeMs = newestCreatedMs) for a request id that find() did not know and that is not
   * expired, evicting the oldest entries beyond the window. With `removeEvicted` (no snapshot
   * export runs) it also deletes up to `removalLimit` entries evicted earlier.
   */
  async planRecord(input: {
    readonly requestId: string;
    readonly index: number;
    readonly encodedEntry: Uint8Array;
    readonly removeEvicted: boolean;
    readonly removalLimit: number;
  }): Promise<DedupPlan> {
    const { requestId, index } = input;
    assert(index >= this.state.floorIndex, 'a new dedup entry must be at or above the floor');
    const createdAtMs = requestIdCreatedAtMs(requestId);
    // The store refuses an expired id before it gets here: recording one would let a later resend
    // of the same id look recorded once, then (evicted again) expired, after two applications.
    assert(createdAtMs === undefined || createdAtMs > this.state.expiredThroughMs, 'an expired request id must not be recorded');
    const appended: LiveHead = { index, createdBeforeMs: this.state.newestCreatedMs };
    const evictions = this.evictionCount();
    const { floorIndex, expiredThroughMs } = await this.afterEvicting(evictions, appended);
    const nothingToRemove = this.belowFloorExact && this.evictedToRemove.length === 0;
    const operations = input.removeEvicted && !nothingToRemove ? (await this.planRemoval(input.removalLimit)).operations : [];
    // After the deletes, so a re-recorded id (evicted, not yet removed) keeps its new record.
    operations.push(
      { type: 'put', key: this.layout.dedupQueueKey(index), value: input.encodedEntry },
      { type: 'put', key: this.layout.dedupRecordKey(requestId), value: encodeUint64BE(index) },
    );
    const state: DedupState = {
      floorIndex,
      count: this.state.count - evictions + 1,
      expiredThroughMs,
      newestCreatedMs: Math.max(this.state.newestCreatedMs, createdAtMs ?? 0),
    };
    operations.push(...this.metaOperations(state));
    // The new entry extends the read-ahead only when that holds the whole live queue.
    const wholeQueue = this.oldestLive.length === this.state.count;
    const evicted = Math.min(evictions, this.oldestLive.length);
    const extend = wholeQueue && this.oldestLive.length - evicted < dedupReadAheadMax;
    this.planned = { state, evictions: evicted, appended: extend ? appended : undefined };
    return { operations, state };
  }

  private evictionCount(): number {
    return Math.min(Math.max(0, this.state.count + 1 - this.window), evictionsPerApplyMax);
  }

  /**
   * The floor and the expiry mark after evicting the `evictions` oldest live entries: the index
   * and createdBeforeMs of the next live entry, or the new entry's when none is left.
   */
  private async afterEvicting(evictions: number, appended: LiveHead): Promise<{ floorIndex: number; expiredThroughMs: number }> {
    if (evictions === 0) return { floorIndex: this.state.floorIndex, expiredThroughMs: this.state.expiredThroughMs };
    const oldest = await this.liveHeads(evictions + 1);
    assert(oldest.length >= evictions, 'the dedup count is above the number of live queue entries');
    const next = oldest[evictions] ?? appended;
    // The mark never goes back: entries are recorded with non-decreasing createdBeforeMs.
    assert(next.createdBeforeMs >= this.state.expiredThroughMs, 'the dedup expiry mark would decrease');
    return { floorIndex: next.index, expiredThroughMs: next.createdBeforeMs };
  }

  /** The oldest `limit` live queue entries (fewer when the queue is shorter). */
  private async liveHeads(limit: number): Promise<LiveHead[]> {
    if (this.oldestLive.length < limit && this.oldestLive.length < this.state.count) {
      const heads: LiveHead[] = [];
      const range = { ...this.layout.dedupQueueRange(this.state.floorIndex), limit: Math.max(limit, readAheadIndexes) };
      for await (const [key, stored] of this.engine.iterate(range)) {
        heads.push({ index: this.layout.parseDedupQueueKey(key), createdBeforeMs: decodeStoredHead(stored).createdBeforeMs });
      }
      this.oldestLive = heads;
    }
    return this.oldestLive.slice(0, limit);
  }

  /**
   * Deletes for up to `limit` evicted entries below the committed floor, each with its record
   * unless the id was recorded again since. Only while no snapshot export runs (the caller
   * checks): exports that start later begin at or above the committed floor.
   */
  async planRemoval(limit: number): Promise<{ operations: WriteOperation[]; removedEntries: number }> {
    const operations: WriteOperation[] = [];
    let removedEntries = 0;
    if (this.state.floorIndex === 0) return { operations, removedEntries };
    const remove = async (index: number, stored: Uint8Array): Promise<void> => {
      const recordKey = this.layout.dedupRecordKey(decodeStoredRequestId(stored));
      const pointer = await this.lookup(recordKey);
      if (pointer !== undefined && decodeUint64BE(pointer) === index) operations.push({ type: 'del', key: recordKey });
      operations.push({ type: 'del', key: this.layout.dedupQueueKey(index) });
      removedEntries++;
    };
    if (this.belowFloorExact) {
      // The caller writes these operations (or the node stops), so they leave the list now.
      for (const index of this.evictedToRemove.splice(0, limit)) {
        const stored = await this.lookup(this.layout.dedupQueueKey(index));
        assert(stored !== undefined, 'an evicted dedup entry listed for removal is missing');
        await remove(index, stored);
      }
      return { operations, removedEntries };
    }
    const range = this.layout.dedupQueueRange(0, this.state.floorIndex);
    for await (const [key, stored] of this.engine.iterate({ ...range, limit })) await remove(this.layout.parseDedupQueueKey(key), stored);
    // Fewer than asked: these were all of them, so from now on the list is exact.
    if (removedEntries < limit) {
      this.belowFloorExact = true;
      this.evictedToRemove = [];
    }
    return { operations, removedEntries };
  }

  metaOperations(state: DedupMeta): WriteOperation[] {
    return [
      { type: 'put', key: this.layout.dedupFloorKey, value: encodeUint64BE(state.floorIndex) },
      { type: 'put', key: this.layout.dedupCountKey, value: encodeUint64BE(state.count) },
    ];
  }

  /**
   * The queue entries a snapshot at `appliedIndex` (the current one) holds: the live ones, none
   * newer. The caller keeps them on disk until the export ends (planRemoval is not called).
   */
  exportRange(appliedIndex: number): KeyRange {
    return this.layout.dedupQueueRange(this.state.floorIndex, appliedIndex + 1);
  }
}

/** Entries in the engine were written by this code or checked on import: bad bytes are corruption. */
function decodeStoredEntry(stored: Uint8Array): DedupEntry {
  try {
    return decodeDedupEntry(stored);
  } catch (error) {
    assert.fail(`corrupt dedup queue entry: ${(error as Error).message}`);
  }
}

function decodeStoredHead(stored: Uint8Array): { requestId: string; createdBeforeMs: number } {
  try {
    return readDedupEntryHead(stored);
  } catch (error) {
    assert.fail(`corrupt dedup queue entry: ${(error as Error).message}`);
  }
}

function decodeStoredRequestId(stored: Uint8Array): string {
  try {
    return readDedupEntryRequestId(stored);
  } catch (error) {
    assert.fail(`corrupt dedup queue entry: ${(error as Error).message}`);
  }
}
