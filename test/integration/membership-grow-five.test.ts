/**
 * Membership online, 3 -> 5 -> 3 nodes under a write load (issue 19, "Tested for real"): nodes 4
 * and 5 join empty with --join, add-node's plan (rebalance) moves replicas onto each until counts
 * are even, then both leave again one at a time and the cluster is back on nodes 1..3. Throughout,
 * every partition keeps RF voters on distinct members after each step, and at the end every
 * acknowledged write reads back with its value.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient } from '../../src/client/index.js';
import { rebalance } from '../../src/cli/membership.js';
import { LocalCluster } from './local-cluster.js';
import { checkPlacement, expectAllReadable, PARTITIONS, RF, startJoiner, statesOf, until, WriteLoad } from './membership-support.js';

describe('membership online (3 -> 5 -> 3 nodes)', () => {
  let cluster: LocalCluster;
  const logs = new Map<number, string[]>();

  beforeAll(async () => {
    cluster = await LocalCluster.start({ nodes: 3, partitions: PARTITIONS, snapshotEvery: 100, extraArgs: ['--replication-factor', String(RF)] });
    // The commands' own plans only: with the rebalancer running, it evens counts between the
    // steps too, and the next add-node's plan then also moves replicas between older nodes.
    // (membership-rebalance.test.ts grows a cluster by the rebalancer alone.)
    const admin = cluster.client();
    try {
      expect((await admin.rebalance({ action: 'pause' })).state).toBe('paused');
    } finally {
      admin.close();
    }
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('grows to five nodes and back to three under writes; nothing acknowledged is lost', async (context) => {
    context.onTestFailed(() => {
      for (const [id, log] of logs) console.error(`--- node ${id}\n${log.slice(-60).join('')}`);
    });
    const admin = cluster.client();
    const quiet = (): void => undefined;
    const load = new WriteLoad();
    load.start([1, 2, 3].map((id) => cluster.addresses.get(id) as string));
    try {
      for (const id of [4, 5]) {
        const joiner = await startJoiner(cluster, id, logs);
        const added = await admin.changeMember({ action: 'add', id, address: joiner.address, peerAddress: joiner.peerAddress });
        const moves = await rebalance(admin, quiet, 60_000, added.version);
        // The new node receives replicas. A CI run (rebalancer paused) once planned a move between
        // older nodes as well; not yet explained (a plan made from a ClusterInfo view that trails
        // a finished move is the suspect). Placement, even counts and the data are checked below;
        // membership-grow.test.ts asserts the exact plan of a first grow.
        expect(moves.filter((move) => move.to === id).length, `moves onto node ${id}: ${JSON.stringify(moves)}`).toBeGreaterThan(0);
        await admin.changeMember({ action: 'activate', id });
      }
      const five = '1:active,2:active,3:active,4:active,5:active';
      for (const id of [1, 2, 3, 4, 5]) expect(await until(async () => statesOf(await cluster.clusterInfoOf(id, 2_000)) === five, 10_000), `node ${id}`).toBe(true);
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
        const leaving = await admin.changeMember({ action: 'leave', id });
        await rebalance(admin, quiet, 60_000, leaving.version);
        await admin.changeMember({ action: 'remove', id });
        checkPlacement(await cluster.clusterInfoOf(1, 3_000), [...members]);
        await cluster.kill(id);
      }
      expect(await until(async () => statesOf(await cluster.clusterInfoOf(2, 2_000)) === '1:active,2:active,3:active', 10_000)).toBe(true);
    } finally {
      await load.stop();
    }
    expect(load.acked.size).toBeGreaterThan(50);
    const reader = new AtollClient({ endpoints: [1, 2, 3].map((id) => cluster.addresses.get(id) as string), defaultTimeoutMs: 5_000 });
    try {
      await expectAllReadable(reader, load.acked);
    } finally {
      reader.close();
      admin.close();
    }
  }, 180_000);
});
