/**
 * Hand-written register histories, each small enough to check by eye. Intervals are [invoke,
 * complete] in ms; the comments draw them on a time line.
 */
import { describe, expect, it } from 'vitest';
import { HistoryError } from '../../../src/chaos/history.js';
import { checkLinearizableRegister, checkRegisterKey } from '../../../src/chaos/checkers/linearizable-register.js';
import { historyBuilder } from './builders.js';

describe('linearizable register checker', () => {
  it('accepts an empty history and reads of the initial value', () => {
    const h = historyBuilder();
    expect(checkLinearizableRegister([])).toEqual({ valid: true });
    expect(checkLinearizableRegister([h.read(null, [0, 1]), h.read(null, [2, 3])])).toEqual({ valid: true });
    expect(checkLinearizableRegister([h.read('a', [0, 1])], { initialValue: 'a' })).toEqual({ valid: true });
  });

  it('accepts a sequential history', () => {
    const h = historyBuilder();
    const ops = [h.write(1, [0, 1]), h.read(1, [2, 3]), h.cas(1, 2, true, [4, 5]), h.read(2, [6, 7]), h.cas(1, 3, false, [8, 9]), h.read(2, [10, 11])];
    expect(checkLinearizableRegister(ops)).toEqual({ valid: true });
  });

  it('accepts a read concurrent with a write returning either value', () => {
    // write 1 |--|            write 2 |------|
    //                         read 1    |--|     read 2 |--|   (both reads overlap the write)
    const h = historyBuilder();
    const write1 = h.write(1, [0, 1]);
    const write2 = h.write(2, [2, 10]);
    expect(checkLinearizableRegister([write1, write2, h.read(1, [3, 4])])).toEqual({ valid: true });
    expect(checkLinearizableRegister([write1, write2, h.read(2, [3, 4])])).toEqual({ valid: true });
    // Old then new is fine; new then old is not (once a read saw 2, the write has taken effect).
    expect(checkLinearizableRegister([write1, write2, h.read(1, [3, 4]), h.read(2, [5, 6])])).toEqual({ valid: true });
    expect(checkLinearizableRegister([write1, write2, h.read(2, [3, 4]), h.read(1, [5, 6])]).valid).toBe(false);
  });

  it('negative control: a stale read after a newer write completed is not linearizable', () => {
    // write 1 |--|  write 2 |--|  read -> 1 |--|
    const h = historyBuilder();
    const verdict = checkLinearizableRegister([h.write(1, [0, 1]), h.write(2, [2, 3]), h.read(1, [4, 5])]);
    expect(verdict.valid).toBe(false);
    if (verdict.valid !== false) return;
    expect(verdict.key).toBe('x');
    // Every write wrote a distinct value, so the shortcut convicts the read without a search.
    expect(verdict.explanation).toBe(
      'key "x" is not linearizable: read -> 1 on "x" (op 3, process 2, 4-5 ms) returned a value already overwritten: ' +
        'it was written by write 1 on "x" (op 1, process 0, 0-1 ms), then write 2 on "x" (op 2, process 1, 2-3 ms) ' +
        'began after that write completed and completed before the read began.',
    );
  });

  it('explains a failed search by its deepest dead end', () => {
    // As above, but value 2 is written twice, so only the search can decide.
    const h = historyBuilder();
    const ops = [h.write(1, [0, 1]), h.write(2, [2, 3]), h.write(2, [2, 3]), h.read(1, [4, 5])];
    const result = checkRegisterKey('x', ops);
    expect(result.valid).toBe(false);
    expect(result.exploredStates).toBeGreaterThan(0);
    if (result.valid !== false) return;
    const [first, ...rest] = result.explanation.split('\n');
    expect(first).toBe(
      'key "x" is not linearizable: read -> 1 on "x" (op 4, process 3, 4-5 ms) cannot take effect in time; ' +
        'the longest consistent order places 3 of 4 operations and leaves the register at 2.',
    );
    expect(rest).toEqual([
      'The last operations of that order:',
      '  write 1 on "x" (op 1, process 0, 0-1 ms)',
      '  write 2 on "x" (op 2, process 1, 2-3 ms)',
      '  write 2 on "x" (op 3, process 2, 2-3 ms)',
      'Operations that could go next (1), none of which fits or leads to an order:',
      '  read -> 1 on "x" (op 4, process 3, 4-5 ms)',
    ]);
  });

  it('the shortcut also convicts reads of the initial value after a write, and of values never written', () => {
    const h = historyBuilder();
    const initial = checkLinearizableRegister([h.write(1, [0, 1]), h.read(null, [2, 3])]);
    expect(initial.valid === false && initial.explanation).toContain('returned the initial value, but write 1');
    const never = checkLinearizableRegister([h.write(1, [0, 1]), h.read(5, [2, 3])]);
    expect(never.valid === false && never.explanation).toContain('returned a value that no operation wrote');
    // An indeterminate writer may take effect late: no conviction, and the search agrees.
    expect(checkLinearizableRegister([h.write(1, [0, 1], { status: 'info' }), h.write(2, [2, 3]), h.read(1, [4, 5])])).toEqual({ valid: true });
  });

  it('reports the key that failed and keeps keys independent', () => {
    const h = historyBuilder();
    const ops = [
      h.write('a', [0, 1], { key: 'k1' }),
      h.write('b', [0, 1], { key: 'k2' }),
      h.read('a', [2, 3], { key: 'k1' }),
      // On k2 the value 'a' was never written.
      h.read('a', [2, 3], { key: 'k2' }),
    ];
    const verdict = checkLinearizableRegister(ops);
    expect(verdict).toMatchObject({ valid: false, key: 'k2' });
  });

  it('rejects a read of a value never written', () => {
    const h = historyBuilder();
    expect(checkLinearizableRegister([h.write(1, [0, 10]), h.read(7, [2, 3])]).valid).toBe(false);
  });

  it('checks cas results: a false cas needs a different value, a true one the expected value', () => {
    const h = historyBuilder();
    expect(checkLinearizableRegister([h.write(1, [0, 1]), h.cas(1, 2, false, [2, 3])]).valid).toBe(false);
    expect(checkLinearizableRegister([h.write(1, [0, 1]), h.cas(5, 2, true, [2, 3])]).valid).toBe(false);
    // Two concurrent cas from the same expected value: only one may swap.
    const start = h.write(0, [0, 1]);
    expect(checkLinearizableRegister([start, h.cas(0, 1, true, [2, 5]), h.cas(0, 2, true, [2, 5])]).valid).toBe(false);
    expect(checkLinearizableRegister([start, h.cas(0, 1, true, [2, 5]), h.cas(0, 2, false, [2, 5]), h.read(1, [6, 7])])).toEqual({ valid: true });
    // The Jepsen input form [expected, next] is accepted too.
    const jepsenCas = { ...h.cas(0, 1, true, [2, 3]), input: [0, 1] };
    expect(checkLinearizableRegister([start, jepsenCas, h.read(1, [4, 5])])).toEqual({ valid: true });
  });

  it('indeterminate: an info write that later appears is linearizable', () => {
    // write 1 |--|  write 2 (info) |-------- ...      read -> 2 |--|
    const h = historyBuilder();
    const ops = [h.write(1, [0, 1]), h.write(2, [2, 3], { status: 'info' }), h.read(1, [4, 5]), h.read(2, [100, 101])];
    expect(checkLinearizableRegister(ops)).toEqual({ valid: true });
  });

  it('indeterminate: an info write that never appears is linearizable', () => {
    const h = historyBuilder();
    const ops = [h.write(1, [0, 1]), h.write(2, [2, 3], { status: 'info' }), h.read(1, [4, 5]), h.read(1, [100, 101])];
    expect(checkLinearizableRegister(ops)).toEqual({ valid: true });
    // Even with a false cas around, which disables dropping unobserved info writes.
    const withCas = [...ops, h.cas(2, 3, false, [102, 103])];
    expect(checkLinearizableRegister(withCas)).toEqual({ valid: true });
  });

  it('indeterminate: an info write cannot take effect before it was invoked, nor flicker', () => {
    const h = historyBuilder();
    // The read of 2 completed before the write of 2 was invoked.
    expect(checkLinearizableRegister([h.read(2, [0, 1]), h.write(2, [5, 6], { status: 'info' })]).valid).toBe(false);
    // Once seen and overwritten by nobody, 2 cannot disappear and come back.
    const flicker = [h.write(1, [0, 1]), h.write(2, [2, 3], { status: 'info' }), h.read(2, [4, 5]), h.read(1, [6, 7]), h.read(2, [8, 9])];
    expect(checkLinearizableRegister(flicker).valid).toBe(false);
  });

  it('indeterminate cas may take effect late', () => {
    const h = historyBuilder();
    const ops = [h.write(1, [0, 1]), h.cas(1, 5, true, [2, 3], { status: 'info' }), h.read(1, [10, 11]), h.read(5, [20, 21])];
    expect(checkLinearizableRegister(ops)).toEqual({ valid: true });
  });

  it('a failed write never took effect, and failed or info reads are ignored', () => {
    const h = historyBuilder();
    expect(checkLinearizableRegister([h.write(1, [0, 1]), h.write(2, [2, 3], { status: 'fail' }), h.read(2, [4, 5])]).valid).toBe(false);
    expect(
      checkLinearizableRegister([h.write(1, [0, 1]), h.read(99, [2, 3], { status: 'fail' }), h.read(99, [2, 3], { status: 'info' })]),
    ).toEqual({ valid: true });
  });

  it('treats equal timestamps as concurrent', () => {
    const h = historyBuilder();
    expect(checkLinearizableRegister([h.write(1, [0, 5]), h.write(2, [5, 6]), h.read(1, [6, 7])])).toEqual({ valid: true });
  });

  it('compares values structurally', () => {
    const h = historyBuilder();
    const ops = [h.write({ a: 1, b: [2, 3] }, [0, 1]), h.read({ b: [2, 3], a: 1 }, [2, 3])];
    expect(checkLinearizableRegister(ops)).toEqual({ valid: true });
  });

  it('rejects malformed operations with a stable code', () => {
    const h = historyBuilder();
    const badCas = { ...h.cas(0, 1, true, [0, 1]), output: 'yes' };
    expect(() => checkLinearizableRegister([badCas])).toThrow(HistoryError);
    try {
      checkLinearizableRegister([{ ...h.read(null, [0, 1]), output: undefined }]);
      expect.unreachable();
    } catch (error) {
      expect((error as HistoryError).code).toBe('MALFORMED_OPERATION');
    }
  });

  it("answers 'unknown' when the search bound is hit, never hangs", () => {
    // Many concurrent writes, each of whose values some read saw, and a final impossible read.
    const h = historyBuilder();
    const ops = [];
    for (let i = 0; i < 10; i++) ops.push(h.write(i, [0, 100]));
    for (let i = 0; i < 10; i++) ops.push(h.read(i, [1, 99]));
    ops.push(h.write(0, [0, 100])); // a repeated value, so the shortcut stands aside
    ops.push(h.read(-1, [200, 201]));
    const bounded = checkLinearizableRegister(ops, { maxExploredStates: 50 });
    expect(bounded).toMatchObject({ valid: 'unknown', key: 'x' });
    if (bounded.valid === 'unknown') expect(bounded.reason).toContain('gave up after 50 states');
    expect(checkLinearizableRegister(ops).valid).toBe(false);
  });

  it('sets timed-out writes that nobody observed aside as spares', () => {
    const h = historyBuilder();
    const ops = [h.write('seen', [0, 1])];
    for (let i = 0; i < 200; i++) ops.push(h.write(`lost-${i}`, [2 + i, 3 + i], { status: 'info' }));
    ops.push(h.read('seen', [1000, 1001]));
    const result = checkRegisterKey('x', ops);
    expect(result.valid).toBe(true);
    expect(result.searchedOperations).toBe(2);
    expect(result.spareOperations).toBe(200);
  });
});
