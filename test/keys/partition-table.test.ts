import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bucketHash, fnv1a32, hashSpaceSize } from '../../src/keys/bucket-hash.js';
import {
  chooseLoadSplitPoint,
  chooseSplitPoint,
  partitionOf,
  partitionOfBucket,
  partitionOfHash,
  partitionTable,
} from '../../src/keys/partition-table.js';
import { defaultLimits } from '../../src/limits.js';

describe('bucketHash', () => {
  it('matches fixed vectors, so routing never changes silently', () => {
    expect(bucketHash('', 'fnv1a32')).toBe(2166136261);
    expect(bucketHash('a', 'fnv1a32')).toBe(3826002220);
    expect(bucketHash('services', 'fnv1a32')).toBe(3647643189);
    // Published FNV-1a 32-bit test vector.
    expect(bucketHash('foobar', 'fnv1a32')).toBe(0xbf9cf968);
    // Non-ASCII buckets hash their UTF-8 bytes.
    expect(bucketHash('é', 'fnv1a32')).toBe(fnv1a32(Uint8Array.of(0xc3, 0xa9)));
    // New clusters' hash (its vectors are in bucket-hash.test.ts) is the default.
    expect(bucketHash('é')).toBe(bucketHash('é', 'murmur3_32'));
  });

  it('stays inside [0, 2^32)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (bucket) => {
        for (const name of ['fnv1a32', 'murmur3_32'] as const) {
          const hash = bucketHash(bucket, name);
          expect(Number.isInteger(hash) && hash >= 0 && hash < hashSpaceSize).toBe(true);
        }
      }),
    );
  });
});

describe('partitionTable', () => {
  it('covers the hash space with contiguous ranges, no gaps or overlaps, sizes within one', () => {
    for (const partitionCount of [1, 2, 3, 7, 8, 64, 100, 1000, 4096, defaultLimits.maxPartitionCount]) {
      const table = partitionTable(partitionCount);
      expect(table).toHaveLength(partitionCount);
      expect(table[0]!.start).toBe(0);
      expect(table.at(-1)!.end).toBe(2 ** 32);
      const sizes = new Set<number>();
      let problems = 0;
      table.forEach((range, index) => {
        if (range.id !== index || range.end <= range.start) problems++;
        if (index > 0 && range.start !== table[index - 1]!.end) problems++;
        sizes.add(range.end - range.start);
      });
      expect(problems).toBe(0);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
    }
  });

  it('lists the documented example for P = 4', () => {
    expect(partitionTable(4)).toEqual([
      { id: 0, start: 0, end: 1073741824 },
      { id: 1, start: 1073741824, end: 2147483648 },
      { id: 2, start: 2147483648, end: 3221225472 },
      { id: 3, start: 3221225472, end: 4294967296 },
    ]);
  });

  it('agrees with the one-line formula on every hash, including range edges', () => {
    for (const partitionCount of [3, 7, 64, 1000]) {
      const table = partitionTable(partitionCount);
      const owner = (hash: number): number => table.findIndex((range) => hash >= range.start && hash < range.end);
      for (const range of table) {
        for (const hash of [range.start, range.end - 1]) expect(partitionOfHash(hash, partitionCount)).toBe(owner(hash));
      }
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 2 ** 32 - 1 }), (hash) => {
          expect(partitionOfHash(hash, partitionCount)).toBe(owner(hash));
        }),
        { numRuns: 200 },
      );
    }
  });

  it('rejects bad partition counts with INVALID_ARGUMENT', () => {
    for (const partitionCount of [0, -1, 1.5, Number.NaN, defaultLimits.maxPartitionCount + 1]) {
      expect(() => partitionTable(partitionCount)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    }
  });
});

describe('partitionOf', () => {
  it('routes every key of a bucket to the bucket partition', () => {
    fc.assert(
      fc.property(fc.string().filter((bucket) => !bucket.includes('/')), fc.string(), fc.integer({ min: 1, max: 512 }), (bucket, rest, partitionCount) => {
        const expected = partitionOfBucket(bucket, partitionCount);
        expect(partitionOf(`${bucket}/${rest}`, partitionCount)).toBe(expected);
        expect(partitionOf(bucket, partitionCount)).toBe(expected);
      }),
    );
    expect(partitionOf('services/auth', 64)).toBe(partitionOf('services/inventory', 64));
  });

  it('spreads 10k random buckets roughly evenly over 64 partitions', () => {
    const partitionCount = 64;
    const bucketCount = 10_000;
    const counts = new Array<number>(partitionCount).fill(0);
    // Distinct random buckets (duplicates would count one hash many times), from a fixed seed.
    const buckets = new Set<string>();
    for (const bucket of fc.sample(fc.string({ minLength: 3, maxLength: 24, unit: 'grapheme-ascii' }), { numRuns: 3 * bucketCount, seed: 42 })) {
      if (buckets.size < bucketCount) buckets.add(bucket);
    }
    expect(buckets.size).toBe(bucketCount);
    for (const bucket of buckets) counts[partitionOfBucket(bucket, partitionCount)]! += 1;
    const expected = buckets.size / partitionCount;
    // Chi-squared with 63 degrees of freedom: the 99.9th percentile is about 104.
    const chiSquared = counts.reduce((sum, count) => sum + (count - expected) ** 2 / expected, 0);
    expect(chiSquared).toBeLessThan(104);
    expect(Math.min(...counts)).toBeGreaterThan(expected * 0.6);
    expect(Math.max(...counts)).toBeLessThan(expected * 1.4);
  });

  it('spreads sequential bucket names too', () => {
    const counts = new Array<number>(64).fill(0);
    for (let index = 0; index < 10_000; index++) counts[partitionOfBucket(`tenant-${index}`, 64)]! += 1;
    expect(Math.min(...counts)).toBeGreaterThan(156 * 0.6);
    expect(Math.max(...counts)).toBeLessThan(156 * 1.4);
  });
});

describe('chooseLoadSplitPoint', () => {
  const range = { start: 0, end: 1000 };
  it('cuts where the requests divide most evenly, not where the hashes do', () => {
    // Hashes 10..50; the load sits on 40 and 50: the keys' median (30) would leave it all on one side.
    const weighted = [10, 20, 30].map((hash) => ({ hash, weight: 1 })).concat([{ hash: 40, weight: 50 }, { hash: 50, weight: 48 }]);
    expect(chooseLoadSplitPoint(range, weighted)).toBe(50);
    expect(chooseSplitPoint(range, weighted.map((w) => w.hash))).toBe(30);
  });
  it('keeps a bucket on each side, sums weights per hash, ignores hashes outside and weightless ones', () => {
    expect(chooseLoadSplitPoint(range, [{ hash: 5, weight: 100 }, { hash: 7, weight: 1 }])).toBe(7);
    expect(chooseLoadSplitPoint(range, [{ hash: 5, weight: 1 }, { hash: 7, weight: 100 }])).toBe(7);
    expect(chooseLoadSplitPoint(range, [{ hash: 5, weight: 3 }, { hash: 5, weight: 3 }, { hash: 6, weight: 4 }, { hash: 9, weight: 5 }])).toBe(6);
    expect(chooseLoadSplitPoint(range, [{ hash: 5, weight: 1 }, { hash: 2000, weight: 1 }])).toBeUndefined();
    expect(chooseLoadSplitPoint(range, [{ hash: 5, weight: 1 }, { hash: 6, weight: 0 }])).toBeUndefined();
    expect(chooseLoadSplitPoint({ start: 4, end: 5 }, [{ hash: 4, weight: 1 }])).toBeUndefined();
  });
});
