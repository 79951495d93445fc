/**
 * The key index (MvccStore's newestRevisionOf): every stored key's newest revision in memory, so a
 * lookup of a key's newest version is one point read, and a key the store never had costs no
 * storage read at all. Correctness against a store without the index is the differential test in
 * version-cache.test.ts (random histories with compactions, expiry and imports); this file checks
 * that the index is really used (no storage iterator for a read at the current revision, on a
 * fresh store, after a reopen, after a compaction that drops tombstones, after an import) and
 * that its answers are right in the cases where it changes (deletes, compaction, re-creation).
 *
 * Planted bugs it was checked to catch: no index update on commit, no removal of a compacted
 * tombstone's key, no rebuild at open, no rebuild after an import.
 */
import { describe, expect, it } from 'vitest';
import { KeyIndex, KeyIndexBudget, keyIndexEntryBytes } from '../../src/mvcc/key-index.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type { IterateOptions, StorageEntry } from '../../src/storage/storage-engine.js';
import type { Command } from '../../src/mvcc/commands.js';

const text = (value: string): Uint8Array => new TextEncoder().encode(value);
const nowMs = 1_700_000_000_000;

/** A memory engine that counts the storage reads a store makes. */
class CountingEngine extends MemoryEngine {
  iterations = 0;
  pointReads = 0;

  override iterate(options: IterateOptions): AsyncIterable<StorageEntry> {
    this.iterations++;
    return super.iterate(options);
  }

  /** MemoryEngine.get reads through getSync, so this counts both. */
  override getSync(key: Uint8Array): Uint8Array | undefined {
    this.pointReads++;
    return super.getSync(key);
  }

  reset(): void {
    this.iterations = 0;
    this.pointReads = 0;
  }
}

class Store {
  index = 0;
  constructor(
    public store: MvccStore,
    readonly engine: CountingEngine,
  ) {}

  static async open(engine = new CountingEngine()): Promise<Store> {
    return new Store(await MvccStore.open({ engine, prefix: partitionKeyPrefix('mvcc', 4) }), engine);
  }

  async apply(command: Command) {
    this.index = Math.max(this.index, this.store.appliedIndex) + 1;
    const result = await this.store.apply(command, { index: this.index, nowMs });
    expect(result.error).toBeUndefined();
    return result;
  }

  async value(key: string, revision?: number): Promise<string | undefined> {
    const got = await this.store.get(key, { nowMs, ...(revision !== undefined && { revision }) });
    return got.found ? new TextDecoder().decode(got.value) : undefined;
  }

  /** Reads every key at the current revision and returns the values and the storage reads made. */
  async readAll(keys: string[]): Promise<{ values: Array<string | undefined>; iterations: number; pointReads: number }> {
    this.engine.reset();
    const values = [];
    for (const key of keys) values.push(await this.value(key));
    return { values, iterations: this.engine.iterations, pointReads: this.engine.pointReads };
  }
}

const keys = Array.from({ length: 40 }, (_, i) => `b/k${i}`);

async function fill(store: Store): Promise<Array<string | undefined>> {
  for (const [i, key] of keys.entries()) await store.apply({ type: 'put', key, value: text(`v${i}`) });
  for (const [i, key] of keys.entries()) if (i % 3 === 0) await store.apply({ type: 'put', key, value: text(`w${i}`) });
  for (const [i, key] of keys.entries()) if (i % 4 === 0) await store.apply({ type: 'delete', key });
  return keys.map((_, i) => (i % 4 === 0 ? undefined : i % 3 === 0 ? `w${i}` : `v${i}`));
}

describe('MvccStore key index', () => {
  it('reads a key at the current revision with one point read and no iterator; a never-written key costs nothing', async () => {
    const store = await Store.open();
    const expected = await fill(store);
    const read = await store.readAll(keys);
    expect(read.values).toEqual(expected);
    expect(read.iterations).toBe(0);
    expect(read.pointReads).toBe(keys.length);
    const absent = await store.readAll(['b/never', 'c/never', 'x']);
    expect(absent.values).toEqual([undefined, undefined, undefined]);
    expect(absent).toMatchObject({ iterations: 0, pointReads: 0 });
    // A read at an older revision than a key's newest version still finds the older version.
    expect(await store.value('b/k3', 4)).toBe('v3');
    expect(await store.value('b/k3', 3)).toBeUndefined();
    expect(await store.value('b/k0', 45)).toBe('w0');
  });

  it('is rebuilt when the store is reopened', async () => {
    const first = await Store.open();
    const expected = await fill(first);
    const reopened = await Store.open(first.engine);
    const read = await reopened.readAll(keys);
    expect(read.values).toEqual(expected);
    expect(read.iterations).toBe(0);
    expect((await reopened.readAll(['b/never'])).pointReads).toBe(0);
  });

  it('forgets a key whose tombstone compaction removed, and a re-created key starts over', async () => {
    const store = await Store.open();
    await fill(store);
    // The compact command removes what it can at once (compactStorage finishes deferred work).
    await store.apply({ type: 'compact', belowRevision: store.store.revision });
    await store.store.compactStorage();
    // Deleted keys now have no version at all: the index answers without any storage read.
    const deleted = keys.filter((_, i) => i % 4 === 0);
    expect(await store.readAll(deleted)).toMatchObject({ values: deleted.map(() => undefined), iterations: 0, pointReads: 0 });
    const revision = store.store.revision;
    await store.apply({ type: 'put', key: 'b/k0', value: text('again') });
    expect(await store.store.get('b/k0', { nowMs })).toMatchObject({ found: true, version: 1, createRevision: revision + 1, modRevision: revision + 1 });
    // And a key that kept its value through compaction still reads with one point read.
    expect(await store.readAll(['b/k1'])).toMatchObject({ values: ['v1'], iterations: 0, pointReads: 1 });
  });

  it('is rebuilt after a snapshot import', async () => {
    const source = await Store.open();
    const expected = await fill(source);
    const chunks: Uint8Array[] = [];
    for await (const chunk of source.store.exportSnapshot()) chunks.push(chunk);
    const target = await Store.open();
    await target.apply({ type: 'put', key: 'b/only-before-import', value: text('x') });
    await target.store.importSnapshot(chunks);
    const read = await target.readAll([...keys, 'b/only-before-import']);
    expect(read.values).toEqual([...expected, undefined]);
    expect(read.iterations).toBe(0);
  });

  it('serves conditions and transactions from the index', async () => {
    const store = await Store.open();
    await fill(store);
    store.engine.reset();
    const result = await store.store.apply(
      { type: 'put', key: 'b/k1', value: text('cas'), ifModRevision: (await store.store.get('b/k1', { nowMs })).modRevision },
      { index: ++store.index, nowMs },
    );
    expect(result.applied).toBe(true);
    expect(store.engine.iterations).toBe(0);
    expect(await store.value('b/k1')).toBe('cas');
  });
});

describe('KeyIndex byte budget', () => {
  it('never holds more than its budget under a long synthetic load, and keeps its byte count exact', () => {
    const maxBytes = 16 * 1024;
    const index = new KeyIndex(maxBytes);
    const model = new Map<string, number>();
    let refused = 0;
    for (let i = 0; i < 20_000; i++) {
      const key = `t/key-${(i * 7919) % 3_000}`;
      if (i % 5 === 4) {
        index.delete(key);
        model.delete(key);
      } else if (index.set(key, i)) model.set(key, i);
      else refused++;
      // Invariant: within the budget, and bytes is the sum over the keys held.
      expect(index.bytes).toBeLessThanOrEqual(maxBytes);
    }
    let sum = 0;
    for (const [key, revision] of model) {
      expect(index.get(key)).toBe(revision);
      sum += keyIndexEntryBytes(key);
    }
    expect(index.bytes).toBe(sum);
    expect(index.size).toBe(model.size);
    // The load was bigger than the budget: the bound did something.
    expect(refused).toBeGreaterThan(0);
  });

  it('a store whose keys outgrow the budget drops its index, answers the same, and stays within the budget after a reopen', async () => {
    // Room for about ten of the forty keys.
    const keyIndexMaxBytes = 10 * keyIndexEntryBytes('b/k10');
    const engine = new CountingEngine();
    const open = async (): Promise<Store> => new Store(await MvccStore.open({ engine, prefix: partitionKeyPrefix('mvcc', 4), keyIndexMaxBytes }), engine);
    const store = await open();
    const reference = await Store.open();
    const expected = await fill(store);
    expect(await fill(reference)).toEqual(expected);
    expect(store.store.keyIndexStatus()).toMatchObject({ complete: false, bytes: 0, keys: 0 });
    const read = await store.readAll(keys);
    expect(read.values).toEqual(expected);
    // Without the index a lookup takes the storage iterator again.
    expect(read.iterations).toBeGreaterThan(0);
    const reopened = await open();
    expect(reopened.store.keyIndexStatus().bytes).toBeLessThanOrEqual(keyIndexMaxBytes);
    expect(reopened.store.keyIndexStatus().complete).toBe(false);
    expect((await reopened.readAll(keys)).values).toEqual(expected);
    // The unbounded store holds every key, which is more than the budget (the bound did something).
    expect(reference.store.keyIndexStatus()).toMatchObject({ complete: true, keys: keys.length });
    expect(reference.store.keyIndexStatus().bytes).toBeGreaterThan(keyIndexMaxBytes);
  });

  it('a store within the budget keeps using its index', async () => {
    const engine = new CountingEngine();
    const store = new Store(await MvccStore.open({ engine, prefix: partitionKeyPrefix('mvcc', 4), keyIndexMaxBytes: 64 * 1024 }), engine);
    const expected = await fill(store);
    expect(store.store.keyIndexStatus().complete).toBe(true);
    expect(await store.readAll(keys)).toMatchObject({ values: expected, iterations: 0 });
  });
});

describe('a key index budget shared by stores (a node\'s)', () => {
  it('lets one store use what the others leave, never more than the whole, and gives bytes back on clear, delete and release', async () => {
    // Room for about fifty keys in all: more than the forty of one store, less than two stores' eighty.
    const budget = new KeyIndexBudget(50 * keyIndexEntryBytes('b/k10'));
    const open = async (partition: number, engine = new CountingEngine()): Promise<Store> => new Store(await MvccStore.open({ engine, prefix: partitionKeyPrefix('mvcc', partition), keyIndexMaxBytes: budget }), engine);
    const big = await open(4);
    const small = await open(5);
    await small.apply({ type: 'put', key: 'b/only', value: text('x') });
    const expected = await fill(big);
    // An equal share (25 keys each) would have dropped the big store's index; the shared budget keeps it.
    expect(big.store.keyIndexStatus()).toMatchObject({ complete: true, keys: keys.length });
    expect(await big.readAll(keys)).toMatchObject({ values: expected, iterations: 0 });
    expect(budget.used).toBe(big.store.keyIndexStatus().bytes + small.store.keyIndexStatus().bytes);
    // A third store finds no room for forty more keys: it drops its own index, not the others'.
    const third = await open(6);
    const thirdExpected = await fill(third);
    expect(third.store.keyIndexStatus()).toMatchObject({ complete: false, bytes: 0 });
    expect((await third.readAll(keys)).values).toEqual(thirdExpected);
    expect(big.store.keyIndexStatus().complete).toBe(true);
    expect(budget.used).toBeLessThanOrEqual(budget.maxBytes);
    expect(budget.used).toBe(big.store.keyIndexStatus().bytes + small.store.keyIndexStatus().bytes);
    // A store the node drops gives its bytes back; its lookups still answer, from storage.
    big.store.releaseKeyIndex();
    expect(budget.used).toBe(small.store.keyIndexStatus().bytes);
    expect(await big.readAll(keys)).toMatchObject({ values: expected });
    // Then a store reopened over the third's data rebuilds a complete index in the room freed.
    const reopened = await open(6, third.engine);
    expect(reopened.store.keyIndexStatus()).toMatchObject({ complete: true });
    expect(budget.used).toBe(small.store.keyIndexStatus().bytes + reopened.store.keyIndexStatus().bytes);
  });

  it('counts every set, delete and clear of the indexes that share it', () => {
    const budget = new KeyIndexBudget(10_000);
    const first = new KeyIndex(budget);
    const second = new KeyIndex(budget);
    first.set('a', 1);
    first.set('a', 2);
    second.set('bb', 3);
    expect(budget.used).toBe(keyIndexEntryBytes('a') + keyIndexEntryBytes('bb'));
    first.delete('a');
    first.delete('a');
    expect(budget.used).toBe(keyIndexEntryBytes('bb'));
    second.clear();
    expect(budget.used).toBe(0);
    const tight = new KeyIndexBudget(keyIndexEntryBytes('a'));
    const one = new KeyIndex(tight);
    const other = new KeyIndex(tight);
    expect(one.set('a', 1)).toBe(true);
    expect(other.set('b', 1)).toBe(false);
    expect([one.size, other.size, tight.used]).toEqual([1, 0, keyIndexEntryBytes('a')]);
  });
});
