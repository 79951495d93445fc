/**
 * The isolation checker on planted anomalies (each must be named right, and allowed or forbidden
 * by the levels involved), on valid histories, and against a brute-force second checker on small
 * random histories: "serializable" by the dependency graph must equal "some serial order of the
 * committed transactions explains every read" by enumeration.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Rng } from '../../src/raft/rng.js';
import { checkIsolation, type Anomaly, type IsolationVerdict, type TxnIsolation, type TxnRecord, type TxnWriteRecord } from '../../src/sim/node/isolation-checker.js';
import { bruteForceSerializable } from './brute-force-serializability.js';
import { simulateExecution, type ExecutionOptions } from './mvcc-execution.js';

function txn(id: string, fields: Partial<TxnRecord> = {}): TxnRecord {
  return { id, isolation: 'SNAPSHOT', outcome: 'committed', partition: 0, snapshotRevision: 0, reads: [], prefixReads: [], writes: [], ...fields };
}

const kinds = (anomalies: readonly Anomaly[]): string[] => [...new Set(anomalies.map((anomaly) => anomaly.kind))].sort();

/** Write skew: both read x and y at the initial state, one writes x, the other y. */
function writeSkew(isolation: TxnIsolation): TxnRecord[] {
  const reads = [{ key: 'b/x' }, { key: 'b/y' }];
  return [
    txn('T1', { isolation, reads, writes: [{ key: 'b/x', value: 'T1' }], commitRevision: 1 }),
    txn('T2', { isolation, reads, writes: [{ key: 'b/y', value: 'T2' }], commitRevision: 2 }),
  ];
}

describe('planted anomalies', () => {
  it('write skew is allowed under SNAPSHOT, and caught as G2-item under SERIALIZABLE', () => {
    const snapshot = checkIsolation(writeSkew('SNAPSHOT'));
    expect(snapshot.valid).toBe(true);
    expect(snapshot.serializable).toBe(false);
    expect(kinds(snapshot.allowed)).toEqual(['G2-item']);
    const cycle = snapshot.allowed[0]!.cycle!;
    expect(cycle.map((edge) => edge.kind)).toEqual(['rw', 'rw']);
    expect(new Set(snapshot.allowed[0]!.transactions)).toEqual(new Set(['T1', 'T2']));

    const serializable = checkIsolation(writeSkew('SERIALIZABLE'));
    expect(serializable.valid).toBe(false);
    expect(kinds(serializable.anomalies)).toEqual(['G2-item', 'read-conflict-missed']);
    // Only one of the two could have been caught by validation: the one that committed second.
    expect(serializable.anomalies.find((anomaly) => anomaly.kind === 'read-conflict-missed')!.transactions).toEqual(['T2', 'T1']);
  });

  it('a cycle through a SNAPSHOT reader is allowed even when the other transaction is SERIALIZABLE', () => {
    // T1 (serializable) committed first, so its read set was validated; T2 (snapshot) read x stale-free at its snapshot.
    const records = writeSkew('SNAPSHOT').map((record) => (record.id === 'T1' ? { ...record, isolation: 'SERIALIZABLE' as const } : record));
    const verdict = checkIsolation(records);
    expect(verdict.valid).toBe(true);
    expect(kinds(verdict.allowed)).toEqual(['G2-item']);
  });

  it('the read-only anomaly: allowed when the writer that read stale data is SNAPSHOT, forbidden when SERIALIZABLE', () => {
    // T1 read x before T2 wrote it and wrote y; R, read-only, saw T2's x but not T1's y.
    const history = (isolation: TxnIsolation): TxnRecord[] => [
      txn('T2', { writes: [{ key: 'b/x', value: 'T2' }], commitRevision: 1 }),
      txn('R', { snapshotRevision: 1, reads: [{ key: 'b/x', modRevision: 1, value: 'T2' }, { key: 'b/y' }] }),
      txn('T1', { isolation, reads: [{ key: 'b/x' }], writes: [{ key: 'b/y', value: 'T1' }], commitRevision: 2 }),
    ];
    const snapshot = checkIsolation(history('SNAPSHOT'));
    expect(snapshot.valid).toBe(true);
    expect(kinds(snapshot.allowed)).toEqual(['G2-item']);
    expect(snapshot.allowed[0]!.transactions).toHaveLength(3);
    // R's anti-dependency points forward (it is serialized at its snapshot), so only T1 can close the cycle.
    const serializable = checkIsolation(history('SERIALIZABLE'));
    expect(kinds(serializable.anomalies)).toEqual(['G2-item', 'read-conflict-missed']);
  });

  it('a lost update is caught under both levels', () => {
    for (const isolation of ['SNAPSHOT', 'SERIALIZABLE'] as const) {
      const records = [
        txn('T0', { writes: [{ key: 'b/x', value: 'T0' }], commitRevision: 1 }),
        txn('T1', { isolation, snapshotRevision: 1, reads: [{ key: 'b/x', modRevision: 1, value: 'T0' }], writes: [{ key: 'b/x', value: 'T1' }], commitRevision: 2 }),
        txn('T2', { isolation, snapshotRevision: 1, reads: [{ key: 'b/x', modRevision: 1, value: 'T0' }], writes: [{ key: 'b/x', value: 'T2' }], commitRevision: 3 }),
      ];
      const verdict = checkIsolation(records);
      expect(verdict.valid).toBe(false);
      // Under SERIALIZABLE the second committer's read set was stale too.
      const validation = isolation === 'SERIALIZABLE' ? ['read-conflict-missed', 'write-conflict-missed'] : ['write-conflict-missed'];
      expect(kinds(verdict.anomalies)).toEqual(['G-single', 'lost-update', ...validation]);
      const lost = verdict.anomalies.find((anomaly) => anomaly.kind === 'lost-update')!;
      expect(lost.transactions).toEqual(['T1', 'T2']);
      const cycle = verdict.anomalies.find((anomaly) => anomaly.kind === 'G-single')!.cycle!;
      expect(cycle.map((edge) => edge.kind).sort()).toEqual(['rw', 'ww']);
    }
  });

  it('G1c: each transaction read the other one\'s write (circular information flow)', () => {
    const records = [
      txn('T1', { snapshotRevision: 2, reads: [{ key: 'b/y', modRevision: 2, value: 'T2' }], writes: [{ key: 'b/x', value: 'T1' }], commitRevision: 1 }),
      txn('T2', { snapshotRevision: 1, reads: [{ key: 'b/x', modRevision: 1, value: 'T1' }], writes: [{ key: 'b/y', value: 'T2' }], commitRevision: 2 }),
    ];
    const verdict = checkIsolation(records);
    expect(verdict.valid).toBe(false);
    const g1c = verdict.anomalies.find((anomaly) => anomaly.kind === 'G1c')!;
    expect(g1c.cycle!.map((edge) => edge.kind)).toEqual(['wr', 'wr']);
    expect(new Set(g1c.transactions)).toEqual(new Set(['T1', 'T2']));
    // T1 committed at 1 but claims a snapshot of 2: its commit is not after its snapshot either.
    expect(kinds(verdict.anomalies)).toEqual(['G1c', 'invalid-revision']);
  });

  it('two transactions that claim the same version of a key are a duplicate version', () => {
    // (G0 cannot be planted: every version of a transaction carries its one commit revision, so
    // ww edges always run up the revisions. The checker still looks for it first.)
    const records = [
      txn('T1', { writes: [{ key: 'b/x', value: 'T1' }, { key: 'b/y', value: 'T1' }], commitRevision: 1 }),
      txn('T2', { writes: [{ key: 'b/x', value: 'T2' }], commitRevision: 1 }),
    ];
    const verdict = checkIsolation(records);
    expect(kinds(verdict.anomalies)).toEqual(['duplicate-version']);
    expect(verdict.anomalies[0]!.transactions).toEqual(['T1', 'T2']);
    expect(verdict.serializable).toBe(false);
  });

  it('G1a: a committed transaction read a value written by one that aborted', () => {
    const records = [
      txn('T1', { outcome: 'aborted', writes: [{ key: 'b/x', value: 'T1' }] }),
      txn('T2', { snapshotRevision: 5, reads: [{ key: 'b/x', modRevision: 5, value: 'T1' }] }),
    ];
    const verdict = checkIsolation(records);
    expect(verdict.valid).toBe(false);
    expect(verdict.serializable).toBe(false);
    expect(kinds(verdict.anomalies)).toEqual(['G1a']);
    expect(verdict.anomalies[0]!.transactions).toEqual(['T2', 'T1']);
  });

  it('G1b: a read of a value its writer overwrote before committing', () => {
    const records = [
      txn('T1', { writes: [{ key: 'b/x', value: 'T1-first' }, { key: 'b/x', value: 'T1' }], commitRevision: 1 }),
      txn('T2', { snapshotRevision: 1, reads: [{ key: 'b/x', modRevision: 1, value: 'T1-first' }] }),
    ];
    const verdict = checkIsolation(records);
    expect(kinds(verdict.anomalies)).toEqual(['G1b']);
    expect(verdict.anomalies[0]!.transactions).toEqual(['T2', 'T1']);
  });

  it('a phantom through prefix reads: allowed under SNAPSHOT, caught as G2 under SERIALIZABLE', () => {
    const history = (isolation: TxnIsolation): TxnRecord[] => [
      // Each scanned the empty bucket and added a key the other's scan would have returned.
      txn('T1', { isolation, prefixReads: [{ prefix: 'svc/', items: [] }], writes: [{ key: 'svc/a', value: 'T1' }], commitRevision: 1 }),
      txn('T2', { isolation, prefixReads: [{ prefix: 'svc/', items: [] }], writes: [{ key: 'svc/b', value: 'T2' }], commitRevision: 2 }),
    ];
    const snapshot = checkIsolation(history('SNAPSHOT'));
    expect(snapshot.valid).toBe(true);
    expect(kinds(snapshot.allowed)).toEqual(['G2']);
    expect(snapshot.allowed[0]!.cycle!.every((edge) => edge.kind === 'rw' && edge.prefix === 'svc/')).toBe(true);
    const serializable = checkIsolation(history('SERIALIZABLE'));
    expect(serializable.valid).toBe(false);
    expect(kinds(serializable.anomalies)).toEqual(['G2', 'read-conflict-missed']);
  });

  it('a stale read (a version older than the snapshot) and a future read are caught', () => {
    const records = [
      txn('W1', { writes: [{ key: 'b/x', value: 'W1' }], commitRevision: 1 }),
      txn('W2', { snapshotRevision: 1, writes: [{ key: 'b/x', value: 'W2' }], commitRevision: 2 }),
      txn('R1', { snapshotRevision: 2, reads: [{ key: 'b/x', modRevision: 1, value: 'W1' }] }),
      txn('R2', { snapshotRevision: 1, reads: [{ key: 'b/x', modRevision: 2, value: 'W2' }] }),
    ];
    const verdict = checkIsolation(records);
    expect(kinds(verdict.anomalies)).toEqual(['future-read', 'stale-read']);
    // Both are serializable on their own (R1 before W2, R2 after it): only revisions betray them.
    expect(verdict.serializable).toBe(true);
  });

  it('a garbage read: a value nobody wrote, or a writer\'s value at another revision', () => {
    const records = [
      txn('W1', { writes: [{ key: 'b/x', value: 'W1' }], commitRevision: 3 }),
      txn('R1', { snapshotRevision: 5, reads: [{ key: 'b/x', modRevision: 4, value: 'W1' }, { key: 'b/y', modRevision: 2, value: 'nobody' }] }),
    ];
    const verdict = checkIsolation(records);
    expect(verdict.anomalies.map((anomaly) => anomaly.kind)).toEqual(['garbage-read', 'garbage-read']);
  });

  it('an unknown outcome counts as committed once a read observed its write, at the revision observed', () => {
    const records = [
      txn('U', { outcome: 'unknown', snapshotRevision: 0, writes: [{ key: 'b/x', value: 'U' }, { key: 'b/y', value: 'U' }] }),
      txn('R1', { snapshotRevision: 4, reads: [{ key: 'b/x', modRevision: 4, value: 'U' }, { key: 'b/y' }] }),
    ];
    const verdict = checkIsolation(records);
    // R1 saw U's x but not its y at the same snapshot: a fractured read, U -wr-> R1 -rw-> U, and a
    // stale read of y (U's version of it is at revision 4 too).
    expect(verdict.counts.unknownIncluded).toBe(1);
    expect(kinds(verdict.anomalies)).toEqual(['G-single', 'stale-read']);
    expect(verdict.anomalies.find((anomaly) => anomaly.kind === 'G-single')!.cycle!.map((edge) => `${edge.from}-${edge.kind}-${edge.to}`).sort()).toEqual(['R1-rw-U', 'U-wr-R1']);
    // An unknown transaction nobody observed stays out, and changes nothing.
    const unseen = checkIsolation([txn('U', { outcome: 'unknown', writes: [{ key: 'b/x', value: 'U' }] }), txn('R', { snapshotRevision: 9, reads: [{ key: 'b/x' }] })]);
    expect(unseen.valid).toBe(true);
    expect(unseen.counts.unknownIncluded).toBe(0);
    // A delete has no value for a read to name: an absence only an unknown delete explains is no stale read.
    const deleted = checkIsolation([
      txn('P', { writes: [{ key: 'b/x', value: 'P' }], commitRevision: 1 }),
      txn('U', { outcome: 'unknown', snapshotRevision: 1, reads: [{ key: 'b/x', modRevision: 1, value: 'P' }], writes: [{ key: 'b/x', delete: true }] }),
      txn('R', { snapshotRevision: 2, reads: [{ key: 'b/x' }] }),
    ]);
    expect(deleted.anomalies).toEqual([]);
    // Without such a delete, the same absence is a stale read.
    const stale = checkIsolation([txn('P', { writes: [{ key: 'b/x', value: 'P' }], commitRevision: 1 }), txn('R', { snapshotRevision: 2, reads: [{ key: 'b/x' }] })]);
    expect(kinds(stale.anomalies)).toEqual(['stale-read']);
  });

  it('bad input is an AtollError and nothing else', () => {
    expect(() => checkIsolation([txn('A'), txn('A')])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => checkIsolation([txn('A', { writes: [{ key: 'b/x', value: 'A' }] })])).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => checkIsolation([txn('A', { writes: [{ key: 'b/x', value: 'v' }], commitRevision: 1 }), txn('B', { writes: [{ key: 'b/x', value: 'v' }], commitRevision: 2 })])).toThrow(
      expect.objectContaining({ code: 'INVALID_ARGUMENT' }),
    );
    expect(() => checkIsolation([txn('A')], { maxRecords: 0 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});

describe('valid histories', () => {
  it('write skew under SNAPSHOT, serial histories of either level, plain puts and deletes are accepted', () => {
    expect(checkIsolation(writeSkew('SNAPSHOT')).valid).toBe(true);
    for (let seed = 1; seed <= 200; seed++) {
      const records = serialHistory(new Rng(seed));
      const verdict = checkIsolation(records);
      expect(verdict.anomalies, `seed ${seed}`).toEqual([]);
      expect(verdict.allowed).toEqual([]);
      expect(verdict.serializable).toBe(true);
    }
  });
});

describe('against a brute-force checker', () => {
  it('graph-serializable equals explained-by-some-serial-order on small random histories', () => {
    let serializable = 0;
    let runs = 0;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => {
        const records = randomHistory(new Rng(seed));
        const verdict: IsolationVerdict = checkIsolation(records);
        const expected = bruteForceSerializable(records);
        runs++;
        if (expected) serializable++;
        expect(verdict.serializable, JSON.stringify(records)).toBe(expected);
      }),
      { numRuns: 1_500, seed: 15 },
    );
    // Both answers must be common, or the comparison proves little.
    expect(serializable).toBeGreaterThan(runs / 5);
    expect(runs - serializable).toBeGreaterThan(runs / 5);
  });
});

describe('on executions of a model of Atoll\'s transactions', () => {
  const model: ExecutionOptions = { transactions: 30, keys: ['m/a', 'm/b', 'm/c', 'm/d', 'n/a'], prefixes: ['m/', 'n/'], maxOpen: 4, skipValidation: 0, lostAnswers: 0.1 };
  const revisionKinds = new Set(['write-conflict-missed', 'read-conflict-missed']);

  it('a correct store (snapshot reads, first committer wins) is always valid, lost answers included', () => {
    let allowed = 0;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => {
        const verdict = checkIsolation(simulateExecution(seed, model));
        expect(verdict.anomalies, `seed ${seed}`).toEqual([]);
        allowed += verdict.allowed.length;
      }),
      { numRuns: 300, seed: 16 },
    );
    // SNAPSHOT's write skews and phantoms do happen in these runs, and are let through.
    expect(allowed).toBeGreaterThan(20);
  });

  it('a store that skips first-committer-wins is caught, and every cycle reported comes with a missed conflict', () => {
    const caughtByCycle = new Map<string, number>();
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => {
        const verdict = checkIsolation(simulateExecution(seed, { ...model, skipValidation: 0.5, lostAnswers: 0 }));
        const found = kinds(verdict.anomalies);
        // Reads are right in this store, so a forbidden cycle needs a commit that should have failed.
        if (!found.some((kind) => revisionKinds.has(kind))) expect(found, `seed ${seed}`).toEqual([]);
        for (const kind of found) if (!revisionKinds.has(kind)) caughtByCycle.set(kind, (caughtByCycle.get(kind) ?? 0) + 1);
      }),
      { numRuns: 300, seed: 17 },
    );
    // The graph names them too: lost updates and cycles with a single anti-dependency above all.
    expect(caughtByCycle.get('G-single') ?? 0).toBeGreaterThan(50);
    expect(caughtByCycle.get('lost-update') ?? 0).toBeGreaterThan(50);
    expect((caughtByCycle.get('G2-item') ?? 0) + (caughtByCycle.get('G2') ?? 0)).toBeGreaterThan(0);
  });

  it('a store whose SERIALIZABLE commits skip prefix validation is caught: missed conflicts and phantoms (G2)', () => {
    let missed = 0;
    let phantoms = 0;
    for (let seed = 1; seed <= 200; seed++) {
      const verdict = checkIsolation(simulateExecution(seed, { ...model, skipPrefixValidation: true, lostAnswers: 0 }));
      const found = kinds(verdict.anomalies);
      // Only the read sets of SERIALIZABLE commits are wrong here, so nothing SNAPSHOT forbids appears.
      for (const kind of found) expect(['G2', 'G2-item', 'read-conflict-missed']).toContain(kind);
      if (found.includes('read-conflict-missed')) missed++;
      if (found.includes('G2')) phantoms++;
    }
    expect(missed).toBeGreaterThan(20);
    expect(phantoms).toBeGreaterThan(0);
  });

  it('checks a long history in bounded time', () => {
    const records = simulateExecution(99, { ...model, transactions: 10_000, keys: Array.from({ length: 40 }, (_, i) => `m/${i}`), maxOpen: 8, skipValidation: 0.02 });
    const started = performance.now();
    const verdict = checkIsolation(records);
    const elapsedMs = performance.now() - started;
    expect(verdict.valid).toBe(false);
    expect(verdict.counts.unreported).toBeGreaterThan(0);
    expect(elapsedMs).toBeLessThan(20_000);
  });
});

// ------------------------------------------------------------------ generators

const keys = ['a/1', 'a/2', 'a/3', 'b/1'];
const prefixes = ['a/', 'b/'];

interface KeyState {
  readonly writer: string | undefined;
  readonly revision: number;
  readonly value: string | undefined;
}

/** A history executed one transaction at a time, as a correct store would. */
function serialHistory(rng: Rng): TxnRecord[] {
  const state = new Map<string, KeyState>();
  const records: TxnRecord[] = [];
  let revision = 0;
  const count = 1 + rng.int(12);
  for (let i = 0; i < count; i++) {
    const id = `S${i}`;
    const outcome = rng.chance(0.15) ? 'aborted' : 'committed';
    const reads = keys.filter(() => rng.chance(0.5)).map((key) => observe(state, key));
    const prefixReads = rng.chance(0.4) ? [prefixReadOf(state, rng.pick(prefixes))] : [];
    const writes = writesOf(rng, id, 0.1);
    const snapshotRevision = revision;
    if (outcome === 'committed' && writes.length > 0) {
      revision++;
      apply(state, id, revision, writes);
    }
    records.push({
      id,
      isolation: rng.chance(0.5) ? 'SNAPSHOT' : 'SERIALIZABLE',
      outcome,
      partition: 0,
      snapshotRevision,
      reads,
      prefixReads,
      writes,
      ...(outcome === 'committed' && writes.length > 0 ? { commitRevision: revision } : {}),
    });
  }
  return records;
}

/**
 * A small history that may or may not be serializable: transactions run in a random serial order
 * (so reads are right), then revisions may be shuffled, snapshots moved, and reads or prefix
 * reads replaced by some other version, an intermediate or aborted value, or absence.
 */
function randomHistory(rng: Rng): TxnRecord[] {
  const count = 1 + rng.int(5);
  const plans = Array.from({ length: count }, (_, i) => {
    const id = `T${i}`;
    const roll = rng.float();
    const outcome = roll < 0.7 ? ('committed' as const) : roll < 0.85 ? ('aborted' as const) : ('unknown' as const);
    return { id, outcome, writes: writesOf(rng, id, 0.15), isolation: (rng.chance(0.5) ? 'SNAPSHOT' : 'SERIALIZABLE') as TxnIsolation };
  });
  const order = shuffle(rng, [...plans.keys()]);
  const writers = order.filter((index) => plans[index]!.outcome !== 'aborted' && plans[index]!.writes.length > 0);
  const revisions = writers.map((_, i) => i + 1);
  if (rng.chance(0.3)) shuffle(rng, revisions);
  const revisionOf = new Map(writers.map((index, i) => [index, revisions[i]!]));
  const state = new Map<string, KeyState>();
  const records = new Array<TxnRecord>(count);
  let revision = 0;
  for (const index of order) {
    const plan = plans[index]!;
    const snapshotRevision = rng.chance(0.15) ? rng.int(count + 1) : revision;
    const reads = keys.filter(() => rng.chance(0.5)).map((key) => (rng.chance(0.2) ? mutatedRead(rng, plans, revisionOf, key) : observe(state, key)));
    const prefixReads = rng.chance(0.4) ? [mutatedPrefixRead(rng, state, rng.pick(prefixes), plans, revisionOf)] : [];
    const commitRevision = revisionOf.get(index);
    if (commitRevision !== undefined) {
      revision = Math.max(revision, commitRevision);
      apply(state, plan.id, commitRevision, plan.writes);
    }
    records[index] = {
      id: plan.id,
      isolation: plan.isolation,
      outcome: plan.outcome,
      partition: 0,
      snapshotRevision,
      reads,
      prefixReads,
      writes: plan.writes,
      ...(plan.outcome === 'committed' && commitRevision !== undefined ? { commitRevision } : {}),
    };
  }
  return records;
}

function writesOf(rng: Rng, id: string, intermediateChance: number): TxnWriteRecord[] {
  const writes: TxnWriteRecord[] = [];
  for (const key of keys) {
    if (!rng.chance(0.35)) continue;
    if (rng.chance(intermediateChance)) writes.push({ key, value: `${id}-first` });
    writes.push(rng.chance(0.2) ? { key, delete: true } : { key, value: id });
  }
  return writes;
}

function apply(state: Map<string, KeyState>, id: string, revision: number, writes: readonly TxnWriteRecord[]): void {
  for (const write of writes) state.set(write.key, write.delete === true ? { writer: id, revision, value: undefined } : { writer: id, revision, value: write.value });
}

function observe(state: ReadonlyMap<string, KeyState>, key: string): TxnRecord['reads'][number] {
  const current = state.get(key);
  return current?.value === undefined ? { key } : { key, modRevision: current.revision, value: current.value };
}

function prefixReadOf(state: ReadonlyMap<string, KeyState>, prefix: string): TxnRecord['prefixReads'][number] {
  const items = keys.filter((key) => key.startsWith(prefix) && state.get(key)?.value !== undefined).map((key) => ({ key, modRevision: state.get(key)!.revision, value: state.get(key)!.value! }));
  return { prefix, items };
}

function mutatedRead(rng: Rng, plans: ReadonlyArray<{ id: string; writes: readonly TxnWriteRecord[] }>, revisionOf: ReadonlyMap<number, number>, key: string): TxnRecord['reads'][number] {
  const candidates = plans.flatMap((plan, index) =>
    plan.writes.filter((write) => write.key === key && write.value !== undefined).map((write) => ({ value: write.value!, revision: revisionOf.get(index) ?? 1 + rng.int(6) })),
  );
  if (candidates.length === 0 || rng.chance(0.25)) return { key };
  const chosen = rng.pick(candidates);
  return { key, modRevision: rng.chance(0.9) ? chosen.revision : 1 + rng.int(6), value: chosen.value };
}

function mutatedPrefixRead(
  rng: Rng,
  state: ReadonlyMap<string, KeyState>,
  prefix: string,
  plans: ReadonlyArray<{ id: string; writes: readonly TxnWriteRecord[] }>,
  revisionOf: ReadonlyMap<number, number>,
): TxnRecord['prefixReads'][number] {
  const correct = prefixReadOf(state, prefix);
  if (!rng.chance(0.3)) return correct;
  const items = correct.items.filter(() => rng.chance(0.6));
  const key = rng.pick(keys.filter((candidate) => candidate.startsWith(prefix)));
  const extra = mutatedRead(rng, plans, revisionOf, key);
  if (extra.modRevision !== undefined && !items.some((item) => item.key === key)) items.push({ key, modRevision: extra.modRevision, value: extra.value! });
  return { prefix, items };
}

function shuffle<T>(rng: Rng, items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
