/**
 * MergeAdmin's refusals before anything is proposed (merge-admin.ts), on fake leader replicas of
 * L = 0 ([0, 2^31)) and R = 2^31 ([2^31, 2^32)): the ones a three-node in-process cluster cannot
 * reach (every partition there has the same three voters and no move runs): replicas on different
 * nodes, a move between its promotion and its removal (extra voters), learners, a move coordinated
 * here, R frozen into another partition, and no replica of R on L's leader; and their order: a
 * move of either side is answered in-progress before leaders-differ.
 */
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { MergeAdmin } from '../../src/node/cluster/merge-admin.js';
import { systemClock, systemTimers } from '../../src/node/ports.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import type { RaftDriver } from '../../src/node/replica/raft-driver.js';

const R = 2 ** 31;

interface Side {
  voters?: number[];
  learners?: number[];
  frozen?: { into: number; index: number };
  /** Another node leads this side (default: this node, 1). */
  ledBy?: number;
}

function adminWith(left: Side, right: Side | undefined, moving: number[] = []): { admin: MergeAdmin; proposed: () => number } {
  let proposals = 0;
  const fake = (id: number, range: { start: number; end: number }, side: Side): PartitionReplica =>
    ({
      id,
      nodeId: 1,
      raw: { status: () => ({ role: side.ledBy === undefined ? 'leader' : 'follower', lead: side.ledBy ?? 1, confState: { voters: side.voters ?? [1, 2, 3], learners: side.learners ?? [] }, progress: new Map() }) },
      mvcc: { hashRange: range, frozen: side.frozen },
      propose: () => {
        proposals++;
      },
      notLeaderError: () => new AtollError('NOT_LEADER', 'not the leader'),
    }) as unknown as PartitionReplica;
  const groups = new Map<number, PartitionReplica>([[0, fake(0, { start: 0, end: R }, left)]]);
  if (right !== undefined) groups.set(R, fake(R, { start: R, end: 2 ** 32 }, right));
  const driver = { groups, enqueue: (run: () => void) => run() } as unknown as RaftDriver<PartitionReplica>;
  const admin = new MergeAdmin({
    driver,
    initialPartitions: 1,
    replicationFactor: 3,
    clock: systemClock,
    timers: systemTimers,
    moveInProgress: (partition) => moving.includes(partition),
    isKnown: (partition) => partition === 0 || partition === R,
    notLeader: () => new AtollError('NOT_LEADER', 'not here'),
  });
  return { admin, proposed: () => proposals };
}

const refusal = (reason: string) => ({ code: 'MERGE_REFUSED', details: { reason } });

describe('MergeAdmin refusals', () => {
  it.each<[string, Side, Side | undefined, number[], string]>([
    ['R on other nodes', {}, { voters: [1, 2, 4] }, [], 'replicas-differ'],
    ['no replica of R here', {}, undefined, [], 'replicas-differ'],
    ['an extra voter on L (a move between promotion and removal)', { voters: [1, 2, 3, 4] }, { voters: [1, 2, 3, 4] }, [], 'in-progress'],
    ['a learner on R', {}, { learners: [4] }, [], 'in-progress'],
    ['a move of L coordinated here', {}, {}, [0], 'in-progress'],
    ['R frozen into another partition', {}, { frozen: { into: 7, index: 3 } }, [], 'in-progress'],
    ['L itself frozen', { frozen: { into: 9, index: 3 } }, {}, [], 'in-progress'],
    ['R led by another node', {}, { ledBy: 2 }, [], 'leaders-differ'],
    // A move of R between its promotion and its removal, R's leadership moved off this node by the
    // move (it removes this node): in-progress, not leaders-differ, or an operator following the
    // refusal moves the leadership back and undoes the move's step (simulator seed 71035).
    ['R led by another node during a move of R', { voters: [1, 3, 4] }, { voters: [1, 3, 4, 5], ledBy: 5 }, [], 'in-progress'],
    ['R led by another node with a learner on L', { learners: [5] }, { ledBy: 2 }, [], 'in-progress'],
  ])('refuses %s, and proposes nothing', async (_name, left, right, moving, reason) => {
    const { admin, proposed } = adminWith(left, right, moving);
    await expect(admin.merge(0, Date.now() + 1_000)).rejects.toMatchObject(refusal(reason));
    expect(proposed()).toBe(0);
  });

  it('proposes the freeze when both sides match', async () => {
    const { admin, proposed } = adminWith({}, {});
    // The fake never answers the proposal: the deadline ends the call, after the freeze was proposed.
    await expect(admin.merge(0, Date.now() + 50)).rejects.toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    expect(proposed()).toBe(1);
  });

  // The admin is given no routing table: R is named by L's range end (the id rule), which a table
  // that never learned R's start, or forgot it on meeting R's freeze, owned to L itself (seed 4956,
  // merge-right-not-hosted.test.ts).
  it('names R by L\'s range end, with no replica of R here: replicas-differ naming R', async () => {
    const { admin, proposed } = adminWith({}, undefined);
    await expect(admin.merge(0, Date.now() + 1_000)).rejects.toMatchObject({ code: 'MERGE_REFUSED', details: { reason: 'replicas-differ', partition: 0, rightPartition: R } });
    expect(proposed()).toBe(0);
  });
});
