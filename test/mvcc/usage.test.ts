/**
 * Per-tenant usage (stored keys and bytes) kept by MvccStore on every apply must equal a recount
 * from storage (what a restart or snapshot import computes) and a model of the writes.
 */
import { describe, expect, it } from 'vitest';
import { toInternalKey } from '../../src/keys/tenant-keys.js';
import { engineKinds, Partition, text } from './harness.js';

function snapshotOf(usage: ReadonlyMap<string, { keys: number; bytes: number }>): Record<string, { keys: number; bytes: number }> {
  return Object.fromEntries([...usage].map(([tenant, count]) => [tenant, { keys: count.keys, bytes: count.bytes }]));
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
