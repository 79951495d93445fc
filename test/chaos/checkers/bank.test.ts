import { describe, expect, it } from 'vitest';
import { checkBank } from '../../../src/chaos/checkers/bank.js';
import { historyBuilder } from './builders.js';

describe('bank checker', () => {
  const h = historyBuilder('bank');
  const transfers = [h.transfer('a', 'b', 30, [0, 5]), h.transfer('b', 'c', 10, [6, 9], { status: 'info' })];

  it('accepts snapshots that sum to the total with no negative balance', () => {
    const ops = [...transfers, h.readBalances({ a: 100, b: 0, c: 0 }, [0, 1]), h.readBalances({ a: 70, b: 20, c: 10 }, [10, 11])];
    expect(checkBank(ops, { total: 100, accounts: ['a', 'b', 'c'] })).toEqual({
      valid: true,
      summary: { total: 100, totalFrom: 'options', readsChecked: 2, transfersAcknowledged: 1 },
    });
  });

  it('rejects a torn snapshot: money created or destroyed', () => {
    const verdict = checkBank([...transfers, h.readBalances({ a: 70, b: 0, c: 0 }, [2, 3])], { total: 100 });
    expect(verdict).toMatchObject({ valid: false, anomalies: [{ kind: 'wrong-total' }] });
    if (verdict.valid === false) expect(verdict.explanation).toMatch(/^bank snapshot \(op \d+, .*\) sums to 70, not the total 100$/);
  });

  it('negative control: a transfer torn by a crash shows in the final read after recovery', () => {
    // Half of the second transfer (the debit) survived a leader kill; its commit was indeterminate.
    const ops = [
      h.transfer('a', 'b', 30, [0, 5]),
      h.transfer('b', 'c', 10, [6, 9], { status: 'info' }),
      h.readBalances({ a: 70, b: 30, c: 0 }, [5, 6]),
      h.readBalances({ a: 70, b: 20, c: 0 }, [1000, 1001]),
    ];
    const verdict = checkBank(ops, { total: 100, accounts: ['a', 'b', 'c'] });
    expect(verdict).toMatchObject({ valid: false, anomalies: [{ kind: 'wrong-total', read: { invokeMs: 1000 } }] });
    expect(verdict.summary).toMatchObject({ readsChecked: 2, transfersAcknowledged: 1 });
    // The same history with the whole transfer applied, or none of it, is valid.
    const whole = ops.map((op) => (op.invokeMs === 1000 ? h.readBalances({ a: 70, b: 20, c: 10 }, [1000, 1001]) : op));
    const none = ops.map((op) => (op.invokeMs === 1000 ? h.readBalances({ a: 70, b: 30, c: 0 }, [1000, 1001]) : op));
    expect(checkBank(whole, { total: 100, accounts: ['a', 'b', 'c'] }).valid).toBe(true);
    expect(checkBank(none, { total: 100, accounts: ['a', 'b', 'c'] }).valid).toBe(true);
  });

  it('without a total, holds every snapshot to the first one', () => {
    const ops = [h.readBalances({ a: 50, b: 50 }, [0, 1]), h.readBalances({ a: 40, b: 60 }, [2, 3])];
    expect(checkBank(ops)).toMatchObject({ valid: true, summary: { total: 100, totalFrom: 'first-read' } });
    expect(checkBank([...ops, h.readBalances({ a: 40, b: 50 }, [4, 5])]).valid).toBe(false);
  });

  it('rejects negative balances unless the workload allows them', () => {
    const ops = [h.readBalances({ a: 110, b: -10 }, [0, 1])];
    expect(checkBank(ops, { total: 100 })).toMatchObject({ valid: false, anomalies: [{ kind: 'negative', account: 'b' }] });
    expect(checkBank(ops, { total: 100, allowNegative: true }).valid).toBe(true);
  });

  it('checks the set of accounts when given', () => {
    const verdict = checkBank([h.readBalances({ a: 100, z: 0 }, [0, 1])], { total: 100, accounts: ['a', 'b'] });
    expect(verdict).toMatchObject({
      valid: false,
      anomalies: [
        { kind: 'unknown-account', account: 'z' },
        { kind: 'missing-account', account: 'b' },
      ],
    });
  });

  it("ignores failed reads and is 'unknown' with no ok snapshot", () => {
    expect(checkBank([...transfers, h.readBalances({ a: 1 }, [0, 1], { status: 'fail' })]).valid).toBe('unknown');
  });

  it('rejects a snapshot that is not an object of numbers', () => {
    expect(() => checkBank([{ ...h.readBalances({}, [0, 1]), output: [1, 2] }])).toThrow(/object of balances/);
    expect(() => checkBank([{ ...h.readBalances({}, [0, 1]), output: { a: '1' } }])).toThrow(/not a number/);
  });
});
