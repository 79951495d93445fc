/**
 * Shared test setup for the MVCC store: the engines every test runs against, and a small driver
 * that plays the Raft role (increasing indexes, a leader clock).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { bucketOf } from '../../src/keys/bucket.js';
import { bucketHash } from '../../src/keys/bucket-hash.js';
import { equalRangeOf } from '../../src/keys/partition-table.js';
import type { Limits } from '../../src/limits.js';
import type { ApplyResult, Command } from '../../src/mvcc/commands.js';
import { MvccStore, type MvccStoreOptions } from '../../src/mvcc/mvcc-store.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { LevelEngine } from '../../src/storage/level-engine.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type { StorageEngine } from '../../src/storage/storage-engine.js';

export interface EngineKind {
  readonly name: string;
  /** A fresh, empty engine that is closed after the current test. */
  make(): Promise<StorageEngine>;
  /** Closes the engine and opens the same data again, as a restarted node does. */
  reopen(engine: StorageEngine): Promise<StorageEngine>;
}

const openEngines = new Set<StorageEngine>();
let levelRoot: string | undefined;
let levelCounter = 0;

afterEach(async () => {
  for (const engine of openEngines) await engine.close();
  openEngines.clear();
});

afterAll(() => {
  if (levelRoot !== undefined) rmSync(levelRoot, { recursive: true, force: true });
});

function track<T extends StorageEngine>(engine: T): T {
  openEngines.add(engine);
  return engine;
}

export const memoryEngineKind: EngineKind = {
  name: 'MemoryEngine',
  make: async () => track(new MemoryEngine()),
  reopen: async (engine) => {
    await engine.close();
    (engine as MemoryEngine).reopen();
    return engine;
  },
};

export const levelEngineKind: EngineKind = {
  name: 'LevelEngine',
  make: async () => {
    levelRoot ??= mkdtempSync(join(tmpdir(), 'atoll-mvcc-'));
    return track(await LevelEngine.open(join(levelRoot, `db-${levelCounter++}`)));
  },
  reopen: async (engine) => {
    const location = (engine as LevelEngine).location;
    await engine.close();
    openEngines.delete(engine);
    return track(await LevelEngine.open(location, { createIfMissing: false }));
  },
};

export const engineKinds: EngineKind[] = [memoryEngineKind, levelEngineKind];

export const text = (value: string): Uint8Array => new TextEncoder().encode(value);
export const fromBytes = (value: Uint8Array | undefined): string | undefined =>
  value === undefined ? undefined : new TextDecoder().decode(value);

export const startMs = 1_700_000_000_000;

/** `n` keys `b<i>/k` whose bucket hash falls in equal-table partition `id` of `count` (split and merge tests). */
export function keysOfEqualPartition(id: number, count: number, n: number): string[] {
  const range = equalRangeOf(id, count);
  const keys: string[] = [];
  for (let i = 0; keys.length < n && i < 100_000; i++) {
    const hash = bucketHash(bucketOf(`b${i}/k`));
    if (hash >= range.start && hash < range.end) keys.push(`b${i}/k`);
  }
  return keys;
}

/** The AtollError code an action fails with, or 'ok'. */
export async function codeOf(action: () => Promise<unknown>): Promise<string> {
  try {
    await action();
    return 'ok';
  } catch (error) {
    if (isAtollError(error)) return error.code;
    throw error;
  }
}

/** The store options a test chooses; the harness supplies the engine and prefix. */
export type StoreSettings = Omit<MvccStoreOptions, 'engine' | 'prefix'>;

/** Plays the Raft side: each apply gets the next index and the leader's current clock. */
export class Partition {
  index = 0;
  nowMs = startMs;

  constructor(
    public store: MvccStore,
    public engine: StorageEngine,
    readonly prefix: Uint8Array,
    readonly limits?: Limits,
    /** Used again by every reopen, as a restarted node opens its store with its configuration. */
    readonly settings: StoreSettings = {},
  ) {}

  static async create(
    kind: EngineKind,
    options: {
      partitionId?: number;
      limits?: Limits;
      engine?: StorageEngine;
      partition?: { id: number; count: number };
      dedupWindow?: number;
      dedupDisabled?: boolean;
    } = {},
  ): Promise<Partition> {
    const engine = options.engine ?? (await kind.make());
    const prefix = partitionKeyPrefix('mvcc', options.partitionId ?? 7);
    const settings: StoreSettings = {
      ...(options.limits && { limits: options.limits }),
      ...(options.partition && { partition: options.partition }),
      ...(options.dedupWindow !== undefined && { dedupWindow: options.dedupWindow }),
      ...(options.dedupDisabled !== undefined && { dedupDisabled: options.dedupDisabled }),
    };
    const store = await MvccStore.open({ engine, prefix, ...settings });
    return new Partition(store, engine, prefix, options.limits, settings);
  }

  /**
   * Applies at the next index; with `requestId`, as a client request that may be retried. After a
   * compact command it runs the physical compaction steps to the end, as a node does beside its
   * loop (unless an export defers them), so a test sees the removal done.
   */
  async apply(command: Command, requestId?: string): Promise<ApplyResult> {
    this.index++;
    const result = await this.store.apply(command, { index: this.index, nowMs: this.nowMs, ...(requestId !== undefined && { requestId }) });
    if (command.type === 'compact') await drainCompaction(this.store);
    return result;
  }

  /** Applies and insists that it took effect. */
  async applyOk(command: Command): Promise<ApplyResult> {
    const result = await this.apply(command);
    if (result.error !== undefined) throw result.error;
    if (!result.applied) throw new Error(`command was not applied: ${JSON.stringify(result.writes)}`);
    return result;
  }

  async put(key: string, value: string, extra: Partial<Omit<Extract<Command, { type: 'put' }>, 'type' | 'key' | 'value'>> = {}): Promise<ApplyResult> {
    return this.apply({ type: 'put', key, value: text(value), ...extra });
  }

  async get(key: string, revision?: number) {
    return this.store.get(key, { nowMs: this.nowMs, ...(revision !== undefined && { revision }) });
  }

  async value(key: string): Promise<string | undefined> {
    const result = await this.get(key);
    return result.found ? fromBytes(result.value) : undefined;
  }

  async reopen(kind: EngineKind): Promise<void> {
    this.engine = await kind.reopen(this.engine);
    this.store = await MvccStore.open({ engine: this.engine, prefix: this.prefix, ...this.settings });
  }
}

/** Runs the pending physical compaction steps until done or deferred; returns the versions removed. */
export async function drainCompaction(store: MvccStore): Promise<number> {
  let removed = 0;
  for (let guard = 0; guard < 1_000_000; guard++) {
    const step = await store.compactStorageStep();
    removed += step.removedVersions;
    if (step.done || step.deferred) return removed;
  }
  throw new Error('compaction did not finish');
}

/** Every stored key of the engine, for checking what compaction and imports leave behind. */
export async function countStoredKeys(engine: StorageEngine): Promise<number> {
  let count = 0;
  for await (const _entry of engine.iterate({})) count++;
  return count;
}
