/**
 * SplitAdmin's refusals before anything is proposed (split-admin.ts), on a fake leader replica:
 * a partition with more voters than the replication factor is in the middle of a replica move
 * (promoted, source not yet removed, perhaps by another node), and a split then would found the
 * new partition with the extra voter for good (chaos seed 2 with split faults: both halves kept
 * 4 voters); an automatic split (needsKeysOnBothSides) refuses keys that all lie in one bucket.
 */
import { describe, expect, it } from 'vitest';
import { systemClock, systemTimers } from '../../src/node/ports.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import type { RaftDriver } from '../../src/node/replica/raft-driver.js';
import { SplitAdmin } from '../../src/node/cluster/split-admin.js';
import { AtollError } from '../../src/errors.js';

function adminWith(voters: number[], keys: string[], replicationFactor = 3): { admin: SplitAdmin; proposed: () => number } {
  let proposals = 0;
  const replica = {
    id: 0,
    raw: { status: () => ({ role: 'leader', confState: { voters, learners: [] } }) },
    mvcc: { hashRange: { start: 0, end: 2 ** 32 }, storedKeyNames: () => keys },
    propose: () => {
      proposals++;
    },
    notLeaderError: () => new AtollError('NOT_LEADER', 'not the leader'),
  } as unknown as PartitionReplica;
  const driver = { groups: new Map([[0, replica]]), enqueue: (run: () => void) => run() } as unknown as RaftDriver<PartitionReplica>;
  const admin = new SplitAdmin({
    driver,
    initialPartitions: 1,
    replicationFactor,
    hashFunction: 'fnv1a32',
    clock: systemClock,
    timers: systemTimers,
    moveInProgress: () => false,
    isKnown: (partition) => partition === 0,
    notLeader: () => new AtollError('NOT_LEADER', 'not here'),
  });
  return { admin, proposed: () => proposals };
}

const manyBuckets = Array.from({ length: 20 }, (_, i) => `user${i}/profile`);

describe('SplitAdmin refusals', () => {
  it('refuses in-progress while the partition has more voters than the replication factor, and proposes nothing', async () => {
    const { admin, proposed } = adminWith([1, 2, 3, 4], manyBuckets);
    await expect(admin.split(0, Date.now() + 1_000)).rejects.toMatchObject({ code: 'SPLIT_REFUSED', details: { reason: 'in-progress' } });
    expect(proposed()).toBe(0);
  });

  it('proposes with exactly the replication factor of voters', async () => {
    const { admin, proposed } = adminWith([1, 2, 3], manyBuckets);
    // The fake never answers the proposal: the deadline ends the call, after it was proposed.
    await expect(admin.split(0, Date.now() + 50)).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    expect(proposed()).toBe(1);
  });

  it('refuses single-bucket keys for an automatic split, and still splits them by hand', async () => {
    const oneBucket = Array.from({ length: 20 }, (_, i) => `one/k${i}`);
    const auto = adminWith([1, 2, 3], oneBucket);
    await expect(auto.admin.split(0, Date.now() + 1_000, { needsKeysOnBothSides: true })).rejects.toMatchObject({ code: 'SPLIT_REFUSED', details: { reason: 'single-bucket' } });
    expect(auto.proposed()).toBe(0);
    const manual = adminWith([1, 2, 3], oneBucket);
    await expect(manual.admin.split(0, Date.now() + 50)).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    expect(manual.proposed()).toBe(1);
  });
});
