import { describe, expect, it } from 'vitest';
import type { Operation, OperationStatus } from '../../../src/chaos/history.js';
import { checkCounter } from '../../../src/chaos/checkers/counter.js';
import { historyBuilder } from './builders.js';

/**
 * A run of increments by 1 on key "c": `ok` acknowledged, `info` timed out, `fail` failed, each
 * in its own 1 ms slot from time 0, then a final read at 10_000 ms returning `final`.
 */
function run(counts: Partial<Record<OperationStatus, number>>, final: number | null | undefined): Operation[] {
  const h = historyBuilder('c');
  const operations: Operation[] = [];
  let t = 0;
  for (const status of ['ok', 'info', 'fail'] as const) {
    for (let i = 0; i < (counts[status] ?? 0); i++, t++) operations.push(h.increment(1, [t, t + 0.5], { status }));
  }
  if (final !== undefined) operations.push(h.read(final, [10_000, 10_001]));
  return operations;
}

describe('counter checker', () => {
  it('accepts a final value anywhere from the acknowledged sum to it plus the indeterminate ones', () => {
    for (const final of [100, 101, 103]) expect(checkCounter(run({ ok: 100, info: 3, fail: 2 }, final)).valid).toBe(true);
    const verdict = checkCounter(run({ ok: 100, info: 3, fail: 2 }, 102));
    expect(verdict).toMatchObject({
      valid: true,
      counters: [{ key: 'c', acknowledged: 100, acknowledgedCount: 100, indeterminate: 3, indeterminateCount: 3, failedCount: 2, finalValue: 102 }],
    });
  });

  it('negative control: double counting is invalid and says so plainly', () => {
    const verdict = checkCounter(run({ ok: 100, info: 3 }, 105));
    expect(verdict.valid).toBe(false);
    if (verdict.valid !== false) return;
    expect(verdict.explanation.split('\n')[0]).toMatch(/^counter "c": final read 105 \(op \d+, .*\) exceeds the 100 acknowledged plus 3 indeterminate: double counting/);
    expect(verdict.anomalies[0]).toMatchObject({ kind: 'final-too-high', value: 105, lower: 100, upper: 103 });
  });

  it('a failed increment that was counted anyway is caught', () => {
    expect(checkCounter(run({ ok: 100, fail: 2 }, 102)).valid).toBe(false);
  });

  it('a lost acknowledged increment is caught', () => {
    const verdict = checkCounter(run({ ok: 100, info: 3 }, 99));
    expect(verdict.valid).toBe(false);
    if (verdict.valid === false) expect(verdict.explanation).toContain('final read 99');
    if (verdict.valid === false) expect(verdict.explanation).toContain('is below the 100 acknowledged: lost increments');
  });

  it('an absent counter reads as 0', () => {
    expect(checkCounter(run({ info: 2, fail: 1 }, null)).valid).toBe(true);
    expect(checkCounter(run({ ok: 1 }, null)).valid).toBe(false);
  });

  it('checks reads during the run against what was acknowledged before and invoked until then', () => {
    const h = historyBuilder('c');
    const base = [h.increment(1, [0, 1]), h.increment(1, [2, 3]), h.increment(1, [4, 20]), h.increment(1, [30, 31], { status: 'info' })];
    const final = h.read(4, [100, 101]);
    // Overlapping the third increment: 2 or 3.
    for (const value of [2, 3]) expect(checkCounter([...base, h.read(value, [5, 6]), final]).valid).toBe(true);
    const tooLow = checkCounter([...base, h.read(1, [5, 6]), final]);
    expect(tooLow).toMatchObject({ valid: false, anomalies: [{ kind: 'read-too-low', value: 1, lower: 2, upper: 3 }] });
    if (tooLow.valid === false) expect(tooLow.explanation).toContain('is below 2, the least possible: 2 acknowledged before it began');
    const tooHigh = checkCounter([...base, h.read(4, [5, 6]), final]);
    expect(tooHigh).toMatchObject({ valid: false, anomalies: [{ kind: 'read-too-high', value: 4, lower: 2, upper: 3 }] });
  });

  it('with only increments, a read cannot go below a value read before it began', () => {
    const h = historyBuilder('c');
    const ops = [h.increment(1, [0, 50]), h.read(1, [10, 11]), h.read(0, [12, 13]), h.read(1, [100, 101])];
    const verdict = checkCounter(ops);
    expect(verdict).toMatchObject({ valid: false, anomalies: [{ kind: 'went-backwards', value: 0 }] });
    if (verdict.valid === false) expect(verdict.explanation).toContain('the counter went backwards');
  });

  it('checks the value an ok increment returns, which includes its own amount', () => {
    const h = historyBuilder('c');
    const first = h.increment(5, [0, 1], { result: 5 });
    expect(checkCounter([first, h.increment(5, [2, 3], { result: 10 }), h.read(10, [4, 5])]).valid).toBe(true);
    expect(checkCounter([first, h.increment(5, [2, 3], { result: 5 }), h.read(10, [4, 5])]).valid).toBe(false);
  });

  it('handles decrements: an indeterminate one lowers the least possible final value', () => {
    const h = historyBuilder('c');
    const ops = [h.increment(10, [0, 1]), h.increment(-3, [2, 3], { status: 'info' })];
    for (const final of [7, 10]) expect(checkCounter([...ops, h.read(final, [10, 11])]).valid).toBe(true);
    const verdict = checkCounter([...ops, h.read(6, [10, 11])]);
    expect(verdict.valid).toBe(false);
    if (verdict.valid === false) expect(verdict.explanation).toContain('is below the 10 acknowledged minus 3 indeterminate');
  });

  it("is 'unknown' without a final read, unless told not to require one", () => {
    const h = historyBuilder('c');
    // The only read overlaps an increment, so it is not a final read.
    const ops = [h.increment(1, [0, 10]), h.read(0, [5, 6])];
    expect(checkCounter(ops)).toMatchObject({ valid: 'unknown', reason: expect.stringContaining('no final read') });
    expect(checkCounter(ops, { requireFinalRead: false }).valid).toBe(true);
  });

  it('checks each counter key on its own and ignores reads of other keys', () => {
    const h = historyBuilder('c');
    const ops = [
      h.increment(1, [0, 1], { key: 'a' }),
      h.increment(1, [0, 1], { key: 'b' }),
      h.increment(1, [2, 3], { key: 'b' }),
      h.read(1, [10, 11], { key: 'a' }),
      h.read(2, [10, 11], { key: 'b' }),
      h.read('not a number', [10, 11], { key: 'register' }),
    ];
    expect(checkCounter(ops)).toMatchObject({ valid: true, counters: [{ key: 'a', finalValue: 1 }, { key: 'b', finalValue: 2 }] });
    expect(checkCounter([...ops.slice(0, 4), h.read(3, [10, 11], { key: 'b' })])).toMatchObject({ valid: false, anomalies: [{ key: 'b' }] });
  });

  it('rejects malformed amounts and values', () => {
    const h = historyBuilder('c');
    expect(() => checkCounter([h.increment(1.5, [0, 1])])).toThrow(/safe integer/);
    expect(() => checkCounter([h.increment(1, [0, 1]), h.read('3', [2, 3])])).toThrow(/safe integer or null/);
  });
});
