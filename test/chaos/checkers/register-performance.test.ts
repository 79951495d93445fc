/**
 * Speed of the register checker on histories shaped like a chaos run: clients that each run one
 * operation at a time with random latency, on a few keys, with some timeouts (info) and errors
 * (fail). The history comes from a simulated atomic register, so it is linearizable by
 * construction; planting one stale read must then be caught just as fast.
 */
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import type { Operation, OperationStatus } from '../../../src/chaos/history.js';
import { checkLinearizableRegister, checkRegisterKey } from '../../../src/chaos/checkers/linearizable-register.js';
import { Rng } from '../../../src/raft/rng.js';

interface WorkloadShape {
  readonly seed: number;
  readonly operations: number;
  readonly clients: number;
  readonly keys: number;
  /** Chance that an operation times out (info), and that an info write still takes effect. */
  readonly infoChance: number;
  readonly failChance: number;
  readonly latencyMsMax: number;
}

/**
 * Each client loops: invoke, wait a random latency, complete, think briefly. Every operation
 * takes effect (or not) at a random instant inside its interval; running them in the order of
 * those instants on a map of registers gives the outputs.
 */
export function simulateRegisterHistory(shape: WorkloadShape): Operation[] {
  const rng = new Rng(shape.seed);
  interface Planned {
    readonly op: number;
    readonly process: number;
    readonly key: string;
    readonly f: 'read' | 'write' | 'cas';
    readonly invokeMs: number;
    readonly completeMs: number;
    readonly pointMs: number;
    readonly status: OperationStatus;
    readonly applies: boolean;
    readonly value: string;
  }
  const planned: Planned[] = [];
  const clientClockMs = Array.from({ length: shape.clients }, () => rng.float() * 5);
  for (let op = 1; op <= shape.operations; op++) {
    const process = rng.int(shape.clients);
    const invokeMs = clientClockMs[process]!;
    const completeMs = invokeMs + 0.1 + rng.float() * shape.latencyMsMax;
    clientClockMs[process] = completeMs + rng.float() * 2;
    const roll = rng.float();
    const f = roll < 0.5 ? 'read' : roll < 0.8 ? 'write' : 'cas';
    const outcome = rng.float();
    const status: OperationStatus = outcome < shape.infoChance ? 'info' : outcome < shape.infoChance + shape.failChance ? 'fail' : 'ok';
    planned.push({
      op,
      process,
      key: `k${rng.int(shape.keys)}`,
      f,
      invokeMs,
      completeMs,
      pointMs: invokeMs + rng.float() * (completeMs - invokeMs),
      status,
      applies: status === 'ok' || (status === 'info' && rng.chance(0.5)),
      value: `v${op}`,
    });
  }
  const state = new Map<string, string | null>();
  const lastSeen = new Map<string, string | null>(); // "process/key" -> what that client last read
  const outputs = new Map<number, unknown>();
  const inputs = new Map<number, unknown>();
  for (const p of [...planned].sort((a, b) => a.pointMs - b.pointMs)) {
    const current = state.get(p.key) ?? null;
    if (p.f === 'read') {
      outputs.set(p.op, current);
      if (p.applies) lastSeen.set(`${p.process}/${p.key}`, current);
    } else if (p.f === 'write') {
      inputs.set(p.op, p.value);
      if (p.applies) state.set(p.key, p.value);
    } else {
      // Like the real workload: expect what this client last saw (a guess at invoke time; the
      // simulation is sequential, so using it at the effect instant changes nothing essential).
      const expected = lastSeen.get(`${p.process}/${p.key}`) ?? null;
      inputs.set(p.op, { expected, next: p.value });
      const swapped = current === expected;
      outputs.set(p.op, swapped);
      if (p.applies && swapped) state.set(p.key, p.value);
    }
  }
  return planned.map((p) => ({
    op: p.op,
    process: p.process,
    f: p.f,
    key: p.key,
    input: inputs.get(p.op),
    output: p.status === 'ok' ? outputs.get(p.op) : undefined,
    invokeMs: p.invokeMs,
    completeMs: p.status === 'info' ? Infinity : p.completeMs,
    status: p.status,
  }));
}

function timed<T>(run: () => T): { result: T; ms: number } {
  const start = performance.now();
  const result = run();
  return { result, ms: performance.now() - start };
}

const chaosShape: WorkloadShape = { seed: 7, operations: 3_000, clients: 8, keys: 5, infoChance: 0.03, failChance: 0.03, latencyMsMax: 20 };

describe('register checker speed', () => {
  it('checks a valid history of 3,000 ops on 5 keys from 8 clients in under 2 s', () => {
    const operations = simulateRegisterHistory(chaosShape);
    const { result, ms } = timed(() => checkLinearizableRegister(operations));
    expect(result).toEqual({ valid: true });
    const perKey = [...new Set(operations.map((op) => op.key!))].map((key) =>
      checkRegisterKey(key, operations.filter((op) => op.key === key)),
    );
    const states = perKey.reduce((sum, key) => sum + key.exploredStates, 0);
    console.log(`register checker: ${operations.length} ops, 5 keys, 8 clients: valid in ${ms.toFixed(0)} ms, ${states} states explored`);
    expect(ms).toBeLessThan(2_000);
  });

  it('checks 3,000 ops on one key from 10 clients, 10% timeouts, in well under a second', () => {
    const operations = simulateRegisterHistory({ ...chaosShape, seed: 11, keys: 1, clients: 10, infoChance: 0.1 });
    const { result, ms } = timed(() => checkRegisterKey('k0', operations));
    console.log(`register checker: 3000 ops on one key, 10 clients, 10% info: ${result.valid} in ${ms.toFixed(0)} ms, ${result.exploredStates} states, ${result.searchedOperations} searched`);
    expect(result.valid).toBe(true);
    expect(ms).toBeLessThan(1_000);
  });

  it('finds a planted stale read in the same history quickly, with and without the shortcut', () => {
    const operations = simulateRegisterHistory(chaosShape);
    const planted = plantStaleRead(operations, 'k1', 0.9);
    const { result, ms } = timed(() => checkLinearizableRegister(planted.operations));
    expect(result).toMatchObject({ valid: false, key: 'k1' });
    if (result.valid === false) expect(result.explanation.split('\n')[0]).toContain(`op ${planted.victim.op}`);
    // Repeating a value makes the shortcut stand aside, so the search must prove it.
    const searched = timed(() => checkRegisterKey('k1', repeatFirstValueAtEnd(planted.operations, 'k1')));
    console.log(
      `register checker: planted stale read found in ${ms.toFixed(0)} ms by the shortcut, in ${searched.ms.toFixed(0)} ms by the search (${searched.result.exploredStates} states)`,
    );
    expect(searched.result.valid).toBe(false);
    expect(searched.result.exploredStates).toBeGreaterThan(0);
    expect(ms).toBeLessThan(2_000);
    expect(searched.ms).toBeLessThan(2_000);
  });

  it('finds a stale read late in a one-key history full of timeouts and false cas quickly', () => {
    // The hard case for the search: to prove a violation it must rule out every order before it,
    // and each timed-out write could take effect anywhere after its invoke.
    const operations = simulateRegisterHistory({ ...chaosShape, seed: 11, keys: 1, clients: 10, infoChance: 0.2 });
    const planted = repeatFirstValueAtEnd(plantStaleRead(operations, 'k0', 0.9).operations, 'k0');
    const { result, ms } = timed(() => checkRegisterKey('k0', planted));
    console.log(
      `register checker: stale read at 90% of 3000 ops on one key, 10 clients, 20% info: ${result.valid} in ${ms.toFixed(0)} ms, ${result.exploredStates} states, ${result.spareOperations} spares`,
    );
    expect(result.valid).toBe(false);
    expect(result.exploredStates).toBeGreaterThan(0);
    expect(ms).toBeLessThan(2_000);
  });
});

/** Late in the run, makes a read of `key` return the first value ever written to it, long overwritten. */
function plantStaleRead(operations: readonly Operation[], key: string, at: number): { operations: Operation[]; victim: Operation } {
  const firstWrite = operations.find((op) => op.key === key && op.f === 'write' && op.status === 'ok')!;
  const reads = operations.filter((op) => op.key === key && op.f === 'read' && op.status === 'ok' && op.output !== firstWrite.input);
  const victim = reads[Math.floor(reads.length * at)]!;
  return { operations: operations.map((op) => (op === victim ? { ...op, output: firstWrite.input } : op)), victim };
}

/** Adds a write of the first value after everything else: harmless, but values are no longer distinct. */
function repeatFirstValueAtEnd(operations: readonly Operation[], key: string): Operation[] {
  const firstWrite = operations.find((op) => op.key === key && op.f === 'write' && op.status === 'ok')!;
  const endMs = Math.max(...operations.map((op) => (Number.isFinite(op.completeMs) ? op.completeMs : op.invokeMs))) + 10;
  const op = Math.max(...operations.map((other) => other.op)) + 1;
  return [...operations, { ...firstWrite, op, process: 999, invokeMs: endMs, completeMs: endMs + 1 }];
}
