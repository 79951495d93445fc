import { describe, expect, it } from 'vitest';
import { HistoryError, historyToJsonl, parseHistoryJsonl, type Operation } from '../../../src/chaos/history.js';
import { checkAll, checkAllOperations } from '../../../src/chaos/checkers/index.js';
import { historyBuilder, toEvents } from './builders.js';

/** A small run of every workload, all valid, with a final read of each after 1000 ms. */
function mixedRun(): { readonly h: ReturnType<typeof historyBuilder>; readonly operations: Operation[] } {
  const h = historyBuilder('r1');
  const operations = [
    // Registers r1 and r2.
    h.write('a', [0, 2]),
    h.read('a', [3, 4]),
    h.cas('a', 'b', true, [5, 7]),
    h.write('z', [8, 9], { key: 'r2', status: 'info' }),
    h.read(null, [10, 11], { key: 'r2' }),
    // A counter on key "hits": its reads go to the counter checker, not the register one.
    h.increment(1, [0, 3], { key: 'hits' }),
    h.increment(1, [4, 6], { key: 'hits', status: 'info' }),
    h.read(1, [5, 6], { key: 'hits' }),
    // A set.
    h.add('e1', [0, 1], { key: 'set/e1' }),
    h.add('e2', [2, 3], { key: 'set/e2', status: 'fail' }),
    // A bank.
    h.transfer('x', 'y', 5, [0, 4], { key: 'bank' }),
    h.readBalances({ x: 5, y: 5 }, [5, 6], { key: 'bank' }),
    // Final reads.
    h.read('b', [1000, 1001]),
    h.read(2, [1000, 1001], { key: 'hits' }),
    h.readAll(['e1'], [1000, 1001], { key: 'set' }),
  ];
  return { h, operations };
}

describe('checkAll', () => {
  it('routes each workload to its checker and sums up a valid run in one line', () => {
    const { operations } = mixedRun();
    const result = checkAll(toEvents(operations), { bank: { total: 10 } });
    expect(result.valid).toBe(true);
    expect(result.operationCounts).toEqual({ register: 6, counter: 4, set: 3, bank: 2 });
    expect(result.summary).toBe('valid: register valid (6 ops); counter valid (4 ops); set valid (3 ops); bank valid (2 ops)');
    expect(result.results.counter).toMatchObject({ valid: true, counters: [{ key: 'hits', finalValue: 2 }] });
  });

  it('reads a JSONL history end to end', () => {
    const { operations } = mixedRun();
    expect(checkAll(parseHistoryJsonl(historyToJsonl(toEvents(operations)))).valid).toBe(true);
  });

  it('negative control: a stale read makes the whole run INVALID and the summary names it', () => {
    const { h, operations } = mixedRun();
    const result = checkAllOperations([...operations, h.read('a', [1002, 1003])]);
    expect(result.valid).toBe(false);
    expect(result.results.register).toMatchObject({ valid: false, key: 'r1' });
    expect(result.summary).toMatch(/^INVALID: register INVALID \(key "r1" is not linearizable: read -> "a" .*\); counter valid \(4 ops\); set valid/);
    expect(result.summary).not.toContain('\n');
  });

  it('one violation beats any number of passes, and an undecided checker taints a pass', () => {
    const { h, operations } = mixedRun();
    const lost = operations.map((op) => (op.f === 'readAll' ? h.readAll([], [1000, 1001], { key: 'set' }) : op));
    expect(checkAllOperations(lost).summary).toMatch(/set INVALID \(lost write: add "e1"/);
    const doubled = operations.map((op) => (op.key === 'hits' && op.invokeMs === 1000 ? h.read(3, [1000, 1001], { key: 'hits' }) : op));
    expect(checkAllOperations(doubled).summary).toContain('counter INVALID (counter "hits": final read 3');
    const noFinalSetRead = operations.filter((op) => op.f !== 'readAll');
    const undecided = checkAllOperations(noFinalSetRead);
    expect(undecided.valid).toBe('unknown');
    expect(undecided.summary).toMatch(/^unknown: .*set unknown \(set: no final read/);
  });

  it('runs only the checkers asked for; one with nothing to check is unknown', () => {
    const { operations } = mixedRun();
    const result = checkAllOperations(operations, { checkers: ['register', 'bank'] });
    expect(Object.keys(result.results)).toEqual(['register', 'bank']);
    const registersOnly = operations.filter((op) => op.f === 'write');
    expect(checkAllOperations(registersOnly, { checkers: ['register', 'set'] })).toMatchObject({
      valid: 'unknown',
      results: { set: { valid: 'unknown', reason: 'set: no operations in the history' } },
    });
  });

  it('an empty history proves nothing', () => {
    expect(checkAll([])).toEqual({ valid: 'unknown', results: {}, operationCounts: {}, summary: 'unknown: no operations to check' });
  });

  it('throws a HistoryError for a history that breaks the recording rules', () => {
    const { operations } = mixedRun();
    const events = toEvents(operations);
    expect(() => checkAll([...events, events[0]!])).toThrow(HistoryError);
  });
});
