/**
 * The node's partition table (range-routing.ts): the equal table plus the split starts it has
 * learned; a partition's id is its start; learning is idempotent and ignores anything that is not
 * a possible split start; table() lists contiguous ranges that RangeTable accepts.
 */
import { describe, expect, it } from 'vitest';
import { hashSpaceSize } from '../../src/keys/bucket-hash.js';
import { partitionOfHash, partitionTable, RangeTable } from '../../src/keys/partition-table.js';
import { RangeRouting } from '../../src/node/cluster/range-routing.js';

describe('RangeRouting', () => {
  it('routes like the equal table until it learns a split start, then sends [start, next) to partition `start`', () => {
    const routing = new RangeRouting(4, 'murmur3_32');
    for (const hash of [0, 5, 2 ** 31, hashSpaceSize - 1]) expect(routing.ownerOfHash(hash)).toBe(partitionOfHash(hash, 4));
    const p1 = partitionTable(4)[1]!;
    const mid = p1.start + 1000;
    expect(routing.learn(mid)).toBe(true);
    expect(routing.learn(mid)).toBe(false);
    expect(routing.ownerOfHash(mid - 1)).toBe(1);
    expect(routing.ownerOfHash(mid)).toBe(mid);
    expect(routing.ownerOfHash(p1.end - 1)).toBe(mid);
    expect(routing.ownerOfHash(p1.end)).toBe(2);
    // A split of the split partition, and the table as ranges.
    routing.learn(mid + 10);
    expect(routing.ownerOfHash(mid + 9)).toBe(mid);
    expect(routing.ownerOfHash(mid + 10)).toBe(mid + 10);
    const table = RangeTable.of(routing.table());
    expect(table.size).toBe(6);
    expect(table.rangeOf(mid)).toEqual({ id: mid, start: mid, end: mid + 10 });
    expect(routing.isKnown(mid + 10)).toBe(true);
    expect(routing.isKnown(mid + 11)).toBe(false);
    expect(routing.isKnown(3)).toBe(true);
  });

  it('ignores what cannot be a split start: equal-table starts, ids below P, out of range', () => {
    const routing = new RangeRouting(4, 'murmur3_32');
    expect(routing.learn(partitionTable(4)[2]!.start)).toBe(false);
    expect(routing.learn(3)).toBe(false);
    expect(routing.learn(hashSpaceSize)).toBe(false);
    expect(routing.learn(-1)).toBe(false);
    expect(routing.learn(1.5)).toBe(false);
    expect(routing.knownStarts()).toEqual([]);
  });

  it('learns the ids of hosted split partitions', () => {
    const hosted = new Map<number, unknown>([[0, {}]]);
    const routing = new RangeRouting(1, 'murmur3_32', hosted);
    expect(routing.ownerOfHash(2 ** 31)).toBe(0);
    hosted.set(2 ** 30, {});
    expect(routing.ownerOfHash(2 ** 31)).toBe(2 ** 30);
    expect(routing.ownerOfHash(2 ** 30 - 1)).toBe(0);
  });

  it('refuses a lease id of a partition it does not know', () => {
    const routing = new RangeRouting(2, 'murmur3_32');
    expect(routing.leasePartition('1.5')).toBe(1);
    expect(() => routing.leasePartition('77.5')).toThrow(/no partition 77/);
    routing.learn(77);
    expect(routing.leasePartition('77.5')).toBe(77);
  });

  it('forgets a merged-away start for good: its range joins the left neighbour, and it is never learned again', () => {
    const routing = new RangeRouting(4, 'murmur3_32');
    const p1 = partitionTable(4)[1]!;
    const mid = p1.start + 1000;
    routing.learn(mid);
    routing.learn(mid + 10);
    expect(routing.forget(mid + 10, mid)).toBe(true);
    expect(routing.forget(mid + 10, mid)).toBe(false);
    expect(routing.ownerOfHash(mid + 10)).toBe(mid);
    expect(routing.isKnown(mid + 10)).toBe(false);
    expect(routing.learn(mid + 10)).toBe(false);
    expect(routing.mergedInto(mid + 10)).toBe(mid);
    expect(routing.mergedStarts()).toEqual([{ start: mid + 10, into: mid }]);
    expect(RangeTable.of(routing.table()).rangeOf(mid)).toEqual({ id: mid, start: mid, end: p1.end });
    // A start never learned can be tombstoned first (a peer's ClusterInfo); an equal-table start never.
    expect(routing.forget(mid + 20, mid)).toBe(true);
    expect(routing.learn(mid + 20)).toBe(false);
    expect(routing.forget(p1.start, 0)).toBe(false);
    expect(routing.ownerOfHash(p1.start)).toBe(1);
  });
});
