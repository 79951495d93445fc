import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import {
  RAFT_LOG_FORMAT_VERSION,
  RaftLogKeys,
  decodeEntry,
  decodeHardState,
  decodeSnapshotMeta,
  decodeTruncatedState,
  encodeEntry,
  encodeHardState,
  encodeSnapshotMeta,
  encodeTruncatedState,
} from '../../src/node/raftlog/raft-log-codec.js';
import { PersistentLogStorage, type LogStorageOptions, type SnapshotSource } from '../../src/node/raftlog/raft-log-store.js';
import { RaftError, isRaftError } from '../../src/raft/errors.js';
import { RawNode, type Ready } from '../../src/raft/rawnode.js';
import { Rng } from '../../src/raft/rng.js';
import { EntryType, type ConfState, type Entry, type HardState, type SnapshotMeta } from '../../src/raft/types.js';
import { LevelEngine } from '../../src/storage/level-engine.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type { StorageEngine, WriteOperation } from '../../src/storage/storage-engine.js';
import { conformanceSnapshotData, runLogStorageConformance, type LogStorageHarness } from '../raft/log-storage-conformance.js';

const conformanceSource: SnapshotSource = { snapshotData: conformanceSnapshotData };
const members: ConfState = { voters: [1, 2, 3], learners: [] };
const unbounded = Number.MAX_SAFE_INTEGER;

/** PersistentLogStorage behind the uniform harness: every mutation is staged, then written with sync. */
class PersistentHarness implements LogStorageHarness {
  private constructor(
    private engine: StorageEngine,
    private storage: PersistentLogStorage,
    private readonly groupId: number,
    private readonly reopenEngine: (engine: StorageEngine) => Promise<StorageEngine>,
    private readonly options: LogStorageOptions,
  ) {}

  static async open(
    engine: StorageEngine,
    groupId: number,
    reopenEngine: (engine: StorageEngine) => Promise<StorageEngine>,
    options: LogStorageOptions = {},
  ): Promise<PersistentHarness> {
    const storage = await PersistentLogStorage.load(engine, groupId, conformanceSource, options);
    return new PersistentHarness(engine, storage, groupId, reopenEngine, options);
  }

  initialState() {
    return this.storage.initialState();
  }
  entries(lo: number, hi: number, maxBytes: number) {
    return this.storage.entries(lo, hi, maxBytes);
  }
  term(index: number) {
    return this.storage.term(index);
  }
  firstIndex() {
    return this.storage.firstIndex();
  }
  lastIndex() {
    return this.storage.lastIndex();
  }
  snapshot() {
    return this.storage.snapshot();
  }

  async append(entries: readonly Entry[]): Promise<void> {
    await this.write(this.storage.stageEntries(entries));
  }
  async setHardState(hardState: HardState): Promise<void> {
    await this.write(this.storage.stageHardState(hardState));
  }
  async applySnapshot(meta: SnapshotMeta): Promise<void> {
    await this.write(this.storage.stageSnapshot(meta));
  }
  async createSnapshotMeta(index: number, confState: ConfState): Promise<void> {
    await this.write(this.storage.stageSnapshotMeta({ index, term: this.storage.term(index), confState }));
  }
  async compact(index: number): Promise<void> {
    await this.write(this.storage.stageCompact(index));
  }
  async bootstrap(confState: ConfState): Promise<void> {
    await this.write(this.storage.stageBootstrap(confState));
  }
  async reload(): Promise<void> {
    this.engine = await this.reopenEngine(this.engine);
    this.storage = await PersistentLogStorage.load(this.engine, this.groupId, conformanceSource, this.options);
  }
  async close(): Promise<void> {
    await this.engine.close();
  }

  private async write(operations: WriteOperation[]): Promise<void> {
    await this.engine.write(operations, { sync: true });
  }
}

/**
 * Fills groups 6 and 8 around the group under test (7), so every conformance test also checks that
 * a group reads and deletes only its own keys.
 */
async function addNeighbours(engine: StorageEngine): Promise<void> {
  for (const groupId of [6, 8]) {
    const neighbour = await PersistentLogStorage.load(engine, groupId, conformanceSource);
    const operations = [
      ...neighbour.stageBootstrap(members),
      ...neighbour.stageEntries([2, 3, 4].map((index) => ({ index, term: 1, type: EntryType.Normal, data: Uint8Array.of(groupId) }))),
    ];
    await engine.write(operations, { sync: true });
  }
}

runLogStorageConformance(
  'PersistentLogStorage over MemoryEngine',
  async () => {
    const engine = new MemoryEngine();
    await addNeighbours(engine);
    // A crash drops nothing here, because every write was synced: that is what reload checks.
    return PersistentHarness.open(engine, 7, async (current) => {
      (current as MemoryEngine).crash();
      return current;
    });
  },
  { propertyRuns: 200 },
);

// The same contract with no entry memory at all: every entry of an earlier append is evicted and
// read back from the engine (log-window.ts), so a window that changed what the core reads fails here.
runLogStorageConformance(
  'PersistentLogStorage over MemoryEngine, log window of 0 bytes',
  async () => {
    const engine = new MemoryEngine();
    await addNeighbours(engine);
    return PersistentHarness.open(
      engine,
      7,
      async (current) => {
        (current as MemoryEngine).crash();
        return current;
      },
      { windowBytes: 0 },
    );
  },
  { propertyRuns: 200 },
);

const levelRoot = mkdtempSync(join(tmpdir(), 'atoll-raft-log-'));
let levelCounter = 0;
afterAll(() => rmSync(levelRoot, { recursive: true, force: true }));

runLogStorageConformance(
  'PersistentLogStorage over LevelEngine',
  async () => {
    const engine = await LevelEngine.open(join(levelRoot, `db-${levelCounter++}`));
    return PersistentHarness.open(engine, 7, async (current) => {
      await current.close();
      return LevelEngine.open((current as LevelEngine).location, { createIfMissing: false });
    });
  },
  { propertyRuns: 30 },
);

// ------------------------------------------------------------------ persistence specifics

function entry(index: number, term: number, size = 4, type = EntryType.Normal): Entry {
  return { index, term, type, data: new Uint8Array(size).fill(index & 0xff) };
}

function run(lo: number, hi: number, term: number): Entry[] {
  return Array.from({ length: hi - lo + 1 }, (_, i) => entry(lo + i, term));
}

/** What the core can see of a storage, for comparing two of them. */
function view(storage: PersistentLogStorage): unknown {
  const first = storage.firstIndex();
  const last = storage.lastIndex();
  return {
    first,
    last,
    boundaryTerm: storage.term(first - 1),
    entries: storage.entries(first, last + 1, unbounded),
    initialState: storage.initialState(),
    snapshotMeta: storage.snapshotMeta(),
  };
}

async function loadGroup(engine: StorageEngine, groupId: number): Promise<PersistentLogStorage> {
  return PersistentLogStorage.load(engine, groupId, conformanceSource);
}

async function keysOf(engine: StorageEngine): Promise<Uint8Array[]> {
  const keys: Uint8Array[] = [];
  for await (const [key] of engine.iterate({})) keys.push(key);
  return keys;
}

describe('PersistentLogStorage: crash between staging and writing', () => {
  it('reloads the previous state when the staged ops were never written, and the new one when they were', async () => {
    const engine = new MemoryEngine();
    const storage = await loadGroup(engine, 1);
    await engine.write([...storage.stageBootstrap(members), ...storage.stageEntries(run(2, 8, 1))], { sync: true });
    const before = view(storage);

    // One Ready's worth of changes, plus a local snapshot and compaction.
    const staged = [
      ...storage.stageEntries([entry(6, 2), entry(7, 2)]),
      ...storage.stageHardState({ term: 2, vote: 3, commit: 6 }),
      ...storage.stageSnapshotMeta({ index: 5, term: 1, confState: members }),
      ...storage.stageCompact(4),
    ];
    const after = view(storage);
    expect(after).not.toEqual(before);

    engine.crash();
    expect(view(await loadGroup(engine, 1))).toEqual(before);

    // Written without sync, a crash still loses it.
    await engine.write(staged);
    engine.crash();
    expect(view(await loadGroup(engine, 1))).toEqual(before);

    await engine.write(staged, { sync: true });
    engine.crash();
    expect(view(await loadGroup(engine, 1))).toEqual(after);
  });

  it('raises a commit index lost in a crash to the applied index on load, and never past the log', async () => {
    const engine = new MemoryEngine();
    const storage = await loadGroup(engine, 1);
    await engine.write([...storage.stageBootstrap(members), ...storage.stageEntries(run(2, 8, 1))], { sync: true });
    await engine.write(storage.stageHardState({ term: 1, vote: 1, commit: 3 }), { sync: true });
    // The node writes a commit-only change unsynced; the crash loses it, while the state
    // machine had applied up to 7 (its own batches were durable by then).
    await engine.write(storage.stageHardState({ term: 1, vote: 1, commit: 7 }));
    engine.crash();
    const reloaded = await loadGroup(engine, 1);
    expect(reloaded.hardState()).toEqual({ term: 1, vote: 1, commit: 3 });
    reloaded.raiseCommitTo(7);
    expect(reloaded.hardState()).toEqual({ term: 1, vote: 1, commit: 7 });
    reloaded.raiseCommitTo(5); // never lowers it
    expect(reloaded.hardState().commit).toBe(7);
    // A RawNode started from it accepts the applied index (it asserts applied <= commit).
    expect(() => new RawNode({ id: 1, storage: reloaded, rng: new Rng(1), applied: 7, electionTicks: 10, heartbeatTicks: 1 })).not.toThrow();
    expect(() => reloaded.raiseCommitTo(9)).toThrow(/beyond the log/);
  });

  it('keeps the vote floor of a replica opened empty for a move across a restart, with its records', async () => {
    const engine = new MemoryEngine();
    await engine.write(PersistentLogStorage.stageVoteFloor(1, { term: 2, index: 6 }), { sync: true });
    engine.crash();
    const empty = await loadGroup(engine, 1);
    expect(empty.voteFloor()).toEqual({ term: 2, index: 6 });
    expect((await loadGroup(engine, 2)).voteFloor()).toEqual({ term: 0, index: 0 });
    await engine.write([...empty.stageBootstrap(members), ...empty.stageEntries(run(2, 8, 1))], { sync: true });
    engine.crash();
    const reloaded = await loadGroup(engine, 1);
    expect(reloaded.voteFloor()).toEqual({ term: 2, index: 6 });
    // A RawNode built with it votes only for a log that reaches (term 2, index 6).
    const voteOf = (logTerm: number, index: number): boolean => {
      const raw = new RawNode({ id: 1, storage: reloaded, rng: new Rng(1), electionTicks: 10, heartbeatTicks: 1, voteFloor: reloaded.voteFloor() });
      raw.step({ type: 'vote', from: 2, to: 1, term: 3, index, logTerm });
      const answer = raw.ready().messages.find((message) => message.type === 'voteResp');
      return answer !== undefined && answer.reject !== true;
    };
    expect(voteOf(1, 9)).toBe(false); // Longer than this log, but of an older term than the floor.
    expect(voteOf(2, 5)).toBe(false);
    expect(voteOf(2, 6)).toBe(true);
    expect(voteOf(3, 1)).toBe(true);
    // It lies in the group's range, which deleting the replica deletes (ReplicaStore.deleteOps).
    const inRange: string[] = [];
    for await (const [key] of engine.iterate(new RaftLogKeys(1).groupRange())) inRange.push(Buffer.from(key).toString('hex'));
    expect(inRange).toContain(Buffer.from(new RaftLogKeys(1).voteFloor).toString('hex'));
  });

  it('with lazyCommit writes no record for a commit-only change, and always writes term and vote with the commit beside them', async () => {
    const engine = new MemoryEngine();
    const storage = await loadGroup(engine, 1);
    await engine.write([...storage.stageBootstrap(members), ...storage.stageEntries(run(2, 8, 1))], { sync: true });
    // A new term and vote are promises: written, with the commit index of the moment.
    const termOps = storage.stageHardState({ term: 2, vote: 1, commit: 3 }, { lazyCommit: true });
    expect(termOps).toHaveLength(1);
    await engine.write(termOps, { sync: true });
    // Commit-only moves: nothing to write (issue 18), yet memory follows and still refuses going back.
    expect(storage.stageHardState({ term: 2, vote: 1, commit: 5 }, { lazyCommit: true })).toEqual([]);
    expect(storage.stageHardState({ term: 2, vote: 1, commit: 8 }, { lazyCommit: true })).toEqual([]);
    expect(storage.hardState()).toEqual({ term: 2, vote: 1, commit: 8 });
    expect(() => storage.stageHardState({ term: 2, vote: 1, commit: 6 }, { lazyCommit: true })).toThrow(/commit went back/);
    // Without the option the store writes what it is given (the LogStorage contract of the tests).
    expect(storage.stageHardState({ term: 2, vote: 1, commit: 8 })).toEqual([]);
    // On disk the commit lags; load plus raiseCommitTo(applied) is what a restart sees.
    const reloaded = await loadGroup(engine, 1);
    expect(reloaded.hardState()).toEqual({ term: 2, vote: 1, commit: 3 });
    reloaded.raiseCommitTo(6);
    expect(() => new RawNode({ id: 1, storage: reloaded, rng: new Rng(1), applied: 6, electionTicks: 10, heartbeatTicks: 1 })).not.toThrow();
    // A new vote in a new term writes the record again, carrying the commit memory had.
    const ops = storage.stageHardState({ term: 3, vote: 2, commit: 8 }, { lazyCommit: true });
    await engine.write(ops, { sync: true });
    expect((await loadGroup(engine, 1)).hardState()).toEqual({ term: 3, vote: 2, commit: 8 });
  });

  it('survives a crash before an installed snapshot is written', async () => {
    const engine = new MemoryEngine();
    const storage = await loadGroup(engine, 1);
    await engine.write([...storage.stageBootstrap(members), ...storage.stageEntries(run(2, 8, 1))], { sync: true });
    const before = view(storage);
    const staged = [...storage.stageSnapshot({ index: 20, term: 3, confState: members }), ...storage.stageHardState({ term: 3, vote: 0, commit: 20 })];
    const after = view(storage);
    engine.crash();
    expect(view(await loadGroup(engine, 1))).toEqual(before);
    await engine.write(staged, { sync: true });
    expect(view(await loadGroup(engine, 1))).toEqual(after);
    // Only the three records remain: the entries were deleted with the same batch.
    expect(await keysOf(engine)).toHaveLength(3);
  });

  it('forgets the log after an interrupted snapshot install: the founding state, same term and vote, commit 1', async () => {
    const engine = new MemoryEngine();
    const storage = await loadGroup(engine, 1);
    await engine.write([...storage.stageBootstrap(members), ...storage.stageEntries(run(2, 30, 2))], { sync: true });
    await engine.write([...storage.stageSnapshotMeta({ index: 20, term: 2, confState: members }), ...storage.stageCompact(15)], { sync: true });
    await engine.write(storage.stageHardState({ term: 4, vote: 3, commit: 25 }), { sync: true });
    await engine.write(storage.stageRestartAfterInterruptedInstall(), { sync: true });
    const expected = { first: 2, last: 1, hardState: { term: 4, vote: 3, commit: 1 }, snapshot: { index: 1, term: 1, confState: members } };
    for (const reset of [storage, await loadGroup(engine, 1)]) {
      expect({ first: reset.firstIndex(), last: reset.lastIndex(), hardState: reset.hardState(), snapshot: reset.snapshotMeta() }).toEqual(expected);
    }
    // Nothing but the three records is left (every retained entry was deleted in the same batch).
    expect(await keysOf(engine)).toHaveLength(3);
  });

  it('writes many groups in one atomic batch', async () => {
    const engine = new MemoryEngine();
    const groupIds = [1, 2, 255, 256, 70_000];
    const groups = await Promise.all(groupIds.map((id) => loadGroup(engine, id)));
    await engine.write(groups.flatMap((group) => group.stageBootstrap(members)), { sync: true });
    const before = groups.map(view);

    const batch = groups.flatMap((group, i) => [
      ...group.stageEntries(run(2, 2 + i, 1)),
      ...group.stageHardState({ term: 1, vote: 0, commit: 2 }),
    ]);
    const after = groups.map(view);
    await engine.write(batch);
    engine.crash();
    expect(await Promise.all(groupIds.map(async (id) => view(await loadGroup(engine, id))))).toEqual(before);

    await engine.write(batch, { sync: true });
    engine.crash();
    const reloaded = await Promise.all(groupIds.map(async (id) => view(await loadGroup(engine, id))));
    expect(reloaded).toEqual(after);
    expect(reloaded.map((v) => (v as { last: number }).last)).toEqual([2, 3, 4, 5, 6]);
  });
});

describe('PersistentLogStorage: staging', () => {
  it('stages exactly the keys that change', async () => {
    const engine = new MemoryEngine();
    const storage = await loadGroup(engine, 3);
    const keys = new RaftLogKeys(3);
    await engine.write([...storage.stageBootstrap(members), ...storage.stageEntries(run(2, 10, 1))], { sync: true });

    const truncate = storage.stageEntries([entry(5, 2), entry(6, 2)]);
    expect(truncate.filter((op) => op.type === 'put').map((op) => op.key)).toEqual([keys.entry(5), keys.entry(6)]);
    expect(truncate.filter((op) => op.type === 'del').map((op) => op.key)).toEqual([7, 8, 9, 10].map((i) => keys.entry(i)));

    expect(storage.stageHardState(storage.hardState())).toEqual([]);
    expect(storage.stageSnapshot({ index: 1, term: 1, confState: members })).toEqual([]);
    expect(storage.stageCompact(1)).toEqual([]);

    storage.stageSnapshotMeta({ index: 5, term: 2, confState: members });
    const compact = storage.stageCompact(4);
    expect(compact).toEqual([
      ...[2, 3, 4].map((i) => ({ type: 'del', key: keys.entry(i) })),
      { type: 'put', key: keys.truncatedState, value: encodeTruncatedState({ index: 4, term: 1 }) },
    ]);
  });

  it('refuses what the core never asks for', async () => {
    const storage = await loadGroup(new MemoryEngine(), 1);
    storage.stageBootstrap(members);
    storage.stageEntries(run(2, 6, 2));
    storage.stageHardState({ term: 3, vote: 2, commit: 5 });
    // Snapshot metadata must match the log.
    expect(() => storage.stageSnapshotMeta({ index: 4, term: 1, confState: members })).toThrow(/term/);
    expect(() => storage.stageSnapshotMeta({ index: 7, term: 2, confState: members })).toThrow(/beyond last index/);
    storage.stageSnapshotMeta({ index: 5, term: 2, confState: members });
    // Entries a snapshot covers are applied, so committed: they never change.
    expect(() => storage.stageEntries([entry(5, 3)])).toThrow(/covered by snapshot/);
    expect(() => storage.stageEntries([entry(7, 2), entry(9, 2)])).toThrow(/contiguous/);
    expect(() => storage.stageEntries([entry(7, 1)])).toThrow(/lower term/);
    // Hard state: term and commit never go back, and one vote per term (Raft Figure 2).
    expect(() => storage.stageHardState({ term: 2, vote: 2, commit: 5 })).toThrow(/term went back/);
    expect(() => storage.stageHardState({ term: 3, vote: 1, commit: 5 })).toThrow(/vote changed/);
    expect(() => storage.stageHardState({ term: 3, vote: 2, commit: 4 })).toThrow(/commit went back/);
    storage.stageHardState({ term: 4, vote: 1, commit: 5 });
    expect(() => storage.stageBootstrap(members)).toThrow(/empty log/);
  });
});

describe('PersistentLogStorage: snapshot data', () => {
  it('asks the SnapshotSource and passes SNAPSHOT_TEMPORARILY_UNAVAILABLE through', async () => {
    let prepared: Uint8Array | undefined;
    const asked: SnapshotMeta[] = [];
    const source: SnapshotSource = {
      snapshotData(meta) {
        asked.push(meta);
        if (prepared === undefined) throw new RaftError('SNAPSHOT_TEMPORARILY_UNAVAILABLE', 'building');
        return prepared;
      },
    };
    const storage = await PersistentLogStorage.load(new MemoryEngine(), 1, source);
    storage.stageBootstrap(members);
    storage.stageEntries(run(2, 4, 1));
    storage.stageSnapshotMeta({ index: 3, term: 1, confState: members });
    expect(storage.snapshotMeta()).toEqual({ index: 3, term: 1, confState: members });
    expect(asked).toEqual([]);
    let thrown: unknown;
    try {
      storage.snapshot();
    } catch (error) {
      thrown = error;
    }
    expect(isRaftError(thrown, 'SNAPSHOT_TEMPORARILY_UNAVAILABLE')).toBe(true);
    prepared = Uint8Array.of(1, 2, 3);
    expect(storage.snapshot()).toEqual({ meta: { index: 3, term: 1, confState: members }, data: prepared });
    expect(asked.map((meta) => meta.index)).toEqual([3, 3]);
  });
});

describe('raft log key layout and encoding', () => {
  it('puts every record under the group prefix, entries in index order', async () => {
    const engine = new MemoryEngine();
    const storage = await loadGroup(engine, 0x0102_0304);
    const indexes = [2, 254, 255, 256, 257, 65_536, 2 ** 32, 2 ** 32 + 1];
    await engine.write(storage.stageBootstrap(members), { sync: true });
    // Jump the log to just below each index with a snapshot, then append one entry there.
    for (const index of indexes) {
      const next = storage.stageSnapshot({ index: index - 1, term: 1, confState: members });
      await engine.write([...next, ...storage.stageEntries([entry(index, 1)])], { sync: true });
    }
    const keys = await keysOf(engine);
    const prefix = [0x02, 0x01, 0x02, 0x03, 0x04];
    for (const key of keys) expect([...key.subarray(0, 5)]).toEqual(prefix);
    expect(keys.map((key) => String.fromCharCode(key[5]!))).toEqual(['e', 'h', 's', 't']);
    expect([...keys[0]!]).toEqual([...prefix, 0x65, 0, 0, 0, 1, 0, 0, 0, 1]);

    // Key order is index order, whatever the bytes.
    const groupKeys = new RaftLogKeys(9);
    const sorted = indexes.map((index) => groupKeys.entry(index)).sort((a, b) => Buffer.compare(a, b));
    expect(sorted.map((key) => groupKeys.classify(key))).toEqual(indexes.map((index) => ({ kind: 'entry', index })));
  });

  it('round-trips every record kind, version byte first', () => {
    const uint = fc.nat({ max: Number.MAX_SAFE_INTEGER });
    fc.assert(
      fc.property(uint, uint, fc.constantFrom(EntryType.Normal, EntryType.ConfChange), fc.uint8Array({ maxLength: 64 }), (term, index, type, data) => {
        const encoded = encodeEntry({ term, index, type, data });
        expect(encoded[0]).toBe(RAFT_LOG_FORMAT_VERSION);
        expect(encoded.length).toBe(18 + data.length);
        expect(decodeEntry(encoded)).toEqual({ term, index, type, data });
      }),
    );
    fc.assert(
      fc.property(uint, uint, uint, (term, vote, commit) => {
        expect(decodeHardState(encodeHardState({ term, vote, commit }))).toEqual({ term, vote, commit });
      }),
    );
    const ids = fc.array(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), { maxLength: 7 });
    fc.assert(
      fc.property(uint, uint, ids, ids, (index, term, voters, learners) => {
        const meta = { index, term, confState: { voters, learners } };
        expect(decodeSnapshotMeta(encodeSnapshotMeta(meta))).toEqual(meta);
      }),
    );
    expect(decodeTruncatedState(encodeTruncatedState({ index: 9, term: 4 }))).toEqual({ index: 9, term: 4 });
  });

  it('rejects unknown versions, unknown entry types and trailing bytes', () => {
    const good = encodeEntry(entry(3, 2));
    const malformed = (action: () => unknown) => {
      try {
        action();
      } catch (error) {
        return error instanceof AtollError && error.code === 'INVALID_ARGUMENT';
      }
      return false;
    };
    expect(malformed(() => decodeEntry(Uint8Array.of(2, ...good.subarray(1))))).toBe(true);
    const badType = good.slice();
    badType[17] = 9;
    expect(malformed(() => decodeEntry(badType))).toBe(true);
    expect(malformed(() => decodeHardState(Uint8Array.of(...encodeHardState({ term: 1, vote: 0, commit: 1 }), 0)))).toBe(true);
    expect(malformed(() => decodeSnapshotMeta(encodeSnapshotMeta({ index: 1, term: 1, confState: members }).subarray(0, 20)))).toBe(true);
    expect(malformed(() => decodeTruncatedState(new Uint8Array(0)))).toBe(true);
  });
});

describe('PersistentLogStorage: load checks what it reads', () => {
  async function corruptedBy(mutate: (engine: MemoryEngine, keys: RaftLogKeys) => Promise<void>): Promise<unknown> {
    const engine = new MemoryEngine();
    const storage = await loadGroup(engine, 5);
    await engine.write([...storage.stageBootstrap(members), ...storage.stageEntries(run(2, 6, 1))], { sync: true });
    await mutate(engine, new RaftLogKeys(5));
    try {
      await loadGroup(engine, 5);
      return 'loaded';
    } catch (error) {
      return error instanceof AtollError ? `${error.code}: ${error.message}` : error;
    }
  }

  it('refuses damaged or inconsistent records', async () => {
    const put = (key: Uint8Array, value: Uint8Array): WriteOperation => ({ type: 'put', key, value });
    expect(await corruptedBy(async () => {})).toBe('loaded');
    expect(await corruptedBy((e, k) => e.write([put(k.entry(3), Uint8Array.of(7))]))).toMatch(/^INTERNAL: .*group 5 is corrupt: malformed raft log entry/);
    expect(await corruptedBy((e, k) => e.write([{ type: 'del', key: k.entry(4) }]))).toMatch(/^INTERNAL: .*entry 4 is missing/);
    expect(await corruptedBy((e, k) => e.write([put(k.entry(4), encodeEntry(entry(5, 1)))]))).toMatch(/stored under index 4 says 5/);
    expect(await corruptedBy((e, k) => e.write([put(k.entry(7), encodeEntry(entry(7, 0)))]))).toMatch(/term 0 below 1/);
    expect(await corruptedBy((e, k) => e.write([put(k.snapshotMeta, encodeSnapshotMeta({ index: 4, term: 2, confState: members }))]))).toMatch(
      /snapshot term 2 but the log has term 1/,
    );
    expect(await corruptedBy((e, k) => e.write([put(k.snapshotMeta, encodeSnapshotMeta({ index: 9, term: 1, confState: members }))]))).toMatch(
      /snapshot 9 outside \[1, 6\]/,
    );
    expect(await corruptedBy((e, k) => e.write([put(Uint8Array.of(...k.prefix, 0x7a), Uint8Array.of(1))]))).toMatch(/unknown key 02000000057a/);
  });
});

describe('PersistentLogStorage under RawNode', () => {
  /**
   * The node loop the store is designed for: every group's Ready persisted by one synced write per
   * iteration, then advance. Single-voter groups elect themselves and commit on their own.
   */
  async function drive(engine: StorageEngine, nodes: Array<{ raw: RawNode; storage: PersistentLogStorage }>): Promise<void> {
    for (let iteration = 0; iteration < 100; iteration++) {
      const readies: Array<[RawNode, Ready]> = [];
      const operations: WriteOperation[] = [];
      for (const { raw, storage } of nodes) {
        if (!raw.hasReady()) continue;
        const ready = raw.ready();
        if (ready.snapshot) operations.push(...storage.stageSnapshot(ready.snapshot.meta));
        operations.push(...storage.stageEntries(ready.entries));
        if (ready.hardState) operations.push(...storage.stageHardState(ready.hardState));
        readies.push([raw, ready]);
      }
      if (readies.length === 0) return;
      await engine.write(operations, { sync: true });
      for (const [raw, ready] of readies) raw.advance(ready);
    }
    throw new Error('groups did not settle within 100 iterations');
  }

  it('restarts every group from the shared database where it left off', async () => {
    const engine = new MemoryEngine();
    const groupIds = [11, 12, 13];
    const start = async (applied: number) =>
      Promise.all(
        groupIds.map(async (groupId) => {
          const storage = await loadGroup(engine, groupId);
          return { storage, raw: new RawNode({ id: 1, storage, rng: new Rng(groupId), applied }) };
        }),
      );

    const first = await start(0);
    const bootstrap = first.flatMap(({ storage }) => storage.stageBootstrap({ voters: [1], learners: [] }));
    await engine.write(bootstrap, { sync: true });
    const booted = await start(1);
    for (const { raw } of booted) raw.campaign();
    await drive(engine, booted);
    for (const [i, { raw }] of booted.entries()) for (let n = 0; n <= i; n++) raw.propose(Uint8Array.of(n));
    await drive(engine, booted);
    const statuses = booted.map(({ raw }) => raw.status());
    for (const status of statuses) expect(status.role).toBe('leader');
    expect(statuses.map((status) => status.commit)).toEqual(statuses.map((status) => status.lastIndex));

    engine.crash();
    const restarted = await start(1);
    for (const [i, { raw, storage }] of restarted.entries()) {
      const before = statuses[i]!;
      const after = raw.status();
      expect({ term: after.term, commit: after.commit, lastIndex: after.lastIndex }).toEqual({
        term: before.term,
        commit: before.commit,
        lastIndex: before.lastIndex,
      });
      const proposals = storage.entries(2, storage.lastIndex() + 1, unbounded).filter((e) => e.data.length > 0);
      expect(proposals.map((e) => e.data[0])).toEqual(Array.from({ length: i + 1 }, (_, n) => n));
    }
  });
});
