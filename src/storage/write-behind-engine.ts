/**
 * A StorageEngine that keeps unsynced writes in memory and hands them to the engine under it in
 * few, larger batches: with the next synced write (the node loop makes one per iteration, for the
 * Raft log) or after a short delay. Every call into LevelDB crosses to libuv's thread pool and
 * back, which costs far more than the write itself; the state machine applies one small unsynced
 * batch per log entry, so folding them into the loop's one synced write saves most of that.
 *
 * Contract: the one of storage-engine.ts, unchanged (test/storage/engine-conformance.ts runs
 * against this engine too). In particular:
 * - Reads see every write whose promise resolved, in call order (an unsynced write is visible as
 *   soon as `write` returns; a synced one once it is durable).
 * - Batches reach the engine below whole and in call order, one at a time, so a crash loses only a
 *   suffix of the unsynced writes, never an older one while keeping a newer one; a synced write
 *   carries every unsynced write before it in the same atomic batch.
 * - A process crash may lose unsynced writes that LevelDB alone would have kept (they were still in
 *   memory). Unsynced means exactly that: callers already had to survive losing them to an
 *   operating-system crash (the MVCC store re-applies from the synced Raft log).
 *
 * Invariant: `layers` holds the writes not yet known to be in the engine below, oldest first;
 * only the last layer takes new writes (the others are being written). A read looks through the
 * layers newest first, then below.
 */
import assert from 'node:assert/strict';
import { compareBytes } from './bytes.js';
import type { EngineMemory, IterateOptions, KeyRange, StorageEngine, StorageEntry, WriteOperation, WriteOptions } from './storage-engine.js';

/** A key's latest write in one layer: the value, or undefined for a delete. */
interface LayerEntry {
  readonly key: Uint8Array;
  readonly value: Uint8Array | undefined;
}

type Layer = Map<string, LayerEntry>;

export interface WriteBehindOptions {
  /** Write unsynced writes below after at most this long (default 5 ms). */
  readonly flushDelayMs?: number;
  /** ...or as soon as the open layer holds this many keys (default 4096). */
  readonly flushKeys?: number;
  /** ...or this many bytes of keys and values (default 8 MiB). */
  readonly flushBytes?: number;
  /** Where the flush delay's timer comes from (default setTimeout, unref'd); a simulator passes its own. */
  readonly timers?: FlushTimers;
}

/** The one timer the engine needs (the shape of src/node/ports.ts NodeTimers.after). */
export interface FlushTimers {
  after(delayMs: number, run: () => void): { cancel(): void };
}

const systemFlushTimers: FlushTimers = {
  after(delayMs, run) {
    const timer = setTimeout(run, delayMs);
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};

export class WriteBehindEngine implements StorageEngine {
  private layers: Layer[] = [new Map()];
  private openBytes = 0;
  /** Every write below runs after the previous one: batches land in call order. */
  private chain: Promise<void> = Promise.resolve();
  private timer: { cancel(): void } | undefined;
  private readonly timers: FlushTimers;
  private failure: Error | undefined;
  private closed = false;
  /** Set when close() starts: later writes would never land, so they are refused. */
  private closing = false;
  private readonly flushDelayMs: number;
  private readonly flushKeys: number;
  private readonly flushBytes: number;

  constructor(
    private readonly below: StorageEngine,
    options: WriteBehindOptions = {},
  ) {
    this.flushDelayMs = options.flushDelayMs ?? 5;
    this.flushKeys = options.flushKeys ?? 4096;
    this.flushBytes = options.flushBytes ?? 8 * 1024 * 1024;
    this.timers = options.timers ?? systemFlushTimers;
    const belowGetSync = below.getSync?.bind(below);
    if (belowGetSync !== undefined) {
      this.getSync = (key) => {
        this.assertUsable();
        assertKey(key);
        const entry = this.findInLayers(key);
        if (entry !== undefined) return entry.value === undefined ? undefined : entry.value.slice();
        return belowGetSync(key);
      };
    }
  }

  /** Present exactly when the engine below has it. */
  readonly getSync?: (key: Uint8Array) => Uint8Array | undefined;

  /**
   * The buffered writes (keys and values of every layer not yet below; the open layer flushes at
   * flushBytes), beside the engine below's own memory. O(buffered keys): for metrics only.
   */
  memoryUsage(): EngineMemory[] {
    let bytes = 0;
    for (const layer of this.layers) for (const entry of layer.values()) bytes += entry.key.length + (entry.value?.length ?? 0);
    return [...(this.below.memoryUsage?.() ?? []), { consumer: 'write_behind', bytes }];
  }

  async get(key: Uint8Array): Promise<Uint8Array | undefined> {
    this.assertUsable();
    assertKey(key);
    const entry = this.findInLayers(key);
    if (entry !== undefined) return entry.value === undefined ? undefined : entry.value.slice();
    return this.below.get(key);
  }

  async getMany(keys: Uint8Array[]): Promise<Array<Uint8Array | undefined>> {
    this.assertUsable();
    keys.forEach(assertKey);
    const answers: Array<Uint8Array | undefined> = new Array(keys.length);
    const missing: number[] = [];
    keys.forEach((key, index) => {
      const entry = this.findInLayers(key);
      if (entry === undefined) missing.push(index);
      else answers[index] = entry.value?.slice();
    });
    if (missing.length > 0) {
      const lookups = missing.map((index) => keys[index] as Uint8Array);
      const found = this.below.getMany !== undefined ? await this.below.getMany(lookups) : await Promise.all(lookups.map((key) => this.below.get(key)));
      missing.forEach((index, slot) => (answers[index] = found[slot]));
    }
    return answers;
  }

  iterate(options: IterateOptions): AsyncIterable<StorageEntry> {
    this.assertUsable();
    if (options.limit !== undefined) assert(Number.isInteger(options.limit) && options.limit >= 0, 'limit must be a non-negative integer');
    // Both views are taken now, in one synchronous step: the layers' entries in the range, and
    // the iterator below (its implicit snapshot). A batch that lands in between is seen twice,
    // with the same bytes, and the layer's copy wins.
    const overlay = this.entriesInRange(options, options.reverse ?? false);
    if (overlay.length === 0) return this.below.iterate(options);
    const belowLimit = options.limit === undefined ? undefined : options.limit + overlay.length;
    const below = this.below.iterate({ ...options, ...(belowLimit !== undefined && { limit: belowLimit }) })[Symbol.asyncIterator]();
    const first = below.next();
    return merge(overlay, below, first, options);
  }

  async write(operations: WriteOperation[], options: WriteOptions = {}): Promise<void> {
    this.assertUsable();
    // The whole batch is checked before any of it is taken: a bad batch changes nothing.
    for (const operation of operations) {
      assertKey(operation.key);
      assert(operation.type === 'put' || operation.type === 'del', 'operation type must be put or del');
      if (operation.type === 'put') assert(operation.value instanceof Uint8Array, 'value must be a Uint8Array');
    }
    if (options.sync !== true) {
      this.addToOpenLayer(operations);
      return;
    }
    // The open layer and these operations go below as one atomic, synced batch.
    await this.flushOpenLayer(operations, true);
  }

  async deleteRange(range: KeyRange, options: WriteOptions = {}): Promise<void> {
    this.assertUsable();
    // Everything written before lands first; writes made after this call stay in the open layer
    // and land after the range is cleared.
    const sealed = this.sealOpenLayer();
    await this.enqueue(async () => {
      if (sealed.size > 0) await this.below.write(layerOperations(sealed), {});
      if (this.below.deleteRange !== undefined) {
        await this.below.deleteRange(range, options);
        return;
      }
      const doomed: WriteOperation[] = [];
      for await (const [key] of this.below.iterate(range)) doomed.push({ type: 'del', key });
      if (doomed.length > 0 || options.sync === true) await this.below.write(doomed, options);
    }, sealed);
  }

  /** Writes every pending batch below (synced), then closes the engine below. */
  async close(): Promise<void> {
    if (this.closed || this.closing) return;
    this.closing = true;
    this.timer?.cancel();
    this.timer = undefined;
    try {
      if (this.failure === undefined) await this.flushOpenLayer([], true);
    } finally {
      this.closed = true;
      await this.below.close();
    }
  }

  /** Writes the open layer below now (unsynced); resolves once it and every earlier write landed. */
  async flush(): Promise<void> {
    this.assertUsable();
    await this.flushOpenLayer([], false);
  }

  // ---------------------------------------------------------------------------------------------

  private addToOpenLayer(operations: WriteOperation[]): void {
    const open = this.layers[this.layers.length - 1] as Layer;
    for (const operation of operations) {
      // The engine keeps its own copies (the contract): callers may reuse their buffers.
      const key = operation.key.slice();
      const value = operation.type === 'put' ? operation.value.slice() : undefined;
      open.set(keyId(key), { key, value });
      this.openBytes += key.length + (value?.length ?? 0);
    }
    if (open.size >= this.flushKeys || this.openBytes >= this.flushBytes) {
      void this.flushOpenLayer([], false).catch(() => undefined);
    } else if (this.timer === undefined && open.size > 0) {
      this.timer = this.timers.after(this.flushDelayMs, () => {
        this.timer = undefined;
        if (!this.closed && this.failure === undefined) void this.flushOpenLayer([], false).catch(() => undefined);
      });
    }
  }

  private sealOpenLayer(): Layer {
    const sealed = this.layers[this.layers.length - 1] as Layer;
    this.layers.push(new Map());
    this.openBytes = 0;
    this.timer?.cancel();
    this.timer = undefined;
    return sealed;
  }

  private async flushOpenLayer(extra: WriteOperation[], sync: boolean): Promise<void> {
    const sealed = this.sealOpenLayer();
    const batch = layerOperations(sealed);
    for (const operation of extra) batch.push(operation);
    // Nothing to write still waits for every earlier write (and reports its failure).
    const nothing = batch.length === 0 && !sync;
    await this.enqueue(async () => (nothing ? undefined : this.below.write(batch, { sync })), sealed);
  }

  /** Runs `work` after every earlier write below; `layer` stays readable until it finishes. */
  private enqueue(work: () => Promise<void>, layer: Layer): Promise<void> {
    const run = this.chain.then(async () => {
      if (this.failure !== undefined) throw this.failure;
      try {
        await work();
      } catch (error) {
        // What landed below is unknown now; nothing after this may pretend otherwise.
        this.failure = error instanceof Error ? error : new Error(String(error));
        throw this.failure;
      }
      this.dropLayer(layer);
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  private dropLayer(layer: Layer): void {
    const at = this.layers.indexOf(layer);
    assert(at >= 0 && at < this.layers.length - 1, 'only a sealed layer is dropped');
    this.layers.splice(at, 1);
  }

  private findInLayers(key: Uint8Array): LayerEntry | undefined {
    const id = keyId(key);
    for (let at = this.layers.length - 1; at >= 0; at--) {
      const entry = (this.layers[at] as Layer).get(id);
      if (entry !== undefined) return entry;
    }
    return undefined;
  }

  /** The layers' latest entry for each key in the range, sorted in iteration order. */
  private entriesInRange(range: KeyRange, reverse: boolean): LayerEntry[] {
    const latest = new Map<string, LayerEntry>();
    for (let at = this.layers.length - 1; at >= 0; at--) {
      for (const [id, entry] of this.layers[at] as Layer) {
        if (latest.has(id)) continue;
        if (range.gte !== undefined && compareBytes(entry.key, range.gte) < 0) continue;
        if (range.lt !== undefined && compareBytes(entry.key, range.lt) >= 0) continue;
        latest.set(id, entry);
      }
    }
    const entries = [...latest.values()].sort((a, b) => compareBytes(a.key, b.key));
    if (reverse) entries.reverse();
    return entries;
  }

  private assertUsable(): void {
    assert(!this.closed && !this.closing, 'WriteBehindEngine used after close');
    if (this.failure !== undefined) throw this.failure;
  }
}

/** Merges the layers' sorted entries over the sorted entries below; a layer's entry wins a tie. */
async function* merge(
  overlay: LayerEntry[],
  below: AsyncIterator<StorageEntry>,
  first: Promise<IteratorResult<StorageEntry>>,
  options: IterateOptions,
): AsyncIterable<StorageEntry> {
  const direction = options.reverse === true ? -1 : 1;
  const limit = options.limit ?? Infinity;
  let yielded = 0;
  let next = await first;
  let at = 0;
  try {
    while (yielded < limit) {
      const mine = overlay[at];
      if (mine === undefined && next.done === true) return;
      const order = mine === undefined ? 1 : next.done === true ? -1 : compareBytes(mine.key, next.value[0]) * direction;
      if (order <= 0) {
        at++;
        if (order === 0) next = await below.next();
        if (mine?.value === undefined) continue;
        yielded++;
        yield [mine.key.slice(), mine.value.slice()];
      } else {
        yielded++;
        yield next.value as StorageEntry;
        next = await below.next();
      }
    }
  } finally {
    await below.return?.();
  }
}

function layerOperations(layer: Layer): WriteOperation[] {
  const operations: WriteOperation[] = [];
  for (const { key, value } of layer.values()) {
    operations.push(value === undefined ? { type: 'del', key } : { type: 'put', key, value });
  }
  return operations;
}

function keyId(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('latin1');
}

function assertKey(key: Uint8Array): void {
  assert(key instanceof Uint8Array, 'key must be a Uint8Array');
  assert(key.length > 0, 'key must not be empty');
}
