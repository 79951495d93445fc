import { describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { bucketHash, hashSpaceSize } from '../../src/keys/bucket-hash.js';
import { chooseSplitPoint, partitionOfBucket, partitionTable, RangeTable } from '../../src/keys/partition-table.js';

function codeOf(action: () => unknown): string {
  try {
    action();
  } catch (error) {
    if (isAtollError(error)) return `${error.code}:${String(error.details?.reason)}`;
    throw error;
  }
  return 'ok';
}

describe('RangeTable', () => {
  it('starts as the equal table: routes every bucket exactly as the P formula does', () => {
    for (const count of [1, 3, 64]) {
      const table = RangeTable.equal(count);
      expect(table.ranges).toEqual(partitionTable(count));
      for (let i = 0; i < 2_000; i++) {
        const bucket = `user${i}`;
        expect(table.partitionOfBucket(bucket)).toBe(partitionOfBucket(bucket, count));
        expect(table.partitionOfBucket(bucket, 'fnv1a32')).toBe(partitionOfBucket(bucket, count, 'fnv1a32'));
      }
      expect(table.ownerOfHash(0).id).toBe(0);
      expect(table.ownerOfHash(hashSpaceSize - 1).id).toBe(count - 1);
    }
  });

  it('refuses a table with a gap, an overlap, a duplicate id or no ranges', () => {
    expect(codeOf(() => RangeTable.of([]))).toBe('INVALID_ARGUMENT:empty');
    expect(codeOf(() => RangeTable.of([{ id: 0, start: 0, end: 10 }, { id: 1, start: 11, end: hashSpaceSize }]))).toBe('INVALID_ARGUMENT:not-contiguous');
    expect(codeOf(() => RangeTable.of([{ id: 0, start: 0, end: 10 }, { id: 1, start: 9, end: hashSpaceSize }]))).toBe('INVALID_ARGUMENT:not-contiguous');
    expect(codeOf(() => RangeTable.of([{ id: 0, start: 0, end: 10 }, { id: 0, start: 10, end: hashSpaceSize }]))).toBe('INVALID_ARGUMENT:duplicate-id');
    expect(codeOf(() => RangeTable.of([{ id: 0, start: 0, end: 10 }]))).toBe('INVALID_ARGUMENT:not-covering');
    expect(codeOf(() => RangeTable.of([{ id: -1, start: 0, end: hashSpaceSize }]))).toBe('INVALID_ARGUMENT:bad-id');
    // Any order is accepted; the table is sorted by start.
    const table = RangeTable.of([{ id: 7, start: 100, end: hashSpaceSize }, { id: 2, start: 0, end: 100 }]);
    expect(table.ranges.map((range) => range.id)).toEqual([2, 7]);
    expect(table.maxId).toBe(7);
  });

  it('splits one range at a hash: [start, mid) keeps the id, [mid, end) takes the new one, nothing else moves', () => {
    const before = RangeTable.equal(4);
    const source = before.rangeOf(1)!;
    const mid = source.start + 12345;
    const after = before.split(1, mid, 4);
    expect(after.ranges).toEqual([
      before.rangeOf(0),
      { id: 1, start: source.start, end: mid },
      { id: 4, start: mid, end: source.end },
      before.rangeOf(2),
      before.rangeOf(3),
    ]);
    // No hash is served by both or by neither, and a bucket never splits: every bucket has
    // exactly one owner, the same as before unless its hash is in [mid, end).
    for (let i = 0; i < 5_000; i++) {
      const hash = bucketHash(`b${i}`);
      const owner = after.ownerOfHash(hash).id;
      const moved = hash >= mid && hash < source.end;
      expect(owner).toBe(moved ? 4 : before.ownerOfHash(hash).id);
    }
    expect(after.ownerOfHash(mid - 1).id).toBe(1);
    expect(after.ownerOfHash(mid).id).toBe(4);
    expect(before.size).toBe(4); // immutable
  });

  it('refuses a split with stable reasons and changes nothing', () => {
    const table = RangeTable.equal(2);
    const range = table.rangeOf(0)!;
    expect(codeOf(() => table.split(9, 5, 2))).toBe('SPLIT_REFUSED:unknown-partition');
    expect(codeOf(() => table.split(0, range.start, 2))).toBe('SPLIT_REFUSED:bad-split-point');
    expect(codeOf(() => table.split(0, range.end, 2))).toBe('SPLIT_REFUSED:bad-split-point');
    expect(codeOf(() => table.split(0, 1.5, 2))).toBe('SPLIT_REFUSED:bad-split-point');
    expect(codeOf(() => table.split(0, 10, 1))).toBe('SPLIT_REFUSED:bad-new-id');
    // A single-hash range (one bucket) cannot split at all.
    const tiny = RangeTable.of([{ id: 0, start: 0, end: 1 }, { id: 1, start: 1, end: hashSpaceSize }]);
    expect(codeOf(() => tiny.split(0, 0, 2))).toBe('SPLIT_REFUSED:bad-split-point');
    expect(table.size).toBe(2);
  });

  it('finds owners by binary search after many splits', () => {
    let table = RangeTable.equal(1);
    for (let next = 1; next < 200; next++) {
      const widest = [...table.ranges].sort((a, b) => b.end - b.start - (a.end - a.start) || a.start - b.start)[0]!;
      table = table.split(widest.id, chooseSplitPoint(widest, [])!, next);
    }
    expect(table.size).toBe(200);
    for (const range of table.ranges) {
      expect(table.ownerOfHash(range.start).id).toBe(range.id);
      expect(table.ownerOfHash(range.end - 1).id).toBe(range.id);
    }
  });
});

describe('chooseSplitPoint', () => {
  it('takes the median distinct bucket hash, so both sides keep a bucket', () => {
    const range = { start: 100, end: 1000 };
    expect(chooseSplitPoint(range, [200, 300, 300, 400, 50, 2000])).toBe(300);
    expect(chooseSplitPoint(range, [200, 900])).toBe(900);
    // Fewer than two buckets inside: the midpoint.
    expect(chooseSplitPoint(range, [])).toBe(550);
    expect(chooseSplitPoint(range, [100])).toBe(550);
    // A range of one hash is one bucket: no split point.
    expect(chooseSplitPoint({ start: 7, end: 8 }, [7])).toBeUndefined();
    // The same inputs in any order give the same point (replicas agree).
    expect(chooseSplitPoint(range, [400, 300, 200])).toBe(chooseSplitPoint(range, [200, 300, 400]));
  });
});
