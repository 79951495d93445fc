import { describe, expect, it } from 'vitest';
import {
  HistoryError,
  describeOperation,
  historyToJsonl,
  pairOperations,
  parseHistoryJsonl,
  valueKey,
  type HistoryErrorCode,
  type HistoryEvent,
} from '../../../src/chaos/history.js';
import { historyBuilder, toEvents } from './builders.js';

function codeOf(run: () => unknown): HistoryErrorCode | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof HistoryError) return error.code;
    throw error;
  }
  return undefined;
}

const invoke = (op: number, process: number, timeMs: number, extra: Partial<HistoryEvent> = {}): HistoryEvent => ({
  process,
  op,
  type: 'invoke',
  f: 'write',
  key: 'x',
  value: op,
  timeMs,
  ...extra,
});
const complete = (op: number, process: number, type: 'ok' | 'fail' | 'info', timeMs: number, extra: Partial<HistoryEvent> = {}): HistoryEvent => ({
  process,
  op,
  type,
  f: 'write',
  key: 'x',
  timeMs,
  ...extra,
});

describe('history events and operations', () => {
  it('pairs invokes with completions; an info or missing completion never completes', () => {
    const operations = pairOperations([
      invoke(1, 0, 0),
      invoke(2, 1, 1),
      complete(1, 0, 'ok', 2),
      invoke(3, 0, 3),
      complete(2, 1, 'fail', 4, { error: 'UNAVAILABLE' }),
      complete(3, 0, 'info', 5, { error: 'DEADLINE_EXCEEDED' }),
      invoke(4, 0, 6), // process 0 may go on after an info: it gave up on op 3
      { process: 2, op: 5, type: 'invoke', f: 'read', key: 'x', timeMs: 7 },
      { process: 2, op: 5, type: 'ok', f: 'read', key: 'x', value: 1, timeMs: 8 },
    ]);
    expect(operations.map(({ op, status, completeMs }) => ({ op, status, completeMs }))).toEqual([
      { op: 1, status: 'ok', completeMs: 2 },
      { op: 2, status: 'fail', completeMs: 4 },
      { op: 3, status: 'info', completeMs: Infinity },
      { op: 4, status: 'info', completeMs: Infinity },
      { op: 5, status: 'ok', completeMs: 8 },
    ]);
    expect(operations[0]).toEqual({ op: 1, process: 0, f: 'write', key: 'x', input: 1, output: undefined, invokeMs: 0, completeMs: 2, status: 'ok' });
    expect(operations[1]!.error).toBe('UNAVAILABLE');
    expect(operations[4]!.output).toBe(1);
  });

  it('rejects histories that break the recording rules, each with its stable code', () => {
    expect(codeOf(() => pairOperations([invoke(1, 0, 0), invoke(1, 1, 1)]))).toBe('DUPLICATE_OP');
    expect(codeOf(() => pairOperations([complete(1, 0, 'ok', 1)]))).toBe('ORPHAN_COMPLETION');
    expect(codeOf(() => pairOperations([invoke(1, 0, 0), complete(1, 0, 'ok', 1), complete(1, 0, 'ok', 2)]))).toBe('ORPHAN_COMPLETION');
    expect(codeOf(() => pairOperations([invoke(1, 0, 0), complete(1, 1, 'ok', 1)]))).toBe('MISMATCHED_COMPLETION');
    expect(codeOf(() => pairOperations([invoke(1, 0, 0), complete(1, 0, 'ok', 1, { key: 'y' })]))).toBe('MISMATCHED_COMPLETION');
    expect(codeOf(() => pairOperations([invoke(1, 0, 0), invoke(2, 0, 1)]))).toBe('PROCESS_BUSY');
    expect(codeOf(() => pairOperations([invoke(1, 0, 5), complete(1, 0, 'ok', 4)]))).toBe('TIME_BACKWARDS');
    expect(codeOf(() => pairOperations([invoke(1, 0, Number.NaN)]))).toBe('MALFORMED_EVENT');
  });

  it('round-trips through JSONL and checks every line', () => {
    const h = historyBuilder();
    const events = toEvents([h.write(1, [0, 1]), h.read(1, [2, 3]), h.cas(1, 2, true, [4, 5]), h.write(3, [6, 7], { status: 'info' })]);
    const text = historyToJsonl(events);
    expect(text.split('\n')).toHaveLength(events.length + 1);
    expect(parseHistoryJsonl(`\n${text}\n\n`)).toEqual(events);

    expect(codeOf(() => parseHistoryJsonl('{"process":0'))).toBe('MALFORMED_EVENT');
    const line = (fields: Record<string, unknown>): string => JSON.stringify({ process: 0, op: 1, type: 'invoke', f: 'read', timeMs: 0, ...fields });
    expect(codeOf(() => parseHistoryJsonl(line({ f: 'delete' })))).toBe('MALFORMED_EVENT');
    expect(codeOf(() => parseHistoryJsonl(line({ type: 'done' })))).toBe('MALFORMED_EVENT');
    expect(codeOf(() => parseHistoryJsonl(line({ process: -1 })))).toBe('MALFORMED_EVENT');
    expect(codeOf(() => parseHistoryJsonl(line({ timeMs: 'soon' })))).toBe('MALFORMED_EVENT');
    expect(codeOf(() => parseHistoryJsonl(line({ key: 7 })))).toBe('MALFORMED_EVENT');
    // The error names the bad line; a parse that wrongly succeeds fails here too.
    expect(() => parseHistoryJsonl(`${line({})}\n${line({ op: 'x' })}`)).toThrow(expect.objectContaining({ code: 'MALFORMED_EVENT', message: expect.stringMatching(/^line 2:/) }));
  });

  it('pairs what the test builders produce back into the same operations', () => {
    const h = historyBuilder();
    const operations = [h.write(1, [0, 10]), h.read(null, [1, 2]), h.write(2, [3, 3], { status: 'fail' }), h.write(3, [4, 5], { status: 'info' })];
    expect(pairOperations(toEvents(operations))).toEqual(operations);
  });

  it('compares values by canonical JSON and refuses what JSON cannot carry', () => {
    expect(valueKey({ b: 1, a: [1, { d: 2, c: 3 }] })).toBe(valueKey({ a: [1, { c: 3, d: 2 }], b: 1 }));
    expect(valueKey('1')).not.toBe(valueKey(1));
    expect(valueKey(null)).toBe('null');
    for (const bad of [undefined, Number.NaN, Infinity, 1n, () => 1]) expect(codeOf(() => valueKey(bad))).toBe('UNSUPPORTED_VALUE');
  });

  it('describes operations for explanations', () => {
    const h = historyBuilder('k');
    expect(describeOperation(h.read(3, [10, 12.5], { process: 2 }))).toBe('read -> 3 on "k" (op 1, process 2, 10-12.5 ms)');
    expect(describeOperation(h.write(4, [11, 20], { process: 1, status: 'info' }))).toBe('write 4 on "k" (op 2, process 1, invoked 11 ms, indeterminate)');
    expect(describeOperation(h.cas(1, 2, false, [1, 2], { process: 0 }))).toBe('cas 1=>2 -> false on "k" (op 3, process 0, 1-2 ms)');
    expect(describeOperation(h.increment(1, [1, 2], { process: 0, status: 'fail' }))).toBe('increment 1 on "k" (op 4, process 0, 1-2 ms, failed)');
  });
});
