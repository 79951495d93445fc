/**
 * Quiescence and node-level liveness on real AtollNodes in the whole-node simulator's virtual
 * time (deterministic: counts of ticks and messages, not wall-clock CPU):
 * - an idle cluster's groups quiesce: no Raft message and no group tick while idle, only a node
 *   heartbeat per peer every third of an election timeout;
 * - when a leader node goes silent (isolated both ways, no transport report), the quiesced
 *   followers of the groups it led wake from the missing node heartbeats and elect new leaders
 *   within a bound; /readyz's check (allPartitionsLed) holds again;
 * - when it comes back, the leader balancer moves leadership back to the preferred leaders, and
 *   the groups quiesce again.
 */
import { describe, expect, it } from 'vitest';
import type { AtollNode } from '../../src/node/atoll-node.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import type { SimCluster } from '../../src/sim/node/sim-cluster.js';
import { driverOf } from './in-process-cluster.js';
import { allLed as allLedIn, simNodeCluster, startAllLed } from './sim-node-cluster.js';

const NODES = [1, 2, 3];
const PARTITIONS = 24;
const TICK_MS = 50;
const ELECTION_TICKS = 10;
const MAX_EVENTS = 2_000_000;

/** Each live node's view: partition -> leader it knows (read between loop iterations). */
function leaders(cluster: SimCluster, node: number): Map<number, number> {
  const api = cluster.apiOf(node);
  const out = new Map<number, number>();
  if (api === undefined) return out;
  for (const [partition, group] of driverOf(api).groups) out.set(partition, group.raw.status().lead);
  return out;
}

function totals(cluster: SimCluster, nodes: readonly number[]): { groupTicks: number; awake: number; heartbeats: number } {
  let groupTicks = 0;
  let awake = 0;
  let heartbeats = 0;
  for (const node of nodes) {
    const driver = driverOf(cluster.apiOf(node) as AtollNode);
    groupTicks += driver.activity.groupTicks;
    awake += driver.activity.awakeCount;
    heartbeats += driver.liveness.heartbeatsSent;
  }
  return { groupTicks, awake, heartbeats };
}

describe('quiescence with node-level liveness', () => {
  it('idle groups stop ticking and talking; a silent leader node is replaced within a bound; the balancer and readiness still work', async () => {
    const sim = simNodeCluster({ seed: 18, nodes: NODES, partitions: PARTITIONS, tickMs: TICK_MS, electionTicks: ELECTION_TICKS });
    const { scheduler, network, cluster, trace } = sim;
    await startAllLed(sim, NODES, 10_000, MAX_EVENTS);
    const allLed = (nodes: readonly number[]): boolean => allLedIn(cluster, nodes);
    expect(allLed(NODES)).toBe(true);

    // Idle: every group quiesces within a few ticks of its last work (atoll-node.ts: quiesceAfterTicks).
    await scheduler.runUntil(scheduler.now + 5_000, MAX_EVENTS);
    const before = totals(cluster, NODES);
    const messagesBefore = network.messagesSent;
    const idleMs = 10_000;
    await scheduler.runUntil(scheduler.now + idleMs, MAX_EVENTS);
    const after = totals(cluster, NODES);
    const idleTicks = idleMs / TICK_MS;
    // Invariant of quiescence: an idle group neither ticks nor sends.
    expect(after.awake).toBe(0);
    expect(after.groupTicks - before.groupTicks).toBe(0);
    expect(network.messagesSent - messagesBefore).toBe(0);
    // Liveness costs one node heartbeat per peer every third of an election timeout, whatever the
    // number of groups (ticks may be coalesced after a timer runs late, hence the range).
    const heartbeats = after.heartbeats - before.heartbeats;
    const perPeer = idleTicks / Math.floor(ELECTION_TICKS / 3);
    expect(heartbeats).toBeGreaterThan(NODES.length * 2 * perPeer * 0.9);
    expect(heartbeats).toBeLessThanOrEqual(NODES.length * 2 * (perPeer + 1));

    // Node 1 goes silent (isolated both ways; nobody is told): the groups it led must move.
    const led = [...leaders(cluster, 2)].filter(([, lead]) => lead === 1).map(([partition]) => partition);
    expect(led.length).toBeGreaterThan(0);
    for (const peer of [2, 3]) {
      network.block(1, peer);
      network.block(peer, 1);
    }
    const silencedAt = scheduler.now;
    const movedOn = (): boolean =>
      [2, 3].every((node) => {
        const view = leaders(cluster, node);
        return led.every((partition) => {
          const lead = view.get(partition) ?? 0;
          return lead !== 0 && lead !== 1;
        });
      });
    // Bound: the silence is noticed after one election timeout, the woken followers campaign within
    // two more (randomized timeout), plus a pre-vote and a vote round: 4 timeouts in all.
    const boundMs = 4 * ELECTION_TICKS * TICK_MS;
    await scheduler.runUntil(silencedAt + boundMs, MAX_EVENTS, movedOn);
    if (!movedOn()) throw new Error(`no new leaders within ${boundMs} ms:\n${trace.tail().slice(-40).join('\n')}`);
    expect(scheduler.now - silencedAt).toBeLessThanOrEqual(boundMs);
    expect(allLed([2, 3])).toBe(true);

    // Node 1 comes back: the balancer moves leadership back to each partition's preferred leader,
    // and the groups quiesce again.
    network.heal();
    const balanced = (): boolean =>
      NODES.every((node) => {
        const view = leaders(cluster, node);
        return [...view].every(([partition, lead]) => lead === preferredLeaderOf(partition, NODES, 3));
      });
    await scheduler.runUntil(scheduler.now + 30_000, MAX_EVENTS, balanced);
    expect(balanced()).toBe(true);
    await scheduler.runUntil(scheduler.now + 8_000, MAX_EVENTS);
    expect(totals(cluster, NODES).awake).toBe(0);
    expect(allLed(NODES)).toBe(true);
    for (const id of NODES) await cluster.apiOf(id)?.close();
  }, 60_000);
});
