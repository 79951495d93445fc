import { describe, expect, it } from 'vitest';
import { HistoryError, type Operation } from '../../../src/chaos/history.js';
import { checkSet } from '../../../src/chaos/checkers/set.js';
import { historyBuilder } from './builders.js';

/** Adds of "e1".."e6" in 1 ms slots: e1-e3 ok, e4 and e5 info, e6 failed. */
function adds(): { readonly h: ReturnType<typeof historyBuilder>; readonly operations: Operation[] } {
  const h = historyBuilder('set');
  const operations = [
    h.add('e1', [0, 1]),
    h.add('e2', [1, 2]),
    h.add('e3', [2, 3]),
    h.add('e4', [3, 4], { status: 'info' }),
    h.add('e5', [4, 5], { status: 'info' }),
    h.add('e6', [5, 6], { status: 'fail' }),
  ];
  return { h, operations };
}

describe('set checker', () => {
  it('accepts a final read with every ok add, any of the info adds, and no failed one', () => {
    const { h, operations } = adds();
    for (const info of [[], ['e4'], ['e4', 'e5']]) {
      const verdict = checkSet([...operations, h.readAll(['e3', 'e1', 'e2', ...info], [100, 101])]);
      expect(verdict.valid).toBe(true);
      expect(verdict.summary).toMatchObject({ attempted: 6, acknowledged: 3, failed: 1, indeterminate: 2, indeterminatePresent: info.length, finalSize: 3 + info.length });
    }
  });

  it('negative control: a lost acknowledged write is invalid', () => {
    const { h, operations } = adds();
    const verdict = checkSet([...operations, h.readAll(['e1', 'e3', 'e4'], [100, 101])]);
    expect(verdict.valid).toBe(false);
    if (verdict.valid !== false) return;
    expect(verdict.explanation.split('\n')[0]).toMatch(/^lost write: add "e2" \(op 2, .*\) was acknowledged but is missing from the final read \(op 7, /);
    expect(verdict.anomalies).toMatchObject([{ kind: 'lost', element: 'e2' }]);
  });

  it('a phantom element is invalid', () => {
    const { h, operations } = adds();
    const verdict = checkSet([...operations, h.readAll(['e1', 'e2', 'e3', 'e99'], [100, 101])]);
    expect(verdict).toMatchObject({ valid: false, anomalies: [{ kind: 'phantom', element: 'e99' }] });
    if (verdict.valid === false) expect(verdict.explanation).toMatch(/^phantom: "e99" is in the final read/);
  });

  it('a failed add that is present is reported: the fail was wrong', () => {
    const { h, operations } = adds();
    const verdict = checkSet([...operations, h.readAll(['e1', 'e2', 'e3', 'e6'], [100, 101])]);
    expect(verdict).toMatchObject({ valid: false, anomalies: [{ kind: 'failed-present', element: 'e6' }] });
    if (verdict.valid === false) expect(verdict.explanation).toMatch(/^failed add present: add "e6" \(op 6, .*failed\) was reported failed but is in the final read/);
  });

  it('a duplicate element in a read is invalid', () => {
    const { h, operations } = adds();
    expect(checkSet([...operations, h.readAll(['e1', 'e2', 'e3', 'e1'], [100, 101])])).toMatchObject({
      valid: false,
      anomalies: [{ kind: 'duplicate', element: 'e1' }],
    });
  });

  it('checks reads during the run: an element acknowledged or seen before a read began must be in it', () => {
    const h = historyBuilder('set');
    const a = h.add('a', [0, 1]);
    const b = h.add('b', [0, 50], { status: 'info' });
    const final = h.readAll(['a', 'b'], [100, 101]);
    // b is in flight: a read may or may not show it.
    expect(checkSet([a, b, h.readAll(['a'], [10, 11]), h.readAll(['a', 'b'], [12, 13]), final]).valid).toBe(true);
    // a was acknowledged before this read began.
    const missingAcked = checkSet([a, b, h.readAll([], [10, 11]), final]);
    expect(missingAcked).toMatchObject({ valid: false, anomalies: [{ kind: 'lost', element: 'a' }] });
    if (missingAcked.valid === false) expect(missingAcked.explanation).toContain('(acknowledged at 1 ms) is missing from read');
    // b was seen by a read that completed before this one began, then vanished.
    const vanished = checkSet([a, b, h.readAll(['a', 'b'], [10, 11]), h.readAll(['a'], [12, 13]), final]);
    expect(vanished).toMatchObject({ valid: false, anomalies: [{ kind: 'lost', element: 'b' }] });
  });

  it("is 'unknown' without a final read; a read overlapping an add is not final", () => {
    const h = historyBuilder('set');
    const ops = [h.add('a', [0, 10]), h.readAll(['a'], [5, 6])];
    expect(checkSet(ops)).toMatchObject({ valid: 'unknown', reason: expect.stringContaining('no final read') });
    expect(checkSet(ops, { requireFinalRead: false }).valid).toBe(true);
  });

  it('takes the element from the key when an add has no value', () => {
    const h = historyBuilder('set');
    const ops = [{ ...h.add(undefined, [0, 1]), key: 'bucket/e1' }, h.readAll(['bucket/e1'], [2, 3])];
    expect(checkSet(ops).valid).toBe(true);
  });

  it('rejects two adds of one element and a read that is not an array', () => {
    const h = historyBuilder('set');
    expect(() => checkSet([h.add('a', [0, 1]), h.add('a', [2, 3])])).toThrow(HistoryError);
    expect(() => checkSet([h.add('a', [0, 1]), h.readAll(['a'], [2, 3]), { ...h.readAll([], [4, 5]), output: 'a' }])).toThrow(/must return an array/);
  });

  it('lists many anomalies compactly', () => {
    const h = historyBuilder('set');
    const ops: Operation[] = [];
    for (let i = 0; i < 50; i++) ops.push(h.add(i, [i, i + 0.5]));
    ops.push(h.readAll([], [100, 101]));
    const verdict = checkSet(ops);
    expect(verdict.valid).toBe(false);
    if (verdict.valid !== false) return;
    expect(verdict.anomalies).toHaveLength(50);
    const lines = verdict.explanation.split('\n');
    expect(lines[0]).toContain('(and 49 more anomalies)');
    expect(lines.at(-1)).toBe('... 40 more not listed');
  });
});
