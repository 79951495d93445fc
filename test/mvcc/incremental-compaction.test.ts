/**
 * Physical compaction runs beside apply in bounded steps (MvccStore.compactStorageStep): applying a
 * compact command only moves the floor, each step examines at most compactionBatchOps stored
 * versions, and steps interleaved with applies and reads leave the logical state unchanged (the
 * same reads as a replica that never compacts physically) and the counts a recount computes.
 */
import { describe, expect, it } from 'vitest';
import { toInternalKey } from '../../src/keys/tenant-keys.js';
import { makeLimits } from '../../src/limits.js';
import type { Command, WriteOp } from '../../src/mvcc/commands.js';
import { MvccKeyLayout } from '../../src/mvcc/key-layout.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { equalBytes } from '../../src/storage/bytes.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import type { IterateOptions, StorageEngine, StorageEntry, WriteOperation, WriteOptions } from '../../src/storage/storage-engine.js';
import { countStoredKeys, engineKinds, startMs, text } from './harness.js';

/** An engine that counts the entries its iterators yield (the work a scan does). */
class CountingEngine implements StorageEngine {
  entriesRead = 0;
  constructor(readonly below: StorageEngine) {}
  get(key: Uint8Array) {
    return this.below.get(key);
  }
  async *iterate(options: IterateOptions): AsyncIterable<StorageEntry> {
    for await (const entry of this.below.iterate(options)) {
      this.entriesRead++;
      yield entry;
    }
  }
  write(operations: WriteOperation[], options?: WriteOptions) {
    return this.below.write(operations, options);
  }
  close() {
    return this.below.close();
  }
}

const prefix = partitionKeyPrefix('mvcc', 3);

/** Applies commands at increasing indexes, as Raft does. */
class Applier {
  index = 0;
  constructor(readonly store: MvccStore) {}
  async apply(command: Command) {
    this.index++;
    const result = await this.store.apply(command, { index: this.index, nowMs: startMs });
    expect(result.error).toBeUndefined();
    return result;
  }
}

describe.each(engineKinds)('incremental physical compaction on $name', (kind) => {
  it('applies a compact command without scanning the partition, then removes in bounded steps', async () => {
    const batchOps = 500;
    const limits = makeLimits({ compactionBatchOps: batchOps });
    const engine = new CountingEngine(await kind.make());
    const store = await MvccStore.open({ engine, prefix, limits });
    const applier = new Applier(store);
    const keys = 6_000;
    // Three versions of every key (the last a tombstone for one key in four): 18,000 versions.
    for (let round = 0; round < 3; round++) {
      for (let first = 0; first < keys; first += 128) {
        const writes: WriteOp[] = [];
        for (let i = first; i < Math.min(keys, first + 128); i++) {
          const key = `c/${String(i).padStart(5, '0')}`;
          writes.push(round === 2 && i % 4 === 0 ? { type: 'delete', key } : { type: 'put', key, value: text(`v${round}`) });
        }
        await applier.apply({ type: 'batch', writes });
      }
    }
    engine.entriesRead = 0;
    const applyStarted = performance.now();
    await applier.apply({ type: 'compact', belowRevision: store.revision });
    const applyMs = performance.now() - applyStarted;
    console.info(`${kind.name}: the compact command applied in ${applyMs.toFixed(1)} ms, reading ${engine.entriesRead} stored entries`);
    // The old apply scanned all 18,000 versions here; now it reads none.
    expect(engine.entriesRead).toBe(0);
    expect(store.storageCompactionPending).toBe(true);
    const storedBefore = await countStoredKeys(engine.below);

    let steps = 0;
    let removed = 0;
    let longestStepMs = 0;
    for (;;) {
      engine.entriesRead = 0;
      const started = performance.now();
      const step = await store.compactStorageStep();
      longestStepMs = Math.max(longestStepMs, performance.now() - started);
      // Bound: one step examines at most compactionBatchOps versions (plus one to know where to resume).
      expect(engine.entriesRead).toBeLessThanOrEqual(batchOps + 1);
      removed += step.removedVersions;
      steps++;
      if (step.done) break;
      expect(steps).toBeLessThan(100);
    }
    // Two older values per key, and the tombstone too for deleted keys.
    expect(removed).toBe(keys * 2 + keys / 4);
    expect(await countStoredKeys(engine.below)).toBe(storedBefore - removed);
    expect(steps).toBeGreaterThanOrEqual(Math.ceil((keys * 3) / batchOps));
    console.info(`${kind.name}: physical compaction in ${steps} steps, the longest ${longestStepMs.toFixed(1)} ms`);
    expect((await store.get('c/00001', { nowMs: startMs })).value).toEqual(text('v2'));
    expect((await store.get('c/00000', { nowMs: startMs })).found).toBe(false);
  });

  it("reads no more of a key's versions than those at or below the floor and the first above it (a hot key's retained window is not read at every pass)", async () => {
    const limits = makeLimits({ compactionBatchOps: 500 });
    const engine = new CountingEngine(await kind.make());
    const store = await MvccStore.open({ engine, prefix, limits });
    const applier = new Applier(store);
    // One hot key written 3,000 times between two ordinary keys written once each.
    await applier.apply({ type: 'put', key: 'a/first', value: text('a') });
    for (let i = 0; i < 3_000; i++) await applier.apply({ type: 'put', key: 'h/counter', value: text(String(i)) });
    await applier.apply({ type: 'put', key: 'z/last', value: text('z') });
    const floor = 101;
    await applier.apply({ type: 'compact', belowRevision: floor });
    const storedBefore = await countStoredKeys(engine.below);
    engine.entriesRead = 0;
    let removed = 0;
    for (let steps = 0; ; steps++) {
      expect(steps).toBeLessThan(10);
      const step = await store.compactStorageStep();
      removed += step.removedVersions;
      if (step.done) break;
    }
    // Versions at or below the floor: a/first (revision 1) and the counter's revisions 2..101; all
    // the counter's but its newest at the floor go. The scan reads those, the counter's first 64
    // versions above the floor (then it seeks past the rest), and z/last: about 167 entries, not 3,002.
    expect(removed).toBe(floor - 2);
    expect(engine.entriesRead).toBeLessThanOrEqual(floor + 64 + 4);
    expect(await countStoredKeys(engine.below)).toBe(storedBefore - removed);
    expect((await store.get('h/counter', { nowMs: startMs })).value).toEqual(text('2999'));
    expect((await store.get('h/counter', { nowMs: startMs, revision: floor })).value).toEqual(text(String(floor - 2)));
    expect((await store.get('a/first', { nowMs: startMs })).value).toEqual(text('a'));
    expect((await store.get('z/last', { nowMs: startMs })).value).toEqual(text('z'));
  });

  it('leaves the same logical state as a replica that never compacts, with applies between and during steps', async () => {
    const limits = makeLimits({ compactionBatchOps: 7, maxScanVersions: 1000, maxPageSize: 1000 });
    const compacting = new Applier(await MvccStore.open({ engine: await kind.make(), prefix, limits }));
    const reference = new Applier(await MvccStore.open({ engine: await kind.make(), prefix, limits, keyIndex: false }));
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const keyOf = (): string => (random(3) === 0 ? toInternalKey('acme', `d/k${random(25)}`) : `d/k${random(25)}`);
    const commandOf = (): Command => {
      const roll = random(10);
      if (roll < 5) return { type: 'put', key: keyOf(), value: text('x'.repeat(random(20))) };
      if (roll < 8) return { type: 'delete', key: keyOf() };
      const store = compacting.store;
      return { type: 'compact', belowRevision: store.compactedRevision + random(store.revision - store.compactedRevision + 1) };
    };
    const readAll = async (store: MvccStore, revision: number) => {
      const pages = [];
      for (const keyPrefix of ['d/', toInternalKey('acme', 'd/')]) pages.push(await store.getByPrefix(keyPrefix, { nowMs: startMs, revision, limit: 1000 }));
      const single = await store.get(toInternalKey('acme', 'd/k3'), { nowMs: startMs, revision });
      return { pages, single };
    };
    // Bounded: 400 commands, each with at most one step alongside and one after.
    for (let round = 0; round < 400; round++) {
      const command = commandOf();
      // A step runs while the next command applies (as the node runs steps beside its loop).
      const step = compacting.store.storageCompactionPending ? compacting.store.compactStorageStep() : undefined;
      await compacting.apply(command);
      await reference.apply(command);
      await step;
      if (random(2) === 0) await compacting.store.compactStorageStep();
      const store = compacting.store;
      expect(store.status()).toEqual(reference.store.status());
      for (const revision of new Set([store.compactedRevision, store.revision, store.compactedRevision + random(store.revision - store.compactedRevision + 1)])) {
        if (revision === 0) continue;
        expect(await readAll(store, revision), `round ${round}, revision ${revision}`).toEqual(await readAll(reference.store, revision));
      }
    }
    // Finished, its usage equals a recount, and a fresh store on the same engine reads the same.
    while (!(await compacting.store.compactStorageStep()).done);
    const reopened = await MvccStore.open({ engine: (compacting.store as unknown as { engine: StorageEngine }).engine, prefix, limits });
    expect(reopened.storageCompactionPending).toBe(false);
    expect(new Map(compacting.store.usageByTenant())).toEqual(new Map(reopened.usageByTenant()));
    const revision = compacting.store.revision;
    expect(await readAll(reopened, revision)).toEqual(await readAll(reference.store, revision));
  });

  it('defers steps while an export runs, and an import discards the pass', async () => {
    const limits = makeLimits({ compactionBatchOps: 2 });
    const applier = new Applier(await MvccStore.open({ engine: await kind.make(), prefix, limits }));
    for (let i = 0; i < 6; i++) for (let round = 0; round < 2; round++) await applier.apply({ type: 'put', key: `e/${i}`, value: text(`${round}`) });
    await applier.apply({ type: 'compact', belowRevision: applier.store.revision });
    const exporter = applier.store.exportSnapshot()[Symbol.asyncIterator]();
    const chunks: Uint8Array[] = [(await exporter.next()).value as Uint8Array];
    expect(await applier.store.compactStorageStep()).toEqual({ removedVersions: 0, done: false, deferred: true });
    for (let next = await exporter.next(); next.done !== true; next = await exporter.next()) chunks.push(next.value);
    // Half a pass, then an import of the uncompacted export: the pass is dropped, and a new one
    // (rebuildKeyState found versions to remove) finishes the imported state.
    expect((await applier.store.compactStorageStep()).done).toBe(false);
    await applier.store.importSnapshot(chunks);
    expect(applier.store.storageCompactionPending).toBe(true);
    let removed = 0;
    for (let guard = 0; guard < 100; guard++) {
      const step = await applier.store.compactStorageStep();
      removed += step.removedVersions;
      if (step.done) break;
    }
    expect(removed).toBe(6);
    for (let i = 0; i < 6; i++) expect((await applier.store.get(`e/${i}`, { nowMs: startMs })).value).toEqual(text('1'));
  });
});


describe('a read racing a compaction step', () => {
  it('reads "not found" when the step removes the tombstone the key index named, instead of asserting', async () => {
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let gated = false;
    const below = await engineKinds[0]!.make();
    // No getSync: a point read is asynchronous, so a step can run between the index lookup and it.
    const engine: StorageEngine = {
      get: async (key) => {
        if (gated) await gate;
        return below.get(key);
      },
      iterate: (options) => below.iterate(options),
      write: (operations, options) => below.write(operations, options),
      close: () => below.close(),
    };
    const applier = new Applier(await MvccStore.open({ engine, prefix }));
    await applier.apply({ type: 'put', key: 'r/k', value: text('v') });
    await applier.apply({ type: 'delete', key: 'r/k' });
    await applier.apply({ type: 'put', key: 'r/other', value: text('v') });
    await applier.apply({ type: 'compact', belowRevision: 3 });
    gated = true;
    const read = applier.store.get('r/k', { nowMs: startMs });
    for (let guard = 0; guard < 10 && !(await applier.store.compactStorageStep()).done; guard++);
    gated = false;
    release();
    expect((await read).found).toBe(false);
    expect(await countStoredKeys(below)).toBeGreaterThan(0);
  });
});

describe('serializable prefix validation alongside compaction steps', () => {
  it('is not changed by a step that would remove versions under its scan (the step defers while an apply runs)', async () => {
    const below = await engineKinds[0]!.make();
    const layout = new MvccKeyLayout(prefix);
    // An engine whose iterators pause once after yielding one chosen key (MemoryEngine iterators
    // re-seek at every step, so they see a removal made during the pause).
    let pauseAfter: Uint8Array | undefined;
    let reached: () => void = () => undefined;
    const atPause = new Promise<void>((resolve) => (reached = resolve));
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const engine: StorageEngine = {
      get: (key) => below.get(key),
      async *iterate(options) {
        for await (const entry of below.iterate(options)) {
          yield entry;
          if (pauseAfter !== undefined && equalBytes(entry[0], pauseAfter)) {
            pauseAfter = undefined;
            reached();
            await gate;
          }
        }
      },
      write: (operations, options) => below.write(operations, options),
      close: () => below.close(),
    };
    // The bound sits exactly at the one retained key: the deleted key miscounted fails the commit.
    const applier = new Applier(await MvccStore.open({ engine, prefix, limits: makeLimits({ maxTxnPrefixKeys: 1 }) }));
    const store = applier.store;
    await applier.apply({ type: 'put', key: 's/k0', value: text('old') });
    await applier.apply({ type: 'delete', key: 's/k0' });
    await applier.apply({ type: 'put', key: 's/live', value: text('v') });
    await applier.apply({ type: 'compact', belowRevision: 3 });
    // The commit's scan stops right after the deleted key's old value (its tombstone comes next).
    pauseAfter = layout.versionKey('s/k0', 1);
    const commit = applier.apply({ type: 'txn', snapshotRevision: 3, isolation: 'serializable', readKeys: [], readPrefixes: ['s/'], writes: [{ type: 'put', key: 'out', value: text('1') }] });
    await atPause;
    const duringCommit = await store.compactStorageStep();
    release();
    expect((await commit).error).toBeUndefined();
    expect(duringCommit).toEqual({ removedVersions: 0, done: false, deferred: true });
    // Afterwards the step runs, and a replica that compacted first decides the same.
    expect(await store.compactStorageStep()).toMatchObject({ removedVersions: 2, done: true });
    expect((await applier.apply({ type: 'txn', snapshotRevision: 4, isolation: 'serializable', readKeys: [], readPrefixes: ['s/'], writes: [{ type: 'put', key: 'out', value: text('2') }] })).error).toBeUndefined();
  });
});
