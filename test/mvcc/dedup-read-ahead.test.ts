/**
 * The dedup table's in-memory shortcuts (dedup-table.ts): the read-ahead of the live queue's
 * oldest indexes (`oldestLive`) and the exact list of evicted entries still on disk
 * (`belowFloorExact` + `evictedToRemove`). Neither may change what is stored or which retries are
 * recognised: a store that kept them since the start, one reopened from its engine (no list, no
 * read-ahead) and one that just imported a snapshot must all write the bytes the plain rule says.
 *
 * The reference model is that rule, exactly as replicas apply it:
 *  - recording an id at index i first deletes (when no export runs) the oldest `compactionBatchOps`
 *    evicted entries still on disk, each with its record when the record still points at it; then
 *    evicts the min(count + 1 - window, 8) oldest live entries (the floor becomes the oldest live
 *    index left, or i when none is); then appends (i, id) and points the id's record at it;
 *  - an id is a duplicate iff its record points at or above the floor (it is among the live ones,
 *    which is the newest `window` recorded ids while the window has not shrunk);
 *  - compactStorage (no export running) deletes every evicted entry;
 *  - an import replaces everything by the exporter's live entries at the export's start, floor 0;
 *  - the expiry mark is the newest creation time among the timestamped ids ever evicted (an
 *    import takes the exporter's); an unrecorded timestamped id created at or before it fails with
 *    REQUEST_ID_EXPIRED and records nothing. (The store derives the mark from its oldest live
 *    entry instead: this checks that the two agree, through restarts and imports.)
 */
import { describe, expect, it } from 'vitest';
import { makeLimits, type Limits } from '../../src/limits.js';
import type { ApplyResult, Command } from '../../src/mvcc/commands.js';
import { readDedupEntryRequestId } from '../../src/mvcc/dedup-record.js';
import { dedupReadAheadMax } from '../../src/mvcc/dedup-table.js';
import { MvccKeyLayout } from '../../src/mvcc/key-layout.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { formatTimestampedRequestId, requestIdCreatedAtMs } from '../../src/mvcc/request-id.js';
import { decodeUint64BE } from '../../src/storage/bytes.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type { StorageEngine } from '../../src/storage/storage-engine.js';
import { startMs, text } from './harness.js';

/** Deterministic PRNG (mulberry32), so a failure names the seed and step that reproduce it. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const evictionsPerApplyMax = 8;
const prefix = partitionKeyPrefix('mvcc', 7);
const layout = new MvccKeyLayout(prefix);

interface ModelEntry {
  readonly index: number;
  readonly id: string;
  /** The revision of the result recorded with it: what a retry gets back. */
  readonly revision: number;
}

/** What an export started with: the live entries and the expiry times. */
interface ModelExport {
  readonly live: readonly ModelEntry[];
  readonly expiredThroughMs: number;
  readonly newestCreatedMs: number;
}

/** The dedup rule as the replicated state defines it (see the file comment). */
class DedupModel {
  live: ModelEntry[] = [];
  floor = 0;
  /** Evicted entries still on disk, ascending. */
  belowFloor: ModelEntry[] = [];
  /** Request id -> the index its record points at (live or evicted-not-yet-deleted). */
  records = new Map<string, number>();
  /** The newest creation time among the timestamped ids evicted (0: none). */
  expiredThroughMs = 0;
  /** The newest creation time among the timestamped ids recorded (0: none). */
  newestCreatedMs = 0;

  constructor(
    /** Changes when the node restarts with another dedupWindow. */
    public window: number,
    readonly removalLimit: number,
  ) {}

  find(id: string): ModelEntry | undefined {
    const index = this.records.get(id);
    if (index === undefined || index < this.floor) return undefined;
    const entry = this.live.find((live) => live.index === index);
    expect(entry, `model: a live record of ${id} points at a live entry`).toBeDefined();
    return entry;
  }

  private remove(limit: number): void {
    for (const entry of this.belowFloor.splice(0, limit)) {
      if (this.records.get(entry.id) === entry.index) this.records.delete(entry.id);
    }
  }

  /** Records a new id; returns how many entries it evicted. */
  record(entry: ModelEntry, removeEvicted: boolean): number {
    if (removeEvicted) this.remove(this.removalLimit);
    const evictions = Math.min(Math.max(0, this.live.length + 1 - this.window), evictionsPerApplyMax);
    if (evictions > 0) {
      const evicted = this.live.splice(0, evictions);
      for (const old of evicted) this.expiredThroughMs = Math.max(this.expiredThroughMs, requestIdCreatedAtMs(old.id) ?? 0);
      this.belowFloor.push(...evicted);
      this.floor = this.live[0]?.index ?? entry.index;
    }
    this.newestCreatedMs = Math.max(this.newestCreatedMs, requestIdCreatedAtMs(entry.id) ?? 0);
    this.live.push(entry);
    this.records.set(entry.id, entry.index);
    return evictions;
  }

  compactStorage(): void {
    this.remove(Number.POSITIVE_INFINITY);
  }

  /** Whether the store must refuse `id` (not found) as expired. */
  expired(id: string): boolean {
    const createdAtMs = requestIdCreatedAtMs(id);
    return createdAtMs !== undefined && createdAtMs <= this.expiredThroughMs;
  }

  exportState(): ModelExport {
    return { live: [...this.live], expiredThroughMs: this.expiredThroughMs, newestCreatedMs: this.newestCreatedMs };
  }

  importLive({ live, expiredThroughMs, newestCreatedMs }: ModelExport): void {
    this.expiredThroughMs = expiredThroughMs;
    this.newestCreatedMs = newestCreatedMs;
    this.live = [...live];
    this.floor = 0;
    this.belowFloor = [];
    this.records = new Map(live.map((entry) => [entry.id, entry.index]));
  }
}

/** What the engine holds of the partition's dedup state. */
interface StoredDedup {
  floor: number;
  count: number;
  /** Queue entries at or above the stored floor: [index, id]. */
  live: Array<[number, string]>;
  below: Array<[number, string]>;
  records: Map<string, number>;
}

async function readStoredDedup(engine: StorageEngine): Promise<StoredDedup> {
  const number = (bytes: Uint8Array | undefined): number => (bytes === undefined ? 0 : decodeUint64BE(bytes));
  const floor = number(await engine.get(layout.dedupFloorKey));
  const count = number(await engine.get(layout.dedupCountKey));
  const live: Array<[number, string]> = [];
  const below: Array<[number, string]> = [];
  // The whole queue (evicted entries included) and every record, by the key layout's ranges.
  for await (const [key, value] of engine.iterate(layout.dedupQueueRange(0))) {
    const index = layout.parseDedupQueueKey(key);
    (index >= floor ? live : below).push([index, readDedupEntryRequestId(value)]);
  }
  const records = new Map<string, number>();
  const decoder = new TextDecoder();
  for await (const [key, value] of engine.iterate(layout.allDedupRecordsRange())) {
    records.set(decoder.decode(key.subarray(layout.dedupRecordPrefix.length)), decodeUint64BE(value));
  }
  return { floor, count, live, below, records };
}

/** Every key and value of the engine, to compare two engines byte for byte. */
async function dumpEngine(engine: StorageEngine): Promise<string[]> {
  const entries: string[] = [];
  for await (const [key, value] of engine.iterate({})) entries.push(`${Buffer.from(key).toString('hex')}=${Buffer.from(value).toString('hex')}`);
  return entries;
}

const pairs = (entries: readonly ModelEntry[]): Array<[number, string]> => entries.map((entry) => [entry.index, entry.id]);

interface OpenExport {
  readonly iterator: AsyncIterator<Uint8Array>;
  readonly chunks: Uint8Array[];
  /** The exporter's live entries and expiry times when the export started: what the snapshot must carry. */
  readonly state: ModelExport;
}

interface Node {
  readonly name: string;
  readonly engine: MemoryEngine;
  options: { dedupWindow: number; limits: Limits };
  store: MvccStore;
  readonly model: DedupModel;
  readonly exports: OpenExport[];
  /** The ids recently applied here, for retries of recent ids. */
  readonly recent: string[];
}

async function makeNode(name: string, dedupWindow: number, compactionBatchOps: number): Promise<Node> {
  const engine = new MemoryEngine();
  const options = { dedupWindow, limits: makeLimits({ compactionBatchOps, snapshotChunkBytes: 2048 }) };
  const store = await MvccStore.open({ engine, prefix, ...options });
  return { name, engine, options, store, model: new DedupModel(dedupWindow, compactionBatchOps), exports: [], recent: [] };
}

/** Deep equality through a cheap string comparison first (these run thousands of times). */
function expectSame(actual: unknown, expected: unknown, message: string): void {
  const json = (value: unknown): string => JSON.stringify(value instanceof Map ? [...value].sort() : value);
  if (json(actual) !== json(expected)) expect(actual, message).toEqual(expected);
}

/** Compares the engine (and a store opened fresh on it) with the model. */
async function checkNode(node: Node, where: string): Promise<StoredDedup> {
  const { model } = node;
  const stored = await readStoredDedup(node.engine);
  expectSame({ floor: stored.floor, count: stored.count }, { floor: model.floor, count: model.live.length }, `${where}: dedup meta`);
  expectSame(stored.live, pairs(model.live), `${where}: live queue entries`);
  expectSame(stored.below, pairs(model.belowFloor), `${where}: evicted queue entries still stored`);
  expectSame(stored.records, model.records, `${where}: dedup records`);
  const expected = { recordCount: model.live.length, floorIndex: model.floor, window: model.window, expiredThroughMs: model.expiredThroughMs };
  expectSame(node.store.dedupStatus(), expected, `${where}: running store's dedup status`);
  const fresh = await MvccStore.open({ engine: node.engine, prefix, ...node.options });
  expectSame(fresh.dedupStatus(), expected, `${where}: reopened store's dedup status`);
  return stored;
}

async function drain(open: OpenExport): Promise<Uint8Array[]> {
  for (;;) {
    const next = await open.iterator.next();
    if (next.done === true) return open.chunks;
    open.chunks.push(next.value);
  }
}

/** Starts an export and leaves it open: its first step counts it in flight. */
async function startExport(node: Node): Promise<OpenExport> {
  const iterator = node.store.exportSnapshot()[Symbol.asyncIterator]();
  const state = node.model.exportState();
  const header = await iterator.next();
  expect(header.done).toBe(false);
  return { iterator, chunks: [header.value as Uint8Array], state };
}

async function importInto(target: Node, chunks: Uint8Array[], state: ModelExport): Promise<void> {
  expect(target.exports).toEqual([]);
  await target.store.importSnapshot(chunks);
  target.model.importLive(state);
}

interface Config {
  readonly seed: number;
  readonly steps: number;
  /** [dedupWindow, compactionBatchOps] per node; node 0 takes most of the traffic. */
  readonly nodes: ReadonlyArray<readonly [number, number]>;
  /** Fresh ids applied to node 0 before the random steps (to get past a large window quickly). */
  readonly prefill?: number;
}

interface Stats {
  recorded: number;
  duplicates: number;
  /** Unrecorded timestamped ids refused as expired. */
  expired: number;
  imports: number;
  restarts: number;
  /** Recording applies with an export running (so they deleted nothing). */
  recordedDuringExport: number;
  /** The most evicted entries seen on disk at once. */
  maxBelowFloor: number;
}

async function runDifferential(config: Config): Promise<Stats> {
  const rand = random(config.seed);
  const pick = <T>(items: readonly T[]): T | undefined => items[Math.floor(rand() * items.length)];
  const nodes: Node[] = [];
  for (const [index, [window, batchOps]] of config.nodes.entries()) nodes.push(await makeNode(`node${index}`, window, batchOps));
  const node0 = nodes[0]!;
  const allIds: string[] = [];
  let nextIndex = 0;
  let nextId = 0;
  const stats: Stats = { recorded: 0, duplicates: 0, expired: 0, imports: 0, restarts: 0, recordedDuringExport: 0, maxBelowFloor: 0 };

  const chooseNode = (): Node => (rand() < 0.7 || nodes.length === 1 ? node0 : pick(nodes.slice(1))!);
  const idle = (): Node[] => nodes.filter((node) => node.exports.length === 0);

  const applyTo = async (node: Node, command: Command, requestId: string | undefined): Promise<ApplyResult> => {
    nextIndex++;
    return node.store.apply(command, { index: nextIndex, nowMs: startMs + nextIndex, ...(requestId !== undefined && { requestId }) });
  };

  /** Applies a put with a request id and checks the result, and then (unless told not to) the engine, against the model. */
  const applyWithId = async (node: Node, id: string, where: string, checkEngine = true): Promise<void> => {
    const expected = node.model.find(id);
    const belowBefore = node.model.belowFloor.length;
    const removeEvicted = node.exports.length === 0;
    const result = await applyTo(node, { type: 'put', key: `k${Math.floor(rand() * 6)}`, value: text(where) }, id);
    if (expected !== undefined) {
      stats.duplicates++;
      expect(result, `${where}: a retry of ${id} is recognised`).toMatchObject({
        duplicate: true,
        originalIndex: expected.index,
        revision: expected.revision,
        applied: true,
      });
      if (checkEngine) await checkNode(node, where);
      return;
    }
    if (node.model.expired(id)) {
      stats.expired++;
      expect(result, `${where}: ${id} is refused as expired`).toMatchObject({ duplicate: false, applied: false, error: { code: 'REQUEST_ID_EXPIRED' } });
      if (checkEngine) await checkNode(node, where);
      return;
    }
    expect(result, `${where}: ${id} is not a recorded id`).toMatchObject({ duplicate: false, applied: true });
    stats.recorded++;
    if (!removeEvicted) stats.recordedDuringExport++;
    const evicted = node.model.record({ index: result.index, id, revision: result.revision }, removeEvicted);
    node.recent.push(id);
    if (node.recent.length > 2 * node.model.window) node.recent.shift();
    if (!checkEngine) return;
    const stored = await checkNode(node, where);
    stats.maxBelowFloor = Math.max(stats.maxBelowFloor, stored.below.length);
    expect(evicted).toBeLessThanOrEqual(evictionsPerApplyMax);
    // With no export running, each recording apply deletes up to compactionBatchOps evicted
    // entries: what stays below the floor is what it evicted plus any excess over that batch.
    if (removeEvicted) {
      expect(stored.below.length, `${where}: evicted entries left behind`).toBeLessThanOrEqual(
        Math.max(0, belowBefore - node.options.limits.compactionBatchOps) + evicted,
      );
    }
  };

  // Half the ids are timestamped, created around the current entry's time (up to 12 ms before, as
  // from a client whose clock is a little behind, or 4 ms after), so fresh ids are now and then
  // older than the expiry mark and refused too.
  const freshId = (): string => {
    const plain = `req-${nextId++}`;
    const id = rand() < 0.5 ? plain : formatTimestampedRequestId(startMs + nextIndex + 1 + Math.floor(rand() * 17) - 12, plain);
    allIds.push(id);
    return id;
  };

  // The prefill checks the engine only now and then (a large window is long to compare), and
  // compacts versions so reopening stays cheap.
  const prefill = config.prefill ?? 0;
  for (let step = 1; step <= prefill; step++) {
    const where = `seed ${config.seed} prefill ${step}`;
    await applyWithId(node0, freshId(), where, step % 16 === 0 || step === prefill);
    if (step % 64 === 0) await applyTo(node0, { type: 'compact', belowRevision: node0.store.revision }, undefined);
  }

  for (let step = 0; step < config.steps; step++) {
    const where = `seed ${config.seed} step ${step}`;
    const roll = rand();
    if (roll < 0.5) {
      const node = chooseNode();
      await applyWithId(node, freshId(), `${where} (fresh id on ${node.name})`);
    } else if (roll < 0.62) {
      // A retry of a recent id: most are still recognised, those near the window's edge not.
      const node = chooseNode();
      const recent = node.recent.slice(-Math.ceil(1.3 * node.model.window));
      if (recent.length > 0) await applyWithId(node, pick(recent)!, `${where} (recent retry on ${node.name})`);
    } else if (roll < 0.68) {
      const node = chooseNode();
      if (allIds.length > 0) await applyWithId(node, pick(allIds)!, `${where} (old retry on ${node.name})`);
    } else if (roll < 0.74) {
      const node = chooseNode();
      const result = await applyTo(node, { type: 'delete', key: `k${Math.floor(rand() * 6)}` }, undefined);
      expect(result.duplicate).toBe(false);
      await checkNode(node, `${where} (no id on ${node.name})`);
    } else if (roll < 0.76) {
      // Compact commands ignore their request id; an invalid id fails the entry unrecorded.
      const node = chooseNode();
      const compact = await applyTo(node, { type: 'compact', belowRevision: node.store.revision }, `req-${nextId}`);
      expect(compact).toMatchObject({ applied: true, duplicate: false });
      const invalid = await applyTo(node, { type: 'put', key: 'k0', value: text('x') }, '');
      expect(invalid.error?.code).toBe('INVALID_ARGUMENT');
      await checkNode(node, `${where} (compact and invalid id on ${node.name})`);
    } else if (roll < 0.8) {
      const node = chooseNode();
      const result = await node.store.compactStorage();
      expect(result.deferred).toBe(node.exports.length > 0);
      const expectedRemoved = node.exports.length > 0 ? 0 : node.model.belowFloor.length;
      expect(result.removedDedupEntries, `${where}: compactStorage on ${node.name}`).toBe(expectedRemoved);
      if (node.exports.length === 0) node.model.compactStorage();
      const stored = await checkNode(node, `${where} (compactStorage on ${node.name})`);
      if (node.exports.length === 0) expect(stored.below).toEqual([]);
    } else if (roll < 0.84) {
      // A whole export, then an import into a node with no export running (maybe the exporter).
      const source = pick(nodes)!;
      const open = await startExport(source);
      const chunks = await drain(open);
      const target = pick(idle());
      if (target !== undefined) {
        await importInto(target, chunks, open.state);
        stats.imports++;
        await checkNode(target, `${where} (import from ${source.name} into ${target.name})`);
      }
      await checkNode(source, `${where} (export from ${source.name})`);
    } else if (roll < 0.89) {
      // An export left open: the applies until it ends must not delete evicted entries.
      const node = chooseNode();
      if (node.exports.length < 3) node.exports.push(await startExport(node));
      await checkNode(node, `${where} (open export on ${node.name})`);
    } else if (roll < 0.95) {
      const node = pick(nodes.filter((candidate) => candidate.exports.length > 0));
      if (node !== undefined) {
        const open = node.exports.splice(Math.floor(rand() * node.exports.length), 1)[0]!;
        const what = rand();
        if (what < 0.2) {
          // Abandoned: closing the generator ends the export too.
          await open.iterator.return?.();
        } else {
          const chunks = await drain(open);
          const target = what < 0.7 ? pick(idle()) : undefined;
          if (target !== undefined) {
            await importInto(target, chunks, open.state);
            stats.imports++;
            await checkNode(target, `${where} (late import from ${node.name} into ${target.name})`);
          }
        }
        await checkNode(node, `${where} (export ended on ${node.name})`);
      }
    } else {
      // A restart: a fresh store (no read-ahead, no list of evicted entries) takes over, now and
      // then with another window (a shrunk one evicts up to 8 entries per apply until it fits).
      const node = pick(idle());
      if (node !== undefined) {
        if (rand() < 0.25) {
          const window = Math.max(1, Math.round(config.nodes[nodes.indexOf(node)]![0] * (0.3 + rand())));
          node.options = { ...node.options, dedupWindow: window };
          node.model.window = window;
        }
        node.store = await MvccStore.open({ engine: node.engine, prefix, ...node.options });
        stats.restarts++;
        await checkNode(node, `${where} (restart of ${node.name})`);
      }
    }
  }

  // Recent and old ids retried everywhere: the model says which are still recognised.
  for (const node of nodes) {
    const ids = allIds.slice(-3 * node.model.window);
    // A large window's engine is compared every few retries only (each comparison reads it all).
    const checkEvery = node.model.window > 100 ? 16 : 1;
    for (const [i, id] of ids.entries()) await applyWithId(node, id, `seed ${config.seed} final retry on ${node.name}`, i % checkEvery === 0);
  }
  // Finally, with every export ended, compaction leaves no evicted entry and no record below the floor.
  for (const node of nodes) {
    for (const open of node.exports.splice(0)) await drain(open);
    await node.store.compactStorage();
    node.model.compactStorage();
    const stored = await checkNode(node, `seed ${config.seed} end on ${node.name}`);
    expect(stored.below).toEqual([]);
    for (const [id, index] of stored.records) {
      expect(index, `record of ${id}`).toBeGreaterThanOrEqual(stored.floor);
      expect(stored.live.some(([liveIndex, liveId]) => liveIndex === index && liveId === id), `record of ${id} points at its live entry`).toBe(true);
    }
    expect(stored.records.size).toBe(stored.count);
  }
  return stats;
}

describe('dedup read-ahead and exact removal list', () => {
  const configs: Config[] = [
    // Small windows: the read-ahead always holds the whole queue once it is read.
    { seed: 1, steps: 1000, nodes: [[8, 1000], [5, 1000], [16, 3]] },
    { seed: 2, steps: 1000, nodes: [[13, 2], [5, 1000], [20, 1000]] },
    { seed: 3, steps: 1000, nodes: [[5, 1000], [11, 4], [19, 1]] },
    { seed: 4, steps: 800, nodes: [[20, 1000]] },
    // Windows of one and two: every recording apply evicts.
    { seed: 6, steps: 600, nodes: [[2, 1000], [1, 1], [3, 2]] },
  ];

  it.each(configs)('matches the window rule exactly (seed $seed)', async (config) => {
    const stats = await runDifferential(config);
    // The run must have exercised what it is about.
    expect(stats.recorded).toBeGreaterThan(config.steps / 3);
    expect(stats.duplicates).toBeGreaterThan(config.steps / 20);
    expect(stats.expired).toBeGreaterThan(config.steps / 50);
    expect(stats.recordedDuringExport).toBeGreaterThan(10);
    // Open exports held evicted entries back beyond what one apply evicts.
    expect(stats.maxBelowFloor).toBeGreaterThan(evictionsPerApplyMax);
    expect(stats.restarts).toBeGreaterThan(5);
    if (config.nodes.length > 1) expect(stats.imports).toBeGreaterThan(5);
  });

  it('matches the window rule with a window larger than one read-ahead', async () => {
    // 260 > 256 live indexes per read, so the read-ahead then holds only a prefix of the queue;
    // the prefill evicts past one whole read-ahead.
    const stats = await runDifferential({ seed: 5, steps: 250, prefill: 560, nodes: [[260, 1000], [30, 1000]] });
    expect(stats.recorded).toBeGreaterThan(600);
  });

  it('deletes each evicted entry with its record, whether removal scans or uses its list', async () => {
    const engine = new MemoryEngine();
    const options = { dedupWindow: 2, limits: makeLimits({ compactionBatchOps: 1000 }) };
    let store = await MvccStore.open({ engine, prefix, ...options });
    let index = 0;
    const put = async (requestId: string): Promise<ApplyResult> =>
      store.apply({ type: 'put', key: 'k', value: text(requestId) }, { index: ++index, nowMs: startMs, requestId });
    const expectNoStaleRecord = async (): Promise<void> => {
      const stored = await readStoredDedup(engine);
      expect(stored.below).toEqual([]);
      // Every record points at a live entry of its own id, none below the floor.
      expect([...stored.records].sort()).toEqual(stored.live.map(([liveIndex, id]) => [id, liveIndex]).sort());
    };
    // The first removal scans (nothing is known after open), later ones use the list.
    for (let id = 0; id < 10; id++) expect((await put(`r${id}`)).duplicate).toBe(false);
    expect((await readStoredDedup(engine)).below.length).toBe(1);
    await store.compactStorage();
    await expectNoStaleRecord();
    // Evicted while an export runs, then deleted by compaction through the list.
    const iterator = store.exportSnapshot()[Symbol.asyncIterator]();
    await iterator.next();
    for (let id = 10; id < 16; id++) await put(`r${id}`);
    expect((await readStoredDedup(engine)).below.length).toBe(6);
    await iterator.return?.();
    expect(await store.compactStorage()).toMatchObject({ removedDedupEntries: 6 });
    await expectNoStaleRecord();
    // An id evicted and recorded again keeps its new record when its old entry goes.
    expect((await put('r15')).duplicate).toBe(true);
    expect((await put('r3')).duplicate).toBe(false);
    await put('r16');
    await put('r17');
    await store.compactStorage();
    await expectNoStaleRecord();
    store = await MvccStore.open({ engine, prefix, ...options });
    expect((await put('r17')).duplicate).toBe(true);
    expect((await put('r3')).duplicate).toBe(false);
  });

  /**
   * Two engines with identical histories; one store keeps running (its read-ahead and its exact
   * list of evicted entries), the other is reopened from its engine now and then (neither). Every
   * later command must give the same result and leave byte-identical engines.
   */
  it.each([
    { window: 6, batchOps: 1000, seed: 11, steps: 600 },
    { window: 9, batchOps: 2, seed: 12, steps: 600 },
    { window: 260, batchOps: 1000, seed: 13, steps: 900 },
  ])('behaves the same reopened as running (window $window, removal batch $batchOps)', async ({ window, batchOps, seed, steps }) => {
    const rand = random(seed);
    const options = { dedupWindow: window, limits: makeLimits({ compactionBatchOps: batchOps }) };
    const makeSide = async () => {
      const engine = new MemoryEngine();
      return { engine, store: await MvccStore.open({ engine, prefix, ...options }), exports: [] as OpenExport[] };
    };
    const running = await makeSide();
    const reopened = await makeSide();
    const both = [running, reopened];
    // A large window is compared every few steps (a full dump is long); results every step.
    const compareEvery = window > 100 ? 10 : 1;
    let ids = 0;
    let reopens = 0;
    for (let index = 1; index <= steps; index++) {
      const where = `seed ${seed} step ${index}`;
      const roll = rand();
      if (roll < 0.05 && running.exports.length < 2) {
        // An export held open across the next applies (they then delete nothing), on both.
        for (const side of both) {
          const iterator = side.store.exportSnapshot()[Symbol.asyncIterator]();
          side.exports.push({ iterator, chunks: [(await iterator.next()).value as Uint8Array], state: { live: [], expiredThroughMs: 0, newestCreatedMs: 0 } });
        }
      } else if (roll < 0.1 && running.exports.length > 0) {
        // Ended; when it was the only one, sometimes installed back (older than the state now).
        const install = running.exports.length === 1 && rand() < 0.5;
        for (const side of both) {
          const chunks = await drain(side.exports.shift()!);
          if (install) await side.store.importSnapshot(chunks);
        }
      } else if (roll < 0.12 && running.exports.length === 0) {
        const results = [await running.store.compactStorage(), await reopened.store.compactStorage()];
        expect(results[1], where).toEqual(results[0]);
      } else if (roll < 0.14 && running.exports.length === 0 && index > steps / 3) {
        // Each imports its own snapshot: a foreign state for the table either way.
        for (const side of both) {
          const chunks: Uint8Array[] = [];
          for await (const chunk of side.store.exportSnapshot()) chunks.push(chunk);
          await side.store.importSnapshot(chunks);
        }
      } else {
        const r = rand();
        // Odd ids are timestamped, created a little out of order, so the expiry mark moves and refuses some.
        const idOf = (n: number): string => (n % 2 === 0 ? `id-${n}` : formatTimestampedRequestId(startMs + n + ((n * 7) % 11) - 5, `id-${n}`));
        const id = r < 0.75 ? idOf(ids++) : r < 0.95 ? idOf(Math.max(0, ids - 1 - Math.floor(rand() * window * 1.5))) : undefined;
        const command: Command = { type: 'put', key: `k${index % 5}`, value: text(`v${index}`) };
        const context = { index, nowMs: startMs + index, ...(id !== undefined && { requestId: id }) };
        const results = [await running.store.apply(command, context), await reopened.store.apply(command, context)];
        expect(results[1], where).toEqual(results[0]);
      }
      if (index % compareEvery === 0) expect(await dumpEngine(reopened.engine), where).toEqual(await dumpEngine(running.engine));
      // Reopen the second store (only between exports: a restart ends them).
      if (reopened.exports.length === 0 && rand() < 0.08) {
        reopened.store = await MvccStore.open({ engine: reopened.engine, prefix, ...options });
        reopens++;
      }
    }
    for (const side of both) for (const open of side.exports) await drain(open);
    for (const side of both) await side.store.compactStorage();
    expect(await dumpEngine(reopened.engine)).toEqual(await dumpEngine(running.engine));
    expect(reopens).toBeGreaterThan(10);
    const stored = await readStoredDedup(running.engine);
    expect(stored.below).toEqual([]);
    expect(stored.count).toBeLessThanOrEqual(window);
    expect(stored.records.size).toBe(stored.count);
  });
});

describe('dedup read-ahead bound', () => {
  it('holds at most dedupReadAheadMax heads while a table far below its window records thousands of ids, and still evicts right', async () => {
    const engine = new MemoryEngine();
    const store = await MvccStore.open({ engine, prefix, dedupWindow: 2_500 });
    let peak = 0;
    for (let index = 1; index <= 3_000; index++) {
      const result = await store.apply({ type: 'put', key: `t/k${index % 50}`, value: text(`v${index}`) }, { index, nowMs: startMs, requestId: `req-${index}` });
      expect(result.error).toBeUndefined();
      // The bound, after every apply (it was the whole live queue: 2,500 heads here).
      peak = Math.max(peak, store.dedupMemory().readAheadHeads);
      expect(store.dedupMemory().readAheadHeads).toBeLessThanOrEqual(dedupReadAheadMax);
    }
    expect(peak).toBe(dedupReadAheadMax);
    // The window was reached and evictions still took the oldest: the newest 2,500 ids are live.
    expect(store.dedupStatus()).toMatchObject({ recordCount: 2_500, floorIndex: 501 });
    const retry = await store.apply({ type: 'put', key: 't/k1', value: text('again') }, { index: 3_001, nowMs: startMs, requestId: 'req-501' });
    expect(retry.duplicate).toBe(true);
    const evicted = await store.apply({ type: 'put', key: 't/k1', value: text('again') }, { index: 3_002, nowMs: startMs, requestId: 'req-500' });
    expect(evicted.duplicate).toBe(false);
  });
});
