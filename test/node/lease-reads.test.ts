/**
 * Lease reads on real AtollNodes in the whole-node simulator's virtual time (deterministic: counts
 * of messages, not wall-clock CPU):
 * - with --read-mode lease (the default) a linearizable get on the leader sends no Raft message of
 *   its own (the lease rests on the heartbeats an awake group sends anyway); with safe, every get
 *   takes a ReadIndex heartbeat round;
 * - an isolated leader stops answering linearizable gets once its lease ran out, before the others
 *   can elect a new leader (read-barrier.ts, leaseDurationMs).
 */
import { describe, expect, it } from 'vitest';
import type { CallContext } from '../../src/api/node-api.js';
import type { AtollNode } from '../../src/node/atoll-node.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { leaseDurationMs } from '../../src/node/replica/read-barrier.js';
import type { Scheduler } from '../../src/sim/node/scheduler.js';
import type { SimCluster } from '../../src/sim/node/sim-cluster.js';
import type { SimNetwork } from '../../src/sim/node/sim-network.js';
import { driverOf } from './in-process-cluster.js';
import { simNodeCluster, startAllLed } from './sim-node-cluster.js';

const NODES = [1, 2, 3];
const TICK_MS = 50;
const ELECTION_TICKS = 10;
const MAX_EVENTS = 2_000_000;
const READS = 40;

async function cluster(readMode: 'safe' | 'lease'): Promise<{ scheduler: Scheduler; network: SimNetwork; cluster: SimCluster }> {
  const sim = simNodeCluster({ seed: 7, nodes: NODES, partitions: 1, tickMs: TICK_MS, electionTicks: ELECTION_TICKS, readMode });
  await startAllLed(sim, NODES, 10_000, MAX_EVENTS);
  return sim;
}

function leaderOf(sim: SimCluster): { node: number; api: AtollNode; replica: PartitionReplica } {
  for (const node of NODES) {
    const api = sim.apiOf(node) as AtollNode;
    const replica = driverOf(api).groups.get(0) as PartitionReplica;
    if (replica.raw.role === 'leader') return { node, api, replica };
  }
  throw new Error('no leader');
}

/** Runs `call` to completion in virtual time. */
async function settle<T>(scheduler: Scheduler, call: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  let outcome: { value?: T; error?: unknown } | undefined;
  call.then((value) => (outcome = { value }), (error: unknown) => (outcome = { error }));
  await scheduler.runUntil(scheduler.now + 5_000, MAX_EVENTS, () => outcome !== undefined);
  if (outcome === undefined) throw new Error('call did not finish');
  return outcome;
}

function context(sim: SimCluster, node: number): CallContext {
  return { deadlineMs: (sim.hostOf(node)?.clock.wallMs() ?? 0) + 3_000 };
}

/** READS sequential linearizable gets on the leader; the Raft messages the cluster sent meanwhile, per get. */
async function messagesPerRead(readMode: 'safe' | 'lease'): Promise<{ perRead: number; leaseReads: number; rounds: number }> {
  const { scheduler, network, cluster: sim } = await cluster(readMode);
  const leader = leaderOf(sim);
  const put = await settle(scheduler, leader.api.put({ key: 'k', value: Buffer.from('v1') }, context(sim, leader.node)));
  expect(put.error).toBeUndefined();
  // Let the group settle (and quiesce: the first read then wakes it).
  await scheduler.runUntil(scheduler.now + 2_000, MAX_EVENTS);
  const sentBefore = network.messagesSent;
  const leaseBefore = leader.replica.reads.leaseReads;
  const roundsBefore = leader.replica.reads.readRounds;
  for (let i = 0; i < READS; i++) {
    const got = await settle(scheduler, leader.api.get({ key: 'k' }, context(sim, leader.node)));
    expect(got.error).toBeUndefined();
    expect(Buffer.from(got.value!.value!).toString()).toBe('v1');
  }
  const perRead = (network.messagesSent - sentBefore) / READS;
  const out = { perRead, leaseReads: leader.replica.reads.leaseReads - leaseBefore, rounds: leader.replica.reads.readRounds - roundsBefore };
  for (const id of NODES) await sim.apiOf(id)?.close();
  return out;
}

describe('lease reads in the node', () => {
  it('a linearizable get under the lease sends no message of its own; under safe every get takes a heartbeat round', async () => {
    const lease = await messagesPerRead('lease');
    const safe = await messagesPerRead('safe');
    // Safe: a round per get (a heartbeat and its answer per follower: 4 messages).
    expect(safe.rounds).toBe(READS);
    expect(safe.leaseReads).toBe(0);
    expect(safe.perRead).toBeGreaterThanOrEqual(4);
    // Lease: the quiesced group's first read takes a round (it wakes the group); the rest ride on the
    // awake group's tick heartbeats.
    expect(lease.rounds).toBeLessThanOrEqual(2);
    expect(lease.leaseReads).toBeGreaterThanOrEqual(READS - 2);
    expect(lease.perRead).toBeLessThan(1);
    console.log(`messages per linearizable get: lease ${lease.perRead.toFixed(2)}, safe ${safe.perRead.toFixed(2)}`);
  }, 60_000);

  it('an isolated leader stops answering linearizable gets once its lease ran out, before a new leader can exist', async () => {
    const { scheduler, network, cluster: sim } = await cluster('lease');
    const leader = leaderOf(sim);
    expect((await settle(scheduler, leader.api.put({ key: 'k', value: Buffer.from('v1') }, context(sim, leader.node)))).error).toBeUndefined();
    // Keep the group awake and the lease fresh, then cut the leader off both ways.
    for (let i = 0; i < 5; i++) expect((await settle(scheduler, leader.api.get({ key: 'k' }, context(sim, leader.node)))).error).toBeUndefined();
    const isolatedAt = scheduler.now;
    for (const peer of NODES.filter((id) => id !== leader.node)) {
      network.block(leader.node, peer);
      network.block(peer, leader.node);
    }
    // Within the lease the isolated leader still answers, from its own state, without a message.
    const early = await settle(scheduler, leader.api.get({ key: 'k' }, context(sim, leader.node)));
    expect(early.error).toBeUndefined();
    const leaseMs = leaseDurationMs(ELECTION_TICKS, TICK_MS);
    await scheduler.runUntil(isolatedAt + leaseMs + 1, MAX_EVENTS);
    // Invariant (read-barrier.ts): past the lease no get is answered by the lease; and the others
    // elect no new leader before that (they refuse votes for (E - 1) ticks after the last heartbeat).
    const leaseReads = leader.replica.reads.leaseReads;
    const late = leader.api.get({ key: 'k' }, context(sim, leader.node));
    late.catch(() => undefined);
    await scheduler.runUntil(scheduler.now + 50, MAX_EVENTS);
    expect(leader.replica.reads.leaseReads).toBe(leaseReads);
    for (const node of NODES.filter((id) => id !== leader.node)) {
      const replica = driverOf(sim.apiOf(node) as AtollNode).groups.get(0) as PartitionReplica;
      expect(replica.raw.role).not.toBe('leader');
    }
    network.heal();
    for (const id of NODES) await sim.apiOf(id)?.close();
  }, 60_000);
});
