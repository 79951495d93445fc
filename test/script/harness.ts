/**
 * Test setup for scripts: a snapshot reader backed by a Map (the store at one revision), a real
 * TxnView over it confined to one bucket, and helpers that run a script and show what it wrote.
 */
import { expect } from 'vitest';
import { AtollError, type AtollErrorCode } from '../../src/errors.js';
import { bucketOf } from '../../src/keys/bucket.js';
import { defaultLimits, makeLimits, type Limits } from '../../src/limits.js';
import { parseScript, runScript, type ScriptOutcome, type ScriptParams } from '../../src/script/index.js';
import { TxnView, type SnapshotReader, type TxnRecord } from '../../src/txn/txn-view.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The example of the Kahuna page (shared/seeds), which must parse and run exactly as written. */
export const seedExample = `let all_services = get by prefix "services"
if contains(all_services, "services/users") then
  set "services/users" "localhost:8084"
end

let all_services = get by prefix "services"
if contains(all_services, "services/users") then
  return true
end

return false
`;

/** The page's prose: add the service only when it is absent (the first `if` negated). */
export const seedExampleAsDescribed = seedExample.replace('if contains', 'if not contains');

/** The snapshot clock of every test view. */
export const snapshotNowMs = 1_000_000;

/** A partition's committed state at one revision. */
export class FakeSnapshot implements SnapshotReader {
  readonly records = new Map<string, TxnRecord>();
  revision = 0;
  /** How many times each read method was called, to check that a failed script read nothing. */
  reads = 0;

  constructor(initial: Readonly<Record<string, string>> = {}) {
    for (const [key, value] of Object.entries(initial)) this.put(key, value);
  }

  put(key: string, value: string, expiresAtMs = 0): TxnRecord {
    this.revision++;
    const previous = this.records.get(key);
    const record: TxnRecord = {
      key,
      value: encoder.encode(value),
      createRevision: previous?.createRevision ?? this.revision,
      modRevision: this.revision,
      version: (previous?.version ?? 0) + 1,
      expiresAtMs,
    };
    this.records.set(key, record);
    return record;
  }

  async get(key: string): Promise<TxnRecord | undefined> {
    this.reads++;
    return this.records.get(key);
  }

  async getByPrefix(keyPrefix: string, maxKeys: number): Promise<TxnRecord[]> {
    this.reads++;
    const records = [...this.records.values()].filter((record) => record.key.startsWith(keyPrefix));
    if (records.length > maxKeys) throw new AtollError('RESOURCE_EXHAUSTED', `more than ${maxKeys} keys`, { maxKeys });
    return records.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }
}

export interface RunOptions {
  readonly params?: ScriptParams;
  readonly limits?: Partial<Limits>;
  readonly clock?: () => number;
  /** The one bucket the transaction may touch (default `services`). */
  readonly bucket?: string;
}

export interface RunResult {
  readonly outcome: ScriptOutcome;
  readonly view: TxnView;
  /** The buffered writes: key -> value text, or null for a delete; with the TTL when one is set. */
  readonly writes: Record<string, string | null>;
  readonly ttls: Record<string, number>;
}

export function viewOf(snapshot: SnapshotReader, options: { bucket?: string; limits?: Limits } = {}): TxnView {
  const bucket = options.bucket ?? 'services';
  return new TxnView({
    reader: snapshot,
    nowMs: snapshotNowMs,
    limits: options.limits ?? defaultLimits,
    checkKey: (key) => {
      if (bucketOf(key) !== bucket) {
        throw new AtollError('OUTSIDE_TRANSACTION', `key ${JSON.stringify(key)} is in bucket ${bucketOf(key)}, not ${bucket}`);
      }
    },
    checkPrefix: (prefixBucket) => {
      if (prefixBucket !== bucket) throw new AtollError('OUTSIDE_TRANSACTION', `bucket ${prefixBucket} is not ${bucket}`);
    },
  });
}

export function writesOf(view: TxnView): Pick<RunResult, 'writes' | 'ttls'> {
  const writes: Record<string, string | null> = {};
  const ttls: Record<string, number> = {};
  for (const op of view.writes()) {
    writes[op.key] = op.type === 'put' ? decoder.decode(op.value) : null;
    if (op.type === 'put' && op.ttlMs !== undefined) ttls[op.key] = op.ttlMs;
  }
  return { writes, ttls };
}

/** Parses and runs `source` against `snapshot` (an empty one by default). */
export async function run(source: string, snapshot = new FakeSnapshot(), options: RunOptions = {}): Promise<RunResult> {
  const limits = makeLimits(options.limits);
  const view = viewOf(snapshot, { limits, ...(options.bucket !== undefined && { bucket: options.bucket }) });
  const outcome = await runScript(parseScript(source, limits), {
    params: options.params ?? {},
    view,
    limits,
    ...(options.clock !== undefined && { clock: options.clock }),
  });
  return { outcome, view, ...writesOf(view) };
}

/** The value a script returns (it must commit). */
export async function evaluate(source: string, snapshot?: FakeSnapshot, options?: RunOptions): Promise<unknown> {
  const { outcome } = await run(source, snapshot, options);
  expect(outcome.committed).toBe(true);
  return outcome.returnValue;
}

/** The error a promise or function rejects with; fails the test when it does not. */
export async function failure(attempt: Promise<unknown> | (() => unknown)): Promise<AtollError> {
  try {
    await (typeof attempt === 'function' ? attempt() : attempt);
  } catch (error) {
    expect(error).toBeInstanceOf(AtollError);
    return error as AtollError;
  }
  throw new Error('expected an AtollError, but it succeeded');
}

/** Asserts an error's code and position, in the details and in the message. */
export function expectError(error: AtollError, code: AtollErrorCode, line: number, column: number): void {
  expect({ code: error.code, line: error.details?.line, column: error.details?.column }).toEqual({ code, line, column });
  expect(error.message).toContain(`line ${line}, column ${column}: `);
}

/** Runs `source` and asserts it fails with `code` at line/column; returns the error. */
export async function expectRunError(
  source: string,
  code: AtollErrorCode,
  line: number,
  column: number,
  snapshot?: FakeSnapshot,
  options?: RunOptions,
): Promise<AtollError> {
  const error = await failure(run(source, snapshot, options));
  expectError(error, code, line, column);
  return error;
}
