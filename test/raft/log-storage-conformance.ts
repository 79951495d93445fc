/**
 * The shared conformance suite for LogStorage implementations: MemoryLogStorage (the simulator's)
 * and PersistentLogStorage (the node's) must pass it unchanged, so the Raft core sees the same log
 * whichever one it runs on.
 *
 * Each implementation comes wrapped in a LogStorageHarness: the read-only LogStorage the core uses,
 * plus host mutators with one shape for all (implementations differ in how the host writes: direct
 * calls, or staging plus an engine write). `reload`, when given, rebuilds the storage from what it
 * made durable, to check persistence.
 *
 * Snapshot data is not the storage's business (PersistentLogStorage asks the host for it), so the
 * harnesses derive it from the metadata with conformanceSnapshotData and the suite checks that.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { isRaftError, type RaftErrorCode } from '../../src/raft/errors.js';
import type { LogStorage } from '../../src/raft/storage.js';
import {
  EMPTY_HARD_STATE,
  EntryType,
  entryBytes,
  type ConfState,
  type Entry,
  type HardState,
  type SnapshotMeta,
} from '../../src/raft/types.js';

export interface LogStorageHarness extends LogStorage {
  /** Appends entries, truncating the conflicting suffix (the Ready's `entries`). */
  append(entries: readonly Entry[]): Promise<void>;
  setHardState(hardState: HardState): Promise<void>;
  /** Installs a snapshot received from the leader (the Ready's `snapshot`). */
  applySnapshot(meta: SnapshotMeta): Promise<void>;
  /** Records a snapshot the host took of its state machine at `index` (term taken from the log). */
  createSnapshotMeta(index: number, confState: ConfState): Promise<void>;
  compact(index: number): Promise<void>;
  bootstrap(confState: ConfState): Promise<void>;
  /** Rebuilds the storage from its durable state; absent for purely in-memory storage. */
  reload?(): Promise<void>;
  /** Releases resources (an open database); called once after each test. */
  close?(): Promise<void>;
}

export interface LogStorageConformanceOptions {
  /** fast-check runs for the model test; lower it for slow (fsyncing) storage. */
  readonly propertyRuns?: number;
}

/** The snapshot bytes a harness reports for `meta`: deterministic, and different for different metadata. */
export function conformanceSnapshotData(meta: SnapshotMeta): Uint8Array {
  const { voters, learners } = meta.confState;
  return new TextEncoder().encode(`snapshot ${meta.index}/${meta.term} v=${voters.join(',')} l=${learners.join(',')}`);
}

const unbounded = Number.MAX_SAFE_INTEGER;
const members: ConfState = { voters: [1, 2, 3], learners: [4] };

function entry(index: number, term: number, data: Uint8Array | number = 0, type = EntryType.Normal): Entry {
  const bytes = typeof data === 'number' ? new Uint8Array(data).fill(index & 0xff) : data;
  return { index, term, type, data: bytes };
}

/** Entries lo..hi inclusive, all of one term. */
function run(lo: number, hi: number, term: number, size = 0): Entry[] {
  const entries: Entry[] = [];
  for (let index = lo; index <= hi; index++) entries.push(entry(index, term, size));
  return entries;
}

function errorCodeOf(action: () => unknown): RaftErrorCode | 'none' {
  try {
    action();
    return 'none';
  } catch (error) {
    if (isRaftError(error)) return error.code;
    throw error;
  }
}

function termOrCode(storage: LogStorage, index: number): number | RaftErrorCode {
  try {
    return storage.term(index);
  } catch (error) {
    if (isRaftError(error)) return error.code;
    throw error;
  }
}

function indexesOf(entries: readonly Entry[]): number[] {
  return entries.map((e) => e.index);
}

// ------------------------------------------------------------------ the model for the property test

/** The simplest description of a log: what every LogStorage must report. */
interface LogModel {
  hardState: HardState;
  snapshot: SnapshotMeta;
  /** Index and term of the last entry no longer in the log. */
  base: { index: number; term: number };
  entries: Entry[];
}

function emptyModel(): LogModel {
  return {
    hardState: EMPTY_HARD_STATE,
    snapshot: { index: 0, term: 0, confState: { voters: [], learners: [] } },
    base: { index: 0, term: 0 },
    entries: [],
  };
}

function modelLast(model: LogModel): number {
  return model.base.index + model.entries.length;
}

function modelTerm(model: LogModel, index: number): number | RaftErrorCode {
  if (index < model.base.index) return 'COMPACTED';
  if (index === model.base.index) return model.base.term;
  const found = model.entries.find((e) => e.index === index);
  return found === undefined ? 'UNAVAILABLE' : found.term;
}

function modelEntries(model: LogModel, lo: number, hi: number, maxBytes: number): Entry[] | RaftErrorCode {
  if (lo <= model.base.index) return 'COMPACTED';
  if (hi > modelLast(model) + 1) return 'UNAVAILABLE';
  const wanted = model.entries.filter((e) => e.index >= lo && e.index < hi);
  const kept: Entry[] = [];
  let total = 0;
  for (const e of wanted) {
    total += entryBytes(e);
    if (kept.length > 0 && total > maxBytes) break;
    kept.push(e);
  }
  return kept;
}

/** Everything the core can observe, read through the LogStorage interface. */
function observe(storage: LogStorage): unknown {
  const first = storage.firstIndex();
  const last = storage.lastIndex();
  const terms: Array<number | RaftErrorCode> = [];
  for (let index = Math.max(0, first - 2); index <= last + 1; index++) {
    terms.push(termOrCode(storage, index));
  }
  const snapshot = storage.snapshot();
  return {
    first,
    last,
    terms,
    entries: storage.entries(first, last + 1, unbounded).map((e) => ({ ...e, data: [...e.data] })),
    initialState: storage.initialState(),
    snapshot: snapshot.meta,
    // No snapshot yet (index 0): what data reads as is up to the implementation.
    snapshotData: snapshot.meta.index === 0 ? [] : [...snapshot.data],
  };
}

function observeModel(model: LogModel): unknown {
  const first = model.base.index + 1;
  const last = modelLast(model);
  const terms: Array<number | RaftErrorCode> = [];
  for (let index = Math.max(0, first - 2); index <= last + 1; index++) terms.push(modelTerm(model, index));
  return {
    first,
    last,
    terms,
    entries: model.entries.map((e) => ({ ...e, data: [...e.data] })),
    initialState: { hardState: model.hardState, confState: model.snapshot.confState },
    snapshot: model.snapshot,
    snapshotData: model.snapshot.index === 0 ? [] : [...conformanceSnapshotData(model.snapshot)],
  };
}

/**
 * Abstract operations: each field is a seed that is turned into a valid operation for the model's
 * current state (valid as the Raft core would issue it), so every generated sequence is legal and
 * shrinks well.
 */
type OpSeed =
  | { kind: 'append'; at: number; count: number; termBump: number; size: number; confChange: boolean }
  | { kind: 'hardState'; termBump: number; vote: number; commitAt: number }
  | { kind: 'applySnapshot'; ahead: number; termBump: number; voters: number }
  | { kind: 'createSnapshot'; at: number; voters: number }
  | { kind: 'compact'; at: number }
  | { kind: 'read'; lo: number; span: number; maxBytes: number }
  | { kind: 'reload' };

const termBump = fc.integer({ min: 0, max: 2 });
const voterCount = fc.integer({ min: 1, max: 5 });
const opSeed: fc.Arbitrary<OpSeed> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      at: fc.nat(),
      count: fc.integer({ min: 1, max: 5 }),
      termBump,
      size: fc.integer({ min: 0, max: 40 }),
      confChange: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('hardState' as const), termBump, vote: fc.integer({ min: 0, max: 3 }), commitAt: fc.nat() }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('applySnapshot' as const), ahead: fc.integer({ min: 1, max: 8 }), termBump, voters: voterCount }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('createSnapshot' as const), at: fc.nat(), voters: voterCount }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('compact' as const), at: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('read' as const), lo: fc.nat(), span: fc.nat({ max: 8 }), maxBytes: fc.integer({ min: 0, max: 200 }) }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'reload' as const }) },
);

function pick(seed: number, lo: number, hi: number): number {
  return lo + (seed % (hi - lo + 1));
}

function votersFrom(seed: number): ConfState {
  return { voters: Array.from({ length: seed }, (_, i) => i + 1), learners: seed % 2 === 0 ? [seed + 1] : [] };
}

/** Applies one seed to the harness and the model. */
async function step(harness: LogStorageHarness, model: LogModel, seed: OpSeed): Promise<void> {
  const last = modelLast(model);
  switch (seed.kind) {
    case 'append': {
      // The core appends after its commit index, never under a snapshot, and without gaps.
      const low = Math.max(model.base.index, model.snapshot.index, model.hardState.commit) + 1;
      const start = pick(seed.at, low, last + 1);
      const term = (modelTerm(model, start - 1) as number) + seed.termBump;
      const type = seed.confChange ? EntryType.ConfChange : EntryType.Normal;
      const entries = Array.from({ length: seed.count }, (_, i) => entry(start + i, term, seed.size + i, type));
      await harness.append(entries);
      model.entries = model.entries.filter((e) => e.index < start).concat(entries);
      return;
    }
    case 'hardState': {
      const previous = model.hardState;
      const term = previous.term + seed.termBump;
      const vote = seed.termBump === 0 && previous.vote !== 0 ? previous.vote : seed.vote;
      const commit = pick(seed.commitAt, previous.commit, Math.max(previous.commit, last));
      model.hardState = { term, vote, commit };
      await harness.setHardState(model.hardState);
      return;
    }
    case 'applySnapshot': {
      const index = Math.max(model.hardState.commit, model.snapshot.index) + seed.ahead;
      const term = Math.max(model.base.term, model.snapshot.term, lastTerm(model)) + seed.termBump;
      const meta = { index, term, confState: votersFrom(seed.voters) };
      await harness.applySnapshot(meta);
      model.snapshot = meta;
      model.base = { index, term };
      model.entries = [];
      return;
    }
    case 'createSnapshot': {
      const index = pick(seed.at, model.snapshot.index, Math.max(model.snapshot.index, Math.min(last, model.hardState.commit)));
      const meta = { index, term: modelTerm(model, index) as number, confState: votersFrom(seed.voters) };
      await harness.createSnapshotMeta(index, meta.confState);
      model.snapshot = meta;
      return;
    }
    case 'compact': {
      const index = pick(seed.at, model.base.index, model.snapshot.index);
      await harness.compact(index);
      if (index > model.base.index) {
        model.base = { index, term: modelTerm(model, index) as number };
        model.entries = model.entries.filter((e) => e.index > index);
      }
      return;
    }
    case 'read': {
      const lo = pick(seed.lo, Math.max(0, model.base.index - 1), last + 2);
      const hi = lo + seed.span;
      const expected = modelEntries(model, lo, hi, seed.maxBytes);
      if (typeof expected === 'string') {
        expect(errorCodeOf(() => harness.entries(lo, hi, seed.maxBytes))).toBe(expected);
      } else {
        expect(indexesOf(harness.entries(lo, hi, seed.maxBytes))).toEqual(indexesOf(expected));
      }
      return;
    }
    case 'reload':
      await harness.reload?.();
      return;
  }
}

function lastTerm(model: LogModel): number {
  return modelTerm(model, modelLast(model)) as number;
}

// ------------------------------------------------------------------ the suite

export function runLogStorageConformance(
  name: string,
  factory: () => Promise<LogStorageHarness>,
  options: LogStorageConformanceOptions = {},
): void {
  describe(`LogStorage conformance: ${name}`, () => {
    const open: LogStorageHarness[] = [];
    const fresh = async (): Promise<LogStorageHarness> => {
      const harness = await factory();
      open.push(harness);
      return harness;
    };
    /** Checks `check` now and, when the storage persists, again after a reload. */
    const checkAndReload = async (harness: LogStorageHarness, check: () => void): Promise<void> => {
      check();
      if (harness.reload === undefined) return;
      await harness.reload();
      check();
    };
    afterEach(async () => {
      for (const harness of open.splice(0)) await harness.close?.();
    });

    it('starts as an empty log', async () => {
      const log = await fresh();
      await checkAndReload(log, () => {
        expect(log.firstIndex()).toBe(1);
        expect(log.lastIndex()).toBe(0);
        expect(log.term(0)).toBe(0);
        expect(errorCodeOf(() => log.term(1))).toBe('UNAVAILABLE');
        expect(log.entries(1, 1, unbounded)).toEqual([]);
        expect(errorCodeOf(() => log.entries(0, 1, unbounded))).toBe('COMPACTED');
        expect(errorCodeOf(() => log.entries(1, 2, unbounded))).toBe('UNAVAILABLE');
        expect(log.initialState()).toEqual({ hardState: EMPTY_HARD_STATE, confState: { voters: [], learners: [] } });
        expect(log.snapshot().meta).toEqual({ index: 0, term: 0, confState: { voters: [], learners: [] } });
      });
    });

    it('bootstraps a new group at index 1, term 1', async () => {
      const log = await fresh();
      await log.bootstrap(members);
      await checkAndReload(log, () => {
        expect(log.firstIndex()).toBe(2);
        expect(log.lastIndex()).toBe(1);
        expect(log.term(1)).toBe(1);
        expect(errorCodeOf(() => log.term(0))).toBe('COMPACTED');
        expect(log.initialState()).toEqual({ hardState: { term: 1, vote: 0, commit: 1 }, confState: members });
        const snapshot = log.snapshot();
        expect(snapshot.meta).toEqual({ index: 1, term: 1, confState: members });
        expect(snapshot.data).toEqual(conformanceSnapshotData(snapshot.meta));
      });
      await expect(log.bootstrap(members)).rejects.toThrow();
    });

    it('appends, and truncates a conflicting suffix before appending (Raft §5.3)', async () => {
      const log = await fresh();
      await log.bootstrap(members);
      await log.append(run(2, 6, 1));
      expect(log.lastIndex()).toBe(6);
      await log.append([entry(4, 2, 3), entry(5, 2, 4)]);
      await checkAndReload(log, () => {
        expect(log.lastIndex()).toBe(5);
        expect([2, 3, 4, 5].map((i) => log.term(i))).toEqual([1, 1, 2, 2]);
        expect(errorCodeOf(() => log.term(6))).toBe('UNAVAILABLE');
        expect(log.entries(4, 6, unbounded)).toEqual([entry(4, 2, 3), entry(5, 2, 4)]);
      });
      // Extending at lastIndex + 1 keeps what is there.
      await log.append([entry(6, 3, 1, EntryType.ConfChange)]);
      await checkAndReload(log, () => {
        expect(indexesOf(log.entries(2, 7, unbounded))).toEqual([2, 3, 4, 5, 6]);
        expect(log.entries(6, 7, unbounded)[0]?.type).toBe(EntryType.ConfChange);
      });
      // A gap is a programming error.
      await expect(log.append([entry(9, 3)])).rejects.toThrow();
    });

    it('skips appended entries that a snapshot already covers', async () => {
      const log = await fresh();
      await log.bootstrap(members);
      await log.applySnapshot({ index: 10, term: 2, confState: members });
      await log.append(run(8, 12, 2));
      await checkAndReload(log, () => {
        expect(log.firstIndex()).toBe(11);
        expect(log.lastIndex()).toBe(12);
        expect(indexesOf(log.entries(11, 13, unbounded))).toEqual([11, 12]);
      });
    });

    it('limits entries() by size but always returns at least one', async () => {
      const log = await fresh();
      await log.bootstrap(members);
      await log.append(run(2, 6, 1, 100));
      const one = entryBytes(entry(2, 1, 100));
      await checkAndReload(log, () => {
        expect(indexesOf(log.entries(2, 7, 0))).toEqual([2]);
        expect(indexesOf(log.entries(2, 7, one))).toEqual([2]);
        expect(indexesOf(log.entries(2, 7, 2 * one))).toEqual([2, 3]);
        expect(indexesOf(log.entries(2, 7, 3 * one - 1))).toEqual([2, 3]);
        expect(indexesOf(log.entries(2, 7, unbounded))).toEqual([2, 3, 4, 5, 6]);
        expect(indexesOf(log.entries(3, 5, unbounded))).toEqual([3, 4]);
        expect(log.entries(4, 4, 0)).toEqual([]);
        const big = log.entries(2, 3, 1)[0];
        expect(big?.data.length).toBe(100);
      });
    });

    it('reports COMPACTED below the first index and UNAVAILABLE beyond the last', async () => {
      const log = await fresh();
      await log.bootstrap(members);
      await log.append(run(2, 10, 1));
      await log.createSnapshotMeta(7, members);
      await log.compact(5);
      await checkAndReload(log, () => {
        expect(log.firstIndex()).toBe(6);
        expect(errorCodeOf(() => log.term(4))).toBe('COMPACTED');
        expect(errorCodeOf(() => log.entries(5, 7, unbounded))).toBe('COMPACTED');
        expect(errorCodeOf(() => log.entries(4, 11, unbounded))).toBe('COMPACTED');
        expect(errorCodeOf(() => log.term(11))).toBe('UNAVAILABLE');
        expect(errorCodeOf(() => log.entries(6, 12, unbounded))).toBe('UNAVAILABLE');
        expect(indexesOf(log.entries(6, 11, unbounded))).toEqual([6, 7, 8, 9, 10]);
      });
    });

    it('installs a snapshot from the leader, replacing the whole log', async () => {
      const log = await fresh();
      await log.bootstrap(members);
      await log.append(run(2, 10, 1));
      const ahead: SnapshotMeta = { index: 20, term: 5, confState: { voters: [1, 2], learners: [] } };
      await log.applySnapshot(ahead);
      await checkAndReload(log, () => {
        expect(log.firstIndex()).toBe(21);
        expect(log.lastIndex()).toBe(20);
        expect(log.term(20)).toBe(5);
        expect(errorCodeOf(() => log.term(19))).toBe('COMPACTED');
        expect(errorCodeOf(() => log.term(21))).toBe('UNAVAILABLE');
        expect(log.entries(21, 21, unbounded)).toEqual([]);
        expect(log.snapshot().meta).toEqual(ahead);
        expect(log.snapshot().data).toEqual(conformanceSnapshotData(ahead));
        expect(log.initialState().confState).toEqual(ahead.confState);
      });
      // An older snapshot changes nothing.
      await log.applySnapshot({ index: 15, term: 4, confState: members });
      expect(log.snapshot().meta).toEqual(ahead);
      // A snapshot inside a longer log still replaces all of it.
      await log.append(run(21, 30, 5));
      await log.applySnapshot({ index: 25, term: 6, confState: members });
      await checkAndReload(log, () => {
        expect(log.firstIndex()).toBe(26);
        expect(log.lastIndex()).toBe(25);
        expect(log.term(25)).toBe(6);
      });
    });

    it('compacts only what the snapshot covers, and answers term at the boundary', async () => {
      const log = await fresh();
      await log.bootstrap(members);
      await log.append([...run(2, 5, 1), ...run(6, 9, 2)]);
      await log.createSnapshotMeta(8, members);
      await expect(log.compact(9)).rejects.toThrow();
      await log.compact(6);
      await checkAndReload(log, () => {
        expect(log.firstIndex()).toBe(7);
        // term(firstIndex - 1) answers with the term of the last compacted entry.
        expect(log.term(6)).toBe(2);
        expect(log.snapshot().meta).toEqual({ index: 8, term: 2, confState: members });
      });
      // Compacting again at or below the first index is a no-op.
      await log.compact(4);
      expect(log.firstIndex()).toBe(7);
      await log.compact(8);
      await checkAndReload(log, () => {
        expect(log.firstIndex()).toBe(9);
        expect(log.term(8)).toBe(2);
        expect(indexesOf(log.entries(9, 10, unbounded))).toEqual([9]);
      });
    });

    it('records a local snapshot only inside the log', async () => {
      const log = await fresh();
      await log.bootstrap(members);
      await log.append(run(2, 4, 3));
      await expect(log.createSnapshotMeta(5, members)).rejects.toThrow();
      await log.createSnapshotMeta(4, { voters: [1], learners: [] });
      await checkAndReload(log, () => {
        expect(log.snapshot().meta).toEqual({ index: 4, term: 3, confState: { voters: [1], learners: [] } });
        // Taking a snapshot does not compact.
        expect(log.firstIndex()).toBe(2);
      });
      await expect(log.createSnapshotMeta(3, members)).rejects.toThrow();
    });

    it('round-trips the hard state', async () => {
      const log = await fresh();
      await log.bootstrap(members);
      await log.append(run(2, 5, 2));
      const hardState = { term: 7, vote: 3, commit: 4 };
      await log.setHardState(hardState);
      await checkAndReload(log, () => {
        expect(log.initialState()).toEqual({ hardState, confState: members });
      });
      const large = { term: 2 ** 40, vote: 2 ** 33, commit: 5 };
      await log.setHardState(large);
      await checkAndReload(log, () => expect(log.initialState().hardState).toEqual(large));
    });

    it('keeps everything across a reload', async () => {
      const log = await fresh();
      await log.bootstrap(members);
      await log.append([...run(2, 5, 1, 7), entry(6, 1, 0, EntryType.ConfChange), ...run(7, 9, 2, 300)]);
      await log.setHardState({ term: 2, vote: 1, commit: 8 });
      await log.createSnapshotMeta(7, members);
      await log.compact(4);
      const before = observe(log);
      await log.reload?.();
      expect(observe(log)).toEqual(before);
    });

    it('matches a simple model over random operation sequences', async () => {
      await fc.assert(
        fc.asyncProperty(fc.boolean(), fc.array(opSeed, { maxLength: 30 }), async (bootstrapFirst, seeds) => {
          const log = await factory();
          try {
            const model = emptyModel();
            if (bootstrapFirst) {
              await log.bootstrap(members);
              model.snapshot = { index: 1, term: 1, confState: members };
              model.base = { index: 1, term: 1 };
              model.hardState = { term: 1, vote: 0, commit: 1 };
            }
            expect(observe(log)).toEqual(observeModel(model));
            for (const seed of seeds) {
              await step(log, model, seed);
              expect(observe(log)).toEqual(observeModel(model));
            }
            await log.reload?.();
            expect(observe(log)).toEqual(observeModel(model));
          } finally {
            await log.close?.();
          }
        }),
        { numRuns: options.propertyRuns ?? 200 },
      );
    });
  });
}
