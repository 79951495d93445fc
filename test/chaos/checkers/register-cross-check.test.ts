/**
 * Cross-check: the real register checker and a brute-force one (brute-force-linearizability.ts)
 * must agree on random tiny histories. The histories come from a sequential execution on one or
 * two registers, each operation stretched into a random interval around its point in that
 * execution, so they are linearizable by construction; some are then mutated (a read returns
 * another value, a cas answer flips, an interval moves, an outcome changes) and may or may not
 * stay linearizable. Both kinds must be common, or the agreement would prove little. A last
 * property skips the sequential execution altogether: arbitrary intervals, values and outcomes.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Operation, OperationStatus } from '../../../src/chaos/history.js';
import { checkLinearizableRegister } from '../../../src/chaos/checkers/linearizable-register.js';
import { bruteForceLinearizable } from './brute-force-linearizability.js';

type Outcome = 'ok' | 'info-applied' | 'info-lost' | 'fail';

interface Intent {
  readonly key: string;
  readonly kind: 'read' | 'write' | 'cas';
  readonly value: number;
  readonly expected: number | null;
  /** The interval runs from (point - before) to (point + after). */
  readonly before: number;
  readonly after: number;
  readonly outcome: Outcome;
}

interface Mutation {
  readonly target: number;
  readonly kind: 'read-value' | 'cas-flip' | 'write-value' | 'shift' | 'outcome';
  /** Picks the new value from the history's palette. */
  readonly pick: number;
  readonly shiftMs: number;
  readonly status: OperationStatus;
}

const intentArbitrary: fc.Arbitrary<Intent> = fc.record({
  key: fc.constantFrom('a', 'a', 'a', 'b'),
  kind: fc.constantFrom('read', 'read', 'write', 'write', 'cas'),
  value: fc.integer({ min: 0, max: 3 }),
  expected: fc.constantFrom(null, 0, 1, 2),
  before: fc.integer({ min: 0, max: 30 }),
  after: fc.integer({ min: 0, max: 30 }),
  outcome: fc.constantFrom<Outcome>('ok', 'ok', 'ok', 'ok', 'ok', 'info-applied', 'info-lost', 'fail'),
});

/**
 * Histories rich in what the checker's reductions act on: false cas, and timed-out writes whose
 * values nobody sees (the "spares" of linearizable-register.ts), on one key.
 */
const spareRichIntentArbitrary: fc.Arbitrary<Intent> = fc.record({
  key: fc.constant('a'),
  kind: fc.constantFrom('read', 'write', 'write', 'cas', 'cas'),
  value: fc.integer({ min: 0, max: 3 }),
  expected: fc.constantFrom(null, 0, 1),
  before: fc.integer({ min: 0, max: 40 }),
  after: fc.integer({ min: 0, max: 40 }),
  outcome: fc.constantFrom<Outcome>('ok', 'ok', 'ok', 'info-applied', 'info-lost', 'info-lost'),
});

const mutationArbitrary: fc.Arbitrary<Mutation> = fc.record({
  target: fc.nat(),
  kind: fc.constantFrom('read-value', 'cas-flip', 'write-value', 'shift', 'outcome'),
  pick: fc.nat(9),
  shiftMs: fc.integer({ min: -30, max: 30 }),
  status: fc.constantFrom<OperationStatus>('ok', 'info', 'fail'),
});

/**
 * Runs the intents in order on a map of registers; op i takes effect at time 10 i. With
 * `uniqueValues`, op i writes 100 + i instead of its intent's value, and a cas expects null or a
 * value written earlier, so that the checker's shortcut for distinct values is in play.
 */
function execute(intents: readonly Intent[], uniqueValues = false): Operation[] {
  const state = new Map<string, number | null>();
  const written: number[] = [];
  return intents.map((intent, index) => {
    const newValue = uniqueValues ? 100 + index : intent.value;
    const expected = !uniqueValues || intent.expected === null || written.length === 0 ? intent.expected : written[intent.expected % written.length]!;
    written.push(newValue);
    const pointMs = 10 * index;
    const applied = intent.outcome === 'ok' || intent.outcome === 'info-applied';
    const status: OperationStatus = intent.outcome === 'ok' ? 'ok' : intent.outcome === 'fail' ? 'fail' : 'info';
    const current = state.get(intent.key) ?? null;
    let input: unknown;
    let output: unknown;
    switch (intent.kind) {
      case 'read':
        output = current;
        break;
      case 'write':
        input = newValue;
        if (applied) state.set(intent.key, newValue);
        break;
      case 'cas':
        input = { expected, next: newValue };
        output = current === expected;
        if (applied && output === true) state.set(intent.key, newValue);
        break;
    }
    return {
      op: index + 1,
      process: index,
      f: intent.kind,
      key: intent.key,
      input,
      output: status === 'ok' ? output : undefined,
      invokeMs: pointMs - intent.before,
      completeMs: status === 'info' ? Infinity : pointMs + intent.after,
      status,
    };
  });
}

/** The values mutations choose from: null and every value the history writes. */
function paletteOf(operations: readonly Operation[]): unknown[] {
  const values = new Set<unknown>([null, 0, 1, 2, 3]);
  for (const op of operations) {
    if (op.f === 'write') values.add(op.input);
    if (op.f === 'cas') values.add((op.input as { next: unknown }).next);
  }
  return [...values];
}

function mutate(operations: readonly Operation[], mutation: Mutation): Operation[] {
  const index = mutation.target % operations.length;
  const op = operations[index]!;
  const palette = paletteOf(operations);
  const value = palette[mutation.pick % palette.length];
  let changed: Operation = op;
  switch (mutation.kind) {
    case 'read-value':
      if (op.f === 'read' && op.status === 'ok') changed = { ...op, output: value };
      break;
    case 'cas-flip':
      if (op.f === 'cas' && op.status === 'ok') changed = { ...op, output: op.output !== true };
      break;
    case 'write-value':
      if (op.f === 'write') changed = { ...op, input: value };
      break;
    case 'shift':
      changed = { ...op, invokeMs: op.invokeMs + mutation.shiftMs, completeMs: op.completeMs + mutation.shiftMs };
      break;
    case 'outcome': {
      const status = mutation.status;
      // A read or cas made ok needs an answer; give it a plausible one.
      const output = status !== 'ok' ? undefined : op.output ?? (op.f === 'cas' ? true : op.f === 'read' ? value : undefined);
      const completeMs = status === 'info' ? Infinity : Number.isFinite(op.completeMs) ? op.completeMs : op.invokeMs + 15;
      changed = { ...op, status, output, completeMs };
      break;
    }
  }
  return operations.map((other, i) => (i === index ? changed : other));
}

describe('register checker agrees with brute force', () => {
  it('on histories linearizable by construction: both accept', () => {
    fc.assert(
      fc.property(fc.array(intentArbitrary, { minLength: 1, maxLength: 7 }), (intents) => {
        const operations = execute(intents);
        expect(bruteForceLinearizable(operations)).toBe(true);
        expect(checkLinearizableRegister(operations)).toEqual({ valid: true });
      }),
      { numRuns: 600 },
    );
  });

  it('on mutated histories: both give the same answer', () => {
    const tally = { valid: 0, invalid: 0 };
    fc.assert(
      fc.property(
        fc.array(intentArbitrary, { minLength: 1, maxLength: 7 }),
        fc.array(mutationArbitrary, { minLength: 1, maxLength: 3 }),
        (intents, mutations) => {
          const operations = mutations.reduce(mutate, execute(intents));
          const expected = bruteForceLinearizable(operations);
          const verdict = checkLinearizableRegister(operations);
          expect(verdict.valid).toBe(expected);
          tally[expected ? 'valid' : 'invalid']++;
        },
      ),
      { numRuns: 2000 },
    );
    // The comparison is only worth something if both answers were common.
    expect(tally.invalid).toBeGreaterThan(200);
    expect(tally.valid).toBeGreaterThan(200);
  });

  it('on mutated histories where every write writes a distinct value: both give the same answer', () => {
    const tally = { valid: 0, invalid: 0 };
    fc.assert(
      fc.property(
        fc.array(intentArbitrary, { minLength: 1, maxLength: 7 }),
        fc.array(mutationArbitrary, { minLength: 1, maxLength: 2 }),
        (intents, mutations) => {
          const operations = mutations.reduce(mutate, execute(intents, true));
          const expected = bruteForceLinearizable(operations);
          expect(checkLinearizableRegister(operations).valid).toBe(expected);
          tally[expected ? 'valid' : 'invalid']++;
        },
      ),
      { numRuns: 2000 },
    );
    expect(tally.invalid).toBeGreaterThan(200);
    expect(tally.valid).toBeGreaterThan(200);
  });

  it('on mutated histories rich in false cas and unseen timed-out writes: both give the same answer', () => {
    const tally = { valid: 0, invalid: 0 };
    fc.assert(
      fc.property(
        fc.array(spareRichIntentArbitrary, { minLength: 2, maxLength: 9 }),
        fc.array(mutationArbitrary, { minLength: 1, maxLength: 2 }),
        (intents, mutations) => {
          const operations = mutations.reduce(mutate, execute(intents));
          const expected = bruteForceLinearizable(operations);
          expect(checkLinearizableRegister(operations).valid).toBe(expected);
          tally[expected ? 'valid' : 'invalid']++;
        },
      ),
      { numRuns: 2000 },
    );
    expect(tally.invalid).toBeGreaterThan(100);
    expect(tally.valid).toBeGreaterThan(200);
  });

  it('on arbitrary histories (random intervals, values and outcomes): both give the same answer', () => {
    const rawArbitrary = fc.record({
      kind: fc.constantFrom('read', 'write', 'cas', 'cas'),
      value: fc.constantFrom(null, 0, 1, 2),
      expected: fc.constantFrom(null, 0, 1),
      invokeMs: fc.integer({ min: 0, max: 40 }),
      durationMs: fc.integer({ min: 0, max: 30 }),
      status: fc.constantFrom<OperationStatus>('ok', 'ok', 'info', 'info', 'fail'),
      swapped: fc.boolean(),
    });
    const tally = { valid: 0, invalid: 0 };
    fc.assert(
      fc.property(fc.array(rawArbitrary, { minLength: 2, maxLength: 9 }), (raw) => {
        const operations: Operation[] = raw.map((r, index) => ({
          op: index + 1,
          process: index,
          f: r.kind,
          key: 'a',
          input: r.kind === 'write' ? r.value : r.kind === 'cas' ? { expected: r.expected, next: r.value } : undefined,
          output: r.status !== 'ok' ? undefined : r.kind === 'read' ? r.value : r.kind === 'cas' ? r.swapped : undefined,
          invokeMs: r.invokeMs,
          completeMs: r.status === 'info' ? Infinity : r.invokeMs + r.durationMs,
          status: r.status,
        }));
        const expected = bruteForceLinearizable(operations);
        expect(checkLinearizableRegister(operations).valid).toBe(expected);
        tally[expected ? 'valid' : 'invalid']++;
      }),
      { numRuns: 3000 },
    );
    expect(tally.invalid).toBeGreaterThan(300);
    expect(tally.valid).toBeGreaterThan(300);
  });
});
