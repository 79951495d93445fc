/**
 * A seed's scenario: the cluster's settings (small, so snapshots and installs happen often), the
 * nodes' clock errors, the network's fault rates, the clients' mix, and the fault schedule of the
 * fault window (crashes at any moment or at a storage crash point, partitions both ways and one
 * way, cut connections, pauses). Everything is drawn from the seed, in a fixed order.
 */
import type { NodeTestBugs } from '../../node/node-config.js';
import { Rng } from '../../raft/rng.js';
import type { CrashPointKind, CrashTiming } from './sim-disk.js';
import { MAX_CLOCK_DRIFT, MAX_CLOCK_SKEW_MS, type ClockModel } from './sim-host.js';
import type { NetworkFaults } from './sim-network.js';
import type { OperationMix } from './workload.js';

export type FaultEvent =
  | { readonly atMs: number; readonly kind: 'crash'; readonly node: number }
  | { readonly atMs: number; readonly kind: 'crash-point'; readonly node: number; readonly kinds: readonly CrashPointKind[]; readonly countdown: number; readonly timing: CrashTiming }
  | { readonly atMs: number; readonly kind: 'partition'; readonly side: readonly number[]; readonly oneWay: boolean }
  | { readonly atMs: number; readonly kind: 'cut'; readonly a: number; readonly b: number }
  | { readonly atMs: number; readonly kind: 'pause'; readonly node: number; readonly forMs: number }
  | { readonly atMs: number; readonly kind: 'heal' }
  /** Every node dies inside one of its next few synced writes (a power loss: what was not synced is gone everywhere). */
  | { readonly atMs: number; readonly kind: 'power-loss' };

/**
 * The membership changes of a seed (membership-driver.ts runs them during the fault window, as
 * `atoll cluster` would: Cluster.ChangeMember and Cluster.MoveReplica, one move at a time):
 * - moves: `count` single-replica moves between the members (5-node seeds: there is room);
 * - grow-shrink: node 4 joins empty and receives an even share, then `leaver` (4 or a founding
 *   node) leaves: its replicas move to the others, it is removed and stopped;
 * - replace: `victim` loses its disk for good; node 4 joins empty and receives its replicas,
 *   then the victim is removed;
 * - split: `count` partition splits (Cluster.SplitPartition at a partition's leader): first of
 *   partition `partition`, then each further one of the partition the previous split made; with
 *   `mergeBack`, the last split is then undone by a merge (Cluster.MergePartition at the source's
 *   leader, src/node/cluster/merge-admin.ts).
 */
export type MembershipPlan =
  | { readonly kind: 'none' }
  | { readonly kind: 'moves'; readonly atMs: number; readonly count: number }
  | { readonly kind: 'grow-shrink'; readonly atMs: number; readonly leaver: number }
  | { readonly kind: 'replace'; readonly atMs: number; readonly victim: number }
  | { readonly kind: 'split'; readonly atMs: number; readonly partition: number; readonly count: number; readonly mergeBack?: boolean };

export interface NodeScenario {
  readonly seed: number;
  readonly nodeIds: readonly number[];
  readonly partitions: number;
  readonly tickMs: number;
  readonly electionTicks: number;
  readonly snapshotEveryEntries: number;
  readonly logEntriesKeptAfterSnapshot: number;
  readonly retentionRevisions: number;
  readonly cacheBytes: number;
  readonly clocks: ReadonlyMap<number, ClockModel>;
  readonly network: NetworkFaults;
  /** Virtual ms: clients and faults run in [0, faultEndMs); then the cluster heals. */
  readonly faultEndMs: number;
  readonly faults: readonly FaultEvent[];
  /** Probability that a node is made to crash inside a snapshot install it starts. */
  readonly installCrashRate: number;
  readonly clients: number;
  readonly mix: OperationMix;
  readonly thinkMs: readonly [number, number];
  readonly resendAnsweredRate: number;
  readonly testBugs: NodeTestBugs;
  /** Drawn last, so a seed without membership changes keeps every other choice it had before they existed. */
  readonly membership: MembershipPlan;
  /** Never drawn: the nodes' default (lease) unless a caller pins it (a negative control's settings). */
  readonly readMode?: 'safe' | 'lease';
  /**
   * Never drawn, on unless pinned off: issue 32's lease and lock clients (lease-workload.ts,
   * lock-workload.ts) and isolation transactions across range changes (txn-span.ts). Regression
   * seeds and controls found before them pin it off to keep the schedules they were found on.
   */
  readonly issue32Workloads?: boolean;
  /** Never drawn: the watches of the watch workload (watch-workload.ts; default WATCHES_PER_SEED, 0: none). */
  readonly watches?: number;
}

/**
 * What a caller may pin instead of drawing it (the negative controls' settings). `allowedFaults`
 * keeps only those kinds of the drawn fault schedule; `crashPointTiming` and `crashPointKinds` pin
 * every scheduled crash point's. Everything is still drawn first, so the seed's other choices stay.
 */
export type ScenarioOverrides = Partial<Omit<NodeScenario, 'seed'>> & {
  readonly allowedFaults?: ReadonlyArray<FaultEvent['kind']>;
  readonly crashPointKinds?: readonly CrashPointKind[];
  readonly crashPointTiming?: CrashTiming;
  /** Adds a power loss every this many ms of the fault window. */
  readonly powerLossEveryMs?: number;
  /** Adds, every this many ms, a two-way partition of one node (each in turn) from the rest, healed after 1.5 s. */
  readonly isolateEveryMs?: number;
};

export const defaultMix: OperationMix = {
  put: 10,
  cas: 6,
  del: 2,
  read: 10,
  staleRead: 2,
  prefixRead: 3,
  increment: 8,
  counterRead: 4,
  ttlPut: 2,
  txn: 4,
  claim: 3,
  script: 2,
  isolationTxn: 4,
};

export function scenarioFromSeed(seed: number, overrides: ScenarioOverrides = {}): NodeScenario {
  const rng = new Rng(seed * 7919 + 17);
  const nodeCount = rng.chance(0.25) ? 5 : 3;
  const nodeIds = Array.from({ length: nodeCount }, (_, i) => i + 1);
  const clocks = new Map<number, ClockModel>();
  for (const id of nodeIds) {
    clocks.set(id, { skewMs: Math.round((rng.float() * 2 - 1) * MAX_CLOCK_SKEW_MS), drift: (rng.float() * 2 - 1) * MAX_CLOCK_DRIFT });
  }
  const snapshotEveryEntries = 5 + rng.int(21);
  const faultEndMs = 8_000 + rng.int(6_000);
  const network: NetworkFaults = {
    dropRate: rng.pick([0, 0.01, 0.05]),
    duplicateRate: rng.pick([0, 0.01, 0.03]),
    minDelayMs: 1,
    maxDelayMs: rng.pick([4, 10, 30]),
  };
  const faults = drawFaults(rng, nodeIds, faultEndMs);
  const scenario: NodeScenario = {
    seed,
    nodeIds,
    partitions: rng.pick([2, 4, 4]),
    tickMs: 100,
    electionTicks: 10,
    snapshotEveryEntries,
    logEntriesKeptAfterSnapshot: 1 + rng.int(6),
    retentionRevisions: rng.pick([50, 200, 100_000]),
    cacheBytes: rng.pick([16 * 1024, 1024 * 1024]),
    clocks,
    network,
    faultEndMs,
    faults,
    installCrashRate: 0.5,
    clients: 3 + rng.int(3),
    mix: defaultMix,
    thinkMs: [5, 80],
    resendAnsweredRate: 0.15,
    testBugs: {},
    membership: { kind: 'none' },
  };
  const drawnMembership = drawMembership(rng, nodeIds, faultEndMs);
  // Drawn after the other plans (and always, so the order stays fixed): about one in eight of the
  // seeds without membership changes splits partitions instead, while the faults run. Half of
  // those merge the last split back (decided by the time's parity: no draw, so the schedules of
  // every seed stay as they were).
  const split = { roll: rng.int(8), atMs: 500 + rng.int(Math.max(1, Math.floor(faultEndMs / 2))), partition: rng.int(scenario.partitions), count: rng.chance(0.3) ? 2 : 1 };
  const membership: MembershipPlan = drawnMembership.kind === 'none' && split.roll === 0 ? { kind: 'split', atMs: split.atMs, partition: split.partition, count: split.count, mergeBack: split.atMs % 2 === 0 } : drawnMembership;
  const drawn = { ...scenario, membership };
  const { allowedFaults, crashPointKinds, crashPointTiming, powerLossEveryMs, isolateEveryMs, ...pinned } = overrides;
  const added: FaultEvent[] = [];
  if (powerLossEveryMs !== undefined) for (let at = powerLossEveryMs; at < scenario.faultEndMs - 1_000; at += powerLossEveryMs) added.push({ atMs: at, kind: 'power-loss' });
  if (isolateEveryMs !== undefined) {
    let turn = 0;
    for (let at = isolateEveryMs; at < scenario.faultEndMs - 2_000; at += isolateEveryMs) {
      added.push({ atMs: at, kind: 'partition', side: [nodeIds[turn++ % nodeIds.length] as number], oneWay: false }, { atMs: at + 1_500, kind: 'heal' });
    }
  }
  const faultsKept = drawn.faults
    .filter((fault) => allowedFaults === undefined || allowedFaults.includes(fault.kind))
    .map((fault) =>
      fault.kind !== 'crash-point'
        ? fault
        : { ...fault, ...(crashPointKinds !== undefined && { kinds: crashPointKinds }), ...(crashPointTiming !== undefined && { timing: crashPointTiming }) },
    );
  return { ...drawn, faults: [...faultsKept, ...added].sort((x, y) => x.atMs - y.atMs), ...pinned };
}

function drawFaults(rng: Rng, nodeIds: readonly number[], endMs: number): FaultEvent[] {
  const faults: FaultEvent[] = [];
  const count = 4 + rng.int(8);
  const kinds: readonly CrashPointKind[] = ['sync-write', 'write', 'delete-range', 'iterate'];
  for (let i = 0; i < count; i++) {
    const atMs = 1_000 + rng.int(Math.max(1, endMs - 2_000));
    const node = rng.pick(nodeIds);
    const roll = rng.int(13);
    if (roll < 3) faults.push({ atMs, kind: 'crash', node });
    else if (roll < 6) faults.push({ atMs, kind: 'crash-point', node, kinds: [rng.pick(kinds)], countdown: 1 + rng.int(20), timing: rng.chance(0.5) ? 'before' : 'after' });
    else if (roll < 8) {
      const side = nodeIds.filter(() => rng.chance(0.4));
      if (side.length > 0 && side.length < nodeIds.length) faults.push({ atMs, kind: 'partition', side, oneWay: rng.chance(0.4) });
      faults.push({ atMs: atMs + 500 + rng.int(3_000), kind: 'heal' });
    } else if (roll < 10) {
      const a = rng.pick(nodeIds);
      const b = rng.pick(nodeIds.filter((id) => id !== a));
      faults.push({ atMs, kind: 'cut', a, b });
    } else if (roll < 12) faults.push({ atMs, kind: 'pause', node, forMs: 300 + rng.int(2_500) });
    else faults.push({ atMs, kind: 'power-loss' });
  }
  return faults.sort((x, y) => x.atMs - y.atMs);
}

/**
 * About a third of the seeds change membership: half of the 5-node ones move replicas around; of
 * the 3-node ones, one in six grows to 4 nodes and shrinks back, one in six replaces a node. The
 * changes start early in the fault window, so faults hit them.
 */
function drawMembership(rng: Rng, nodeIds: readonly number[], endMs: number): MembershipPlan {
  const roll = rng.int(6);
  const atMs = 500 + rng.int(Math.max(1, Math.floor(endMs / 3)));
  if (nodeIds.length > 3) return roll < 3 ? { kind: 'moves', atMs, count: 2 + rng.int(3) } : { kind: 'none' };
  if (roll === 0) return { kind: 'grow-shrink', atMs, leaver: rng.pick([...nodeIds, 4]) };
  if (roll === 1) return { kind: 'replace', atMs, victim: rng.pick(nodeIds) };
  return { kind: 'none' };
}

/** What a membership plan does, in words. */
export function describeMembership(plan: MembershipPlan): string {
  switch (plan.kind) {
    case 'none':
      return '';
    case 'moves':
      return `, ${plan.count} replica moves from ${plan.atMs} ms`;
    case 'grow-shrink':
      return `, node 4 joins at ${plan.atMs} ms, then node ${plan.leaver} leaves`;
    case 'replace':
      return `, node ${plan.victim} loses its disk at ${plan.atMs} ms and node 4 replaces it`;
    case 'split':
      return `, ${plan.count} split${plan.count > 1 ? 's' : ''} of partition ${plan.partition} from ${plan.atMs} ms${plan.mergeBack === true ? ', then a merge back' : ''}`;
  }
}

/** One line saying what the scenario is. */
export function describeScenario(s: NodeScenario): string {
  const bugs = Object.keys(s.testBugs).filter((name) => (s.testBugs as Record<string, unknown>)[name] === true);
  return (
    `${s.nodeIds.length} nodes, ${s.partitions} partitions, snapshot every ${s.snapshotEveryEntries} (keep ${s.logEntriesKeptAfterSnapshot}), ` +
    `${s.clients} clients, faults to ${s.faultEndMs} ms: ${s.faults.length} events, drop ${s.network.dropRate}, dup ${s.network.duplicateRate}, delay <= ${s.network.maxDelayMs} ms` +
    describeMembership(s.membership) +
    (bugs.length > 0 ? `, bugs: ${bugs.join(',')}` : '')
  );
}
