/**
 * Model-based test: random command sequences applied to the MVCC store and to a plain in-memory
 * model of the key model (a map from key to its list of versions), compared after every step on
 * every observable: apply outcome, latest and past reads, prefix listings, and the compaction floor.
 * Restarts (power loss on the MemoryEngine) replay the log, as Raft does. Commands may carry a
 * request id from a small set, with a dedup window of three, so retries, evictions and
 * re-recorded ids all happen; the model keeps its own queue of recorded outcomes.
 *
 * The checker has caught planted bugs: a plain put keeping the TTL, version not restarting after
 * a delete, compaction dropping a live version, expiry off by one millisecond, an escape that
 * does not escape 0x00; the last test keeps one such bug (lost deletes) as a standing control.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ApplyResult, Command, WriteOp } from '../../src/mvcc/commands.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type { WriteOperation, WriteOptions } from '../../src/storage/storage-engine.js';
import { engineKinds, memoryEngineKind, Partition, startMs, type EngineKind } from './harness.js';

interface ModelVersion {
  readonly revision: number;
  readonly value?: string;
  readonly createRevision: number;
  readonly version: number;
  readonly expiresAtMs?: number;
}

interface ModelLive {
  readonly value: string;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  readonly expiresAtMs?: number;
}

interface ModelOutcome {
  readonly applied: boolean;
  readonly errorCode?: string;
  readonly revision: number;
  readonly duplicate: boolean;
}

const dedupWindow = 3;

const int64Max = 2n ** 63n - 1n;
const int64Min = -(2n ** 63n);

class KeyModel {
  revision = 0;
  floor = 0;
  readonly history = new Map<string, ModelVersion[]>();
  /** Recorded outcomes by request id, and the ids in the order they were recorded (oldest first). */
  readonly recorded = new Map<string, ModelOutcome>();
  readonly recordOrder: string[] = [];

  /** Exactly once per request id, within the window; compact commands ignore their id. */
  applyRequest(command: Command, nowMs: number, requestId: string | undefined): ModelOutcome {
    if (requestId === undefined || command.type === 'compact') return this.apply(command, nowMs);
    const recorded = this.recorded.get(requestId);
    if (recorded !== undefined) return { ...recorded, duplicate: true };
    const outcome = this.apply(command, nowMs);
    this.recorded.set(requestId, outcome);
    this.recordOrder.push(requestId);
    if (this.recordOrder.length > dedupWindow) this.recorded.delete(this.recordOrder.shift()!);
    return outcome;
  }

  live(key: string, revision: number, nowMs: number): ModelLive | undefined {
    const versions = (this.history.get(key) ?? []).filter((version) => version.revision <= revision);
    const newest = versions.at(-1);
    if (newest === undefined || newest.value === undefined) return undefined;
    if (newest.expiresAtMs !== undefined && newest.expiresAtMs <= nowMs) return undefined;
    return {
      value: newest.value,
      createRevision: newest.createRevision,
      modRevision: newest.revision,
      version: newest.version,
      ...(newest.expiresAtMs !== undefined && { expiresAtMs: newest.expiresAtMs }),
    };
  }

  apply(command: Command, nowMs: number): ModelOutcome {
    if (command.type === 'compact') {
      if (command.belowRevision > this.revision) return { applied: false, errorCode: 'FUTURE_REVISION', revision: this.revision, duplicate: false };
      this.floor = Math.max(this.floor, command.belowRevision);
      return { applied: true, revision: this.revision, duplicate: false };
    }
    if (command.type === 'expire') throw new Error('the model does not generate expire commands (see partition-clock.test.ts)');
    if (command.type === 'leaseGrant' || command.type === 'leaseRevoke') throw new Error('the model does not generate lease commands (see leases.test.ts)');
    const ops = command.type === 'batch' ? command.writes : command.type === 'txn' ? command.writes : [command];
    if (new Set(ops.map((op) => op.key)).size !== ops.length) return { applied: false, errorCode: 'INVALID_ARGUMENT', revision: this.revision, duplicate: false };
    const newRevision = this.revision + 1;
    const staged: Array<[string, ModelVersion]> = [];
    let conditionsHeld = true;
    for (const op of ops) {
      const live = this.live(op.key, this.revision, nowMs);
      const planned = this.plan(op, live, newRevision, nowMs);
      if (planned === 'NOT_INTEGER' || planned === 'OVERFLOW') return { applied: false, errorCode: planned, revision: this.revision, duplicate: false };
      if (planned === 'condition failed') conditionsHeld = false;
      else if (planned !== undefined) staged.push([op.key, planned]);
    }
    if (!conditionsHeld) return { applied: false, revision: this.revision, duplicate: false };
    if (staged.length === 0) return { applied: true, revision: this.revision, duplicate: false };
    for (const [key, version] of staged) this.history.set(key, [...(this.history.get(key) ?? []), version]);
    this.revision = newRevision;
    return { applied: true, revision: newRevision, duplicate: false };
  }

  private plan(op: WriteOp, live: ModelLive | undefined, revision: number, nowMs: number): ModelVersion | undefined | 'condition failed' | 'NOT_INTEGER' | 'OVERFLOW' {
    const next = (value: string, expiresAtMs: number | undefined): ModelVersion => ({
      revision,
      value,
      createRevision: live?.createRevision ?? revision,
      version: (live?.version ?? 0) + 1,
      ...(expiresAtMs !== undefined && { expiresAtMs }),
    });
    const decoded = (bytes: Uint8Array | undefined): string | undefined => (bytes === undefined ? undefined : new TextDecoder().decode(bytes));
    switch (op.type) {
      case 'put': {
        if (op.ifAbsent && live !== undefined) return 'condition failed';
        if (op.ifPresent && live === undefined) return 'condition failed';
        if (op.ifModRevision !== undefined && op.ifModRevision !== (live?.modRevision ?? 0)) return 'condition failed';
        if (op.ifValue !== undefined && live?.value !== decoded(op.ifValue)) return 'condition failed';
        const expiresAtMs = op.ttlMs !== undefined ? nowMs + op.ttlMs : op.keepTtl ? live?.expiresAtMs : undefined;
        return next(decoded(op.value)!, expiresAtMs);
      }
      case 'delete': {
        if (op.ifModRevision !== undefined && op.ifModRevision !== (live?.modRevision ?? 0)) return 'condition failed';
        if (op.ifValue !== undefined && live?.value !== decoded(op.ifValue)) return 'condition failed';
        return live === undefined ? undefined : { revision, createRevision: 0, version: 0 };
      }
      case 'increment': {
        const current = live === undefined ? 0n : /^-?(0|[1-9][0-9]*)$/.test(live.value) && live.value !== '-0' ? BigInt(live.value) : undefined;
        if (current === undefined || current > int64Max || current < int64Min) return 'NOT_INTEGER';
        const sum = current + op.delta;
        if (sum > int64Max || sum < int64Min) return 'OVERFLOW';
        return next(sum.toString(), op.ttlMs !== undefined ? nowMs + op.ttlMs : live?.expiresAtMs);
      }
      case 'extend':
        return live === undefined ? 'condition failed' : next(live.value, nowMs + op.ttlMs);
    }
  }

  prefix(keyPrefix: string, revision: number, nowMs: number): string[] {
    return [...this.history.keys()]
      .filter((key) => key.startsWith(keyPrefix) && this.live(key, revision, nowMs) !== undefined)
      .sort((left, right) => Buffer.compare(Buffer.from(left), Buffer.from(right)));
  }
}

const keys = ['a', 'a/b', 'a/\u0000', 'a/\u0000b', 'a/😀', 'b', 'ab'];
const values = ['', '0', '1', '-5', 'abc', '9223372036854775807', '-9223372036854775808'];
const encode = (value: string): Uint8Array => new TextEncoder().encode(value);

const keyArbitrary = fc.constantFrom(...keys);
const valueArbitrary = fc.constantFrom(...values);
// Optional fields are drawn explicitly: fc.record includes optional keys most of the time, which
// would make plain, unconditional writes (the common case) rare.
const ttlArbitrary = fc.integer({ min: 1, max: 100 });
const expiryArbitrary = fc.oneof(
  { weight: 2, arbitrary: fc.constant({}) },
  { weight: 2, arbitrary: ttlArbitrary.map((ttlMs) => ({ ttlMs })) },
  { weight: 1, arbitrary: fc.constant({ keepTtl: true }) },
);
const conditionArbitrary = fc.oneof(
  { weight: 4, arbitrary: fc.constant({}) },
  { weight: 1, arbitrary: fc.constant({ ifAbsent: true }) },
  { weight: 1, arbitrary: fc.constant({ ifPresent: true }) },
  { weight: 1, arbitrary: fc.nat({ max: 12 }).map((ifModRevision) => ({ ifModRevision })) },
  { weight: 1, arbitrary: valueArbitrary.map((value) => ({ ifValue: encode(value) })) },
);
const writeArbitrary: fc.Arbitrary<WriteOp> = fc.oneof(
  { weight: 4, arbitrary: fc
    .tuple(keyArbitrary, valueArbitrary, expiryArbitrary, conditionArbitrary)
    .map(([key, value, expiry, condition]): WriteOp => ({ type: 'put', key, value: encode(value), ...expiry, ...condition })) },
  { weight: 1, arbitrary: fc
    .tuple(keyArbitrary, conditionArbitrary.filter((condition) => !('ifAbsent' in condition) && !('ifPresent' in condition)))
    .map(([key, condition]): WriteOp => ({ type: 'delete', key, ...condition })) },
  { weight: 2, arbitrary: fc
    .tuple(keyArbitrary, fc.constantFrom(1n, -1n, 7n, int64Max, int64Min), fc.option(ttlArbitrary, { nil: undefined }))
    .map(([key, delta, ttlMs]): WriteOp => ({ type: 'increment', key, delta, ...(ttlMs !== undefined && { ttlMs }) })) },
  { weight: 1, arbitrary: fc.tuple(keyArbitrary, ttlArbitrary).map(([key, ttlMs]): WriteOp => ({ type: 'extend', key, ttlMs })) },
);

type Action = Command | { type: 'compact-fraction'; fraction: number } | { type: 'restart'; keepUnsyncedBatches: number };
type Step = { readonly action: Action; readonly advanceMs: number; readonly requestId: string | undefined };

const stepArbitrary: fc.Arbitrary<Step> = fc.record({
  action: fc.oneof(
    { weight: 12, arbitrary: writeArbitrary },
    { weight: 4, arbitrary: fc.array(writeArbitrary, { minLength: 1, maxLength: 3 }).map((writes): Action => ({ type: 'batch', writes })) },
    { weight: 2, arbitrary: fc.double({ min: 0, max: 1, noNaN: true }).map((fraction): Action => ({ type: 'compact-fraction', fraction })) },
    { weight: 1, arbitrary: fc.nat({ max: 3 }).map((keepUnsyncedBatches): Action => ({ type: 'restart', keepUnsyncedBatches })) },
  ),
  advanceMs: fc.nat({ max: 40 }),
  // Half the commands are client requests; six ids and a window of three make retries, evictions
  // and re-recorded ids common.
  requestId: fc.option(fc.constantFrom('r0', 'r1', 'r2', 'r3', 'r4', 'r5'), { nil: undefined, freq: 2 }),
});

interface LoggedEntry {
  readonly command: Command;
  readonly index: number;
  readonly nowMs: number;
  readonly requestId: string | undefined;
  readonly outcome: ModelOutcome;
}

/**
 * A restart as Raft sees it: the node comes back (on the MemoryEngine, after a power loss that
 * drops some un-synced applies), reopens the store and re-applies its whole log. Entries at or
 * below the stored applied index must be skipped and the rest must give the same outcomes.
 */
async function restart(partition: Partition, kind: EngineKind, keepUnsyncedBatches: number, log: LoggedEntry[]): Promise<void> {
  if (partition.engine instanceof MemoryEngine) {
    partition.engine.crash({ keepUnsyncedBatches });
    partition.store = await MvccStore.open({ engine: partition.engine, prefix: partition.prefix, ...partition.settings });
  } else {
    await partition.reopen(kind);
  }
  const appliedIndex = partition.store.appliedIndex;
  for (const entry of log) {
    const context = { index: entry.index, nowMs: entry.nowMs, ...(entry.requestId !== undefined && { requestId: entry.requestId }) };
    const result = await partition.store.apply(entry.command, context);
    expect(result.replayed).toBe(entry.index <= appliedIndex);
    if (!result.replayed) expect(outcomeOf(result)).toEqual(entry.outcome);
  }
}

function outcomeOf(result: ApplyResult): ModelOutcome {
  const duplicate = result.duplicate ?? false;
  return result.error === undefined
    ? { applied: result.applied, revision: result.revision, duplicate }
    : { applied: result.applied, errorCode: result.error.code, revision: result.revision, duplicate };
}

/** Applies the steps to the store and the model, comparing every observable after each. */
async function runSequence(partition: Partition, kind: EngineKind, steps: Step[], pastPick: number): Promise<void> {
  const model = new KeyModel();
  const log: LoggedEntry[] = [];
  partition.nowMs = startMs;
  for (const step of steps) {
    partition.nowMs += step.advanceMs;
    const relativeNowMs = partition.nowMs - startMs;
    if (step.action.type === 'restart') {
      await restart(partition, kind, step.action.keepUnsyncedBatches, log);
    } else {
      const command: Command =
        step.action.type === 'compact-fraction'
          ? { type: 'compact', belowRevision: Math.floor(model.revision * step.action.fraction) }
          : step.action;
      const expected = model.applyRequest(command, relativeNowMs, step.requestId);
      const actual = await partition.apply(command, step.requestId);
      expect(outcomeOf(actual)).toEqual(expected);
      log.push({ command, index: partition.index, nowMs: partition.nowMs, requestId: step.requestId, outcome: expected });
    }
    expect(partition.store.dedupStatus().recordCount).toBe(model.recorded.size);
    const pastRevision = model.floor + (pastPick % (model.revision - model.floor + 1));
    for (const revision of new Set([model.revision, pastRevision])) {
      for (const key of keys) {
        const live = model.live(key, revision, relativeNowMs);
        const read = await partition.get(key, revision);
        expect(read.found, `${key}@${revision}`).toBe(live !== undefined);
        if (live === undefined) continue;
        const expiresAtMs = read.expiresAtMs === undefined ? undefined : read.expiresAtMs - startMs;
        expect({ ...read, value: new TextDecoder().decode(read.value), expiresAtMs }).toEqual({ found: true, revision, ...live, expiresAtMs: live.expiresAtMs });
      }
      const page = await partition.store.getByPrefix('a/', { nowMs: partition.nowMs, revision, limit: 3 });
      expect(page.items.map((item) => item.key)).toEqual(model.prefix('a/', revision, relativeNowMs).slice(0, 3));
    }
    if (model.floor > 0) await expect(partition.get('a', model.floor - 1)).rejects.toMatchObject({ code: 'COMPACTED' });
  }
}

const sequenceArbitrary = fc.tuple(fc.array(stepArbitrary, { minLength: 1, maxLength: 30 }), fc.nat({ max: 1000 }));

describe.each(engineKinds)('MvccStore matches the key model on $name', (kind) => {
  it('agrees with a plain map model over random command sequences, restarts included', async () => {
    await fc.assert(
      fc.asyncProperty(sequenceArbitrary, async ([steps, pastPick]) => {
        await runSequence(await Partition.create(kind, { dedupWindow }), kind, steps, pastPick);
      }),
      { numRuns: kind.name === 'MemoryEngine' ? 200 : 40, seed: 20240601 },
    );
  });
});

/** An engine with a planted bug: it silently drops tombstones, so deletes are lost. */
class TombstoneDroppingEngine extends MemoryEngine {
  override async write(operations: WriteOperation[], options?: WriteOptions): Promise<void> {
    const isTombstone = (operation: WriteOperation): boolean =>
      operation.type === 'put' && operation.value.length === 1 && operation.value[0] === 0x02;
    await super.write(operations.filter((operation) => !isTombstone(operation)), options);
  }
}

describe('the model checker (negative control)', () => {
  it('catches a store that loses deletes', async () => {
    const result = await fc.check(
      fc.asyncProperty(sequenceArbitrary, async ([steps, pastPick]) => {
        const engine = new TombstoneDroppingEngine();
        await runSequence(await Partition.create(memoryEngineKind, { engine, dedupWindow }), memoryEngineKind, steps, pastPick);
      }),
      { numRuns: 200, seed: 20240601 },
    );
    expect(result.failed).toBe(true);
  });

  it('catches a store that applies retried requests again', async () => {
    const result = await fc.check(
      fc.asyncProperty(sequenceArbitrary, async ([steps, pastPick]) => {
        const partition = await Partition.create(memoryEngineKind, { dedupWindow, dedupDisabled: true });
        await runSequence(partition, memoryEngineKind, steps, pastPick);
      }),
      { numRuns: 200, seed: 20240601 },
    );
    expect(result.failed).toBe(true);
  });
});
