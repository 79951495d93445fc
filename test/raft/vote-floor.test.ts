/**
 * A replica re-added to a node the group removed it from carries the node's id again (Raft ids are
 * node ids). Fresh from the leader's latest snapshot, which may predate the removal and name it a
 * voter, it must vote only for a log, and campaign only with one, that reaches the leader's term and
 * commit index when its host opened it (RaftConfig.voteFloor; replica-moves.ts). Without the floor a
 * voter that missed the removal wins an election with its vote and overwrites committed entries.
 */
import { describe, expect, it } from 'vitest';
import type { ConfChange, VoteFloor } from '../../src/raft/types.js';
import { Harness } from './harness.js';

function change(h: Harness, leader: number, confChange: ConfChange): void {
  h.node(leader).raw.proposeConfChange(confChange);
  h.flush(leader);
  h.stabilize();
  h.run(3);
}

/**
 * Voters 1, 2, 3 with leader 1 and a snapshot at 'a'; node 2 is cut off; 4 replaces 3 and 'b'
 * commits on {1, 4}; then 3 is added again, empty, with `voteFloor`, and takes the leader's
 * snapshot (still the one naming 3 a voter), after which 1 and 4 are cut off from 2 and 3.
 * Returns the harness and the leader's term and commit index when it opened the new replica.
 */
function staleSnapshotScenario(voteFloor: (leader: VoteFloor) => VoteFloor): { h: Harness; floor: VoteFloor } {
  const h = new Harness([1, 2, 3], {}, [4]);
  h.campaign(1);
  h.stabilize();
  expect(h.leader()).toBe(1);
  h.propose(1, 'a');
  h.stabilize();
  const snapshotIndex = h.node(1).appliedIndex;
  h.node(1).storage.createSnapshot(snapshotIndex, h.status(1).confState, new Uint8Array(0));
  h.node(1).storage.compact(snapshotIndex);
  h.partition([2], [1, 3, 4]);
  change(h, 1, { type: 'addLearner', node: 4 });
  change(h, 1, { type: 'addVoter', node: 4 });
  change(h, 1, { type: 'removeNode', node: 3 });
  h.propose(1, 'b');
  h.stabilize();
  expect(h.status(1).confState.voters).toEqual([1, 2, 4]);
  expect(h.appliedTexts(4)).toContain('b');
  const floor = { term: h.status(1).term, index: h.status(1).commit };
  h.reincarnate(3, { voteFloor: voteFloor(floor) });
  h.node(1).raw.proposeConfChange({ type: 'addLearner', node: 3 });
  h.flush(1);
  // Deliver until node 3 installed the snapshot, and no further: it never hears the log after it.
  for (let round = 0; round < 200 && h.node(3).appliedIndex < snapshotIndex; round++) {
    h.deliver();
    h.tickAll();
  }
  expect(h.node(3).storage.snapshot().meta.index).toBe(snapshotIndex);
  expect(h.status(3).confState.voters).toEqual([1, 2, 3]);
  h.heal();
  h.partition([1, 4], [2, 3]);
  h.queue = [];
  return { h, floor };
}

describe('vote floor of a re-added replica', () => {
  it('without a floor, the stale replica elects a voter that missed its removal, which loses a committed entry', () => {
    const { h } = staleSnapshotScenario(() => ({ term: 0, index: 0 }));
    for (let round = 0; round < 100 && ![2, 3].some((id) => h.status(id).role === 'leader'); round++) h.run(1);
    const leader = [2, 3].find((id) => h.status(id).role === 'leader');
    // This is the hazard the floor closes: a leader in a configuration committed entries left.
    expect(leader).toBeDefined();
    h.propose(leader as number, 'c');
    h.run(5);
    expect(h.appliedTexts(2)).toEqual(['a', 'c']);
  });

  it('with the floor, votes for no log and campaigns with none that lacks what was committed when it was opened, then serves as a voter', () => {
    const { h, floor } = staleSnapshotScenario((leader) => leader);
    expect(h.status(3).lastIndex).toBeLessThan(floor.index);
    h.run(100);
    expect([2, 3].map((id) => h.status(id).role)).not.toContain('leader');
    expect(h.appliedTexts(2)).toEqual(['a']);
    // Healed, node 3 takes the log from the leader of {1, 2, 4} and passes its floor.
    h.heal();
    for (let round = 0; round < 100 && h.leader() === undefined; round++) h.run(1);
    const leader = h.leader() as number;
    expect([1, 4]).toContain(leader);
    h.propose(leader, 'c');
    h.run(10);
    expect(h.status(3).commit).toBeGreaterThanOrEqual(floor.index);
    expect(h.appliedTexts(3)).toEqual(['b', 'c']);
    expect(h.appliedTexts(2)).toEqual(['a', 'b', 'c']);
    change(h, leader, { type: 'addVoter', node: 3 });
    expect(h.status(leader).confState.voters).toEqual([1, 2, 3, 4]);
  });

  it('counts as "was a member" only configurations past the floor: a stale snapshot naming the node is not its own addition (seed 8244)', () => {
    const { h, floor } = staleSnapshotScenario((leader) => leader);
    // The snapshot node 3 installed names it a voter, but it is at or below the floor.
    expect(h.status(3).confState.voters).toContain(3);
    expect(h.node(3).raw.wasMember).toBe(false);
    h.heal();
    for (let round = 0; round < 100 && h.leader() === undefined; round++) h.run(1);
    h.run(10);
    // It applied the old removal, then its own addition past the floor.
    expect(h.status(3).confState.learners).toContain(3);
    expect(h.status(3).applied).toBeGreaterThan(floor.index);
    expect(h.node(3).raw.wasMember).toBe(true);
  });
});
