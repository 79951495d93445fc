/**
 * Idle work stays proportional to activity (issue 18): on an idle cluster in the whole-node
 * simulator's virtual time, the node's periodic passes (leader balancing, retention, expiry, the
 * lease keeper's round, replica-moves' sweep and stranded check) read a few fields per group and
 * build no RawNode.status() object (a progress Map and configuration arrays, and the settling of a
 * parked group's ticks). Deterministic: counts, not CPU time.
 */
import { describe, expect, it } from 'vitest';
import { RawNode } from '../../src/raft/rawnode.js';
import { allLed, simNodeCluster, startAllLed } from './sim-node-cluster.js';

const NODES = [1, 2, 3];
const PARTITIONS = 48;
const MAX_EVENTS = 2_000_000;

describe('idle sweeps', () => {
  it('an idle, balanced cluster builds no status() object in its periodic passes', async () => {
    const sim = simNodeCluster({ seed: 18, nodes: NODES, partitions: PARTITIONS, tickMs: 50 });
    const { scheduler, cluster } = sim;
    await startAllLed(sim, NODES, 10_000, MAX_EVENTS);
    // Settle: preferred leaders take over (the balancer), every group quiesces.
    await scheduler.runUntil(scheduler.now + 10_000, MAX_EVENTS);

    const status = RawNode.prototype.status;
    let calls = 0;
    RawNode.prototype.status = function (this: RawNode) {
      calls++;
      return status.call(this);
    };
    try {
      // 10 s of virtual idle time: 10 maintenance rounds (three passes each), 100 lease rounds,
      // 50 moves sweeps and 5 stranded checks (two passes) on each node. Before this, each pass
      // built a status() per group: about 190 x 48 groups x 3 nodes, some 27,000 calls here.
      await scheduler.runUntil(scheduler.now + 10_000, MAX_EVENTS);
    } finally {
      RawNode.prototype.status = status;
    }
    expect(calls).toBe(0);
    expect(allLed(cluster, NODES)).toBe(true);
  }, 60_000);
});
