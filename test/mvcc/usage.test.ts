/**
 * Per-tenant usage (stored keys, live bytes and retained history bytes) kept by MvccStore on every
 * apply and physical compaction must equal a recount from storage (what a restart or snapshot
 * import computes) and a model of the stored versions.
 */
import { describe, expect, it } from 'vitest';
import { toInternalKey } from '../../src/keys/tenant-keys.js';
import { makeLimits } from '../../src/limits.js';
import { MvccStore, type Command } from '../../src/mvcc/index.js';
import { engineKinds, Partition, text } from './harness.js';

/** Live keys and bytes only (a tenant with nothing live but history left is not listed). */
function snapshotOf(usage: ReadonlyMap<string, { keys: number; bytes: number }>): Record<string, { keys: number; bytes: number }> {
  return Object.fromEntries([...usage].filter(([, count]) => count.keys !== 0 || count.bytes !== 0).map(([tenant, count]) => [tenant, { keys: count.keys, bytes: count.bytes }]));
}

type Counts = Record<string, { keys: number; bytes: number; historyBytes: number }>;

function countsOf(usage: ReadonlyMap<string, { keys: number; bytes: number; historyBytes: number }>): Counts {
  return Object.fromEntries([...usage].map(([tenant, count]) => [tenant, { keys: count.keys, bytes: count.bytes, historyBytes: count.historyBytes }]));
}

/** A fresh store over the same engine: its usage is the full recount open computes. */
async function recounted(partition: Partition): Promise<Counts> {
  const store = await MvccStore.open({ engine: partition.engine, prefix: partition.prefix, ...partition.settings });
  return countsOf(store.usageByTenant());
}

/** The stored versions of each key, oldest first (undefined: a tombstone), as the store keeps them. */
class VersionModel {
  readonly versions = new Map<string, Array<{ revision: number; value: string | undefined }>>();

  store(key: string, revision: number, value: string | undefined): void {
    const list = this.versions.get(key) ?? [];
    list.push({ revision, value });
    this.versions.set(key, list);
  }

  /** Physical compaction: below the floor, keep only each key's newest version, and not even it when a tombstone. */
  compact(floor: number): void {
    for (const [key, list] of this.versions) {
      const atFloor = list.filter((version) => version.revision <= floor);
      const above = list.filter((version) => version.revision > floor);
      const newestAtFloor = atFloor.at(-1);
      const kept = newestAtFloor === undefined || newestAtFloor.value === undefined ? above : [newestAtFloor, ...above];
      if (kept.length === 0) this.versions.delete(key);
      else this.versions.set(key, kept);
    }
  }

  counts(): Counts {
    const counts: Counts = {};
    for (const [key, list] of this.versions) {
      const tenant = key.startsWith('\u0000') ? 'acme' : 'default';
      const entry = (counts[tenant] ??= { keys: 0, bytes: 0, historyBytes: 0 });
      const keyBytes = Buffer.byteLength(key);
      for (const [index, version] of list.entries()) {
        const bytes = keyBytes + (version.value === undefined ? 0 : Buffer.byteLength(version.value));
        if (index === list.length - 1 && version.value !== undefined) {
          entry.keys += 1;
          entry.bytes += bytes;
        } else {
          entry.historyBytes += bytes;
        }
      }
    }
    return Object.fromEntries(Object.entries(counts).filter(([, c]) => c.keys !== 0 || c.bytes !== 0 || c.historyBytes !== 0));
  }
}

describe.each(engineKinds)('tenant usage on $name', (kind) => {
  it('counts live keys and key+value bytes per tenant through puts, overwrites, deletes, increments and transactions', async () => {
    const partition = await Partition.create(kind);
    const acme = (key: string): string => toInternalKey('acme', key);
    const model = new Map<string, string>();
    const write = async (key: string, value: string | undefined): Promise<void> => {
      if (value === undefined) {
        await partition.apply({ type: 'delete', key });
        model.delete(key);
      } else {
        await partition.put(key, value);
        model.set(key, value);
      }
    };
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 300; i++) {
      const key = random(2) === 0 ? `b/k${random(20)}` : acme(`b/k${random(20)}`);
      await write(key, random(4) === 0 ? undefined : 'x'.repeat(random(50)));
    }
    await partition.apply({ type: 'increment', key: acme('c/n'), delta: 12345n });
    model.set(acme('c/n'), '12345');
    const snapshot = partition.store.revision;
    await partition.apply({
      type: 'txn',
      snapshotRevision: snapshot,
      isolation: 'snapshot',
      readKeys: [],
      readPrefixes: [],
      writes: [
        { type: 'put', key: acme('t/a'), value: text('aaaa') },
        { type: 'delete', key: acme('c/n') },
      ],
    });
    model.set(acme('t/a'), 'aaaa');
    model.delete(acme('c/n'));

    const expected: Record<string, { keys: number; bytes: number }> = {};
    for (const [key, value] of model) {
      const tenant = key.startsWith('\u0000') ? 'acme' : 'default';
      const entry = (expected[tenant] ??= { keys: 0, bytes: 0 });
      entry.keys += 1;
      entry.bytes += Buffer.byteLength(key) + Buffer.byteLength(value);
    }
    expect(snapshotOf(partition.store.usageByTenant())).toEqual(expected);
    await partition.reopen(kind);
    expect(snapshotOf(partition.store.usageByTenant())).toEqual(expected);
  });
});

describe.each(engineKinds)('retained history bytes on $name', (kind) => {
  it('counts superseded versions and tombstones as history, frees what compaction removes, and equals a full recount throughout', async () => {
    // A small compaction batch, so physical compaction writes (and subtracts) in several rounds.
    const partition = await Partition.create(kind, { limits: makeLimits({ compactionBatchOps: 3 }) });
    const model = new VersionModel();
    const acme = (key: string): string => toInternalKey('acme', key);
    let seed = 11;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const keyOf = (): string => (random(2) === 0 ? `b/k${random(12)}` : acme(`b/k${random(12)}`));
    /** Applies a write command and records in the model the versions it stored. */
    const write = async (command: Command, values: Array<string | undefined>): Promise<void> => {
      const result = await partition.apply(command);
      expect(result.error).toBeUndefined();
      if (!result.applied) return;
      for (const [index, written] of result.writes.entries()) {
        const value = values[index];
        // A delete stores a tombstone only when it deleted a live value.
        if (value === undefined && written.deleted !== true) continue;
        model.store(written.key, result.revision, value);
      }
    };
    const check = async (where: string): Promise<void> => {
      const incremental = countsOf(partition.store.usageByTenant());
      expect(incremental, `model at ${where}`).toEqual(model.counts());
      expect(incremental, `recount at ${where}`).toEqual(await recounted(partition));
    };
    let sawHistory = false;
    let sawFreed = false;
    for (let step = 0; step < 400; step++) {
      const choice = random(20);
      if (choice < 10) {
        const key = keyOf();
        const value = 'v'.repeat(random(40));
        await write({ type: 'put', key, value: text(value) }, [value]);
      } else if (choice < 14) {
        const key = keyOf();
        await write({ type: 'delete', key }, [undefined]);
      } else if (choice < 16) {
        // A batch on distinct keys: puts and deletes at one revision.
        const keys = [...new Set([keyOf(), keyOf(), keyOf()])];
        const values = keys.map((_, index) => (index % 2 === 0 ? 'b'.repeat(random(30)) : undefined));
        await write(
          { type: 'batch', writes: keys.map((key, index) => (values[index] === undefined ? { type: 'delete' as const, key } : { type: 'put' as const, key, value: text(values[index] ?? '') })) },
          values,
        );
      } else if (choice < 18) {
        // Compaction: the floor somewhere between the current floor and the revision.
        const floor = partition.store.compactedRevision + random(partition.store.revision - partition.store.compactedRevision + 1);
        const before = countsOf(partition.store.usageByTenant());
        await partition.applyOk({ type: 'compact', belowRevision: floor });
        // A floor at or below the current one changes nothing; compacting the model again is idempotent.
        model.compact(partition.store.compactedRevision);
        const after = countsOf(partition.store.usageByTenant());
        if (Object.values(after).reduce((sum, c) => sum + c.historyBytes, 0) < Object.values(before).reduce((sum, c) => sum + c.historyBytes, 0)) sawFreed = true;
      } else {
        // Running physical compaction again (as after a crash) removes nothing more and frees nothing more.
        await partition.store.compactStorage();
      }
      if (Object.values(countsOf(partition.store.usageByTenant())).some((c) => c.historyBytes > 0)) sawHistory = true;
      if (step % 10 === 9) await check(`step ${step}`);
    }
    await check('the end');
    expect(sawHistory).toBe(true);
    expect(sawFreed).toBe(true);

    // Compacting at the revision leaves no history but no tombstone either: only live versions.
    await partition.applyOk({ type: 'compact', belowRevision: partition.store.revision });
    model.compact(partition.store.revision);
    await check('full compaction');
    for (const count of partition.store.usageByTenant().values()) expect(count.historyBytes).toBe(0);

    // A snapshot import recounts the same.
    const chunks: Uint8Array[] = [];
    await partition.put(acme('b/k0'), 'after');
    await partition.put(acme('b/k0'), 'after again');
    for await (const chunk of partition.store.exportSnapshot()) chunks.push(chunk);
    const target = await Partition.create(kind);
    await target.store.importSnapshot(chunks);
    expect(countsOf(target.store.usageByTenant())).toEqual(countsOf(partition.store.usageByTenant()));
  });

  it('moves an overwritten value into history: one key overwritten with large values keeps its live bytes small and its history growing', async () => {
    const partition = await Partition.create(kind);
    const key = toInternalKey('acme', 'b/big');
    const keyBytes = Buffer.byteLength(key);
    for (let i = 0; i < 5; i++) await partition.put(key, 'x'.repeat(1000));
    expect(countsOf(partition.store.usageByTenant())).toEqual({ acme: { keys: 1, bytes: keyBytes + 1000, historyBytes: 4 * (keyBytes + 1000) } });
    await partition.apply({ type: 'delete', key });
    expect(countsOf(partition.store.usageByTenant())).toEqual({ acme: { keys: 0, bytes: 0, historyBytes: 5 * (keyBytes + 1000) + keyBytes } });
    await partition.applyOk({ type: 'compact', belowRevision: partition.store.revision });
    // Nothing is left: the tenant leaves the map.
    expect(countsOf(partition.store.usageByTenant())).toEqual({});
  });
});
