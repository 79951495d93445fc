/**
 * The history a fault-injection run records, and the operations the checkers read from it.
 *
 * A run writes one `HistoryEvent` per line (JSONL). Each client operation produces an `invoke`
 * event when the client starts it and at most one completion: `ok` (it took effect and this is
 * its result), `fail` (it definitely did not take effect, ever) or `info` (unknown: it may take
 * effect at any moment after its invoke, or never). An invoke left without a completion at the
 * end of the history is treated as `info`, the same as a client that crashed mid-call.
 *
 * What `value` holds depends on the function and the event type:
 *
 * | f              | invoke value                                 | ok value                          |
 * | -------------- | -------------------------------------------- | --------------------------------- |
 * | `read`         | none                                         | the value read; `null` if absent  |
 * | `write`        | the value to write                           | none                              |
 * | `cas`          | `{ expected, next }` or `[expected, next]`   | `true` if swapped, else `false`   |
 * | `increment`    | the amount, a safe integer (may be negative) | optionally the counter afterwards |
 * | `add`          | the element, unique across the run           | none                              |
 * | `readAll`      | none                                         | the array of elements present     |
 * | `transfer`     | `{ from, to, amount }`                       | none                              |
 * | `readBalances` | none                                         | `{ [account]: balance }`          |
 *
 * `key` names the register or counter (and, for `add`/`readAll`, the set; for `transfer`/
 * `readBalances`, the bank). `fail` and `info` events carry no value; `error` may hold the error
 * code or message for people reading the history. Values are JSON values, compared by their
 * canonical JSON text (`valueKey`), so object key order never matters.
 *
 * Times are from a monotonic clock (`performance.now()`), fractions allowed. Two operations are
 * ordered only if one completed strictly before the other was invoked; equal times count as
 * concurrent, which can hide a violation but never invent one.
 *
 * This module is pure: no I/O. Reading and writing the file is the harness's business.
 */
import assert from 'node:assert/strict';

export const eventTypes = ['invoke', 'ok', 'fail', 'info'] as const;
export type EventType = (typeof eventTypes)[number];

/** Every operation a workload may record; the table in the module comment gives their values. */
export const opFunctions = ['read', 'write', 'cas', 'increment', 'add', 'readAll', 'transfer', 'readBalances'] as const;
export type OpFunction = (typeof opFunctions)[number];

export type OperationStatus = Exclude<EventType, 'invoke'>;

/** One line of a history file. */
export interface HistoryEvent {
  /** The client that ran the operation. A client runs one operation at a time. */
  readonly process: number;
  /** The operation's id, unique within the history; shared by its invoke and its completion. */
  readonly op: number;
  readonly type: EventType;
  readonly f: OpFunction;
  readonly key?: string;
  readonly value?: unknown;
  /** For `fail` and `info`: why, for people. Checkers never read it. */
  readonly error?: string;
  /** Monotonic milliseconds. */
  readonly timeMs: number;
}

/** The input of a `cas` operation. */
export interface CasInput {
  readonly expected: unknown;
  readonly next: unknown;
}

/**
 * A cas input in either accepted form, `{ expected, next }` or Jepsen's `[expected, next]`, or
 * undefined if it is neither (or a part is missing).
 */
export function maybeCasInput(input: unknown): CasInput | undefined {
  if (Array.isArray(input)) return input.length === 2 && input[0] !== undefined && input[1] !== undefined ? { expected: input[0], next: input[1] } : undefined;
  if (typeof input !== 'object' || input === null) return undefined;
  const { expected, next } = input as Partial<CasInput>;
  return expected === undefined || next === undefined ? undefined : { expected, next };
}

/** The input of a `transfer` operation. */
export interface TransferInput {
  readonly from: string;
  readonly to: string;
  readonly amount: number;
}

/** An invoke paired with its completion. */
export interface Operation {
  readonly op: number;
  readonly process: number;
  readonly f: OpFunction;
  readonly key?: string;
  /** The invoke event's value. */
  readonly input: unknown;
  /** The ok event's value; undefined unless `status` is 'ok'. */
  readonly output: unknown;
  readonly invokeMs: number;
  /** When the completion was recorded; Infinity for 'info', which may take effect at any later time. */
  readonly completeMs: number;
  readonly status: OperationStatus;
  readonly error?: string;
}

/** Stable codes for a history that breaks the rules above; messages may change. */
export const historyErrorCodes = [
  'MALFORMED_EVENT',
  'DUPLICATE_OP',
  'ORPHAN_COMPLETION',
  'MISMATCHED_COMPLETION',
  'PROCESS_BUSY',
  'TIME_BACKWARDS',
  'MALFORMED_OPERATION',
  'UNSUPPORTED_VALUE',
  'DUPLICATE_ELEMENT',
] as const;
export type HistoryErrorCode = (typeof historyErrorCodes)[number];

/**
 * A history the checkers cannot judge because it breaks the recording rules: a harness bug, not a
 * verdict on the system under test.
 */
export class HistoryError extends Error {
  constructor(
    readonly code: HistoryErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'HistoryError';
  }
}

// ------------------------------------------------------------------ JSONL

/** One event as a JSONL line (without the newline). */
export function eventToJsonLine(event: HistoryEvent): string {
  return JSON.stringify(event);
}

/** A whole history as JSONL text, one event per line, ending with a newline. */
export function historyToJsonl(events: readonly HistoryEvent[]): string {
  return events.map((event) => `${eventToJsonLine(event)}\n`).join('');
}

/**
 * Parses JSONL text into events, checking the shape of each. Blank lines are skipped. Throws a
 * HistoryError naming the line of the first malformed event.
 */
export function parseHistoryJsonl(text: string): HistoryEvent[] {
  const events: HistoryEvent[] = [];
  const lines = text.split('\n');
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!.trim();
    if (line === '') continue;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (error) {
      throw new HistoryError('MALFORMED_EVENT', `line ${index + 1}: not JSON (${(error as Error).message})`);
    }
    events.push(parseEvent(raw, `line ${index + 1}`));
  }
  return events;
}

/** Checks that `raw` is a well-formed event and returns it typed; `where` prefixes the error message. */
export function parseEvent(raw: unknown, where = 'event'): HistoryEvent {
  const fail = (problem: string): never => {
    throw new HistoryError('MALFORMED_EVENT', `${where}: ${problem}`);
  };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return fail('not an object');
  const record = raw as Record<string, unknown>;
  const { process, op, type, f, key, value, error, timeMs } = record;
  if (!isNonNegativeSafeInteger(process)) fail('process must be a non-negative integer');
  if (!isNonNegativeSafeInteger(op)) fail('op must be a non-negative integer');
  if (!(eventTypes as readonly unknown[]).includes(type)) fail(`type must be one of ${eventTypes.join(', ')}`);
  if (!(opFunctions as readonly unknown[]).includes(f)) fail(`f must be one of ${opFunctions.join(', ')}`);
  if (key !== undefined && typeof key !== 'string') fail('key must be a string when present');
  if (error !== undefined && typeof error !== 'string') fail('error must be a string when present');
  if (typeof timeMs !== 'number' || !Number.isFinite(timeMs)) fail('timeMs must be a finite number');
  const event: { -readonly [K in keyof HistoryEvent]: HistoryEvent[K] } = {
    process: process as number,
    op: op as number,
    type: type as EventType,
    f: f as OpFunction,
    timeMs: timeMs as number,
  };
  if (key !== undefined) event.key = key as string;
  if (value !== undefined) event.value = value;
  if (error !== undefined) event.error = error as string;
  return event;
}

function isNonNegativeSafeInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

// ------------------------------------------------------------------ pairing

/**
 * Pairs each invoke with its completion. Operations come back in the order of their invoke
 * events. Throws a HistoryError if an op id repeats, a completion has no invoke or names another
 * process, function or key, a completion is earlier than its invoke, or a client invokes while
 * its previous operation is still open (an `info` completion closes it: the client gave up).
 */
export function pairOperations(events: readonly HistoryEvent[]): Operation[] {
  const invokes: HistoryEvent[] = [];
  const completions = new Map<number, HistoryEvent>();
  const open = new Map<number, HistoryEvent>(); // op id -> its invoke, until completed
  const busy = new Map<number, number>(); // process -> op id of its open operation
  const seen = new Set<number>();
  for (let index = 0; index < events.length; index++) {
    const event = events[index]!;
    const where = `event ${index} (op ${event.op})`;
    if (!Number.isFinite(event.timeMs)) throw new HistoryError('MALFORMED_EVENT', `${where}: timeMs must be finite`);
    if (event.type === 'invoke') {
      if (seen.has(event.op)) throw new HistoryError('DUPLICATE_OP', `${where}: op id ${event.op} is used twice`);
      const running = busy.get(event.process);
      if (running !== undefined) {
        throw new HistoryError('PROCESS_BUSY', `${where}: process ${event.process} invoked while op ${running} is still open`);
      }
      seen.add(event.op);
      open.set(event.op, event);
      busy.set(event.process, event.op);
      invokes.push(event);
      continue;
    }
    const invoke = open.get(event.op);
    if (invoke === undefined) {
      const problem = seen.has(event.op) ? 'is completed twice' : 'has no earlier invoke';
      throw new HistoryError('ORPHAN_COMPLETION', `${where}: op ${event.op} ${problem}`);
    }
    if (invoke.process !== event.process || invoke.f !== event.f || invoke.key !== event.key) {
      throw new HistoryError(
        'MISMATCHED_COMPLETION',
        `${where}: completion (process ${event.process}, ${event.f} ${event.key ?? ''}) does not match its invoke (process ${invoke.process}, ${invoke.f} ${invoke.key ?? ''})`,
      );
    }
    if (event.timeMs < invoke.timeMs) {
      throw new HistoryError('TIME_BACKWARDS', `${where}: completes at ${event.timeMs} ms, before its invoke at ${invoke.timeMs} ms`);
    }
    open.delete(event.op);
    busy.delete(event.process);
    completions.set(event.op, event);
  }
  return invokes.map((invoke) => toOperation(invoke, completions.get(invoke.op)));
}

function toOperation(invoke: HistoryEvent, completion: HistoryEvent | undefined): Operation {
  const status: OperationStatus = completion?.type === 'ok' || completion?.type === 'fail' ? completion.type : 'info';
  assert.notEqual(completion?.type, 'invoke');
  const operation: { -readonly [K in keyof Operation]: Operation[K] } = {
    op: invoke.op,
    process: invoke.process,
    f: invoke.f,
    input: invoke.value,
    output: status === 'ok' ? completion!.value : undefined,
    invokeMs: invoke.timeMs,
    completeMs: status === 'info' ? Infinity : completion!.timeMs,
    status,
  };
  if (invoke.key !== undefined) operation.key = invoke.key;
  if (completion?.error !== undefined) operation.error = completion.error;
  return operation;
}

// ------------------------------------------------------------------ values and descriptions

/**
 * The canonical JSON text of a value: object keys sorted, so equal values give equal text. Throws
 * a HistoryError for anything JSON cannot carry exactly (undefined, NaN, Infinity, bigint, functions).
 */
export function valueKey(value: unknown): string {
  return canonicalJson(value, 0);
}

/** Nesting deeper than this is a harness bug, not a value a workload writes. */
const maxValueDepth = 64;

function canonicalJson(value: unknown, depth: number): string {
  if (depth > maxValueDepth) throw new HistoryError('UNSUPPORTED_VALUE', `value nested deeper than ${maxValueDepth} levels`);
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new HistoryError('UNSUPPORTED_VALUE', `${value} is not a JSON number`);
    return JSON.stringify(value);
  }
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item, depth + 1)).join(',')}]`;
  if (typeof value === 'object') {
    const record = value as Record<string, unknown>;
    const keys = Object.keys(record).sort();
    return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key], depth + 1)}`).join(',')}}`;
  }
  throw new HistoryError('UNSUPPORTED_VALUE', `a ${typeof value} is not a JSON value`);
}

/** A value for an explanation: its JSON text, shortened past `maxChars`. */
export function formatValue(value: unknown, maxChars = 40): string {
  const text = value === undefined ? 'undefined' : JSON.stringify(value);
  return text.length <= maxChars ? text : `${text.slice(0, maxChars - 3)}...`;
}

/** Milliseconds for an explanation: at most three decimals. */
export function formatMs(ms: number): string {
  return Number.isFinite(ms) ? String(Number(ms.toFixed(3))) : 'never';
}

/**
 * One operation for an explanation, e.g. `read -> 3 on "k" (op 12, process 2, 10-12.5 ms)` or
 * `write 4 on "k" (op 13, process 1, invoked 11 ms, indeterminate)`.
 */
export function describeOperation(operation: Operation): string {
  const key = operation.key === undefined ? '' : ` on ${JSON.stringify(operation.key)}`;
  return `${describeCall(operation)}${key} (${operationRef(operation)})`;
}

/** Where and when an operation ran, e.g. `op 12, process 2, 10-12.5 ms`. */
export function operationRef(operation: Operation): string {
  const when =
    operation.status === 'info'
      ? `invoked ${formatMs(operation.invokeMs)} ms, indeterminate`
      : `${formatMs(operation.invokeMs)}-${formatMs(operation.completeMs)} ms${operation.status === 'fail' ? ', failed' : ''}`;
  return `op ${operation.op}, process ${operation.process}, ${when}`;
}

function describeCall(operation: Operation): string {
  const result = operation.status === 'ok' && operation.output !== undefined ? ` -> ${formatValue(operation.output)}` : '';
  switch (operation.f) {
    case 'read':
    case 'readAll':
    case 'readBalances':
      return `${operation.f}${result}`;
    case 'cas': {
      const input = maybeCasInput(operation.input);
      return `cas ${formatValue(input?.expected)}=>${formatValue(input?.next)}${result}`;
    }
    case 'transfer': {
      const input = operation.input as Partial<TransferInput> | undefined;
      return `transfer ${formatValue(input?.amount)} from ${formatValue(input?.from)} to ${formatValue(input?.to)}`;
    }
    default:
      return `${operation.f} ${formatValue(operation.input)}${result}`;
  }
}
