import assert from 'node:assert/strict';

/**
 * Where each partition's replicas start, computed the same way on every node from the node list.
 * It only seeds a new cluster: afterwards a partition's replicas are its Raft group's applied
 * configuration, which replica moves change (src/node/cluster/replica-moves.ts), and a node opens the replicas on
 * its disk (src/node/apply/replica-store.ts). The preferred leader below counts only while it is still a voter. Node ids are sorted; partition p gets `replicationFactor` consecutive nodes starting
 * at position p mod N. So every node holds about P * RF / N replicas, and the first replica (the
 * preferred leader, which the balancer moves leadership back to) rotates: each node prefers about
 * P / N partitions.
 */
export function replicasOf(partition: number, nodeIds: readonly number[], replicationFactor: number): number[] {
  const sorted = [...nodeIds].sort((a, b) => a - b);
  assert.ok(sorted.length > 0, 'placement needs at least one node');
  assert.ok(replicationFactor >= 1 && replicationFactor <= sorted.length, `replication factor ${replicationFactor} with ${sorted.length} nodes`);
  const replicas: number[] = [];
  for (let k = 0; k < replicationFactor; k++) replicas.push(sorted[(partition + k) % sorted.length] as number);
  return replicas;
}

export function preferredLeaderOf(partition: number, nodeIds: readonly number[], replicationFactor: number): number {
  return replicasOf(partition, nodeIds, replicationFactor)[0] as number;
}

/** One replica move of a rebalance plan (run with Cluster.MoveReplica, one at a time). */
export interface PlannedMove {
  readonly partition: number;
  readonly from: number;
  readonly to: number;
}

export interface PlanMember {
  readonly id: number;
  /** 'active' and 'joining' members receive replicas; 'leaving' ones (and nodes not listed) give theirs away. */
  readonly state: string;
  readonly zone?: string;
}

function zonesOf(replicas: readonly number[], zoneOf: ReadonlyMap<number, string>): number {
  return new Set(replicas.map((node) => zoneOf.get(node) || `node-${node}`)).size;
}

/**
 * The replica moves that take `partitions` (each one's voters) to an even spread over the members
 * that may hold replicas: first every replica on a node that may not (leaving, or no member) moves
 * to the least loaded node without one of that partition; then, while the most and least loaded
 * nodes differ by more than one replica, one replica moves from the most loaded node that can give
 * one to the least loaded. A replica on a node that may not hold one, of a partition every holder
 * already has, is trimmed instead (a move to a voter: its source's removal). Invariants of every
 * planned step: a partition never gets two replicas on one node, never loses a replica but by a
 * trim (which MoveReplica refuses below the replication factor), and never spans fewer zones than before (when
 * nodes carry zones). Bounded: at most one move per replica for the drain, and partitions x RF
 * moves for the balance. Deterministic: ties go to the lower node id and partition.
 */
export function planMoves(partitions: ReadonlyArray<{ id: number; replicas: readonly number[]; load?: number }>, members: readonly PlanMember[]): PlannedMove[] {
  const holders = members.filter((member) => member.state === 'active' || member.state === 'joining').map((member) => member.id).sort((a, b) => a - b);
  const zoneOf = new Map(members.map((member) => [member.id, member.zone ?? '']));
  const replicas = new Map(partitions.map((partition) => [partition.id, [...partition.replicas]]));
  const count = new Map<number, number>(holders.map((node) => [node, 0]));
  for (const voters of replicas.values()) for (const node of voters) count.set(node, (count.get(node) ?? 0) + 1);
  // Measured load (requests per second, the hot-key tracker's rates) only breaks ties between
  // nodes of equal replica counts, and picks the hottest partition of a giver first.
  const loadOf = new Map(partitions.map((partition) => [partition.id, Number.isFinite(partition.load) && (partition.load as number) > 0 ? (partition.load as number) : 0]));
  const nodeLoad = new Map<number, number>();
  for (const [partition, voters] of replicas) for (const node of voters) nodeLoad.set(node, (nodeLoad.get(node) ?? 0) + (loadOf.get(partition) ?? 0));
  /** Orders nodes lighter first: fewer replicas, then less load; 0 for equals (callers break ties by id). */
  const lighter = (a: number, b: number): number => (count.get(a) ?? 0) - (count.get(b) ?? 0) || (nodeLoad.get(a) ?? 0) - (nodeLoad.get(b) ?? 0);
  const byHeat = [...replicas.keys()].sort((a, b) => (loadOf.get(b) ?? 0) - (loadOf.get(a) ?? 0) || a - b);
  const moves: PlannedMove[] = [];
  const apply = (partition: number, from: number, to: number): void => {
    const voters = replicas.get(partition) as number[];
    assert.ok(voters.includes(from) && !voters.includes(to), 'a planned move takes a replica from a holder to a node without one');
    voters[voters.indexOf(from)] = to;
    count.set(from, (count.get(from) ?? 0) - 1);
    count.set(to, (count.get(to) ?? 0) + 1);
    nodeLoad.set(from, (nodeLoad.get(from) ?? 0) - (loadOf.get(partition) ?? 0));
    nodeLoad.set(to, (nodeLoad.get(to) ?? 0) + (loadOf.get(partition) ?? 0));
    moves.push({ partition, from, to });
  };
  /**
   * Every holder already has a replica of `partition`, so `from` (a node that may not hold one) is
   * an extra voter: a move whose leader died between promoting its target and removing its source
   * leaves one (chaos seed 2 with split faults: voters 1,2,3,4 with node 4 leaving, which could then
   * never be removed). Planned as a move to a holder that is a voter already, which MoveReplica runs
   * as its last stage, the source's removal (src/node/cluster/move-steps.ts), and refuses ('already-replica') when it
   * would leave fewer than the replication factor. Never adds a replica.
   */
  const trim = (partition: number, from: number): void => {
    const voters = replicas.get(partition) as number[];
    const to = voters.filter((node) => node !== from && holders.includes(node)).sort((a, b) => a - b)[0];
    if (to === undefined) return;
    voters.splice(voters.indexOf(from), 1);
    count.set(from, (count.get(from) ?? 0) - 1);
    nodeLoad.set(from, (nodeLoad.get(from) ?? 0) - (loadOf.get(partition) ?? 0));
    moves.push({ partition, from, to });
  };
  /** The best node to receive a replica of `partition` in place of `from`: keeps zones, then least loaded, then lowest id. */
  const targetFor = (partition: number, from: number, candidates: readonly number[]): number | undefined => {
    const voters = replicas.get(partition) as number[];
    const before = zonesOf(voters, zoneOf);
    let best: number | undefined;
    for (const node of candidates) {
      if (voters.includes(node)) continue;
      if (zonesOf(voters.map((voter) => (voter === from ? node : voter)), zoneOf) < before) continue;
      if (best === undefined || lighter(node, best) < 0 || (lighter(node, best) === 0 && node < best)) best = node;
    }
    return best;
  };
  for (const [partition, voters] of [...replicas].sort(([a], [b]) => a - b)) {
    for (const from of [...voters]) {
      if (holders.includes(from)) continue;
      const to = targetFor(partition, from, holders);
      if (to !== undefined) apply(partition, from, to);
      else trim(partition, from);
    }
  }
  // Zones: a partition whose replicas share a zone while a holder in another zone could take one
  // moves a replica from a shared zone to the least loaded such holder (one more zone per move).
  const zoneName = (node: number): string => zoneOf.get(node) || `node-${node}`;
  const holderZones = new Set(holders.map(zoneName)).size;
  for (const [partition, voters] of [...replicas].sort(([a], [b]) => a - b)) {
    for (let step = 0; step < voters.length && zonesOf(voters, zoneOf) < Math.min(voters.length, holderZones); step++) {
      const present = voters.map(zoneName);
      const shared = voters.filter((node, index) => present.indexOf(zoneName(node)) !== index).sort((a, b) => lighter(b, a) || a - b);
      const to = holders.filter((node) => !present.includes(zoneName(node))).sort((a, b) => lighter(a, b) || a - b)[0];
      if (shared[0] === undefined || to === undefined) break;
      apply(partition, shared[0], to);
    }
  }
  const maxBalanceMoves = partitions.length * Math.max(1, ...partitions.map((partition) => partition.replicas.length));
  for (let round = 0; round < maxBalanceMoves; round++) {
    const byLoad = [...holders].sort((a, b) => lighter(b, a) || a - b);
    let moved = false;
    for (const from of byLoad) {
      const least = Math.min(...holders.map((node) => count.get(node) ?? 0));
      if ((count.get(from) ?? 0) - least <= 1) break;
      const lightest = holders.filter((node) => (count.get(from) ?? 0) - (count.get(node) ?? 0) > 1).sort((a, b) => lighter(a, b) || a - b);
      for (const partition of byHeat) {
        if (!(replicas.get(partition) as number[]).includes(from)) continue;
        const to = targetFor(partition, from, lightest);
        if (to === undefined) continue;
        apply(partition, from, to);
        moved = true;
        break;
      }
      if (moved) break;
    }
    if (!moved) break;
  }
  return moves;
}

export interface LeaderPlanPartition {
  readonly id: number;
  /** Its voters (the applied configuration). */
  readonly replicas: readonly number[];
  /** Its leader now (0 when none is known): kept when that is as even, so fewer transfers. */
  readonly leader?: number;
}

/**
 * Each partition's preferred leader, spreading leadership evenly over the active members: every
 * partition gets one of its voters that is an active member (none when it has no such voter), first
 * greedily (the voter leading fewest so far; ties: the current leader, then the lowest id), then
 * moved from a voter leading two or more than another of its voters until no such move is left.
 * Deterministic for a given input; bounded: partitions x voters reassignments at most.
 */
export function planLeaders(partitions: readonly LeaderPlanPartition[], members: readonly PlanMember[]): Map<number, number> {
  const active = new Set(members.filter((member) => member.state === 'active').map((member) => member.id));
  const led = new Map<number, number>([...active].map((node) => [node, 0]));
  const plan = new Map<number, number>();
  const sorted = [...partitions].sort((a, b) => a.id - b.id);
  const candidatesOf = (partition: LeaderPlanPartition): number[] => [...new Set(partition.replicas)].filter((node) => active.has(node)).sort((a, b) => a - b);
  for (const partition of sorted) {
    let best: number | undefined;
    for (const node of candidatesOf(partition)) {
      if (best === undefined) best = node;
      const difference = (led.get(node) as number) - (led.get(best) as number);
      if (difference < 0 || (difference === 0 && node === partition.leader)) best = node;
    }
    if (best === undefined) continue;
    plan.set(partition.id, best);
    led.set(best, (led.get(best) as number) + 1);
  }
  const maxRounds = sorted.length * Math.max(1, ...sorted.map((partition) => partition.replicas.length));
  for (let round = 0; round < maxRounds; round++) {
    let moved = false;
    for (const partition of sorted) {
      const current = plan.get(partition.id);
      if (current === undefined) continue;
      const lighter = candidatesOf(partition).filter((node) => (led.get(current) as number) - (led.get(node) as number) >= 2);
      const to = lighter.sort((a, b) => (led.get(a) as number) - (led.get(b) as number) || a - b)[0];
      if (to === undefined) continue;
      plan.set(partition.id, to);
      led.set(current, (led.get(current) as number) - 1);
      led.set(to, (led.get(to) as number) + 1);
      moved = true;
    }
    if (!moved) break;
  }
  return plan;
}
