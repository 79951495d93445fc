/**
 * WriteBehindEngine: the shared conformance suite (over MemoryEngine and over LevelEngine), then
 * what is particular to it — unsynced writes held in memory and folded into the next synced
 * write, crash behaviour, deletes in the layers shadowing the engine below, iteration while
 * flushes land, failures below, flush thresholds and close — checked against a plain MemoryEngine
 * as the reference.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { LevelEngine } from '../../src/storage/level-engine.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type {
  IterateOptions,
  KeyRange,
  StorageEngine,
  StorageEntry,
  WriteOperation,
  WriteOptions,
} from '../../src/storage/storage-engine.js';
import { WriteBehindEngine, type WriteBehindOptions } from '../../src/storage/write-behind-engine.js';
import { runEngineConformance } from './engine-conformance.js';

// ---------------------------------------------------------------------------------------------
// Conformance

/** The MemoryEngine under each wrapper, so the reopen hook can reach it. */
const memoryBelow = new WeakMap<StorageEngine, MemoryEngine>();

function wrapMemory(memory: MemoryEngine, options: WriteBehindOptions = {}): WriteBehindEngine {
  const engine = new WriteBehindEngine(memory, options);
  memoryBelow.set(engine, memory);
  return engine;
}

const reopenMemory =
  (options: WriteBehindOptions) =>
  async (engine: StorageEngine): Promise<StorageEngine> => {
    const memory = memoryBelow.get(engine)!;
    await engine.close(); // flushes the layers, then closes the MemoryEngine
    memory.reopen();
    return wrapMemory(memory, options);
  };

runEngineConformance('WriteBehindEngine over MemoryEngine', async () => wrapMemory(new MemoryEngine()), {
  reopen: reopenMemory({}),
});

// Everything stays in the layers (no timer fires during a test)...
runEngineConformance(
  'WriteBehindEngine over MemoryEngine, writes held in memory',
  async () => wrapMemory(new MemoryEngine(), { flushDelayMs: 60_000 }),
  { reopen: reopenMemory({ flushDelayMs: 60_000 }) },
);

// ...or every unsynced write goes below at once (the layers are mostly in flight).
runEngineConformance(
  'WriteBehindEngine over MemoryEngine, flushing every key',
  async () => wrapMemory(new MemoryEngine(), { flushKeys: 1 }),
  { reopen: reopenMemory({ flushKeys: 1 }) },
);

const levelRoot = mkdtempSync(join(tmpdir(), 'atoll-write-behind-'));
let levelCounter = 0;
const levelBelow = new WeakMap<StorageEngine, LevelEngine>();
afterAll(() => rmSync(levelRoot, { recursive: true, force: true }));

async function wrapLevel(level: LevelEngine): Promise<StorageEngine> {
  const engine = new WriteBehindEngine(level);
  levelBelow.set(engine, level);
  return engine;
}

runEngineConformance(
  'WriteBehindEngine over LevelEngine',
  async () => wrapLevel(await LevelEngine.open(join(levelRoot, `db-${levelCounter++}`))),
  {
    reopen: async (engine) => {
      const location = levelBelow.get(engine)!.location;
      await engine.close();
      return wrapLevel(await LevelEngine.open(location, { createIfMissing: false }));
    },
  },
);

// ---------------------------------------------------------------------------------------------
// Helpers

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const t = (value: string): Uint8Array => encoder.encode(value);
const s = (value: Uint8Array | undefined): string | undefined => (value === undefined ? undefined : decoder.decode(value));
const put = (key: string, value: string): WriteOperation => ({ type: 'put', key: t(key), value: t(value) });
const del = (key: string): WriteOperation => ({ type: 'del', key: t(key) });

type Pair = [key: string, value: string];

async function entries(engine: StorageEngine, options: IterateOptions = {}): Promise<Pair[]> {
  const result: Pair[] = [];
  for await (const [key, value] of engine.iterate(options)) result.push([decoder.decode(key), decoder.decode(value)]);
  return result;
}

/** What the MemoryEngine holds, read directly (it must be open). */
async function contents(memory: MemoryEngine): Promise<Pair[]> {
  return entries(memory);
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function rangeOf(gte: string | undefined, lt: string | undefined): KeyRange {
  return { ...(gte !== undefined && { gte: t(gte) }), ...(lt !== undefined && { lt: t(lt) }) };
}

function inRange(key: string, gte: string | undefined, lt: string | undefined): boolean {
  // The keys here are ASCII, so string order is byte order.
  return (gte === undefined || key >= gte) && (lt === undefined || key < lt);
}

type RecordedOperation = ['put', string, string] | ['del', string];

interface RecordedWrite {
  readonly operations: RecordedOperation[];
  readonly sync: boolean;
}

interface SpyOptions {
  /** Offer getMany (default true). */
  readonly getMany?: boolean;
  /** Offer deleteRange (default true). */
  readonly deleteRange?: boolean;
  /** Let the event loop turn before each write lands, so writes below are in flight for a while. */
  readonly slow?: boolean;
}

/**
 * A StorageEngine over a MemoryEngine that records every write call (operations and sync flag, at
 * call time), can hold writes back until released, and can make writes fail.
 */
class SpyEngine implements StorageEngine {
  readonly writes: RecordedWrite[] = [];
  readonly deleteRanges: Array<{ gte?: string; lt?: string; sync: boolean }> = [];
  readonly getMany?: (keys: Uint8Array[]) => Promise<Array<Uint8Array | undefined>>;
  readonly deleteRange?: (range: KeyRange, options?: WriteOptions) => Promise<void>;
  /** When set, every write (and deleteRange) from now on rejects with it. */
  failWith: Error | undefined;
  closeCalls = 0;
  private gate: Promise<void> | undefined;
  private openGate: (() => void) | undefined;

  constructor(
    readonly inner: MemoryEngine,
    private readonly options: SpyOptions = {},
  ) {
    if (options.getMany !== false) this.getMany = (keys) => this.inner.getMany(keys);
    if (options.deleteRange !== false) {
      this.deleteRange = async (range, writeOptions = {}) => {
        this.deleteRanges.push({
          ...(range.gte !== undefined && { gte: decoder.decode(range.gte) }),
          ...(range.lt !== undefined && { lt: decoder.decode(range.lt) }),
          sync: writeOptions.sync === true,
        });
        await this.waitTurn();
        await this.inner.deleteRange(range, writeOptions);
      };
    }
  }

  /** Holds every write until `release` is called. */
  hold(): void {
    this.gate = new Promise((resolve) => (this.openGate = resolve));
  }

  release(): void {
    this.openGate?.();
    this.gate = undefined;
    this.openGate = undefined;
  }

  private async waitTurn(): Promise<void> {
    if (this.gate !== undefined) await this.gate;
    if (this.options.slow === true) await tick();
    if (this.failWith !== undefined) throw this.failWith;
  }

  get(key: Uint8Array): Promise<Uint8Array | undefined> {
    return this.inner.get(key);
  }

  iterate(options: IterateOptions): AsyncIterable<StorageEntry> {
    return this.inner.iterate(options);
  }

  async write(operations: WriteOperation[], options: WriteOptions = {}): Promise<void> {
    this.writes.push({
      operations: operations.map((operation): RecordedOperation =>
        operation.type === 'put'
          ? ['put', decoder.decode(operation.key), decoder.decode(operation.value)]
          : ['del', decoder.decode(operation.key)],
      ),
      sync: options.sync === true,
    });
    await this.waitTurn();
    await this.inner.write(operations, options);
  }

  async close(): Promise<void> {
    this.closeCalls++;
    await this.inner.close();
  }
}

/** Applies recorded operations in order to a map: what one batch leaves behind. */
function applyRecorded(operations: RecordedOperation[], state = new Map<string, string>()): Map<string, string> {
  for (const operation of operations) {
    if (operation[0] === 'put') state.set(operation[1], operation[2]);
    else state.delete(operation[1]);
  }
  return state;
}

async function caught(run: () => unknown): Promise<unknown> {
  try {
    await run();
  } catch (error) {
    return error;
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Targeted tests

describe('WriteBehindEngine: unsynced writes in memory, folded into the next synced write', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('shows unsynced writes at once, keeps them out of the engine below, and sends them with the next synced write as one batch', async () => {
    const memory = new MemoryEngine();
    await memory.write([put('c', 'below'), put('e', 'below')], { sync: true });
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });

    await engine.write([put('a', '1'), put('b', '1')]);
    await engine.write([put('a', '2'), del('c')]);
    expect(spy.writes).toEqual([]);
    expect(await contents(memory)).toEqual([
      ['c', 'below'],
      ['e', 'below'],
    ]);

    expect(s(await engine.get(t('a')))).toBe('2');
    expect(s(await engine.get(t('c')))).toBeUndefined();
    expect((await engine.getMany(['a', 'b', 'c', 'd', 'e'].map(t))).map(s)).toEqual(['2', '1', undefined, undefined, 'below']);
    expect(await entries(engine)).toEqual([
      ['a', '2'],
      ['b', '1'],
      ['e', 'below'],
    ]);

    await engine.write([put('b', '3'), put('d', '4'), put('d', '5'), put('a', '6'), del('a')], { sync: true });
    expect(spy.writes).toHaveLength(1);
    const [batch] = spy.writes;
    expect(batch!.sync).toBe(true);
    // One batch: the pending unsynced writes first, then the synced write's own operations.
    expect(Object.fromEntries(applyRecorded(batch!.operations))).toEqual({ b: '3', d: '5' });
    expect(batch!.operations).toContainEqual(['del', 'c']);
    const state = await contents(memory);
    expect(state).toEqual([
      ['b', '3'],
      ['d', '5'],
      ['e', 'below'],
    ]);
    expect(memory.unsyncedBatchCount).toBe(0);
    expect(await entries(engine)).toEqual(state);
    await engine.close();
  });

  it('keeps the operations of one synced write in their order, the later winning for a key', async () => {
    const memory = new MemoryEngine();
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });
    await engine.write([put('k', 'unsynced'), put('j', 'unsynced')]);
    await engine.write([del('k'), put('k', 'synced'), put('j', 'first'), del('j')], { sync: true });
    expect(s(await engine.get(t('k')))).toBe('synced');
    expect(s(await engine.get(t('j')))).toBeUndefined();
    expect(await contents(memory)).toEqual([['k', 'synced']]);
    expect(spy.writes).toHaveLength(1);
    await engine.close();
  });

  it('writes unsynced writes below, unsynced, after the flush delay (fake timers)', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const memory = new MemoryEngine();
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 50 });
    await engine.write([put('a', '1')]);
    await vi.advanceTimersByTimeAsync(30);
    await engine.write([put('b', '2')]); // does not restart the timer
    await vi.advanceTimersByTimeAsync(19);
    expect(spy.writes).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(spy.writes).toEqual([
      {
        operations: [
          ['put', 'a', '1'],
          ['put', 'b', '2'],
        ],
        sync: false,
      },
    ]);
    expect(memory.unsyncedBatchCount).toBe(1);
    expect(await contents(memory)).toEqual([
      ['a', '1'],
      ['b', '2'],
    ]);
    // A new unsynced write arms the timer again.
    await engine.write([del('a')]);
    await vi.advanceTimersByTimeAsync(49);
    expect(spy.writes).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1);
    expect(spy.writes.at(-1)).toEqual({ operations: [['del', 'a']], sync: false });
    expect(await contents(memory)).toEqual([['b', '2']]);
    // A synced write disarms it: nothing more goes below afterwards.
    await engine.write([put('c', '3')]);
    await engine.write([put('d', '4')], { sync: true });
    await vi.advanceTimersByTimeAsync(200);
    expect(spy.writes).toHaveLength(3);
    await engine.close();
  });

  it('writes unsynced writes below after the flush delay (real timers)', async () => {
    const memory = new MemoryEngine();
    const engine = new WriteBehindEngine(memory, { flushDelayMs: 1 });
    await engine.write([put('a', '1')]);
    expect(memory.size).toBe(0);
    await sleep(20);
    expect(await contents(memory)).toEqual([['a', '1']]);
    expect(memory.unsyncedBatchCount).toBe(1);
    await engine.close();
  });

  it('flush() writes the open layer below as one unsynced batch', async () => {
    const memory = new MemoryEngine();
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });
    await engine.write([put('a', '1')]);
    await engine.write([put('b', '2'), put('a', '3')]);
    await engine.flush();
    expect(spy.writes).toHaveLength(1);
    expect(spy.writes[0]!.sync).toBe(false);
    expect(Object.fromEntries(applyRecorded(spy.writes[0]!.operations))).toEqual({ a: '3', b: '2' });
    expect(memory.unsyncedBatchCount).toBe(1);
    await engine.flush(); // nothing pending: nothing written
    expect(spy.writes).toHaveLength(1);
    await engine.close();
  });

  it('looks through every layer, newest first, while older ones are being written below', async () => {
    const memory = new MemoryEngine();
    await memory.write(['a', 'b', 'c', 'd'].map((key) => put(key, 'below')), { sync: true });
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });
    const reference = new MemoryEngine();
    await reference.write(['a', 'b', 'c', 'd'].map((key) => put(key, 'below')));

    const step = async (operations: WriteOperation[]): Promise<void> => {
      await engine.write(operations);
      await reference.write(operations);
    };
    const compare = async (): Promise<void> => {
      for (const options of [{}, { reverse: true }, { limit: 2 }, { reverse: true, limit: 2 }, { gte: t('b'), lt: t('d') }]) {
        expect(await entries(engine, options)).toEqual(await entries(reference, options));
      }
      for (const key of ['a', 'b', 'c', 'd', 'e']) expect(s(await engine.get(t(key)))).toBe(s(await reference.get(t(key))));
    };

    spy.hold();
    await step([put('a', 'layer1'), del('b'), put('e', 'layer1')]);
    const first = engine.flush(); // layer 1 in flight
    await step([put('b', 'layer2'), del('a'), del('c')]);
    const second = engine.flush(); // layer 2 queued behind it
    await step([put('c', 'layer3'), del('e')]); // layer 3 open
    await compare();
    expect(spy.writes).toHaveLength(1);
    spy.release();
    await Promise.all([first, second]);
    expect(spy.writes).toHaveLength(2);
    await compare();
    await engine.write([], { sync: true });
    await compare();
    expect(await contents(memory)).toEqual(await entries(reference));
    await engine.close();
  });

  it('reads through get when the engine below has no getMany', async () => {
    const memory = new MemoryEngine();
    await memory.write([put('x', 'below'), put('y', 'below')]);
    const engine = new WriteBehindEngine(new SpyEngine(memory, { getMany: false }), { flushDelayMs: 60_000 });
    await engine.write([del('x'), put('z', 'layer')]);
    expect((await engine.getMany(['x', 'y', 'z', 'w'].map(t))).map(s)).toEqual([undefined, 'below', 'layer', undefined]);
    await engine.close();
  });
});

describe('WriteBehindEngine: crash semantics (MemoryEngine.crash below)', () => {
  it('loses unsynced writes still in memory and keeps synced ones', async () => {
    const memory = new MemoryEngine();
    const engine = new WriteBehindEngine(memory, { flushDelayMs: 60_000 });
    await engine.write([put('a', '1')], { sync: true });
    await engine.write([put('b', '2')]);
    await engine.write([put('a', '3')]);
    expect(s(await engine.get(t('a')))).toBe('3');
    memory.crash(); // the process dies: the layers are gone with it
    const restarted = new WriteBehindEngine(memory, { flushDelayMs: 60_000 });
    expect(await entries(restarted)).toEqual([['a', '1']]);
    await restarted.close();
  });

  it('keeps unsynced writes made before a synced write, as one atomic batch', async () => {
    const memory = new MemoryEngine();
    const engine = new WriteBehindEngine(memory, { flushDelayMs: 60_000 });
    await engine.write([put('x', '1')]);
    await engine.write([put('y', '1'), del('x')]);
    await engine.write([put('x', '2')]);
    await engine.write([put('z', '1')], { sync: true });
    await engine.write([put('w', 'lost'), del('y')]);
    memory.crash();
    const restarted = new WriteBehindEngine(memory);
    expect(await entries(restarted)).toEqual([
      ['x', '2'],
      ['y', '1'],
      ['z', '1'],
    ]);
    await restarted.close();
  });

  it('loses flushed unsynced batches only as a suffix, never an older one while keeping a newer one', async () => {
    const history: Pair[][] = [];
    for (let keep = 0; keep <= 4; keep++) {
      const memory = new MemoryEngine();
      const engine = new WriteBehindEngine(memory, { flushDelayMs: 60_000 });
      await engine.write([put('base', '0')], { sync: true });
      history[0] = await contents(memory);
      const batches: WriteOperation[][] = [[put('k', '1'), put('j', '1')], [put('k', '2'), del('j')], [put('j', '3')]];
      for (const [index, batch] of batches.entries()) {
        for (const operation of batch) await engine.write([operation]); // several writes, one layer
        await engine.flush();
        history[index + 1] = await contents(memory);
      }
      await engine.write([put('k', 'in memory only')]);
      expect(memory.unsyncedBatchCount).toBe(3);
      memory.crash({ keepUnsyncedBatches: keep });
      expect(await contents(memory)).toEqual(history[Math.min(keep, 3)]);
    }
  });

  it('after a crash, holds the state after some prefix of the writes that includes every synced one (property)', async () => {
    type CrashStep =
      | { kind: 'write'; operations: Array<{ type: 'put' | 'del'; key: string }>; sync: boolean }
      | { kind: 'deleteRange'; gte: string | undefined; lt: string | undefined; sync: boolean }
      | { kind: 'flush' };
    const key = fc.constantFrom('a', 'b', 'c', 'ab', 'ba');
    const step: fc.Arbitrary<CrashStep> = fc.oneof(
      {
        weight: 5,
        arbitrary: fc.record({
          kind: fc.constant('write' as const),
          operations: fc.array(fc.record({ type: fc.constantFrom('put' as const, 'del' as const), key }), { minLength: 1, maxLength: 3 }),
          sync: fc.boolean(),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('deleteRange' as const),
          gte: fc.option(key, { nil: undefined }),
          lt: fc.option(key, { nil: undefined }),
          sync: fc.boolean(),
        }),
      },
      { weight: 2, arbitrary: fc.constant({ kind: 'flush' as const }) },
    );
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(1, 2, 4096),
        fc.array(step, { maxLength: 14 }),
        fc.nat({ max: 4 }),
        async (flushKeys, steps, keep) => {
          const memory = new MemoryEngine();
          const engine = new WriteBehindEngine(memory, { flushDelayMs: 60_000, flushKeys });
          const reference = new MemoryEngine();
          const states: Pair[][] = [await contents(reference)];
          let durable = 0; // how many of the states' writes a crash must keep
          let counter = 0;
          for (const current of steps) {
            if (current.kind === 'flush') {
              await engine.flush();
              continue;
            }
            if (current.kind === 'write') {
              const operations = current.operations.map((operation) =>
                operation.type === 'put' ? put(operation.key, `v${counter++}`) : del(operation.key),
              );
              await engine.write(operations, { sync: current.sync });
              await reference.write(operations);
            } else {
              await engine.deleteRange(rangeOf(current.gte, current.lt), { sync: current.sync });
              await reference.deleteRange(rangeOf(current.gte, current.lt));
            }
            states.push(await contents(reference));
            if (current.sync) durable = states.length - 1;
          }
          memory.crash({ keepUnsyncedBatches: keep });
          const after = await contents(memory);
          if (keep === 0) expect(after).toEqual(states[durable]);
          const matches = states.map((state, index) => (index >= durable && JSON.stringify(state) === JSON.stringify(after) ? index : -1));
          expect(matches.some((index) => index >= 0), `state after crash ${JSON.stringify(after)}`).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe('WriteBehindEngine: deletes in the layers shadow the engine below', () => {
  const belowKeys = ['a', 'b', 'ba', 'c', 'd', 'e', 'f', 'g', 'h'];
  const layered: WriteOperation[][] = [
    [del('b'), del('c'), put('bb', 'new'), del('zz')],
    [del('d'), put('e', 'new'), del('f'), put('c', 'again')],
    [del('c'), del('a'), put('i', 'new')],
  ];

  async function setup(options: { flushBetween: boolean }): Promise<{ engine: WriteBehindEngine; reference: MemoryEngine }> {
    const memory = new MemoryEngine();
    const reference = new MemoryEngine();
    const seed = belowKeys.map((key) => put(key, 'below'));
    await memory.write(seed, { sync: true });
    await reference.write(seed);
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });
    if (options.flushBetween) spy.hold(); // the older layers stay sealed and in flight
    for (const operations of layered) {
      await engine.write(operations);
      await reference.write(operations);
      if (options.flushBetween) void engine.flush();
    }
    return { engine, reference };
  }

  for (const flushBetween of [false, true]) {
    it(`matches the reference for get and for every range, direction and limit (${flushBetween ? 'several layers' : 'one layer'})`, async () => {
      const { engine, reference } = await setup({ flushBetween });
      for (const key of [...belowKeys, 'bb', 'i', 'zz', 'x']) {
        expect(s(await engine.get(t(key))), key).toBe(s(await reference.get(t(key))));
      }
      const bounds = [undefined, 'a', 'b', 'bb', 'c', 'd', 'e', 'g', 'z'];
      for (const gte of bounds) {
        for (const lt of bounds) {
          for (const reverse of [false, true]) {
            for (const limit of [undefined, 0, 1, 2, 3, 4, 6, 20]) {
              const options: IterateOptions = { ...rangeOf(gte, lt), reverse, ...(limit !== undefined && { limit }) };
              expect(await entries(engine, options), JSON.stringify({ gte, lt, reverse, limit })).toEqual(await entries(reference, options));
            }
          }
        }
      }
    });
  }

  it('yields the limit even when the first keys below are all shadowed by deletes', async () => {
    const memory = new MemoryEngine();
    await memory.write(['a', 'b', 'c', 'd', 'e', 'f'].map((key) => put(key, 'below')), { sync: true });
    const engine = new WriteBehindEngine(memory, { flushDelayMs: 60_000 });
    await engine.write([del('a'), del('b'), del('c'), del('d')]);
    expect(await entries(engine, { limit: 1 })).toEqual([['e', 'below']]);
    expect(await entries(engine, { limit: 2 })).toEqual([
      ['e', 'below'],
      ['f', 'below'],
    ]);
    expect(await entries(engine, { limit: 0 })).toEqual([]);
    await engine.write([del('f'), del('e')]);
    expect(await entries(engine, { reverse: true, limit: 1 })).toEqual([]);
    await engine.close();
  });
});

describe('WriteBehindEngine: deleteRange', () => {
  it('clears what was written before it and keeps what is written after the call', async () => {
    const memory = new MemoryEngine();
    await memory.write([put('a', 'below'), put('m', 'below'), put('z', 'below')], { sync: true });
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });
    await engine.write([put('b', 'layer'), put('c', 'layer')]);
    const clearing = engine.deleteRange(rangeOf('b', 'y'), { sync: true });
    await engine.write([put('c', 'after')]); // after the call: survives it
    await clearing;
    expect(await entries(engine)).toEqual([
      ['a', 'below'],
      ['c', 'after'],
      ['z', 'below'],
    ]);
    expect(spy.deleteRanges).toEqual([{ gte: 'b', lt: 'y', sync: true }]);
    await engine.close();
    memory.reopen();
    expect(await contents(memory)).toEqual([
      ['a', 'below'],
      ['c', 'after'],
      ['z', 'below'],
    ]);
  });

  it('deletes key by key when the engine below has no deleteRange', async () => {
    const memory = new MemoryEngine();
    await memory.write(['a', 'b', 'c', 'd'].map((key) => put(key, 'below')), { sync: true });
    const spy = new SpyEngine(memory, { deleteRange: false });
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });
    await engine.write([put('bb', 'layer'), del('d')]);
    await engine.deleteRange(rangeOf('b', 'd'), { sync: true });
    expect(await entries(engine)).toEqual([['a', 'below']]);
    expect(await contents(memory)).toEqual([['a', 'below']]);
    expect(memory.unsyncedBatchCount).toBe(0);
    await engine.close();
  });
});

describe('WriteBehindEngine: a failing engine below', () => {
  const disk = new Error('disk on fire');

  async function expectRefusing(engine: WriteBehindEngine, error: Error): Promise<void> {
    expect(await caught(() => engine.get(t('a')))).toBe(error);
    expect(await caught(() => engine.getMany([t('a')]))).toBe(error);
    expect(await caught(() => engine.write([put('a', '1')]))).toBe(error);
    expect(await caught(() => engine.write([put('a', '1')], { sync: true }))).toBe(error);
    expect(await caught(() => engine.flush())).toBe(error);
    expect(await caught(() => engine.deleteRange({}))).toBe(error);
    expect(await caught(() => entries(engine))).toBe(error);
  }

  it('hands the error to the awaiting caller of a synced write, then refuses every later call', async () => {
    const memory = new MemoryEngine();
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });
    await engine.write([put('a', 'unsynced')]);
    spy.failWith = disk;
    expect(await caught(() => engine.write([put('b', 'synced')], { sync: true }))).toBe(disk);
    spy.failWith = undefined; // the disk recovers; the engine still refuses
    await expectRefusing(engine, disk);
    expect(spy.writes).toHaveLength(1);
    await engine.close(); // closes below without writing more
    expect(spy.writes).toHaveLength(1);
    expect(spy.closeCalls).toBe(1);
  });

  it('fails writes queued behind the failing one with the same error', async () => {
    const spy = new SpyEngine(new MemoryEngine());
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });
    spy.hold();
    spy.failWith = disk;
    const first = caught(() => engine.write([put('a', '1')], { sync: true }));
    const second = caught(() => engine.write([put('b', '2')], { sync: true }));
    await engine.write([put('c', '3')]); // accepted before the failure is known
    const third = caught(() => engine.flush());
    spy.release();
    expect(await first).toBe(disk);
    expect(await second).toBe(disk);
    expect(await third).toBe(disk);
    expect(spy.writes).toHaveLength(1); // nothing more went below after the failure
    await expectRefusing(engine, disk);
    await engine.close();
  });

  it('refuses every call after a background flush failed (threshold or timer)', async () => {
    for (const options of [{ flushKeys: 1 }, { flushDelayMs: 1 }]) {
      const spy = new SpyEngine(new MemoryEngine());
      const engine = new WriteBehindEngine(spy, options);
      spy.failWith = disk;
      await engine.write([put('a', '1')]); // resolves: the flush happens later
      await sleep(10);
      expect(spy.writes).toHaveLength(1);
      await expectRefusing(engine, disk);
      await engine.close();
    }
  });

  it('hands the error to the caller of flush() and of deleteRange()', async () => {
    const spy = new SpyEngine(new MemoryEngine());
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });
    await engine.write([put('a', '1')]);
    spy.failWith = disk;
    expect(await caught(() => engine.flush())).toBe(disk);
    await expectRefusing(engine, disk);

    const spy2 = new SpyEngine(new MemoryEngine());
    const engine2 = new WriteBehindEngine(spy2, { flushDelayMs: 60_000 });
    spy2.failWith = disk;
    expect(await caught(() => engine2.deleteRange({}))).toBe(disk);
    await expectRefusing(engine2, disk);
    await engine.close();
    await engine2.close();
  });
});

describe('WriteBehindEngine: flush thresholds', () => {
  it('writes the open layer below once it holds flushKeys keys', async () => {
    const memory = new MemoryEngine();
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000, flushKeys: 3 });
    await engine.write([put('a', '1'), put('b', '1')]);
    await engine.write([put('a', '2'), put('a', '3')]); // the same key again: still two keys
    await tick();
    expect(spy.writes).toEqual([]);
    await engine.write([put('c', '1')]);
    await tick();
    expect(spy.writes).toHaveLength(1);
    expect(spy.writes[0]!.sync).toBe(false);
    expect(Object.fromEntries(applyRecorded(spy.writes[0]!.operations))).toEqual({ a: '3', b: '1', c: '1' });
    expect(memory.unsyncedBatchCount).toBe(1);
    expect(await contents(memory)).toEqual([
      ['a', '3'],
      ['b', '1'],
      ['c', '1'],
    ]);
    await engine.close();
  });

  it('writes the open layer below once it holds flushBytes bytes of keys and values', async () => {
    const memory = new MemoryEngine();
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000, flushBytes: 10 });
    await engine.write([put('k1', 'abc')]); // 5 bytes
    await engine.write([put('k2', 'ab')]); // 9 bytes
    await tick();
    expect(spy.writes).toEqual([]);
    await engine.write([del('k3')]); // 11 bytes
    await tick();
    expect(spy.writes).toHaveLength(1);
    expect(spy.writes[0]!.sync).toBe(false);
    expect(await contents(memory)).toEqual([
      ['k1', 'abc'],
      ['k2', 'ab'],
    ]);
    // The count starts over with the next layer.
    await engine.write([put('k4', 'abcdef')]);
    await tick();
    expect(spy.writes).toHaveLength(1);
    await engine.close();
  });
});

describe('WriteBehindEngine: close', () => {
  it('writes pending writes below, synced, before closing it', async () => {
    const memory = new MemoryEngine();
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });
    await engine.write([put('a', '1'), put('b', '1')], { sync: true });
    await engine.write([put('c', '1'), del('a')]);
    await engine.write([put('d', '1')]);
    await engine.close();
    expect(spy.writes.at(-1)!.sync).toBe(true);
    expect(spy.closeCalls).toBe(1);
    await expect(memory.get(t('b'))).rejects.toThrow(/after close/);
    memory.reopen();
    memory.crash(); // nothing un-synced is left to lose
    expect(await contents(memory)).toEqual([
      ['b', '1'],
      ['c', '1'],
      ['d', '1'],
    ]);
    await expect(engine.get(t('b'))).rejects.toThrow(/after close/);
    await expect(engine.write([put('x', '1')])).rejects.toThrow(/after close/);
    await engine.close(); // a second close is harmless
    expect(spy.closeCalls).toBe(1);
  });

  it('waits for writes below still in flight', async () => {
    const memory = new MemoryEngine();
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000 });
    spy.hold();
    await engine.write([put('a', '1')]);
    void engine.flush();
    await engine.write([put('b', '1')]);
    const closing = engine.close();
    await tick();
    expect(spy.closeCalls).toBe(0);
    spy.release();
    await closing;
    memory.reopen();
    expect(await contents(memory)).toEqual([
      ['a', '1'],
      ['b', '1'],
    ]);
  });
});

// ---------------------------------------------------------------------------------------------
// Model-based properties

const UNIVERSE = ['a', 'b', 'c', 'aa', 'ab', 'ac', 'ba', 'bb', 'bc', 'ca', 'cb', 'cc'];

type ModelStep =
  | { kind: 'write'; operations: Array<{ type: 'put' | 'del'; key: string }>; sync: boolean; awaited: boolean }
  | { kind: 'flush'; awaited: boolean }
  | { kind: 'deleteRange'; gte: string | undefined; lt: string | undefined; sync: boolean; awaited: boolean }
  | { kind: 'sleep' }
  | { kind: 'settle' };

interface Probe {
  readonly gte: string | undefined;
  readonly lt: string | undefined;
  readonly reverse: boolean;
  readonly limit: number | undefined;
}

interface EngineConfig {
  readonly flushDelayMs: number;
  readonly flushKeys: number;
  readonly flushBytes: number;
  readonly slow: boolean;
}

const keyArbitrary = fc.constantFrom(...UNIVERSE);
const boundArbitrary = fc.option(keyArbitrary, { nil: undefined });
const probeArbitrary: fc.Arbitrary<Probe> = fc.record({
  gte: boundArbitrary,
  lt: boundArbitrary,
  reverse: fc.boolean(),
  limit: fc.option(fc.nat({ max: 6 }), { nil: undefined }),
});
const configArbitrary: fc.Arbitrary<EngineConfig> = fc.record({
  flushDelayMs: fc.constantFrom(0, 1, 60_000),
  // Mostly large thresholds, so writes stay in the layers long enough to shadow the keys below.
  flushKeys: fc.oneof({ weight: 3, arbitrary: fc.constant(4096) }, { weight: 2, arbitrary: fc.constantFrom(1, 2, 3, 5) }),
  flushBytes: fc.oneof({ weight: 3, arbitrary: fc.constant(8 * 1024 * 1024) }, { weight: 1, arbitrary: fc.constantFrom(6, 20, 40) }),
  slow: fc.boolean(),
});
const stepArbitrary: fc.Arbitrary<ModelStep> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('write' as const),
      operations: fc.array(
        fc.record({ type: fc.oneof({ weight: 3, arbitrary: fc.constant('put' as const) }, { weight: 2, arbitrary: fc.constant('del' as const) }), key: keyArbitrary }),
        { maxLength: 4 },
      ),
      sync: fc.boolean(),
      awaited: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('flush' as const), awaited: fc.boolean() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('deleteRange' as const),
      gte: boundArbitrary,
      lt: boundArbitrary,
      sync: fc.boolean(),
      awaited: fc.boolean(),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'sleep' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'settle' as const }) },
);

function probeOptions(probe: Probe): IterateOptions {
  return { ...rangeOf(probe.gte, probe.lt), reverse: probe.reverse, ...(probe.limit !== undefined && { limit: probe.limit }) };
}

/** Keys strictly in iteration order, no repeats, inside the range, at most the limit. */
function expectWellFormed(got: Pair[], probe: Probe, label: string): void {
  if (probe.limit !== undefined) expect(got.length, label).toBeLessThanOrEqual(probe.limit);
  for (const [index, [key]] of got.entries()) {
    expect(inRange(key, probe.gte, probe.lt), `${label}: ${key} out of range`).toBe(true);
    if (index === 0) continue;
    const previous = got[index - 1]![0];
    expect(probe.reverse ? previous > key : previous < key, `${label}: ${previous} then ${key}`).toBe(true);
  }
}

/**
 * Runs the same steps against a WriteBehindEngine over a MemoryEngine and against a plain
 * MemoryEngine. A key is uncertain while a synced write or deleteRange that touched it is still
 * pending (not awaited) and no later write made its value known: the contract lets reads show
 * either value until the write resolves. Everything else must read exactly like the reference.
 */
class Harness {
  readonly memory = new MemoryEngine();
  readonly reference = new MemoryEngine();
  readonly engine: WriteBehindEngine;
  readonly errors: unknown[] = [];
  private readonly uncertain = new Map<string, Set<number>>();
  private pending: Array<Promise<unknown>> = [];
  private nextId = 0;
  private counter = 0;

  /** Writes `keys` straight into both engines below the layers, synced: the store's existing data. */
  async seed(keys: readonly string[]): Promise<void> {
    const operations = keys.map((key) => put(key, `seed-${key}`));
    await this.memory.write(operations, { sync: true });
    await this.reference.write(operations);
  }

  constructor(config: EngineConfig) {
    const below = config.slow ? new SpyEngine(this.memory, { slow: true }) : this.memory;
    this.engine = new WriteBehindEngine(below, {
      flushDelayMs: config.flushDelayMs,
      flushKeys: config.flushKeys,
      flushBytes: config.flushBytes,
    });
  }

  isCertain(key: string): boolean {
    return (this.uncertain.get(key)?.size ?? 0) === 0;
  }

  private certain(keys: string[]): void {
    for (const key of keys) this.uncertain.delete(key);
  }

  private pendingUntil(keys: string[], promise: Promise<void>): void {
    const id = this.nextId++;
    for (const key of keys) {
      let ids = this.uncertain.get(key);
      if (ids === undefined) this.uncertain.set(key, (ids = new Set()));
      ids.add(id);
    }
    this.pending.push(
      promise.then(
        () => {
          for (const key of keys) this.uncertain.get(key)?.delete(id);
        },
        (error: unknown) => void this.errors.push(error),
      ),
    );
  }

  private background(promise: Promise<void>): void {
    this.pending.push(promise.catch((error: unknown) => void this.errors.push(error)));
  }

  /** Runs one step; returns the keys it touched. */
  async run(step: ModelStep): Promise<string[]> {
    switch (step.kind) {
      case 'write': {
        const operations = step.operations.map((operation) =>
          operation.type === 'put' ? put(operation.key, `v${this.counter++}`) : del(operation.key),
        );
        const keys = step.operations.map((operation) => operation.key);
        await this.reference.write(operations);
        const promise = this.engine.write(operations, { sync: step.sync });
        if (step.awaited) {
          await promise;
          this.certain(keys);
        } else if (!step.sync) {
          // An unsynced write is visible as soon as write returns.
          this.background(promise);
          this.certain(keys);
        } else {
          this.pendingUntil(keys, promise);
        }
        return keys;
      }
      case 'flush': {
        const promise = this.engine.flush();
        if (step.awaited) await promise;
        else this.background(promise);
        return [];
      }
      case 'deleteRange': {
        const keys = UNIVERSE.filter((key) => inRange(key, step.gte, step.lt));
        await this.reference.deleteRange(rangeOf(step.gte, step.lt));
        const promise = this.engine.deleteRange(rangeOf(step.gte, step.lt), { sync: step.sync });
        if (step.awaited) {
          await promise;
          this.certain(keys);
        } else {
          this.pendingUntil(keys, promise);
        }
        return keys;
      }
      case 'sleep':
        await sleep(1);
        return [];
      case 'settle':
        await this.settle();
        return [];
    }
  }

  async settle(): Promise<void> {
    await Promise.all(this.pending.splice(0));
    expect(this.errors).toEqual([]);
    expect(UNIVERSE.filter((key) => !this.isCertain(key))).toEqual([]);
  }

  /** Every certain key reads like the reference, through get, getMany and the probes. */
  async check(probes: readonly Probe[]): Promise<void> {
    for (const key of UNIVERSE) {
      if (!this.isCertain(key)) continue;
      expect(s(await this.engine.get(t(key))), `get ${key}`).toBe(s(await this.reference.get(t(key))));
    }
    const certainBeforeMany = UNIVERSE.filter((key) => this.isCertain(key));
    const many = await this.engine.getMany(UNIVERSE.map(t));
    const expectedMany = await this.reference.getMany(UNIVERSE.map(t));
    for (const key of certainBeforeMany) {
      const index = UNIVERSE.indexOf(key);
      expect(s(many[index]), `getMany ${key}`).toBe(s(expectedMany[index]));
    }
    for (const probe of probes) {
      const label = JSON.stringify(probe);
      const keys = UNIVERSE.filter((key) => inRange(key, probe.gte, probe.lt));
      const certain = new Set(keys.filter((key) => this.isCertain(key)));
      const got = await entries(this.engine, probeOptions(probe));
      const expected = await entries(this.reference, probeOptions(probe));
      if (certain.size === keys.length) {
        expect(got, label).toEqual(expected);
        continue;
      }
      expectWellFormed(got, probe, label);
      if (probe.limit !== undefined) continue;
      const gotMap = new Map(got);
      const expectedMap = new Map(expected);
      for (const key of certain) expect(gotMap.get(key), `${label} ${key}`).toBe(expectedMap.get(key));
    }
  }

  /** Settles, compares everything, closes, and checks the engine below holds the reference's state. */
  async finish(): Promise<void> {
    await this.settle();
    await this.check([{ gte: undefined, lt: undefined, reverse: false, limit: undefined }]);
    await this.engine.close();
    this.memory.reopen();
    expect(await contents(this.memory)).toEqual(await entries(this.reference));
    expect(this.memory.unsyncedBatchCount).toBe(0);
  }
}

describe('WriteBehindEngine: model-based properties', () => {
  it('reads like a plain MemoryEngine after every step of random writes, flushes and deleteRanges', async () => {
    await fc.assert(
      fc.asyncProperty(
        configArbitrary,
        fc.subarray(UNIVERSE),
        fc.array(fc.tuple(stepArbitrary, fc.array(probeArbitrary, { minLength: 1, maxLength: 2 })), { maxLength: 25 }),
        async (config, seed, steps) => {
          const harness = new Harness(config);
          await harness.seed(seed);
          for (const [step, probes] of steps) {
            await harness.run(step);
            await harness.check(probes);
          }
          await harness.finish();
        },
      ),
      { numRuns: 300 },
    );
  });

  it('iterates in strict order without repeats or skips while writes and flushes land between steps', async () => {
    await fc.assert(
      fc.asyncProperty(
        configArbitrary,
        fc.subarray(UNIVERSE),
        fc.array(stepArbitrary, { maxLength: 12 }),
        probeArbitrary,
        fc.array(fc.array(stepArbitrary, { maxLength: 3 }), { maxLength: 12 }),
        async (config, seed, setupSteps, probe, between) => {
          const harness = new Harness(config);
          await harness.seed(seed);
          for (const step of setupSteps) await harness.run(step);
          await harness.settle();
          const start = new Map(await entries(harness.reference));
          const seenValues = new Map<string, Set<string>>();
          for (const [key, value] of start) seenValues.set(key, new Set([value]));
          const touched = new Set<string>();

          const got: Pair[] = [];
          const iterator = harness.engine.iterate(probeOptions(probe))[Symbol.asyncIterator]();
          for (let step = 0; ; step++) {
            const next = await iterator.next();
            if (next.done === true) break;
            got.push([decoder.decode(next.value[0]), decoder.decode(next.value[1])]);
            for (const current of between[step] ?? []) {
              const keys = await harness.run(current);
              for (const key of keys) touched.add(key);
              for (const [key, value] of await entries(harness.reference)) {
                let values = seenValues.get(key);
                if (values === undefined) seenValues.set(key, (values = new Set()));
                values.add(value);
              }
            }
          }

          const label = JSON.stringify(probe);
          expectWellFormed(got, probe, label);
          for (const [key, value] of got) {
            if (touched.has(key)) expect(seenValues.get(key)?.has(value), `${label}: ${key}=${value} never written`).toBe(true);
            else expect(value, `${label}: untouched ${key}`).toBe(start.get(key));
          }
          // Untouched keys present at the start are all seen, up to where the iteration stopped.
          const last = got.at(-1)?.[0];
          const reachedLimit = probe.limit !== undefined && got.length >= probe.limit;
          const yielded = new Set(got.map(([key]) => key));
          for (const key of start.keys()) {
            if (touched.has(key) || !inRange(key, probe.gte, probe.lt)) continue;
            const within = !reachedLimit || (last !== undefined && (probe.reverse ? key >= last : key <= last));
            if (within) expect(yielded.has(key), `${label}: skipped untouched ${key}`).toBe(true);
          }
          await harness.finish();
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('WriteBehindEngine: known issues (it.fails: these pass while the bug is present)', () => {
  // BUG: flush() only waits for the layer it seals itself. When the open layer is empty but an
  // older layer is still being written below (sealed by the flushKeys/flushBytes threshold or the
  // timer), flush() resolves at once: the writes are not below yet, and if that write fails the
  // caller of flush() is not told. Drop `.fails` once flush() waits for the whole chain.
  it('flush() resolves only once every earlier write is below', async () => {
    const memory = new MemoryEngine();
    const spy = new SpyEngine(memory);
    const engine = new WriteBehindEngine(spy, { flushDelayMs: 60_000, flushKeys: 1 });
    spy.hold();
    await engine.write([put('a', '1')]); // the threshold seals the layer; its write below is held
    let flushed = false;
    const flushing = engine.flush().then(() => (flushed = true));
    await tick();
    const resolvedEarly = flushed;
    spy.release();
    await flushing;
    expect(resolvedEarly).toBe(false);
  });
});

describe('WriteBehindEngine.getSync', () => {
  it('answers from the layers first, then from the engine below, and exists only when the engine below has it', async () => {
    const memory = new MemoryEngine();
    await memory.write([put('a', 'below'), put('b', 'below')], { sync: true });
    const engine = new WriteBehindEngine(memory, { flushDelayMs: 60_000 });
    expect(engine.getSync).toBeTypeOf('function');
    await engine.write([put('a', 'layer'), del('b'), put('c', 'new')]);
    const text = (bytes: Uint8Array | undefined): string | undefined => (bytes === undefined ? undefined : new TextDecoder().decode(bytes));
    expect(text(engine.getSync!(t('a')))).toBe('layer');
    expect(engine.getSync!(t('b'))).toBeUndefined();
    expect(text(engine.getSync!(t('c')))).toBe('new');
    await engine.flush();
    expect(text(engine.getSync!(t('a')))).toBe('layer');
    expect(engine.getSync!(t('b'))).toBeUndefined();
    await engine.close();

    // An engine below without getSync: the wrapper must not offer one (it could not answer misses).
    const withoutSync: StorageEngine = {
      get: (key) => memory.get(key),
      iterate: (options) => memory.iterate(options),
      write: (operations, options) => memory.write(operations, options),
      close: async () => undefined,
    };
    memory.reopen();
    expect(new WriteBehindEngine(withoutSync).getSync).toBeUndefined();
  });
});
