/**
 * The ordered byte-key storage engine under the MVCC store and the Raft log storage.
 *
 * Contract (checked by test/storage/engine-conformance.ts for every implementation):
 * - Keys and values are arbitrary bytes; keys are non-empty. Keys are ordered byte-wise
 *   lexicographically (a proper prefix sorts first), like LevelDB's default comparator.
 * - `write` applies its operations atomically: after a crash either all of them are visible or
 *   none is. Within one batch, a later operation on a key wins over an earlier one.
 * - `write` with `sync: true` returns only once the batch, and every batch before it, is durable.
 *   Without sync a crash may lose the most recent batches (never an older one while keeping a
 *   newer one).
 * - `iterate` yields entries in key order (reverse order with `reverse`), within [gte, lt), at most
 *   `limit` of them. An iterator may or may not see writes made after it was created; callers
 *   that need a stable view build it themselves (the MVCC store reads at a fixed revision, and
 *   versions at a revision are never rewritten).
 * - Returned byte arrays belong to the caller; the engine keeps its own copies of what it stores.
 * - After `close`, every method except `close` is a programming error.
 */

export interface PutOperation {
  readonly type: 'put';
  readonly key: Uint8Array;
  readonly value: Uint8Array;
}

export interface DeleteOperation {
  readonly type: 'del';
  readonly key: Uint8Array;
}

export type WriteOperation = PutOperation | DeleteOperation;

export interface WriteOptions {
  /** Wait until the batch is on stable storage (fsync) before resolving. */
  readonly sync?: boolean;
}

export interface KeyRange {
  /** Inclusive lower bound; absent means from the first key. */
  readonly gte?: Uint8Array;
  /** Exclusive upper bound; absent means to the last key. */
  readonly lt?: Uint8Array;
}

export interface IterateOptions extends KeyRange {
  /** Yield from the last key in the range down to the first. */
  readonly reverse?: boolean;
  /** Yield at most this many entries; absent means no limit. */
  readonly limit?: number;
}

export type StorageEntry = [key: Uint8Array, value: Uint8Array];

/** One consumer of an engine's memory: its bytes now, and its bound when it has one. */
export interface EngineMemory {
  readonly consumer: string;
  readonly bytes: number;
  readonly limitBytes?: number;
}

export interface StorageEngine {
  get(key: Uint8Array): Promise<Uint8Array | undefined>;
  /**
   * The same lookup answered on the calling thread, for engines that can (LevelDB from its memtable
   * and block cache): no round trip through a thread pool. Same answer as `get`.
   */
  getSync?(key: Uint8Array): Uint8Array | undefined;
  /** Looks up many keys at once; the answer has one slot per key, in the same order. */
  getMany?(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>>;
  iterate(options: IterateOptions): AsyncIterable<StorageEntry>;
  /** Applies all operations atomically. */
  write(operations: WriteOperation[], options?: WriteOptions): Promise<void>;
  /**
   * Deletes every key in [gte, lt). Not atomic with other writes; a crash may leave part of the
   * range deleted, so callers mark the work as in progress first (see MvccStore.importSnapshot).
   */
  deleteRange?(range: KeyRange, options?: WriteOptions): Promise<void>;
  /**
   * The memory the engine holds itself, by consumer (e.g. `leveldb`: memtables and block cache;
   * `write_behind`: buffered writes), in bytes, when it can tell; for metrics, never on a hot path.
   */
  memoryUsage?(): EngineMemory[];
  close(): Promise<void>;
}
