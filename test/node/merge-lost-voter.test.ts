/**
 * A merge whose right side R lost a voter for good (seed 202 of the fault suite with --membership):
 * the membership nemesis wiped node 1's disk and never started it again (a replace), and the split
 * nemesis then froze R for a merge back into L, a split of L it had made earlier. The freeze
 * committed on the two live voters, but the admin waits until EVERY voter of R stores the freeze
 * (merge-admin.ts awaitVotersAt), so the merge, and every retry of it by the frozen partition's
 * leader (stranded-freezes.ts), ended with "partition R is frozen at index F, but nodes 1 have not
 * stored it yet". The only way out, moving R's and L's replica off the lost node, was refused
 * while R was frozen ("its replicas cannot move"), so the replace's rebalance stopped at R and the
 * membership change never finished: a deadlock between the freeze and the move.
 *
 * And once that refusal was gone, the move of R was refused as "no partition R": a node's routing
 * table forgets a frozen R's start as soon as it meets the freeze (a PARTITION_MOVED naming L).
 *
 * Now a frozen R and its L move like any partition; the merge waits (refused, changing nothing)
 * while their voters differ or a move is half done, and applies once both have the same voters,
 * each of which stored R's log through the freeze. Whole-node simulator, virtual time, 4 nodes.
 */
import { describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { answer, groupsOf, mergeStep, simNodeCluster, splitAmong, startAllLed } from './sim-node-cluster.js';

const NODES = [1, 2, 3, 4];
const PARTITIONS = 4;
const MAX_EVENTS = 5_000_000;

describe('a merge whose right side lost a voter for good', () => {
  it('finishes once R and L moved their replica off the lost node (moves of a frozen partition are allowed)', { timeout: 120_000 }, async () => {
    const sim = simNodeCluster({ seed: 11, nodes: NODES, partitions: PARTITIONS, tickMs: 50, traceLines: 400 });
    const { scheduler, cluster } = sim;
    await startAllLed(sim, NODES, 20_000, MAX_EVENTS);
    const live = (): number[] => NODES.filter((id) => cluster.isUp(id));
    const leaderOf = (partition: number): number | undefined => live().find((id) => groupsOf(cluster.apiOf(id)).get(partition)?.raw.status().role === 'leader');
    const left = 0;
    const hosts = NODES.filter((id) => groupsOf(cluster.apiOf(id)).has(left));
    const spare = NODES.find((id) => !hosts.includes(id))!;
    expect(hosts).toHaveLength(3);

    // L splits: R is the new partition, on L's three nodes.
    const right = await splitAmong(sim, live(), left, hosts, MAX_EVENTS);
    expect(right).toBeDefined();
    const r = right!;

    // A voter of both that leads neither loses its disk for good (a replace's victim).
    const victim = hosts.find((id) => id !== leaderOf(left) && id !== leaderOf(r))!;
    cluster.retire(victim, 'its disk is lost');

    // The merge freezes R; it cannot finish: the lost voter never stores the freeze.
    let frozenError: unknown;
    for (let attempt = 0; attempt < 20 && groupsOf(cluster.apiOf(leaderOf(r) ?? hosts[0]!)).get(r)?.mvcc.frozen === undefined; attempt++) {
      const step = await mergeStep(sim, live(), left, r, 3_000, MAX_EVENTS);
      if (step !== undefined) frozenError = step.error;
    }
    expect(String(frozenError)).toContain('have not stored it yet');
    const survivors = hosts.filter((id) => id !== victim);
    await scheduler.runUntil(scheduler.now + 5_000, MAX_EVENTS, () => survivors.every((id) => groupsOf(cluster.apiOf(id)).get(r)?.mvcc.frozen?.into === left));
    expect(survivors.every((id) => groupsOf(cluster.apiOf(id)).get(r)?.mvcc.frozen?.into === left)).toBe(true);

    // Every node met the freeze (a request routed to R answered PARTITION_MOVED with mergedInto):
    // its routing table forgot R's start, as the fault suite's nodes had. A move of R must still
    // find R (hosted at its leader; a known merged-away start at the target).
    for (const id of live()) (cluster.apiOf(id) as unknown as { router: { ranges: { forget(start: number, into: number): void } } }).router.ranges.forget(r, left);

    // The replace's rebalance: R's and L's replica move from the lost node to the spare one.
    for (const partition of [r, left]) {
      let moved = false;
      let last: unknown;
      for (let attempt = 0; attempt < 20 && !moved; attempt++) {
        const leader = leaderOf(partition);
        if (leader === undefined) {
          await scheduler.runUntil(scheduler.now + 500, MAX_EVENTS);
          continue;
        }
        const result = await answer(sim, leader, 8_000, (api, deadlineMs) => api.moveReplica({ partition, fromNode: victim, toNode: spare }, { deadlineMs }));
        moved = result.error === undefined;
        last = result.error;
        // The old node refused every step of it: a frozen partition's replicas could not move
        // (MERGE_REFUSED), and a partition whose start the routing table forgot was "no partition".
        if (isAtollError(last) && (last.code === 'MERGE_REFUSED' || last.code === 'INVALID_ARGUMENT')) break;
      }
      expect(moved, `moving partition ${partition} off node ${victim}: ${String(last)}`).toBe(true);
    }

    // Nobody runs the merge again: the frozen partition's leader finishes it (stranded-freezes.ts).
    const members = [...survivors, spare];
    const merged = await scheduler.runUntil(scheduler.now + 60_000, MAX_EVENTS, () => members.every((id) => !groupsOf(cluster.apiOf(id)).has(r) && groupsOf(cluster.apiOf(id)).get(left)?.mvcc.mergedInto === undefined && groupsOf(cluster.apiOf(id)).get(left)?.mvcc.hashRange?.start === 0 && (groupsOf(cluster.apiOf(id)).get(left)?.mvcc.hashRange?.end ?? 0) > r));
    expect(merged).toBe(true);
    expect(members.every((id) => !groupsOf(cluster.apiOf(id)).has(r)), sim.trace.toString()).toBe(true);
    expect(cluster.failures).toEqual([]);
  });
});
