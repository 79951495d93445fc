/**
 * The node's rebalancer on real nodes (issue 19): a fourth node is added and activated empty, and
 * the rebalancer (not the CLI loop) moves replicas onto it and evens leaders. Paused, it starts no
 * move (counted while paused); resumed, it finishes: every node within one of the mean in replicas
 * and in leaders. Then the node is removed and shuts itself down with exit code 4.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterInfoMessage } from './local-cluster.js';
import { addJoiner, checkPlacement, drainAndRemove, printLogsOnFailure, until, useMembershipCluster } from './membership-support.js';

const PARTITIONS = 6;

function perNode(info: ClusterInfoMessage, nodes: number[]): { replicas: number[]; leaders: number[] } {
  return {
    replicas: nodes.map((node) => info.partitions.filter((partition) => partition.replicas.map(Number).includes(node)).length),
    leaders: nodes.map((node) => info.partitions.filter((partition) => Number(partition.leader) === node).length),
  };
}

function withinOneOfMean(values: number[]): boolean {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  return values.every((value) => Math.abs(value - mean) <= 1);
}

describe('the rebalancer (3 -> 4 nodes)', () => {
  const setup = useMembershipCluster({ partitions: PARTITIONS });

  it('evens replicas and leaders over a new node; pause stops new moves, resume finishes; a removed node exits', async (context) => {
    const { cluster, logs } = setup;
    printLogsOnFailure(context, logs, 40);
    const admin = cluster.client();
    try {
      // Paused before node 4 becomes active: the rebalancer must not touch it yet.
      expect((await admin.rebalance({ action: 'pause' })).state).toBe('paused');
      await addJoiner(cluster, admin, 4, logs);
      // Activated only once it joined (a joiner that finds itself active already refuses to start empty).
      expect(await until(async () => (await cluster.clusterInfoOf(4, 1_000)).nodes.length === 4, 30_000)).toBe(true);
      await admin.changeMember({ action: 'activate', id: 4 });
      // Count moves while paused: node 4 receives no replica, no move is assigned.
      const pausedUntil = Date.now() + 6_000;
      while (Date.now() < pausedUntil) {
        const info = await cluster.clusterInfoOf(1, 3_000);
        expect(perNode(info, [4]).replicas[0], 'a replica moved while the rebalancer was paused').toBe(0);
        const status = await admin.rebalance({ action: 'status' });
        expect(status).toMatchObject({ state: 'paused', paused: true, moves: [] });
        await new Promise((resolve) => setTimeout(resolve, 500));
      }

      // Resumed: the rebalancer evens replicas, then leaders, and goes idle.
      expect((await admin.rebalance({ action: 'resume' })).paused).toBe(false);
      let last = '';
      const even = await until(async () => {
        const info = await cluster.clusterInfoOf(4, 3_000);
        const counts = perNode(info, [1, 2, 3, 4]);
        const status = await admin.rebalance({ action: 'status' });
        last = `${JSON.stringify(counts)} ${status.state}`;
        return status.state === 'idle' && withinOneOfMean(counts.replicas) && withinOneOfMean(counts.leaders) && counts.leaders.reduce((a, b) => a + b) === PARTITIONS;
      }, 45_000);
      expect(even, last).toBe(true);
      // The status names the leader planned for every partition, and leadership follows the plan.
      let plan = '';
      const followed = await until(async () => {
        const { plannedLeaders } = await admin.rebalance({ action: 'status' });
        const info = await cluster.clusterInfoOf(4, 3_000);
        plan = `${JSON.stringify(plannedLeaders)} leaders ${JSON.stringify(info.partitions.map((p) => [p.id, Number(p.leader)]))}`;
        return plannedLeaders.length === PARTITIONS && plannedLeaders.every(({ partition, node }) => Number(info.partitions.find((p) => p.id === partition)?.leader) === node);
      }, 15_000);
      expect(followed, plan).toBe(true);
      checkPlacement(await cluster.clusterInfoOf(1, 3_000), [1, 2, 3, 4]);
      const data = await admin.put('after/rebalance', 'ok');
      expect(data.revision).toBeGreaterThan(0);

      // Removed: node 4 drains (the CLI's plan), is removed, learns it, and exits with code 4.
      const exited = new Promise<number | null>((resolve) => cluster.processes.get(4)?.once('exit', (code) => resolve(code)));
      await drainAndRemove(admin, 4);
      const code = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve('still running'), 30_000))]);
      expect(code).toBe(4);
      expect(logs.get(4)?.join('')).toContain('this node was removed from the cluster');
    } finally {
      admin.close();
    }
  }, 150_000);
});
