/**
 * The shared conformance suite for StorageEngine implementations: every engine must pass it
 * unchanged. `makeEngine` gives a fresh, empty engine; `reopen`, when given, closes an engine and
 * opens the same store again, to check persistence.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { compareBytes } from '../../src/storage/bytes.js';
import type { IterateOptions, StorageEngine, StorageEntry } from '../../src/storage/storage-engine.js';

export interface ConformanceHooks {
  readonly reopen?: (engine: StorageEngine) => Promise<StorageEngine>;
}

const bytes = (...values: number[]): Uint8Array => Uint8Array.from(values);
const text = (value: string): Uint8Array => new TextEncoder().encode(value);

async function collect(engine: StorageEngine, options: IterateOptions = {}): Promise<StorageEntry[]> {
  const entries: StorageEntry[] = [];
  for await (const entry of engine.iterate(options)) entries.push(entry);
  return entries;
}

async function collectKeys(engine: StorageEngine, options: IterateOptions = {}): Promise<number[][]> {
  return (await collect(engine, options)).map(([key]) => [...key]);
}

export function runEngineConformance(
  name: string,
  makeEngine: () => Promise<StorageEngine>,
  hooks: ConformanceHooks = {},
): void {
  describe(`StorageEngine conformance: ${name}`, () => {
    const open: StorageEngine[] = [];
    const fresh = async (): Promise<StorageEngine> => {
      const engine = await makeEngine();
      open.push(engine);
      return engine;
    };
    afterEach(async () => {
      for (const engine of open.splice(0)) await engine.close();
    });

    it('gets what was put and undefined for a missing key', async () => {
      const engine = await fresh();
      await engine.write([{ type: 'put', key: text('a'), value: text('1') }]);
      expect(await engine.get(text('a'))).toEqual(text('1'));
      expect(await engine.get(text('b'))).toBeUndefined();
    });

    it('stores an empty value as a hit', async () => {
      const engine = await fresh();
      await engine.write([{ type: 'put', key: text('empty'), value: new Uint8Array(0) }]);
      const value = await engine.get(text('empty'));
      expect(value).toBeInstanceOf(Uint8Array);
      expect(value?.length).toBe(0);
    });

    it('returns plain Uint8Arrays the caller owns', async () => {
      const engine = await fresh();
      const value = text('mutable');
      await engine.write([{ type: 'put', key: text('k'), value }]);
      value[0] = 0;
      const read = await engine.get(text('k'));
      expect(read?.constructor).toBe(Uint8Array);
      expect(read).toEqual(text('mutable'));
    });

    it('orders arbitrary bytes lexicographically, a proper prefix first', async () => {
      const engine = await fresh();
      const keys = [bytes(0xff), bytes(0x00), bytes(0x00, 0x00), bytes(0x01), bytes(0x7f, 0xff), bytes(0x80), bytes(0xff, 0x00), bytes(0x00, 0xff)];
      await engine.write(keys.map((key) => ({ type: 'put' as const, key, value: key })));
      const expected = [...keys].sort(compareBytes).map((key) => [...key]);
      expect(await collectKeys(engine)).toEqual(expected);
      expect(await collectKeys(engine, { reverse: true })).toEqual([...expected].reverse());
    });

    it('matches a sorted model for random byte keys, ranges, reverse and limit', async () => {
      const engine = await fresh();
      const keyArbitrary = fc.uint8Array({ minLength: 1, maxLength: 4, max: 3 }).map((key) => Uint8Array.from(key));
      const keys = fc.sample(fc.uniqueArray(keyArbitrary, { maxLength: 60, selector: (key) => [...key].join(',') }), { numRuns: 1, seed: 7 })[0]!;
      await engine.write(keys.map((key) => ({ type: 'put' as const, key, value: key })));
      const sorted = [...keys].sort(compareBytes);
      await fc.assert(
        fc.asyncProperty(
          fc.option(keyArbitrary, { nil: undefined }),
          fc.option(keyArbitrary, { nil: undefined }),
          fc.boolean(),
          fc.option(fc.nat({ max: 10 }), { nil: undefined }),
          async (gte, lt, reverse, limit) => {
            let expected = sorted.filter(
              (key) => (gte === undefined || compareBytes(key, gte) >= 0) && (lt === undefined || compareBytes(key, lt) < 0),
            );
            if (reverse) expected = expected.reverse();
            if (limit !== undefined) expected = expected.slice(0, limit);
            const options: IterateOptions = { reverse, ...(gte && { gte }), ...(lt && { lt }), ...(limit !== undefined && { limit }) };
            expect(await collectKeys(engine, options)).toEqual(expected.map((key) => [...key]));
          },
        ),
        { numRuns: 60, seed: 11 },
      );
    });

    it('honours gte inclusive and lt exclusive bounds', async () => {
      const engine = await fresh();
      await engine.write(['a', 'b', 'c', 'd'].map((key) => ({ type: 'put' as const, key: text(key), value: text(key) })));
      const decoded = async (options: IterateOptions): Promise<string[]> =>
        (await collect(engine, options)).map(([key]) => new TextDecoder().decode(key));
      expect(await decoded({ gte: text('b'), lt: text('d') })).toEqual(['b', 'c']);
      expect(await decoded({ gte: text('b'), lt: text('d'), reverse: true })).toEqual(['c', 'b']);
      expect(await decoded({ gte: text('bb') })).toEqual(['c', 'd']);
      expect(await decoded({ lt: text('b') })).toEqual(['a']);
      expect(await decoded({ gte: text('c'), lt: text('c') })).toEqual([]);
      expect(await decoded({ limit: 0 })).toEqual([]);
      expect(await decoded({ reverse: true, limit: 2 })).toEqual(['d', 'c']);
    });

    it('applies a batch atomically, later operations on a key winning', async () => {
      const engine = await fresh();
      await engine.write([{ type: 'put', key: text('x'), value: text('old') }]);
      await engine.write([
        { type: 'put', key: text('y'), value: text('1') },
        { type: 'del', key: text('x') },
        { type: 'put', key: text('z'), value: text('first') },
        { type: 'put', key: text('z'), value: text('second') },
        { type: 'del', key: text('missing') },
      ]);
      expect(await engine.get(text('x'))).toBeUndefined();
      expect(await engine.get(text('y'))).toEqual(text('1'));
      expect(await engine.get(text('z'))).toEqual(text('second'));
      expect(await collectKeys(engine)).toEqual([[...text('y')], [...text('z')]]);
    });

    it('deletes and overwrites', async () => {
      const engine = await fresh();
      await engine.write([{ type: 'put', key: text('k'), value: text('1') }]);
      await engine.write([{ type: 'put', key: text('k'), value: text('2') }], { sync: true });
      expect(await engine.get(text('k'))).toEqual(text('2'));
      await engine.write([{ type: 'del', key: text('k') }]);
      expect(await engine.get(text('k'))).toBeUndefined();
      expect(await collect(engine)).toEqual([]);
    });

    it('looks up many keys at once when it offers getMany', async () => {
      const engine = await fresh();
      if (engine.getMany === undefined) return;
      await engine.write([{ type: 'put', key: text('a'), value: text('1') }]);
      expect(await engine.getMany([text('a'), text('b')])).toEqual([text('1'), undefined]);
    });

    it('deletes a range when it offers deleteRange', async () => {
      const engine = await fresh();
      if (engine.deleteRange === undefined) return;
      await engine.write(['a', 'b', 'c', 'd'].map((key) => ({ type: 'put' as const, key: text(key), value: text(key) })));
      await engine.deleteRange({ gte: text('b'), lt: text('d') }, { sync: true });
      expect(await collectKeys(engine)).toEqual([[...text('a')], [...text('d')]]);
    });

    it('survives writes between iteration steps without skipping or repeating keys', async () => {
      const engine = await fresh();
      await engine.write(['b', 'd', 'f'].map((key) => ({ type: 'put' as const, key: text(key), value: text(key) })));
      const seen: string[] = [];
      for await (const [key] of engine.iterate({})) {
        seen.push(new TextDecoder().decode(key));
        if (seen.length === 1) await engine.write([{ type: 'put', key: text('a'), value: text('a') }]);
      }
      // Whether 'a' (written before the cursor) or nothing new is seen, the original keys appear once each.
      expect(seen.filter((key) => key !== 'a')).toEqual(['b', 'd', 'f']);
    });

    if (hooks.reopen !== undefined) {
      const reopen = hooks.reopen;
      it('keeps synced and un-synced writes across a clean close and reopen', async () => {
        const engine = await makeEngine();
        await engine.write([{ type: 'put', key: bytes(0x00, 0xff), value: text('synced') }], { sync: true });
        await engine.write([{ type: 'put', key: bytes(0xff), value: text('plain') }]);
        await engine.write([{ type: 'del', key: bytes(0x00, 0xff) }, { type: 'put', key: bytes(0x01), value: text('one') }]);
        const reopened = await reopen(engine);
        open.push(reopened);
        expect(await reopened.get(bytes(0x00, 0xff))).toBeUndefined();
        expect(await reopened.get(bytes(0xff))).toEqual(text('plain'));
        expect(await collectKeys(reopened)).toEqual([[0x01], [0xff]]);
      });
    }
  });
}
