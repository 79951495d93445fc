/**
 * The LevelDB StorageEngine, on `level` (classic-level in Node.js). Keys and values travel as
 * Uint8Array views ('view' encoding) so nothing is transcoded, and `sync` is passed through to the
 * batch so a synced write is on disk when the promise resolves.
 *
 * This is the only module under src/ (outside the server edge) that touches the file system; it
 * is deliberately not re-exported from storage/index.ts so importing the storage API does not
 * load the native LevelDB binding.
 */
import assert from 'node:assert/strict';
import { Level } from 'level';
import type {
  EngineMemory,
  IterateOptions,
  KeyRange,
  StorageEngine,
  StorageEntry,
  WriteOperation,
  WriteOptions,
} from './storage-engine.js';

type ViewLevel = Level<Uint8Array, Uint8Array>;

export interface LevelEngineOptions {
  /** Create the database when the directory holds none (default true). */
  readonly createIfMissing?: boolean;
  /** LevelDB's block cache (default LEVEL_DEFAULTS.cacheSize). */
  readonly cacheSize?: number;
  /** LevelDB's memtable size (default LEVEL_DEFAULTS.writeBufferSize); up to two are held at once. */
  readonly writeBufferSize?: number;
}

/**
 * LevelDB's own memory, per database (one per node): the block cache plus at most two memtables
 * (the one taking writes and the one being flushed), so about cacheSize + 2 * writeBufferSize,
 * plus the index and filter blocks of open tables (small at these data sizes). Measured through
 * `leveldb.approximate-memory-usage` (memoryUsage, the atoll_memory_leveldb_bytes gauge).
 */
export const LEVEL_DEFAULTS = {
  cacheSize: 8 * 1024 * 1024,
  // LevelDB's 4 MiB memtable fills every few seconds under load, and each flush (and the
  // level-0 compactions it feeds) competes with the node for the CPU and can stall a synced
  // write. 16 MiB: A B A B on one 1,000,000-key cluster, puts 1,101/833 ops/s with 4 MiB and
  // 1,418/948 with 16 (docs/performance.md). But it costs up to two memtables of memory, and the
  // memory goal of issue 18 (200 MB per node at 50,000 keys) has no room for 32 MB of them: 8 MiB,
  // not yet compared A B with 16 on a quiet machine (docs/performance.md, "Memory").
  writeBufferSize: 8 * 1024 * 1024,
};

export class LevelEngine implements StorageEngine {
  private closed = false;

  private constructor(
    private readonly database: ViewLevel,
    readonly location: string,
    /** The block cache plus two memtables (LEVEL_DEFAULTS). */
    private readonly memoryLimitBytes: number,
  ) {}

  static async open(location: string, options: LevelEngineOptions = {}): Promise<LevelEngine> {
    const cacheSize = options.cacheSize ?? LEVEL_DEFAULTS.cacheSize;
    const writeBufferSize = options.writeBufferSize ?? LEVEL_DEFAULTS.writeBufferSize;
    const database: ViewLevel = new Level<Uint8Array, Uint8Array>(location, {
      keyEncoding: 'view',
      valueEncoding: 'view',
      createIfMissing: options.createIfMissing ?? true,
      cacheSize,
      writeBufferSize,
    });
    await database.open();
    return new LevelEngine(database, location, cacheSize + 2 * writeBufferSize);
  }

  private assertOpen(): void {
    assert(!this.closed, 'LevelEngine used after close');
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    this.assertOpen();
    assertKey(key);
    const value = await this.database.get(key);
    return value === undefined ? undefined : plainView(value);
  }

  getSync(key: Uint8Array): Uint8Array | undefined {
    this.assertOpen();
    assertKey(key);
    const value = this.database.getSync(key);
    return value === undefined ? undefined : plainView(value);
  }

  async getMany(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    this.assertOpen();
    keys.forEach(assertKey);
    const values = await this.database.getMany(keys);
    return values.map((value) => (value === undefined ? undefined : plainView(value)));
  }

  async *iterate(options: IterateOptions): AsyncIterable<StorageEntry> {
    this.assertOpen();
    if (options.limit !== undefined) {
      assert(Number.isInteger(options.limit) && options.limit >= 0, 'limit must be a non-negative integer');
      // LevelDB reads a limit of 0 as "no limit"; ours means "nothing".
      if (options.limit === 0) return;
    }
    const iterator = this.database.iterator({
      ...rangeOptions(options),
      reverse: options.reverse ?? false,
      limit: options.limit ?? -1,
    });
    try {
      for await (const [key, value] of iterator) yield [plainView(key), plainView(value)];
    } finally {
      await iterator.close();
    }
  }

  async write(operations: WriteOperation[], options: WriteOptions = {}): Promise<void> {
    this.assertOpen();
    if (operations.length === 0) {
      // level skips an empty batch entirely, sync included; the contract wants the sync.
      if (options.sync === true) await this.forceSync();
      return;
    }
    // One pass on the hot path: check each operation as it is copied into the batch.
    const batch = operations.map((operation) => {
      assertKey(operation.key);
      if (operation.type === 'del') return { type: 'del' as const, key: operation.key };
      assert(operation.value instanceof Uint8Array, 'value must be a Uint8Array');
      return { type: 'put' as const, key: operation.key, value: operation.value };
    });
    const direct = (this.database as unknown as DirectBatch)._batch;
    if (typeof direct === 'function') {
      // classic-level's own batch, without abstract-level's per-operation work (an options
      // spread, encoding lookups and an encode per key and value): about a fifth of the node's
      // busy time went into building batches, a quarter of it there. Safe because keys and
      // values are already Uint8Arrays (the 'view' encoding is the identity), no hooks or
      // 'write' listeners are used, and the database is open (assertOpen; open() awaited it).
      await direct.call(this.database, batch, { sync: options.sync ?? false });
      return;
    }
    await this.database.batch(batch, { sync: options.sync ?? false });
  }

  /**
   * LevelDB's clear() is not atomic, and it cannot be synced: a synced empty write afterwards
   * forces the write-ahead log to disk when the caller asks for durability.
   */
  async deleteRange(range: KeyRange, options: WriteOptions = {}): Promise<void> {
    this.assertOpen();
    await this.database.clear(rangeOptions(range));
    if (options.sync === true) await this.forceSync();
  }

  /**
   * Makes every earlier write durable: a synced delete of a marker key (in the node-wide
   * keyspace, see keyspace.ts; it never exists), since level does nothing for an empty batch.
   */
  private async forceSync(): Promise<void> {
    await this.database.batch([{ type: 'del', key: syncMarkerKey }], { sync: true });
  }

  /** LevelDB's estimate of its memtables' and block cache's memory. */
  memoryUsage(): EngineMemory[] {
    if (this.closed) return [];
    const reported = Number((this.database as unknown as { getProperty(name: string): string }).getProperty('leveldb.approximate-memory-usage'));
    return Number.isFinite(reported) ? [{ consumer: 'leveldb', bytes: reported, limitBytes: this.memoryLimitBytes }] : [];
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.database.close();
  }
}

/** Keyspace 0x01 (node-wide records), name "sync". */
const syncMarkerKey = Uint8Array.of(0x01, 0x73, 0x79, 0x6e, 0x63);

function rangeOptions(range: KeyRange): { gte?: Uint8Array; lt?: Uint8Array } {
  const options: { gte?: Uint8Array; lt?: Uint8Array } = {};
  if (range.gte !== undefined) options.gte = range.gte;
  if (range.lt !== undefined) options.lt = range.lt;
  return options;
}

/** classic-level hands back Buffers; callers compare with plain Uint8Arrays, so unwrap them. */
function plainView(bytes: Uint8Array): Uint8Array {
  return bytes.constructor === Uint8Array ? bytes : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** classic-level's private batch (abstract-level's contract: encoded operations, database open). */
interface DirectBatch {
  _batch?: (operations: Array<{ type: 'put' | 'del'; key: Uint8Array; value?: Uint8Array }>, options: { sync: boolean }) => Promise<void>;
}

function assertKey(key: Uint8Array): void {
  assert(key instanceof Uint8Array, 'key must be a Uint8Array');
  assert(key.length > 0, 'key must not be empty');
}
