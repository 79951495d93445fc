/**
 * The node-side tracker and what it reports (bounded per partition and in all, keys cut without
 * breaking UTF-16), which key a request counts under, and the cluster-wide merge `atoll top` uses.
 */
import { describe, expect, it } from 'vitest';
import { mergeClusterLoad, type NodeLoadView } from '../../src/hotkeys/cluster-load.js';
import { cutKey, LoadTracker } from '../../src/hotkeys/load-tracker.js';
import { loadKeyOf } from '../../src/hotkeys/request-key.js';

describe('LoadTracker', () => {
  it('reports per-partition rates and hot keys; zero for partitions without requests', () => {
    const tracker = new LoadTracker({ maxPartitions: 4 });
    for (let t = 0; t < 2_000; t += 1) {
      tracker.record(1, t % 2 === 0 ? 'p1/hot' : `p1/k${t}`, t);
      if (t % 4 === 0) tracker.record(2, 'p2/warm', t);
    }
    const report = tracker.report(2_000);
    expect(report.of(1).requestsPerSecond).toBeCloseTo(1_000, -2);
    expect(report.of(1).topKeys[0]).toMatchObject({ key: 'p1/hot', truncated: false });
    expect(report.of(1).topKeys[0]!.requestsPerSecond).toBeCloseTo(500, -2);
    // The metrics scrape's cheap per-partition rate is the report's rate.
    expect(tracker.rateOf(1, 2_000)).toBe(report.of(1).requestsPerSecond);
    expect(tracker.rateOf(2, 2_000)).toBe(report.of(2).requestsPerSecond);
    expect(tracker.rateOf(3, 2_000)).toBe(0);
    expect(report.of(1).topKeys).toHaveLength(8);
    expect(report.of(2).topKeys.map((key) => key.key)).toEqual(['p2/warm']);
    expect(report.of(0)).toEqual({ requestsPerSecond: 0, topKeys: [] });
    expect(() => tracker.record(-1, 'x', 0)).toThrow();
    expect(() => tracker.record(2 ** 32, 'x', 0)).toThrow();
    // A split partition's id is past the initial count (its first hash): tracked while fewer than
    // maxPartitions partitions are, then ignored (the bound on memory).
    tracker.record(3_000_000_000, 'split/x', 0);
    tracker.record(3, 'p3/x', 0);
    tracker.record(3_000_000_001, 'split/y', 0);
    expect(tracker.rateOf(3_000_000_000, 0)).toBeGreaterThan(0);
    expect(tracker.rateOf(3_000_000_001, 0)).toBe(0);
  });

  it('holds at most capacity keys per partition after 1,000,000 distinct keys', () => {
    const tracker = new LoadTracker({ maxPartitions: 8, capacity: 16 });
    for (let i = 0; i < 1_000_000; i++) tracker.record(i % 8, `key-${i}`, i / 1_000);
    expect(tracker.trackedKeys).toBe(8 * 16);
  });

  it('gives the report key budget to the hottest partitions first and cuts long keys', () => {
    const tracker = new LoadTracker({ maxPartitions: 3, keysPerPartition: 4, maxReportedKeys: 6, maxKeyChars: 10 });
    for (let i = 0; i < 300; i++) {
      tracker.record(0, `cold${i % 5}`, i);
      tracker.record(2, `hot${i % 5}`, i);
      tracker.record(2, `hot${i % 5}`, i);
      tracker.record(1, `x/${'é'.repeat(20)}${i % 2}`, i);
      tracker.record(1, `x/${'é'.repeat(20)}${i % 2}`, i);
      tracker.record(1, `x/${'é'.repeat(20)}${i % 2}`, i);
    }
    const report = tracker.report(300);
    expect(report.of(1).topKeys).toHaveLength(2);
    expect(report.of(1).topKeys[0]).toMatchObject({ key: `x/${'é'.repeat(8)}`, truncated: true });
    expect(report.of(2).topKeys).toHaveLength(4);
    expect(report.of(0).topKeys).toHaveLength(0); // the budget of 6 is spent
    expect(report.of(0).requestsPerSecond).toBeGreaterThan(0);
  });

  it('cuts keys at whole characters', () => {
    expect(cutKey('abc', 3)).toBe('abc');
    expect(cutKey('ab😀c', 3)).toBe('ab');
    expect(cutKey('ab😀c', 4)).toBe('ab😀');
  });
});

describe('loadKeyOf', () => {
  it('names the key, the prefix, or the bucket of a transaction or script', () => {
    expect(loadKeyOf({ key: 'orders/1' })).toBe('orders/1');
    expect(loadKeyOf({ prefix: 'orders/no' })).toBe('orders/no');
    expect(loadKeyOf({ bucket: 'bank/alice' })).toBe('bank');
    expect(loadKeyOf({ writes: [{ key: 'bank/bob' }], readKeys: [], readPrefixes: [] })).toBe('bank');
    expect(loadKeyOf({ writes: [], readKeys: [], readPrefixes: ['carts/x'] })).toBe('carts');
    expect(loadKeyOf({ bucket: '' })).toBeUndefined();
  });
});

describe('mergeClusterLoad', () => {
  const views: NodeLoadView[] = [
    {
      nodeId: 1,
      partitions: [
        { id: 0, leader: 1, requestsPerSecond: 600, topKeys: [{ key: 'a/hot', requestsPerSecond: 500, errorPerSecond: 2, truncated: false }] },
        { id: 1, leader: 2, requestsPerSecond: 10, topKeys: [{ key: 'b/stale', requestsPerSecond: 10, errorPerSecond: 0, truncated: false }] },
      ],
    },
    {
      nodeId: 2,
      partitions: [
        { id: 0, leader: 3, requestsPerSecond: 0, topKeys: [] },
        { id: 1, leader: 2, requestsPerSecond: 390, topKeys: [{ key: 'b/stale', requestsPerSecond: 90, errorPerSecond: 1, truncated: false }, { key: 'b/x', requestsPerSecond: 200, errorPerSecond: 1, truncated: false }] },
      ],
    },
    { nodeId: 3, partitions: [{ id: 0, leader: 0 }, { id: 1, leader: 2 }] },
  ];

  it('sums partitions and keys over nodes, trusts a node about its own leadership, and ranks', () => {
    const load = mergeClusterLoad(views, 10);
    expect(load.totalRequestsPerSecond).toBe(1_000);
    expect(load.partitions).toEqual([
      { id: 0, leader: 1, requestsPerSecond: 600, share: 0.6 },
      { id: 1, leader: 2, requestsPerSecond: 400, share: 0.4 },
    ]);
    expect(load.keys.map((key) => [key.key, key.requestsPerSecond, key.errorPerSecond, key.share])).toEqual([
      ['a/hot', 500, 2, 0.5],
      ['b/x', 200, 1, 0.2],
      ['b/stale', 100, 1, 0.1],
    ]);
    expect(mergeClusterLoad(views, 1).keys).toHaveLength(1);
    expect(mergeClusterLoad([], 5)).toEqual({ totalRequestsPerSecond: 0, partitions: [], keys: [] });
  });
});
