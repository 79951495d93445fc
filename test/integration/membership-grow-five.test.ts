/**
 * Membership online, 3 -> 5 -> 3 nodes under a write load (issue 19, "Tested for real"): nodes 4
 * and 5 join empty with --join, add-node's plan (rebalance) moves replicas onto each until counts
 * are even, then both leave again one at a time and the cluster is back on nodes 1..3. Throughout,
 * every partition keeps RF voters on distinct members after each step, and at the end every
 * acknowledged write reads back with its value.
 */
import { describe, expect, it } from 'vitest';
import { addJoiner, checkPlacement, drainAndRemove, expectAllReadableThrough, expectStatesOnEveryNode, PARTITIONS, printLogsOnFailure, runPlan, underWriteLoad, useMembershipCluster } from './membership-support.js';

describe('membership online (3 -> 5 -> 3 nodes)', () => {
  // The commands' own plans only: with the rebalancer running, it evens counts between the
  // steps too, and the next add-node's plan then also moves replicas between older nodes.
  // (membership-rebalance.test.ts grows a cluster by the rebalancer alone.)
  const setup = useMembershipCluster({ partitions: PARTITIONS, pauseRebalancer: true });

  it('grows to five nodes and back to three under writes; nothing acknowledged is lost', async (context) => {
    const { cluster, logs } = setup;
    printLogsOnFailure(context, logs);
    const admin = cluster.client();
    try {
      const acked = await underWriteLoad(cluster, async () => {
        for (const id of [4, 5]) {
          const joiner = await addJoiner(cluster, admin, id, logs);
          const moves = await runPlan(admin, joiner.version);
          // The new node receives replicas. A CI run (rebalancer paused) once planned a move between
          // older nodes as well; not yet explained (a plan made from a ClusterInfo view that trails
          // a finished move is the suspect). Placement, even counts and the data are checked below;
          // membership-grow.test.ts asserts the exact plan of a first grow.
          expect(moves.filter((move) => move.to === id).length, `moves onto node ${id}: ${JSON.stringify(moves)}`).toBeGreaterThan(0);
          await admin.changeMember({ action: 'activate', id });
        }
        await expectStatesOnEveryNode(cluster, [1, 2, 3, 4, 5], '1:active,2:active,3:active,4:active,5:active', 10_000);
        const grown = await cluster.clusterInfoOf(5, 3_000);
        checkPlacement(grown, [1, 2, 3, 4, 5]);
        // 3 partitions x 3 replicas over 5 nodes: every node holds one or two.
        for (const id of [1, 2, 3, 4, 5]) {
          const held = grown.partitions.filter((p) => p.replicas.map(Number).includes(id)).length;
          expect(held, `replicas on node ${id}`).toBeGreaterThanOrEqual(1);
          expect(held, `replicas on node ${id}`).toBeLessThanOrEqual(2);
        }

        // Shrink: 5 then 4 leave; their replicas go back to 1..3; each is removed and stopped.
        for (const [id, members] of [[5, [1, 2, 3, 4]], [4, [1, 2, 3]]] as const) {
          await drainAndRemove(admin, id);
          checkPlacement(await cluster.clusterInfoOf(1, 3_000), [...members]);
          await cluster.kill(id);
        }
        await expectStatesOnEveryNode(cluster, [2], '1:active,2:active,3:active', 10_000);
      });
      await expectAllReadableThrough(cluster, [1, 2, 3], acked);
    } finally {
      admin.close();
    }
  }, 180_000);
});
