/**
 * Small builders for hand-written histories. Times are given as [invokeMs, completeMs]; an 'info'
 * operation ignores completeMs (it never completes). Op ids count up from 1 per builder.
 */
import type { HistoryEvent, OpFunction, Operation, OperationStatus } from '../../../src/chaos/history.js';

export interface OpOptions {
  readonly process?: number;
  readonly key?: string;
  readonly status?: OperationStatus;
}

export type Interval = readonly [invokeMs: number, completeMs: number];

export function historyBuilder(defaultKey = 'x') {
  let nextOp = 1;
  let nextProcess = 0;
  const make = (f: OpFunction, input: unknown, output: unknown, [invokeMs, completeMs]: Interval, options: OpOptions = {}): Operation => {
    const status = options.status ?? 'ok';
    const operation: Operation = {
      op: nextOp++,
      // Distinct processes by default, so any intervals may overlap when turned into events.
      process: options.process ?? nextProcess++,
      f,
      key: options.key ?? defaultKey,
      input,
      output: status === 'ok' ? output : undefined,
      invokeMs,
      completeMs: status === 'info' ? Infinity : completeMs,
      status,
    };
    return operation;
  };
  return {
    read: (output: unknown, at: Interval, options?: OpOptions) => make('read', undefined, output, at, options),
    write: (value: unknown, at: Interval, options?: OpOptions) => make('write', value, undefined, at, options),
    cas: (expected: unknown, next: unknown, swapped: boolean, at: Interval, options?: OpOptions) =>
      make('cas', { expected, next }, swapped, at, options),
    increment: (amount: number, at: Interval, options?: OpOptions & { readonly result?: number }) =>
      make('increment', amount, options?.result, at, options),
    add: (element: unknown, at: Interval, options?: OpOptions) => make('add', element, undefined, at, options),
    readAll: (elements: readonly unknown[], at: Interval, options?: OpOptions) => make('readAll', undefined, elements, at, options),
    transfer: (from: string, to: string, amount: number, at: Interval, options?: OpOptions) =>
      make('transfer', { from, to, amount }, undefined, at, options),
    readBalances: (balances: Record<string, number>, at: Interval, options?: OpOptions) =>
      make('readBalances', undefined, balances, at, options),
  };
}

/**
 * The events a harness would have recorded for these operations, in time order. An info
 * completion is recorded at the invoke time (the client gave up at once; any time would do).
 */
export function toEvents(operations: readonly Operation[]): HistoryEvent[] {
  const timed: { readonly event: HistoryEvent; readonly order: number }[] = [];
  for (const operation of operations) {
    const common = { process: operation.process, op: operation.op, f: operation.f, ...(operation.key === undefined ? {} : { key: operation.key }) };
    timed.push({ event: { ...common, type: 'invoke', timeMs: operation.invokeMs, ...(operation.input === undefined ? {} : { value: operation.input }) }, order: 1 });
    const completeMs = operation.status === 'info' ? operation.invokeMs : operation.completeMs;
    const value = operation.status === 'ok' && operation.output !== undefined ? { value: operation.output } : {};
    // At equal times a completion goes before other invokes (so a process is free again), but
    // after its own invoke.
    timed.push({ event: { ...common, type: operation.status, timeMs: completeMs, ...value }, order: completeMs === operation.invokeMs ? 2 : 0 });
  }
  timed.sort((a, b) => a.event.timeMs - b.event.timeMs || a.order - b.order);
  return timed.map(({ event }) => event);
}
