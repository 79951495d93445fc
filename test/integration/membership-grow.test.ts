/**
 * Membership online on real nodes (issue 19), under a bounded write load through every node: a
 * fourth node joins empty with --join and add-node's plan moves replicas onto it until counts are
 * even; remove-node takes it back out; bad member changes are refused with stable codes and change
 * nothing; every acknowledged write is readable. (membership-replace.test.ts: a replace, a restart.)
 */
import { describe, expect, it } from 'vitest';
import type { AtollClient } from '../../src/client/index.js';
import type { AtollError } from '../../src/errors.js';
import { addJoiner, checkPlacement, drainAndRemove, expectAllReadableThrough, expectStatesOnEveryNode, PARTITIONS, printLogsOnFailure, runPlan, underWriteLoad, until, useMembershipCluster } from './membership-support.js';

describe('membership online (3 -> 4 -> 3 nodes)', () => {
  const setup = useMembershipCluster({ partitions: PARTITIONS });

  it('grows 3 -> 4 and shrinks back to 3 under writes; bad changes are refused', async (context) => {
    const { cluster, logs } = setup;
    printLogsOnFailure(context, logs);
    const admin = cluster.client();
    try {
      const acked = await underWriteLoad(cluster, async () => {
        // Grow: node 4 joins empty and receives an even share.
        const four = await addJoiner(cluster, admin, 4, logs);
        const moves = await runPlan(admin, four.version);
        expect(moves.length).toBe(2); // 3 partitions x 3 replicas over 4 nodes: 3,2,2,2
        expect(moves.every((move) => move.to === 4)).toBe(true);
        await admin.changeMember({ action: 'activate', id: 4 });
        // Every node follows the table within about a second: one that holds a replica of its
        // partition reads its own copy, one that gave that replica to node 4 the leader's copy
        // (membership.ts; it read only every 10 s before, and CI once saw node 1 miss a 10 s bound).
        await expectStatesOnEveryNode(cluster, [1, 2, 3, 4], '1:active,2:active,3:active,4:active', 16_000);
        // The joined node records its admin address in its member entry (nobody's --admin-addresses
        // names it), so `atoll cluster status` shows it on every node.
        const adminOfFour = async (id: number): Promise<string | undefined> => (await cluster.clusterInfoOf(id, 2_000)).nodes.find((node) => Number(node.id) === 4)?.adminAddress;
        for (const id of [1, 4]) expect(await until(async () => (await adminOfFour(id)) === four.adminAddress, 16_000), `node ${id} lists node 4's admin address`).toBe(true);
        const grown = await cluster.clusterInfoOf(4, 3_000);
        checkPlacement(grown, [1, 2, 3, 4]);
        expect(grown.partitions.filter((p) => p.replicas.map(Number).includes(4))).toHaveLength(2);

        // Bad input: refused with stable codes, nothing changed.
        const code = (request: Parameters<AtollClient['changeMember']>[0]): Promise<string> =>
          admin.changeMember(request).then(
            () => 'ok',
            (error: AtollError) => `${error.code}:${String(error.details?.['reason'] ?? '')}`,
          );
        expect(await code({ action: 'add', id: 2, address: '127.0.0.1:1' })).toBe('MEMBERSHIP_REFUSED:duplicate-id');
        expect(await code({ action: 'add', id: 9, address: four.address })).toBe('MEMBERSHIP_REFUSED:address-in-use');
        expect(await code({ action: 'remove', id: 42 })).toBe('MEMBERSHIP_REFUSED:unknown-id');

        // Shrink: node 4 leaves; its replicas go back; it is removed and its id is spent.
        await drainAndRemove(admin, 4);
        checkPlacement(await cluster.clusterInfoOf(1, 3_000), [1, 2, 3]);
        await cluster.kill(4);
        expect(await code({ action: 'add', id: 4, address: '127.0.0.1:2' })).toBe('MEMBERSHIP_REFUSED:id-removed');
        // Three active members with RF 3: none may leave.
        expect(await code({ action: 'leave', id: 1 })).toBe('MEMBERSHIP_REFUSED:too-few-members');
      });
      await expectAllReadableThrough(cluster, [1, 2, 3], acked);
    } finally {
      admin.close();
    }
  }, 120_000);
});
