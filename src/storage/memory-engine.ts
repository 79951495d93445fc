/**
 * An in-memory StorageEngine for tests and the deterministic simulator: a sorted array with
 * binary search, in byte-wise key order.
 *
 * It also models what a power loss does to LevelDB: writes without `sync` are remembered with an
 * undo record until a synced write makes them (and everything before them) durable; `crash()`
 * rolls back the newest un-synced batches. A clean `close()` loses nothing, as a process exit
 * loses nothing that reached the OS.
 */
import assert from 'node:assert/strict';
import { compareBytes, copyBytes } from './bytes.js';
import type {
  IterateOptions,
  KeyRange,
  StorageEngine,
  StorageEntry,
  WriteOperation,
  WriteOptions,
} from './storage-engine.js';

/** What one key held before an un-synced batch changed it. */
interface UndoRecord {
  readonly key: Uint8Array;
  readonly previous: Uint8Array | undefined;
}

export interface CrashOptions {
  /**
   * How many of the oldest un-synced batches survive the crash (default 0: all are lost). The
   * survivors are always a prefix, as in LevelDB's append-only write-ahead log.
   */
  readonly keepUnsyncedBatches?: number;
}

export class MemoryEngine implements StorageEngine {
  // Invariant: keys is sorted strictly ascending by compareBytes; values[i] belongs to keys[i].
  private readonly keys: Uint8Array[] = [];
  private readonly values: Uint8Array[] = [];
  // Invariant: one entry per un-synced batch since the last synced write, oldest first.
  private unsyncedBatches: UndoRecord[][] = [];
  private closed = false;

  /** The number of stored keys. */
  get size(): number {
    return this.keys.length;
  }

  /** The number of batches a crash would lose right now. */
  get unsyncedBatchCount(): number {
    return this.unsyncedBatches.length;
  }

  /** First index whose key is >= key (or > key when `strictlyAfter`). */
  private seek(key: Uint8Array, strictlyAfter = false): number {
    let low = 0;
    let high = this.keys.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      const order = compareBytes(this.keys[middle]!, key);
      if (order < 0 || (strictlyAfter && order === 0)) low = middle + 1;
      else high = middle;
    }
    return low;
  }

  private indexOf(key: Uint8Array): number {
    const index = this.seek(key);
    return index < this.keys.length && compareBytes(this.keys[index]!, key) === 0 ? index : -1;
  }

  private assertOpen(): void {
    assert(!this.closed, 'MemoryEngine used after close');
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.getSync(key);
  }

  getSync(key: Uint8Array): Uint8Array | undefined {
    this.assertOpen();
    assertKey(key);
    const index = this.indexOf(key);
    return index === -1 ? undefined : copyBytes(this.values[index]!);
  }

  async getMany(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    this.assertOpen();
    return keys.map((key) => {
      assertKey(key);
      const index = this.indexOf(key);
      return index === -1 ? undefined : copyBytes(this.values[index]!);
    });
  }

  /**
   * Re-seeks from the last yielded key at every step instead of holding an array index, so writes
   * made while the caller is between steps never make it skip or repeat a key.
   */
  async *iterate(options: IterateOptions): AsyncIterable<StorageEntry> {
    this.assertOpen();
    assertIterateOptions(options);
    const { gte, lt, reverse = false, limit = Number.POSITIVE_INFINITY } = options;
    let previousKey: Uint8Array | undefined;
    for (let yielded = 0; yielded < limit; yielded++) {
      this.assertOpen();
      const index = reverse ? this.stepBackward(previousKey, lt) : this.stepForward(previousKey, gte);
      if (index < 0 || index >= this.keys.length) return;
      const key = this.keys[index]!;
      if (gte !== undefined && compareBytes(key, gte) < 0) return;
      if (lt !== undefined && compareBytes(key, lt) >= 0) return;
      previousKey = key;
      yield [copyBytes(key), copyBytes(this.values[index]!)];
    }
  }

  private stepForward(previousKey: Uint8Array | undefined, gte: Uint8Array | undefined): number {
    if (previousKey !== undefined) return this.seek(previousKey, true);
    return gte === undefined ? 0 : this.seek(gte);
  }

  private stepBackward(previousKey: Uint8Array | undefined, lt: Uint8Array | undefined): number {
    if (previousKey !== undefined) return this.seek(previousKey) - 1;
    return lt === undefined ? this.keys.length - 1 : this.seek(lt) - 1;
  }

  async write(operations: WriteOperation[], options: WriteOptions = {}): Promise<void> {
    this.assertOpen();
    for (const operation of operations) {
      assertKey(operation.key);
      if (operation.type === 'put') assert(operation.value instanceof Uint8Array, 'value must be a Uint8Array');
      else assert.equal(operation.type, 'del', 'unknown write operation');
    }
    const undo: UndoRecord[] = [];
    for (const operation of operations) {
      undo.push(this.applyOne(operation.key, operation.type === 'put' ? operation.value : undefined));
    }
    this.recordBatch(undo, options);
  }

  async deleteRange(range: KeyRange, options: WriteOptions = {}): Promise<void> {
    this.assertOpen();
    assertIterateOptions(range);
    const start = range.gte === undefined ? 0 : this.seek(range.gte);
    const end = range.lt === undefined ? this.keys.length : Math.max(start, this.seek(range.lt));
    const undo: UndoRecord[] = [];
    for (let index = start; index < end; index++) undo.push({ key: this.keys[index]!, previous: this.values[index]! });
    this.keys.splice(start, end - start);
    this.values.splice(start, end - start);
    this.recordBatch(undo, options);
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  /** Opens the engine again after close(), as a restarted process reopens its database. */
  reopen(): void {
    this.closed = false;
  }

  /**
   * Simulates a power loss and restart: un-synced batches are rolled back, newest first, except
   * the oldest `keepUnsyncedBatches`. The engine is open afterwards. Returns how many batches were
   * lost.
   */
  crash(options: CrashOptions = {}): number {
    const keep = options.keepUnsyncedBatches ?? 0;
    assert(Number.isInteger(keep) && keep >= 0, 'keepUnsyncedBatches must be a non-negative integer');
    const lost = this.unsyncedBatches.splice(Math.min(keep, this.unsyncedBatches.length));
    for (const undo of lost.reverse()) {
      for (const record of [...undo].reverse()) this.applyOne(record.key, record.previous);
    }
    // Whatever survived a crash is on disk now.
    this.unsyncedBatches = [];
    this.closed = false;
    return lost.length;
  }

  /** Sets (value defined) or deletes (undefined) one key; returns how to undo it. */
  private applyOne(key: Uint8Array, value: Uint8Array | undefined): UndoRecord {
    const index = this.seek(key);
    const exists = index < this.keys.length && compareBytes(this.keys[index]!, key) === 0;
    const previous = exists ? this.values[index] : undefined;
    if (value === undefined) {
      if (exists) {
        this.keys.splice(index, 1);
        this.values.splice(index, 1);
      }
    } else if (exists) {
      this.values[index] = copyBytes(value);
    } else {
      this.keys.splice(index, 0, copyBytes(key));
      this.values.splice(index, 0, copyBytes(value));
    }
    return { key: copyBytes(key), previous };
  }

  private recordBatch(undo: UndoRecord[], options: WriteOptions): void {
    if (options.sync === true) this.unsyncedBatches = [];
    else this.unsyncedBatches.push(undo);
  }
}

function assertKey(key: Uint8Array): void {
  assert(key instanceof Uint8Array, 'key must be a Uint8Array');
  assert(key.length > 0, 'key must not be empty');
}

function assertIterateOptions(options: IterateOptions): void {
  if (options.gte !== undefined) assert(options.gte instanceof Uint8Array, 'gte must be a Uint8Array');
  if (options.lt !== undefined) assert(options.lt instanceof Uint8Array, 'lt must be a Uint8Array');
  if (options.limit !== undefined) {
    assert(Number.isInteger(options.limit) && options.limit >= 0, 'limit must be a non-negative integer');
  }
}
