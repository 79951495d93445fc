/**
 * The rebalancer's decisions (src/node/cluster/rebalance-state.ts, planLeaders and planMoves in
 * placement.ts, Rebalancer.preferredLeader): deterministic input -> output, run round by round
 * against a simulated cluster that finishes each assigned move at once.
 */
import { describe, expect, it } from 'vitest';
import { decodeTable, encodeTable, foundingTable, withAdminAddress, withJoining, withState, withZone, type MemberTable } from '../../src/node/cluster/membership-table.js';
import { advertisedAdminAddress } from '../../src/node/cluster/membership.js';
import { planLeaders, planMoves, replicasOf, type PlanMember } from '../../src/keys/placement.js';
import { decodeState, encodeState, initialState, nextRound, stateOf, type PartitionView, type RebalanceState } from '../../src/node/cluster/rebalance-state.js';
import { Rebalancer } from '../../src/node/cluster/rebalancer.js';

const RF = 3;

function view(partitions: number, nodes: number[]): PartitionView[] {
  return Array.from({ length: partitions }, (_, id) => {
    const voters = replicasOf(id, nodes, RF);
    return { id, voters, learners: [], leader: voters[0] as number, load: 0 };
  });
}

function counts(partitions: readonly PartitionView[]): Map<number, number> {
  const result = new Map<number, number>();
  for (const partition of partitions) for (const node of partition.voters) result.set(node, (result.get(node) ?? 0) + 1);
  return result;
}

function withinOne(values: number[]): boolean {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return values.every((value) => Math.abs(value - mean) <= 1);
}

/**
 * Runs planning rounds (one per `stepMs`) until the record stops changing; every assigned move
 * finishes `finishAfter` rounds after it was assigned. Checks the invariants of every round: at
 * most maxInFlight moves, one per partition, never two replicas of a partition on one node, never
 * fewer zones, never fewer than RF voters, and the pause between two assigned moves.
 */
function simulate(start: PartitionView[], members: PlanMember[], options: { maxInFlight?: number; pauseMs?: number; finishAfter?: number; state?: RebalanceState; rounds?: number } = {}) {
  const partitions = start.map((partition) => ({ ...partition, voters: [...partition.voters] }));
  const zoneOf = new Map(members.map((member) => [member.id, member.zone || `n${member.id}`]));
  const zones = (voters: readonly number[]): number => new Set(voters.map((node) => zoneOf.get(node))).size;
  let state = options.state ?? initialState;
  const maxInFlight = options.maxInFlight ?? 2;
  const pauseMs = options.pauseMs ?? 2_000;
  const startedAt = new Map<number, number>();
  let assigned = 0;
  let nowMs = 10_000;
  let lastAssignMs = -Infinity;
  let quiet = 0;
  for (let round = 0; round < (options.rounds ?? 500); round++, nowMs += 1_000) {
    // Moves finish: `to` replaces `from` in the partition's voters.
    for (const move of state.moves) {
      const partition = partitions[move.partition] as PartitionView & { voters: number[] };
      if (round - (startedAt.get(move.partition) ?? round) < (options.finishAfter ?? 1) || !partition.voters.includes(move.from)) continue;
      const before = zones(partition.voters);
      partition.voters = partition.voters.map((node) => (node === move.from ? move.to : node));
      expect(new Set(partition.voters).size).toBe(RF); // distinct nodes, never below RF
      expect(zones(partition.voters)).toBeGreaterThanOrEqual(before); // never fewer zones
      if (partition.leader === move.from) (partition as { leader: number }).leader = move.to;
    }
    const next = nextRound({ state, view: partitions, members, replicationFactor: RF, nowMs, maxInFlight, pauseMs, moveTimeoutMs: 300_000 });
    expect(next.moves.length).toBeLessThanOrEqual(maxInFlight);
    expect(new Set(next.moves.map((move) => move.partition)).size).toBe(next.moves.length);
    for (const move of next.moves) {
      if (state.moves.includes(move)) continue; // assigned before (a kept move is the same object)
      expect(nowMs - lastAssignMs).toBeGreaterThanOrEqual(pauseMs);
      lastAssignMs = nowMs;
      startedAt.set(move.partition, round);
      assigned++;
    }
    // Done once nothing changed (and nothing is assigned) for longer than the pause between moves.
    quiet = next === state && next.moves.length === 0 ? quiet + 1 : 0;
    if (quiet * 1_000 > pauseMs) return { partitions, state, assigned, rounds: round };
    state = next;
  }
  return { partitions, state, assigned, rounds: -1 };
}

const active = (ids: number[]): PlanMember[] => ids.map((id) => ({ id, state: 'active' }));

describe('the rebalancer plan', () => {
  it('grows 3 -> 4: replicas and preferred leaders end within one of the mean, a move at a time per partition', () => {
    const result = simulate(view(8, [1, 2, 3]), active([1, 2, 3, 4]));
    expect(result.rounds).toBeGreaterThan(0);
    expect(result.assigned).toBe(6); // 24 replicas over 4 nodes: 6 each
    expect([...counts(result.partitions).values()].sort()).toEqual([6, 6, 6, 6]);
    const leaders = [1, 2, 3, 4].map((node) => result.state.leaders.filter((leader) => leader === node).length);
    expect(withinOne(leaders)).toBe(true);
    expect(leaders.reduce((a, b) => a + b)).toBe(8);
    result.state.leaders.forEach((leader, partition) => expect(result.partitions[partition]!.voters).toContain(leader));
    expect(stateOf(result.state)).toBe('idle');
  });

  it('is deterministic: the same input gives the same record', () => {
    const a = simulate(view(16, [1, 2, 3, 4, 5]), active([1, 2, 3, 4, 5, 6, 7]), { maxInFlight: 3 });
    const b = simulate(view(16, [1, 2, 3, 4, 5]), active([1, 2, 3, 4, 5, 6, 7]), { maxInFlight: 3 });
    expect(a.state).toEqual(b.state);
    expect(withinOne([...counts(a.partitions).values()])).toBe(true);
  });

  it('paused: assigns no move and plans no leaders; resumed: finishes', () => {
    const paused = { ...initialState, paused: true };
    const stuck = simulate(view(8, [1, 2, 3]), active([1, 2, 3, 4]), { state: paused, rounds: 30 });
    expect(stuck.assigned).toBe(0);
    expect(stuck.state).toBe(paused);
    expect(stateOf(paused)).toBe('paused');
    const resumed = simulate(stuck.partitions, active([1, 2, 3, 4]), { state: { ...stuck.state, paused: false } });
    expect([...counts(resumed.partitions).values()].sort()).toEqual([6, 6, 6, 6]);
  });

  it('leaves a membership change in progress (a joining or leaving member) to add-node / remove-node', () => {
    const members: PlanMember[] = [...active([1, 2, 3]), { id: 4, state: 'joining' }];
    expect(simulate(view(8, [1, 2, 3]), members, { rounds: 20 }).assigned).toBe(0);
  });

  it('rate-limits: at most maxInFlight moves, pauseMs apart (slow moves)', () => {
    const result = simulate(view(12, [1, 2, 3]), active([1, 2, 3, 4, 5, 6]), { maxInFlight: 1, pauseMs: 3_000, finishAfter: 4 });
    expect(result.rounds).toBeGreaterThan(0);
    expect(withinOne([...counts(result.partitions).values()])).toBe(true);
  });

  it('spreads a partition over 3 zones when 6 nodes sit in 3 zones', () => {
    const zone = (id: number): string => ['a', 'b', 'c'][Math.floor((id - 1) / 2)] as string;
    const members = [1, 2, 3, 4, 5, 6].map((id) => ({ id, state: 'active', zone: zone(id) }));
    // Founding placement over ids 1..6: consecutive ids share zones, so most partitions span 2 zones.
    const start = view(12, [1, 2, 3, 4, 5, 6]);
    expect(start.some((partition) => new Set(partition.voters.map(zone)).size < 3)).toBe(true);
    const result = simulate(start, members);
    expect(result.rounds).toBeGreaterThan(0);
    for (const partition of result.partitions) expect(new Set(partition.voters.map(zone)).size, `partition ${partition.id}`).toBe(3);
    expect(withinOne([...counts(result.partitions).values()])).toBe(true);
  });

  it('breaks ties by measured load: the hottest partition of the most loaded node moves first', () => {
    const partitions = [
      { id: 0, replicas: [1, 2, 3], load: 1 },
      { id: 1, replicas: [1, 2, 3], load: 500 },
      { id: 2, replicas: [1, 2, 3], load: 5 },
    ];
    const moves = planMoves(partitions, active([1, 2, 3, 4]));
    expect(moves[0]).toEqual({ partition: 1, from: 1, to: 4 });
    // Equal counts, unequal load: the receiver of the next move is the less loaded node.
    expect(planMoves(partitions.map((p) => ({ ...p, load: 0 })), active([1, 2, 3, 4]))[0]).toEqual({ partition: 0, from: 1, to: 4 });
  });

  it('never prefers a leader that is not an active member or not a voter', () => {
    const plan = planLeaders(
      [
        { id: 0, replicas: [1, 2, 3], leader: 2 },
        { id: 1, replicas: [2, 3, 4], leader: 4 },
        { id: 2, replicas: [4, 5, 6] },
      ],
      [...active([1, 2, 3, 5]), { id: 4, state: 'leaving' }, { id: 6, state: 'joining' }],
    );
    expect(plan.get(0)).toBe(2); // tie kept on the current leader
    expect([2, 3]).toContain(plan.get(1));
    expect(plan.get(2)).toBe(5);
  });

  it('the record round-trips, and a damaged one is INTERNAL', () => {
    const state: RebalanceState = { version: 3, paused: true, moves: [{ partition: 2, from: 1, to: 4, sinceMs: 5 }], leaders: [1, 0, 4], lastStartMs: 5 };
    expect(decodeState(encodeState(state))).toEqual(state);
    expect(() => decodeState(new TextEncoder().encode('{"format":"atoll-rebalance","version":1}'))).toThrow(expect.objectContaining({ code: 'INTERNAL' }));
    expect(() => encodeState({ ...state, moves: [state.moves[0]!, state.moves[0]!] })).toThrow(/two moves/);
  });
});

describe('preferred leaders follow the member table, not the founding list', () => {
  const founding = foundingTable([1, 2, 3].map((id) => ({ id, clientAddress: `h:${7300 + id}`, peerAddress: '' })));
  const preferred = (table: MemberTable, leaders: number[] = [], moves: RebalanceState['moves'] = []): Array<number | undefined> => {
    const rebalancer = new Rebalancer({ id: 1, partitions: 6, replicationFactor: RF, membership: { current: () => table } } as never);
    (rebalancer as unknown as { state: RebalanceState }).state = { ...initialState, leaders, moves };
    return Array.from({ length: 6 }, (_, partition) => rebalancer.preferredLeader(partition));
  };

  it('a new cluster: the founding placement', () => {
    expect(preferred(founding)).toEqual([1, 2, 3, 1, 2, 3]);
  });

  it('after add-node: no node is preferred until the rebalancer plans (the new node does not take half the leaders)', () => {
    const grown = withState(withJoining(founding, { id: 4, clientAddress: 'h:7304', peerAddress: '', zone: '' }), 4, 'active');
    expect(preferred(grown)).toEqual([undefined, undefined, undefined, undefined, undefined, undefined]);
    expect(preferred(grown, [4, 1, 2, 3, 4, 1])).toEqual([4, 1, 2, 3, 4, 1]);
  });

  it('none while a move of the partition is assigned (the move hands leadership on; maintenance must not undo it)', () => {
    const grown = withState(withJoining(founding, { id: 4, clientAddress: 'h:7304', peerAddress: '', zone: '' }), 4, 'active');
    expect(preferred(grown, [1, 2, 3, 4, 2, 1], [{ partition: 0, from: 1, to: 4, sinceMs: 0 }])).toEqual([undefined, 2, 3, 4, 2, 1]);
  });

  it('a removed or leaving node is never preferred', () => {
    const grown = withState(withJoining(founding, { id: 4, clientAddress: 'h:7304', peerAddress: '', zone: '' }), 4, 'active');
    const leaving = withState(grown, 2, 'leaving');
    expect(preferred(leaving, [1, 2, 3, 4, 2, 1])).toEqual([1, undefined, 3, 4, undefined, 1]);
    const removed = withState(leaving, 2, 'removed');
    expect(preferred(removed, [1, 2, 3, 4, 2, 1])).toEqual([1, undefined, 3, 4, undefined, 1]);
  });

  it('a zone is recorded once, and only for a member', () => {
    const zoned = withZone(founding, 2, 'rack-b');
    expect(zoned.version).toBe(1);
    expect(zoned.members.find((member) => member.id === 2)?.zone).toBe('rack-b');
    expect(withZone(zoned, 2, 'rack-b')).toBe(zoned);
    expect(() => withZone(zoned, 9, 'a')).toThrow(expect.objectContaining({ code: 'MEMBERSHIP_REFUSED' }));
    expect(() => withZone(zoned, 2, 'bad zone')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('an admin address is recorded once, survives the record, and a record without one decodes without one', () => {
    const recorded = withAdminAddress(founding, 2, 'h2:8001');
    expect(recorded.version).toBe(1);
    expect(withAdminAddress(recorded, 2, 'h2:8001')).toBe(recorded);
    expect(decodeTable(encodeTable(recorded)).members.find((member) => member.id === 2)?.adminAddress).toBe('h2:8001');
    expect(decodeTable(encodeTable(founding)).members.every((member) => !('adminAddress' in member))).toBe(true);
    expect(() => withAdminAddress(recorded, 9, 'h9:8001')).toThrow(expect.objectContaining({ code: 'MEMBERSHIP_REFUSED' }));
    expect(() => withAdminAddress(recorded, 2, 'no port')).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    const removed = withState(withState(recorded, 3, 'leaving'), 3, 'removed');
    expect(() => withAdminAddress(removed, 3, 'h3:8001')).toThrow(expect.objectContaining({ code: 'MEMBERSHIP_REFUSED', details: { reason: 'bad-transition' } }));
  });

  it('a wildcard admin bind is advertised at the host of the node\'s client address', () => {
    expect(advertisedAdminAddress('0.0.0.0:8001', 'node4:7001')).toBe('node4:8001');
    expect(advertisedAdminAddress('[::]:8001', 'node4:7001')).toBe('node4:8001');
    expect(advertisedAdminAddress('10.0.0.4:8100', 'node4:7001')).toBe('10.0.0.4:8100');
    expect(advertisedAdminAddress('', 'node4:7001')).toBe('');
  });
});

describe('split partitions in the plan', () => {
  it('plans preferred leaders for the founding ids only: a split partition (its id is its first hash) makes no giant record', () => {
    const members: PlanMember[] = [1, 2, 3].map((id) => ({ id, state: 'active', zone: '' }));
    // Partition 0 split at hash 1,449,990,000: the new partition's id is that hash.
    const partitions = [...view(2, [1, 2, 3]), { id: 1_449_990_000, voters: [1, 2, 3], learners: [], leader: 2, load: 0 }];
    const started = performance.now();
    const next = nextRound({ state: initialState, view: partitions, members, replicationFactor: RF, nowMs: 10_000, maxInFlight: 2, pauseMs: 2_000, moveTimeoutMs: 300_000 });
    // Indexed by partition id up to the split id, the array took seconds and gigabytes; now it
    // holds the two founding partitions.
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(next.leaders).toHaveLength(2);
    expect(decodeState(encodeState(next)).leaders).toEqual(next.leaders);
  });
});
