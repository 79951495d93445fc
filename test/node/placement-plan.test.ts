/** planMoves (src/keys/placement.ts): the replica moves behind add-node, remove-node and replace-node. */
import { describe, expect, it } from 'vitest';
import { nextMoveStep } from '../../src/node/cluster/move-steps.js';
import { planMoves, replicasOf, type PlannedMove } from '../../src/keys/placement.js';

function layout(partitions: number, nodes: number[], rf: number): Array<{ id: number; replicas: number[] }> {
  return Array.from({ length: partitions }, (_, id) => ({ id, replicas: replicasOf(id, nodes, rf) }));
}

/** Applies the plan, checking its invariants at every step; returns the replicas per node. */
function run(partitions: Array<{ id: number; replicas: number[] }>, moves: PlannedMove[], zoneOf = new Map<number, string>()): Map<number, number> {
  const zones = (replicas: number[]): number => new Set(replicas.map((node) => zoneOf.get(node) ?? `n${node}`)).size;
  for (const move of moves) {
    const partition = partitions.find((p) => p.id === move.partition)!;
    expect(partition.replicas).toContain(move.from);
    expect(partition.replicas).not.toContain(move.to);
    const before = zones(partition.replicas);
    partition.replicas = partition.replicas.map((node) => (node === move.from ? move.to : node));
    expect(new Set(partition.replicas).size).toBe(partition.replicas.length); // distinct nodes
    expect(zones(partition.replicas)).toBeGreaterThanOrEqual(before);
  }
  const counts = new Map<number, number>();
  for (const partition of partitions) for (const node of partition.replicas) counts.set(node, (counts.get(node) ?? 0) + 1);
  return counts;
}

describe('planMoves', () => {
  it('grows 3 -> 4 nodes: the new node gets an even share, nothing else moves needlessly', () => {
    const partitions = layout(8, [1, 2, 3], 3);
    const members = [1, 2, 3].map((id) => ({ id, state: 'active' })).concat({ id: 4, state: 'joining' });
    const moves = planMoves(partitions, members);
    expect(moves.every((move) => move.to === 4)).toBe(true);
    expect(moves).toHaveLength(6);
    expect([...run(partitions, moves).values()].sort()).toEqual([6, 6, 6, 6]);
    expect(planMoves(partitions, members)).toEqual([]); // balanced: nothing more to do
  });

  it('drains a leaving node and never puts two replicas of a partition on one node', () => {
    const partitions = layout(16, [1, 2, 3, 4, 5], 3);
    const members = [1, 2, 3, 4, 5].map((id) => ({ id, state: id === 2 ? 'leaving' : 'active' }));
    const counts = run(partitions, planMoves(partitions, members));
    expect(counts.get(2) ?? 0).toBe(0);
    const loads = [1, 3, 4, 5].map((id) => counts.get(id) ?? 0);
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(1);
  });

  it('trims an extra voter on a leaving node when every holder has the partition already (a move cut between promotion and removal)', () => {
    // Chaos seed 2 with split faults: partition 1 kept voters 1,2,3,4 (a move's leader died after
    // addVoter(4)); with node 4 leaving no node could take its replica, so nothing was planned and
    // remove-node 4 could never finish.
    const partitions = [{ id: 0, replicas: [1, 2, 3] }, { id: 1, replicas: [1, 2, 3, 4] }, { id: 2, replicas: [2, 3, 4] }];
    const members = [1, 2, 3, 4].map((id) => ({ id, state: id === 4 ? 'leaving' : 'active' }));
    const moves = planMoves(partitions, members);
    // Partition 1: a move to a voter, which MoveReplica runs as its source's removal.
    expect(moves).toContainEqual({ partition: 1, from: 4, to: 1 });
    expect(nextMoveStep({ conf: { voters: [1, 2, 3, 4], learners: [] }, leader: 2, from: 4, to: 1, replicationFactor: 3 })).toEqual({ kind: 'removeSource' });
    // Partition 2: an ordinary move to the one holder without a replica.
    expect(moves).toContainEqual({ partition: 2, from: 4, to: 1 });
    expect(moves).toHaveLength(2);
    // A trim never goes below the replication factor: MoveReplica refuses it at RF voters.
    expect(() => nextMoveStep({ conf: { voters: [1, 2, 3], learners: [] }, leader: 2, from: 3, to: 1, replicationFactor: 3 })).toThrow(expect.objectContaining({ code: 'MOVE_REFUSED' }));
  });

  it('replaces a node: the new one takes the old one\'s replicas', () => {
    const partitions = layout(8, [1, 2, 3], 3);
    const members = [{ id: 1, state: 'active' }, { id: 2, state: 'active' }, { id: 3, state: 'leaving' }, { id: 4, state: 'active' }];
    const moves = planMoves(partitions, members);
    expect(moves.every((move) => move.from === 3 && move.to === 4)).toBe(true);
    expect(run(partitions, moves).get(4)).toBe(8);
  });

  it('keeps zones spread: a move never leaves a partition in fewer zones', () => {
    const zoneOf = new Map([[1, 'a'], [2, 'b'], [3, 'c'], [4, 'a'], [5, 'b'], [6, 'c']]);
    const partitions = layout(12, [1, 2, 3], 3);
    const members = [1, 2, 3, 4, 5, 6].map((id) => ({ id, state: id <= 3 ? 'active' : 'joining', zone: zoneOf.get(id)! }));
    const moves = planMoves(partitions, members);
    const counts = run(partitions, moves, zoneOf);
    expect([...counts.values()].sort()).toEqual([6, 6, 6, 6, 6, 6]);
    for (const partition of partitions) expect(new Set(partition.replicas.map((node) => zoneOf.get(node))).size).toBe(3);
  });
});
