/**
 * A replica move's configuration survives the loss of the leader that committed it (fault suite
 * seed 202 with --membership, found twice). Partition 5 moved its replica from node 4 to node 3
 * (voters 1,2,3); node 4 was then removed from the cluster and stopped, node 2 was restarted by a
 * fault, and node 1 (the leader that committed the move) lost its disk for good. Nodes 2 and 3 hold
 * every entry of the move, and {2,3} is a majority of the committed configuration {1,2,3}; yet the
 * partition never had a leader again. The commit index was written only with a new term or vote
 * (raft-log-store.ts lazyCommit), so node 2 came back believing in the configuration before the
 * move ({1,2,4}: two voters gone for good) and node 3 came back a learner: neither could campaign.
 *
 * Now a Ready whose committed entries hold a configuration change writes the commit index, synced,
 * before the change applies (partition-replica.ts stage): a replica that applied a configuration
 * keeps it across any crash. The test: 4 nodes in virtual time; a move off a follower; then every
 * survivor crashes (unsynced writes lost), the old replica's node is retired (removed) and the
 * leader's disk is lost; the two survivors restart and must elect a leader of the partition.
 */
import { describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { groupsOf, leaderAmong, simNodeCluster, answer, startAllLed } from './sim-node-cluster.js';

const NODES = [1, 2, 3, 4];
const PARTITIONS = 4;
const MAX_EVENTS = 5_000_000;

describe("a replica move's configuration", () => {
  it.each([5, 6, 7])('survives a crash of every surviving voter and the loss of the leader that committed it (seed %i)', { timeout: 120_000 }, async (seed) => {
    const sim = simNodeCluster({ seed, nodes: NODES, partitions: PARTITIONS, tickMs: 50, traceLines: 400 });
    const { scheduler, cluster } = sim;
    await startAllLed(sim, NODES, 20_000, MAX_EVENTS);
    const partition = 0;
    const hosts = NODES.filter((id) => groupsOf(cluster.apiOf(id)).has(partition));
    expect(hosts).toHaveLength(3);
    const spare = NODES.find((id) => !hosts.includes(id))!;
    const leader = leaderAmong(sim, NODES, partition)!;
    expect(leader).toBeDefined();
    const [from, stay] = hosts.filter((id) => id !== leader) as [number, number];

    const moved = await answer(sim, leader, 8_000, (api, deadlineMs) => api.moveReplica({ partition, fromNode: from, toNode: spare }, { deadlineMs }));
    expect(moved.error, String(moved.error)).toBeUndefined();
    const committed = [leader, stay, spare].sort((a, b) => a - b);
    // The followers learn the commit and apply the configuration (in memory).
    await scheduler.runUntil(scheduler.now + 2_000, MAX_EVENTS);
    for (const id of [stay, spare]) expect([...groupsOf(cluster.apiOf(id)).get(partition)!.raw.status().confState.voters].sort((a, b) => a - b)).toEqual(committed);

    // Both survivors crash (unsynced writes lost); the moved-off node is removed, the leader's disk lost.
    cluster.crash(stay, 'a fault');
    cluster.crash(spare, 'a fault');
    cluster.retire(from, 'removed from the cluster');
    cluster.retire(leader, 'its disk is lost');
    cluster.start(stay);
    cluster.start(spare);
    await scheduler.runUntil(scheduler.now + 20_000, MAX_EVENTS, () => leaderAmong(sim, [stay, spare], partition) !== undefined);
    const voters = (id: number): string => String([...(groupsOf(cluster.apiOf(id)).get(partition)?.raw.status().confState.voters ?? [])].sort((a, b) => a - b));
    expect(leaderAmong(sim, [stay, spare], partition), `partition ${partition} led by node ${stay} (voters ${voters(stay)}) or ${spare} (voters ${voters(spare)})`).toBeDefined();
    expect(cluster.failures).toEqual([]);
  });

  it('keeps the moved-off node from being removed while a voter that answers has not applied the move', { timeout: 120_000 }, async () => {
    const sim = simNodeCluster({ seed: 9, nodes: NODES, partitions: PARTITIONS, tickMs: 50, traceLines: 400 });
    const { scheduler, cluster, network } = sim;
    await startAllLed(sim, NODES, 20_000, MAX_EVENTS);
    const partition = 0;
    const hosts = NODES.filter((id) => groupsOf(cluster.apiOf(id)).has(partition));
    const spare = NODES.find((id) => !hosts.includes(id))!;
    const leader = leaderAmong(sim, NODES, partition)!;
    const [from, stay] = hosts.filter((id) => id !== leader) as [number, number];
    const sorted = (voters: readonly number[] | undefined): number[] => [...(voters ?? [])].sort((a, b) => a - b);
    const votersAt = (id: number): number[] => sorted(groupsOf(cluster.apiOf(id)).get(partition)?.raw.status().confState.voters);

    // The leader's frames to `stay` are lost: it never learns of the move (but answers everyone else).
    network.block(leader, stay);
    const left = await answer(sim, spare, 5_000, (api, deadlineMs) => api.changeMember({ action: 'leave', id: from }, { deadlineMs }));
    expect(left.error, String(left.error)).toBeUndefined();
    const moved = await answer(sim, leader, 8_000, (api, deadlineMs) => api.moveReplica({ partition, fromNode: from, toNode: spare }, { deadlineMs }));
    // The nodes' own rebalancer may have moved it first (the node is leaving).
    if (moved.error !== undefined) expect(isAtollError(moved.error, 'MOVE_REFUSED'), String(moved.error)).toBe(true);
    await scheduler.runUntil(scheduler.now + 10_000, MAX_EVENTS, () => !votersAt(leader).includes(from));
    expect(votersAt(leader)).not.toContain(from);
    expect(votersAt(stay)).toContain(from);

    const removal = await answer(sim, spare, 5_000, (api, deadlineMs) => api.changeMember({ action: 'remove', id: from }, { deadlineMs }));
    expect(isAtollError(removal.error, 'MEMBERSHIP_REFUSED'), String(removal.error)).toBe(true);
    const named = /partitions ([0-9, ]+)/.exec(String((removal.error as Error).message))?.[1]?.split(', ').map(Number) ?? [];
    expect(named, String(removal.error)).toContain(partition);

    // Once `stay` hears from the leader again, it applies the move and the partition no longer names the node.
    network.heal();
    await scheduler.runUntil(scheduler.now + 10_000, MAX_EVENTS, () => !votersAt(stay).includes(from));
    expect(votersAt(stay)).toEqual(votersAt(leader));
    expect(cluster.failures).toEqual([]);
  });
});
