import { describe, expect, it } from 'vitest';
import { checkHistory } from '../../src/chaos/check-history.js';
import type { Operation } from '../../src/chaos/history.js';
import { historyBuilder, toEvents } from './checkers/builders.js';

const bank = { total: 200, accounts: ['bank/a', 'bank/b'] };

/** One operation or more of every workload the chaos runner drives, ending with its final reads. */
function run(finalBalances: Record<string, number>): Operation[] {
  const h = historyBuilder('ra/x');
  return [
    h.write('v1', [0, 2]),
    h.increment(1, [0, 3], { key: 'counter/total' }),
    h.add('sa/e1', [0, 1], { key: 'set' }),
    h.transfer('bank/a', 'bank/b', 30, [0, 4], { key: 'bank' }),
    h.transfer('bank/b', 'bank/a', 5, [5, 8], { key: 'bank', status: 'info' }),
    h.readBalances({ 'bank/a': 70, 'bank/b': 130 }, [4, 5], { key: 'bank' }),
    h.read('v1', [1000, 1001]),
    h.readAll(['sa/e1'], [1000, 1001], { key: 'set' }),
    h.read(1, [1000, 1001], { key: 'counter/total' }),
    h.readBalances(finalBalances, [1002, 1003], { key: 'bank' }),
  ];
}

describe('checkHistory (the chaos run report)', () => {
  it('runs every checker and gives one line each', () => {
    const report = checkHistory(toEvents(run({ 'bank/a': 75, 'bank/b': 125 })), { bank });
    expect(report.lines).toEqual(['register: valid (2 ops)', 'counter: valid (2 ops)', 'set: valid (2 ops)', 'bank: valid (4 ops)']);
    expect(report).toMatchObject({ valid: true, problems: [] });
  });

  it('negative control: a torn transfer in the final read fails the run and names the snapshot', () => {
    const report = checkHistory(toEvents(run({ 'bank/a': 75, 'bank/b': 130 })), { bank });
    expect(report.valid).toBe(false);
    expect(report.problems).toEqual([expect.stringMatching(/^bank: bank snapshot \(op 10, .*\) sums to 205, not the total 200$/)]);
    expect(report.lines.at(-1)).toMatch(/^bank: INVALID: bank snapshot/);
  });

  it('a workload that recorded nothing fails the run: it proves nothing', () => {
    const report = checkHistory(toEvents(run({ 'bank/a': 75, 'bank/b': 125 }).filter((op) => op.key !== 'bank')), { bank });
    expect(report.valid).toBe(false);
    expect(report.problems).toEqual(['bank: bank: no operations in the history']);
  });
});
