/**
 * A merge asked of a leader of L that hosts no replica of R (whole-node simulator seed 4956): the
 * nodes' rebalancer moved L's replica to a node that never hosted R (R, frozen for the merge, kept
 * its voters), and that node then led L. Its routing table did not know R's start (it never hosted
 * R, and a node that meets R's freeze forgets the start anyway), and the merge admin named R by
 * the table's owner of L's range end, which was L itself: every run answered MERGE_REFUSED
 * 'below-initial', "partition 1, right of partition 1, is one of the 2 initial partitions", so the
 * operator (the simulator's membership driver, as docs/api.md tells an operator) never learned to
 * move R's replica onto L's nodes, and R's keys stayed unavailable for good.
 *
 * Now the admin names R by L's range end through the id rule (range-routing.ts
 * partitionStartingAt): it refuses with 'replicas-differ' naming R, R's replica moves, and the
 * merge applies. Whole-node simulator, virtual time, 4 nodes.
 */
import { describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import type { AtollNode } from '../../src/node/atoll-node.js';
import type { RangeRouting } from '../../src/node/cluster/range-routing.js';
import { answer, groupsOf, leaderAmong, mergeStep, simNodeCluster, splitAmong, startAllLed } from './sim-node-cluster.js';

const NODES = [1, 2, 3, 4];
const PARTITIONS = 4;
const MAX_EVENTS = 5_000_000;

const rangesOf = (node: AtollNode | undefined): RangeRouting => (node as unknown as { router: { ranges: RangeRouting } }).router.ranges;

describe('a merge at a leader of L that hosts no replica of R', () => {
  it('names R (replicas-differ), not L as its own right neighbour, and applies once R moved there', { timeout: 120_000 }, async () => {
    const sim = simNodeCluster({ seed: 11, nodes: NODES, partitions: PARTITIONS, tickMs: 50, traceLines: 400 });
    const { scheduler, cluster } = sim;
    await startAllLed(sim, NODES, 20_000, MAX_EVENTS);
    const leaderOf = (partition: number): number | undefined => leaderAmong(sim, NODES, partition);
    const votersOf = (partition: number): number[] => [...(groupsOf(cluster.apiOf(leaderOf(partition) ?? 0)).get(partition)?.raw.status().confState.voters ?? [])].sort((a, b) => a - b);
    // The moves below are the operator's: the nodes' own rebalancer stays out of the way.
    expect((await answer(sim, leaderOf(0)!, 5_000, (api, deadlineMs) => api.rebalance({ action: 'pause' }, { deadlineMs }))).error).toBeUndefined();
    const left = 1; // an initial partition, as in the seed: its right neighbour is the split one
    const hosts = NODES.filter((id) => groupsOf(cluster.apiOf(id)).has(left));
    const spare = NODES.find((id) => !hosts.includes(id))!;
    expect(hosts).toHaveLength(3);

    /** Moves `partition`'s replica from `from` to the spare node at its leader, until the move is done (bounded). */
    const moveToSpare = async (partition: number, from: number): Promise<void> => {
      for (let attempt = 0; attempt < 20 && votersOf(partition).includes(from); attempt++) {
        const leader = leaderOf(partition);
        if (leader !== undefined) await answer(sim, leader, 8_000, (api, deadlineMs) => api.moveReplica({ partition, fromNode: from, toNode: spare }, { deadlineMs }));
        else await scheduler.runUntil(scheduler.now + 500, MAX_EVENTS);
      }
    };

    // L splits: R is the new partition, on L's three nodes.
    const right = await splitAmong(sim, NODES, left, hosts, MAX_EVENTS);
    expect(right).toBeDefined();
    const r = right!;

    // L's replica moves from one of its nodes to the spare one, R's stays: the two sides differ.
    const from = hosts[0]!;
    await moveToSpare(left, from);
    expect(votersOf(left)).toEqual(NODES.filter((id) => id !== from));
    expect(groupsOf(cluster.apiOf(spare)).has(r)).toBe(false);
    // The spare node never hosted R: its table does not know R's start (nor would it after meeting R's freeze).
    expect(rangesOf(cluster.apiOf(spare)).isKnown(r)).toBe(false);

    // The merge at L's leader, the spare node, names R and says why it cannot merge yet.
    let refusal: unknown;
    for (let attempt = 0; attempt < 20 && refusal === undefined; attempt++) {
      const leader = leaderOf(left);
      if (leader !== spare) {
        if (leader !== undefined) await answer(sim, leader, 2_000, (api, deadlineMs) => api.transferLeader({ partition: left, targetNode: spare }, { deadlineMs }));
        await scheduler.runUntil(scheduler.now + 2_000, MAX_EVENTS, () => leaderOf(left) === spare);
        continue;
      }
      const merged = await answer(sim, spare, 5_000, (api, deadlineMs) => api.mergePartition({ partition: left }, { deadlineMs }));
      if (isAtollError(merged.error) && merged.error.code === 'MERGE_REFUSED') refusal = merged.error;
    }
    expect(refusal).toMatchObject({ code: 'MERGE_REFUSED', details: { reason: 'replicas-differ', partition: left, rightPartition: r } });

    // The operator's answer to it: R's replica follows L's; the merge then applies.
    await moveToSpare(r, from);
    expect(votersOf(r)).toEqual(votersOf(left));
    let done = false;
    let last: unknown;
    for (let attempt = 0; attempt < 20 && !done; attempt++) {
      const merged = await mergeStep(sim, NODES, left, r, 10_000, MAX_EVENTS);
      if (merged === undefined) continue;
      done = merged.error === undefined;
      last = merged.error;
    }
    expect(done, `the merge after R moved: ${String(last)}`).toBe(true);
    const members = NODES.filter((id) => id !== from);
    const covered = await scheduler.runUntil(scheduler.now + 10_000, MAX_EVENTS, () => members.every((id) => !groupsOf(cluster.apiOf(id)).has(r) && (groupsOf(cluster.apiOf(id)).get(left)?.mvcc.hashRange?.end ?? 0) > r));
    expect(covered).toBe(true);
    expect(members.every((id) => (groupsOf(cluster.apiOf(id)).get(left)?.mvcc.hashRange?.end ?? 0) > r), sim.trace.toString()).toBe(true);
    expect(cluster.failures).toEqual([]);
  });
});
