/**
 * An automatic split by load (--auto-split-rps) cuts where the requests divide (chooseLoadSplitPoint
 * over the hottest keys' bucket hashes), not at the stored keys' median: a partition whose load
 * sits in two buckets at the top of its range is split between them. With the hottest keys
 * carrying less than half the rate the split admin's own point (the keys' median) stands; a split
 * by key count never takes a hint.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { bucketHash } from '../../src/keys/bucket-hash.js';
import { AutoSplitter } from '../../src/node/cluster/auto-split.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import type { RaftDriver } from '../../src/node/replica/raft-driver.js';

const HOT = ['hot-a', 'hot-b'];
const COLD = Array.from({ length: 10 }, (_, i) => `cold-${i}`);

/** Runs one round over one led partition with `rate` requests/s, its hottest keys as given; returns the split's options. */
async function splitOptionsOf(rate: number, hottest: Array<{ key: string; requestsPerSecond: number }>, config: { maxKeys?: number; maxRequestsPerSecond?: number }, keys = 0): Promise<{ pointHint?: number } | undefined> {
  const replica = {
    id: 0,
    raw: { role: 'leader', status: () => ({ confState: { voters: [1, 2, 3], learners: [] } }) },
    mvcc: { hashRange: { start: 0, end: 2 ** 32 }, keyIndexStatus: () => ({ complete: true, keys }) },
  } as unknown as PartitionReplica;
  let seen: { pointHint?: number } | undefined;
  const splitter = new AutoSplitter({
    config: { ...config, pauseMs: 0 },
    driver: { groups: new Map([[0, replica]]), closed: false } as unknown as RaftDriver<PartitionReplica>,
    splits: {
      split: async (partition, _deadline, options = {}) => {
        seen = options;
        return { partition, newPartition: 1 << 31, start: 0, mid: 1 << 31, end: 2 ** 32 };
      },
    },
    load: { rateOf: () => rate, hottestKeys: () => hottest.map((key) => ({ ...key, errorPerSecond: 0 })) },
    hashFunction: 'fnv1a32',
    knownPartitionCount: () => 1,
    maxPartitionCount: 1_000,
    moveInProgress: () => false,
    clock: { monotonicMs: () => 0, wallMs: () => 0 },
    timers: { every: () => ({ cancel: () => undefined }), after: () => ({ cancel: () => undefined }), soon: () => undefined },
    logger: pino({ level: 'silent' }),
  });
  splitter.round();
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  return seen;
}

describe('automatic splits by load', () => {
  const hashes = HOT.map((key) => bucketHash(key, 'fnv1a32')).sort((a, b) => a - b);

  it('cut between the two hot buckets', async () => {
    const hottest = [
      { key: 'hot-a/x', requestsPerSecond: 500 },
      { key: 'hot-b/y', requestsPerSecond: 480 },
      ...COLD.map((bucket) => ({ key: `${bucket}/z`, requestsPerSecond: 1 })),
    ];
    const options = await splitOptionsOf(1_000, hottest, { maxRequestsPerSecond: 100 });
    expect(options?.pointHint).toBeDefined();
    // Each hot bucket on its own side: the point is above the lower one and at most the upper one.
    expect(options!.pointHint!).toBeGreaterThan(hashes[0]!);
    expect(options!.pointHint!).toBeLessThanOrEqual(hashes[1]!);
  });

  it('leave the point to the split admin when the hottest keys carry under half the rate, or the split is by key count', async () => {
    expect((await splitOptionsOf(1_000, [{ key: 'hot-a/x', requestsPerSecond: 200 }, { key: 'hot-b/y', requestsPerSecond: 200 }], { maxRequestsPerSecond: 100 }))?.pointHint).toBeUndefined();
    expect((await splitOptionsOf(0, [], { maxKeys: 10 }, 50))?.pointHint).toBeUndefined();
  });
});
