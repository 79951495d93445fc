/**
 * The expiry index against a plain map: after any sequence of sets (new expiries, rewrites,
 * deletions), expiredKeys returns distinct expired keys, earliest first, as many as asked for or
 * all of them, and the heap stays bounded by twice the keys plus a constant.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { ExpiryIndex } from '../../src/mvcc/expiry-index.js';

const operation = fc.record({ key: fc.integer({ min: 0, max: 40 }).map((n) => `k${n}`), expiresAtMs: fc.option(fc.integer({ min: 0, max: 100 }), { nil: undefined }) });

describe('ExpiryIndex', () => {
  it('agrees with a plain map', () => {
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 300 }), fc.integer({ min: 0, max: 110 }), fc.integer({ min: 0, max: 50 }), (operations, nowMs, max) => {
        const index = new ExpiryIndex();
        const model = new Map<string, number>();
        for (const { key, expiresAtMs } of operations) {
          index.set(key, expiresAtMs);
          if (expiresAtMs === undefined) model.delete(key);
          else model.set(key, expiresAtMs);
        }
        expect(index.size).toBe(model.size);
        const expired = [...model].filter(([, at]) => at <= nowMs).sort((a, b) => a[1] - b[1]);
        const taken = index.expiredKeys(nowMs, max);
        expect(taken).toHaveLength(Math.min(max, expired.length));
        expect(new Set(taken).size).toBe(taken.length);
        // Earliest first: the expiries taken are the smallest ones.
        expect(taken.map((key) => model.get(key))).toEqual(expired.slice(0, taken.length).map(([, at]) => at));
        // Taking keeps them: a second call answers as many, with the same expiries (ties may swap).
        expect(index.expiredKeys(nowMs, max).map((key) => model.get(key))).toEqual(taken.map((key) => model.get(key)));
      }),
      { numRuns: 300 },
    );
  });

  it('keeps its heap bounded however often keys are rewritten', () => {
    const index = new ExpiryIndex();
    for (let round = 0; round < 100_000; round++) index.set(`k${round % 10}`, round);
    expect((index as unknown as { heap: unknown[] }).heap.length).toBeLessThanOrEqual(2 * 10 + 1024 + 1);
    expect(index.expiredKeys(Number.MAX_SAFE_INTEGER, 100)).toHaveLength(10);
    for (let key = 0; key < 10; key++) index.set(`k${key}`, undefined);
    expect(index.expiredKeys(Number.MAX_SAFE_INTEGER, 100)).toEqual([]);
  });

  it('clears a key without deleting its map entry, and keeps the cleared entries bounded', () => {
    // A key with a TTL written and deleted again and again (a lock's key): a V8 Map pays for each
    // delete and re-insert of one key in time that grows with the cycles (docs/performance.md).
    const index = new ExpiryIndex();
    for (let key = 0; key < 100; key++) index.set(`k${key}`, 1_000 + key);
    const map = (index as unknown as { expiryOf: Map<string, number> }).expiryOf;
    const deletes = vi.spyOn(map, 'delete');
    for (let cycle = 0; cycle < 500; cycle++) {
      index.set('lock', 5_000 + cycle);
      expect(index.size).toBe(101);
      index.set('lock', undefined);
      expect(index.size).toBe(100);
    }
    expect(deletes).not.toHaveBeenCalled();
    deletes.mockRestore();
    expect(index.expiredKeys(Number.MAX_SAFE_INTEGER, 1_000)).toHaveLength(100);
    // Many keys that lose their expiry for good: the cleared entries go at a rebuild.
    for (let key = 0; key < 20_000; key++) {
      index.set(`once${key}`, 9_000);
      index.set(`once${key}`, undefined);
    }
    expect(index.size).toBe(100);
    const entries = (index as unknown as { expiryOf: Map<string, number> }).expiryOf.size;
    expect(entries).toBeLessThanOrEqual(2 * 100 + 1024 + 1);
    expect(index.expiredKeys(Number.MAX_SAFE_INTEGER, 1_000).sort()).toEqual(Array.from({ length: 100 }, (_, key) => `k${key}`).sort());
  });
});
