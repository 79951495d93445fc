/**
 * A learner no move will finish (orphan-learners.ts, issue 19): a move's coordinating leader died,
 * or the rebalancer dropped the move, between "learner added" and "promoted". Built here in the
 * whole-node simulator's virtual time: four nodes, partition 0 on nodes 1-3, and node 4 added as a
 * learner by a bare configuration change (its replica opened as a move opens it), with no move
 * coordinated anywhere. The partition's leader removes it after ORPHAN_LEARNER_MS and the voters
 * stay as they were (and node 4, which hears of its removal, deletes its replica); with the control
 * flag orphanLearnersKept (the old behaviour) it stays for good.
 * The clock restarts with a new leadership, and a move running at the leader is never raced; a move
 * here of other nodes (refused at once: another learner) does not hold the removal off.
 */
import { describe, expect, it } from 'vitest';
import type { NodeTestBugs } from '../../src/node/node-config.js';
import { ORPHAN_LEARNER_MS, OrphanLearners } from '../../src/node/cluster/orphan-learners.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import type { RaftDriver } from '../../src/node/replica/raft-driver.js';
import type { ReplicaMoves } from '../../src/node/cluster/replica-moves.js';
import { systemTenant } from '../../src/keys/tenant-keys.js';
import type { ConfChange, ConfState } from '../../src/raft/types.js';
import { pino } from 'pino';
import { quietSim, type QuietSim } from './quiet-sim.js';

const NODES = [1, 2, 3, 4];
const LEARNER = 4;
const MAX_EVENTS = 2_000_000;

interface Setup extends QuietSim {
  /** The leader of partition 0 now, and its applied configuration. */
  leader(): { id: number; conf: ConfState } | undefined;
}

function driverOf(cluster: QuietSim['cluster'], node: number): RaftDriver<PartitionReplica> | undefined {
  return (cluster.apiOf(node) as unknown as { driver: RaftDriver<PartitionReplica> } | undefined)?.driver;
}

/** `nodes` started with partition 0, run until it has a leader and 5 s more. */
async function ledSim(nodes: readonly number[], testBugs: NodeTestBugs): Promise<Setup> {
  const { scheduler, network, cluster } = quietSim({ nodeIds: nodes, partitions: 1, seed: 19, testBugs });
  const leader = (): { id: number; conf: ConfState } | undefined => {
    for (const id of nodes) {
      const raw = driverOf(cluster, id)?.groups.get(0)?.raw;
      if (raw?.role === 'leader') return { id, conf: raw.status().confState };
    }
    return undefined;
  };
  expect(await scheduler.runUntil(20_000, MAX_EVENTS, () => leader() !== undefined)).toBe(true);
  await scheduler.runUntil(scheduler.now + 5_000, MAX_EVENTS);
  return { scheduler, cluster, leader, network };
}

/** A settled cluster: partition 0 on voters 1, 2, 3, led, no learner. */
async function settled(testBugs: NodeTestBugs): Promise<Setup> {
  const setup = await ledSim(NODES, testBugs);
  expect(setup.leader()?.conf).toEqual({ voters: [1, 2, 3], learners: [] });
  return setup;
}

/** settled(), then node 4 added to partition 0 as a learner by a bare conf change. */
async function withLearner(testBugs: NodeTestBugs): Promise<Setup> {
  const setup = await settled(testBugs);
  const { scheduler, cluster, leader } = setup;
  const before = leader();
  // What a move's first step does (replica-moves.ts), and nothing after it: no move is coordinated.
  void cluster.apiOf(LEARNER)?.prepareReplica(0, { term: 0, index: 0 });
  driverOf(cluster, before?.id ?? 0)?.enqueue(() => driverOf(cluster, before?.id ?? 0)?.groups.get(0)?.raw.proposeConfChange({ type: 'addLearner', node: LEARNER }));
  expect(await scheduler.runUntil(scheduler.now + 5_000, MAX_EVENTS, () => leader()?.conf.learners.includes(LEARNER) === true)).toBe(true);
  return setup;
}

describe('a learner whose move stopped before promoting it', () => {
  it('is removed by the partition leader after its bound, and the voters stay as they were', async () => {
    const { scheduler, leader, cluster } = await withLearner({});
    const addedAtMs = scheduler.now;
    // Not before the bound: a move resumed at the leader within it would still find its learner.
    await scheduler.runUntil(addedAtMs + ORPHAN_LEARNER_MS / 2, MAX_EVENTS);
    expect(leader()?.conf.learners).toEqual([LEARNER]);
    expect(await scheduler.runUntil(addedAtMs + 2 * ORPHAN_LEARNER_MS, MAX_EVENTS, () => leader()?.conf.learners.length === 0)).toBe(true);
    expect(leader()?.conf).toEqual({ voters: [1, 2, 3], learners: [] });
    // Node 4 heard of its removal (it had caught up): the sweep there deletes its replica.
    expect(await scheduler.runUntil(scheduler.now + 10_000, MAX_EVENTS, () => driverOf(cluster, LEARNER)?.groups.has(0) === false)).toBe(true);
  }, 120_000);

  it('stays for good without the fix (control flag orphanLearnersKept)', async () => {
    const { scheduler, leader } = await withLearner({ orphanLearnersKept: true });
    await scheduler.runUntil(scheduler.now + 3 * ORPHAN_LEARNER_MS, MAX_EVENTS);
    expect(leader()?.conf).toEqual({ voters: [1, 2, 3], learners: [LEARNER] });
  }, 120_000);

  it('waits a whole bound again under a new leader (its clock is one leadership)', async () => {
    const { scheduler, cluster, leader } = await withLearner({});
    const addedAtMs = scheduler.now;
    await scheduler.runUntil(addedAtMs + (2 * ORPHAN_LEARNER_MS) / 3, MAX_EVENTS);
    const first = leader();
    const other = [1, 2, 3].find((node) => node !== first?.id) as number;
    driverOf(cluster, first?.id ?? 0)?.enqueue(() => driverOf(cluster, first?.id ?? 0)?.groups.get(0)?.raw.transferLeadership(other));
    const movedAtMs = scheduler.now;
    expect(await scheduler.runUntil(movedAtMs + 5_000, MAX_EVENTS, () => leader() !== undefined && leader()?.id !== first?.id)).toBe(true);
    // Past the first leader's bound, within the new leadership's (the balancer may hand it back: a new term too).
    await scheduler.runUntil(movedAtMs + (ORPHAN_LEARNER_MS * 3) / 4, MAX_EVENTS);
    expect(leader()?.conf.learners).toEqual([LEARNER]);
    expect(await scheduler.runUntil(movedAtMs + 2 * ORPHAN_LEARNER_MS, MAX_EVENTS, () => leader()?.conf.learners.length === 0)).toBe(true);
    expect(leader()?.conf).toEqual({ voters: [1, 2, 3], learners: [] });
  }, 120_000);

  it('is left to a move that runs at the leader, and removed a bound after that move stopped', async () => {
    const { scheduler, cluster, network, leader } = await settled({});
    const at = leader()?.id as number;
    const host = cluster.hostOf(at);
    const moves = (cluster.apiOf(at) as unknown as { moves: ReplicaMoves }).moves;
    // A move to node 4 that cannot finish: node 4 stops hearing from the leader once it is a
    // learner, so it never catches up, and the move waits in its promotion step until its deadline.
    const deadlineMs = (host?.clock.wallMs() ?? 0) + 3 * ORPHAN_LEARNER_MS;
    const source = [1, 2, 3].find((node) => node !== at) as number;
    let ended: unknown;
    void moves.move({ partition: 0, fromNode: source, toNode: LEARNER }, { deadlineMs, tenant: systemTenant }).then(
      () => (ended = 'done'),
      (error: unknown) => (ended = error),
    );
    expect(await scheduler.runUntil(scheduler.now + 5_000, MAX_EVENTS, () => leader()?.conf.learners.includes(LEARNER) === true)).toBe(true);
    network.block(at, LEARNER);
    network.block(LEARNER, at);
    expect(await scheduler.runUntil(scheduler.now + 3 * ORPHAN_LEARNER_MS + 5_000, MAX_EVENTS, () => ended !== undefined)).toBe(true);
    expect(ended).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
    // Three bounds with the learner present and the move running: never removed under it.
    expect(leader()).toMatchObject({ id: at, conf: { voters: [1, 2, 3], learners: [LEARNER] } });
    const stoppedAtMs = scheduler.now;
    await scheduler.runUntil(stoppedAtMs + ORPHAN_LEARNER_MS / 2, MAX_EVENTS);
    expect(leader()?.conf.learners).toEqual([LEARNER]);
    expect(await scheduler.runUntil(stoppedAtMs + 2 * ORPHAN_LEARNER_MS, MAX_EVENTS, () => leader()?.conf.learners.length === 0)).toBe(true);
    expect(leader()?.conf).toEqual({ voters: [1, 2, 3], learners: [] });
  }, 120_000);
});

describe('a move of other nodes at a partition with an orphan learner', () => {
  it('removes the learner as its first step and finishes, long before the orphan bound (whole-node simulator seed 58111)', async () => {
    const nodes = [1, 2, 3, 4, 5];
    const { scheduler, cluster, leader } = await ledSim(nodes, {});
    const before = leader() as { id: number; conf: ConfState };
    expect(before.conf.voters).toHaveLength(3);
    const [orphan, target] = nodes.filter((node) => !before.conf.voters.includes(node)) as [number, number];
    // The first step of a move whose coordinator then died: the learner, and no move coordinated anywhere.
    void cluster.apiOf(orphan)?.prepareReplica(0, { term: 0, index: 0 });
    driverOf(cluster, before.id)?.enqueue(() => driverOf(cluster, before.id)?.groups.get(0)?.raw.proposeConfChange({ type: 'addLearner', node: orphan }));
    expect(await scheduler.runUntil(scheduler.now + 5_000, MAX_EVENTS, () => leader()?.conf.learners.includes(orphan) === true)).toBe(true);

    const at = leader()?.id as number;
    const source = before.conf.voters.find((node) => node !== at) as number;
    const moves = (cluster.apiOf(at) as unknown as { moves: ReplicaMoves }).moves;
    const startedMs = scheduler.now;
    let ended: unknown;
    void moves.move({ partition: 0, fromNode: source, toNode: target }, { deadlineMs: (cluster.hostOf(at)?.clock.wallMs() ?? 0) + 30_000, tenant: systemTenant }).then(
      (answer) => (ended = answer),
      (error: unknown) => (ended = error),
    );
    expect(await scheduler.runUntil(startedMs + 30_000, MAX_EVENTS, () => ended !== undefined)).toBe(true);
    // Before the fix: MOVE_REFUSED, reason in-progress (another learner), until the orphan bound passed.
    expect(ended).toMatchObject({ voters: expect.arrayContaining([target]) });
    expect(scheduler.now - startedMs).toBeLessThan(ORPHAN_LEARNER_MS / 2);
    const after = leader()?.conf;
    expect(after?.learners).toEqual([]);
    expect([...(after?.voters ?? [])].sort()).toEqual([...before.conf.voters.filter((node) => node !== source), target].sort());
  }, 120_000);
});

describe('OrphanLearners and the move coordinated here', () => {
  /** Sweeps once a second for `seconds` over a led group with learner 4, while `move` runs here; the changes it proposed. */
  function sweepWhile(move: { from: number; to: number } | undefined, seconds: number): ConfChange[] {
    let nowMs = 0;
    const proposed: ConfChange[] = [];
    const orphans = new OrphanLearners({ clock: { monotonicMs: () => nowMs, wallMs: () => nowMs }, logger: pino({ level: 'silent' }), moveOf: () => move });
    const replica = {
      raw: {
        role: 'leader',
        term: 3,
        learnerCount: 1,
        status: () => ({ confState: { voters: [1, 2, 3], learners: [LEARNER] } }),
        proposeConfChange: (change: ConfChange) => (proposed.push(change), { index: 10, term: 3 }),
      },
    } as unknown as PartitionReplica;
    for (; nowMs <= seconds * 1_000; nowMs += 1_000) orphans.observe(0, replica);
    return proposed;
  }

  it('holds off while the move uses the learner, and not for a move of other nodes (which removes it itself)', () => {
    const seconds = (2 * ORPHAN_LEARNER_MS) / 1_000;
    expect(sweepWhile({ from: 3, to: LEARNER }, seconds)).toEqual([]);
    expect(sweepWhile({ from: LEARNER, to: 5 }, seconds)).toEqual([]);
    expect(sweepWhile({ from: 3, to: 5 }, seconds)[0]).toEqual({ type: 'removeNode', node: LEARNER });
    expect(sweepWhile(undefined, seconds)[0]).toEqual({ type: 'removeNode', node: LEARNER });
    expect(sweepWhile(undefined, ORPHAN_LEARNER_MS / 1_000 - 1)).toEqual([]);
  });
});
