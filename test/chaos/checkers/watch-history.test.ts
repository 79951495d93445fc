/** The watch-history checker: each anomaly it names, and a clean history passing. */
import { describe, expect, it } from 'vitest';
import { checkWatchHistory, type WatchRecord } from '../../../src/chaos/checkers/index.js';

const committed: WatchRecord[] = [
  { revision: 3, key: 's/a', type: 'put', value: '1' },
  { revision: 4, key: 's/b', type: 'put', value: '2' },
  { revision: 4, key: 's/c', type: 'put', value: '3' },
  { revision: 6, key: 's/a', type: 'delete', reason: 'deleted' },
  { revision: 9, key: 's/t', type: 'delete', reason: 'expired' },
];

const kinds = (observed: WatchRecord[], acknowledged = [{ revision: 3, key: 's/a', type: 'put' as const }]): string[] => {
  const verdict = checkWatchHistory({ observed, committed, acknowledged });
  return verdict.valid === false ? verdict.anomalies.map((anomaly) => anomaly.kind) : [String(verdict.valid)];
};

describe('watch-history checker', () => {
  it('passes the committed history itself and counts expiries', () => {
    const verdict = checkWatchHistory({ observed: committed, committed, acknowledged: [{ revision: 6, key: 's/a', type: 'delete' }] });
    expect(verdict.valid).toBe(true);
    expect(verdict.summary).toEqual({ observed: 5, committed: 5, acknowledged: 1, expiries: 1 });
  });

  it('names gaps, duplicates, reordering, changes never committed, wrong contents and lost acknowledgements', () => {
    expect(kinds(committed.filter((record) => record.key !== 's/c'))).toEqual(['gap']);
    expect(kinds([...committed.slice(0, 2), committed[1]!, ...committed.slice(2)])).toEqual(['duplicate']);
    expect(kinds([committed[0]!, committed[3]!, committed[1]!, committed[2]!, committed[4]!])).toEqual(['order']);
    expect(kinds([...committed, { revision: 10, key: 's/x', type: 'put', value: '?' }])).toEqual(['unexpected']);
    expect(kinds(committed.map((record) => (record.reason === 'expired' ? { ...record, reason: 'deleted' } : record)))).toEqual(['different']);
    expect(kinds(committed, [{ revision: 5, key: 's/a', type: 'put' }])).toEqual(['lost-ack']);
  });

  it('cannot decide without a committed history', () => {
    expect(checkWatchHistory({ observed: [], committed: [] }).valid).toBe('unknown');
  });
});
