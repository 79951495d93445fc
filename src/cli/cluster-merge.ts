/**
 * `atoll cluster merge L`: joins partition L with its right neighbour (Cluster.MergePartition,
 * src/node/cluster/merge-admin.ts). L's leader must also lead the neighbour; when it does not (MERGE_REFUSED
 * 'leaders-differ'), the command asks the neighbour's leader to hand leadership to L's leader and
 * tries again, a bounded number of times (the nodes' leader balancing may move it back meanwhile).
 */
import type { AtollClient } from '../client/index.js';
import type { MergePartitionResult } from '../api/node-api.js';
import { isAtollError } from '../errors.js';

/** Leadership transfers the command asks for before it gives up. */
const MAX_TRANSFERS = 20;
/**
 * How long a transfer is given before the merge is tried again: an election takes a few ticks,
 * and the nodes' leader balancing (maintenance.ts, once a second) may move the leadership back
 * to its preferred node, so the merge is tried again soon after the transfer.
 */
const TRANSFER_SETTLE_MS = 150;

export async function mergeWithLeaderTransfer(client: AtollClient, partition: number, timeoutMs: number, log: (line: string) => void = () => undefined): Promise<MergePartitionResult> {
  for (let transfers = 0; ; transfers++) {
    try {
      return await client.mergePartition(partition, { timeoutMs });
    } catch (error) {
      // A leader change inside the merge (R's while the admin waits for its voters, L's under the
      // merge entry) means the merge entry did not apply (a waiter is refused only when another
      // entry took its index): run it again, it continues from R's freeze. A deadline may hide an
      // applied merge, so it goes to the operator.
      if (isAtollError(error) && (error.code === 'NOT_LEADER' || error.code === 'NO_LEADER') && transfers < MAX_TRANSFERS) {
        log(`leadership moved during the merge (${error.message}); merging again`);
        await new Promise((resolve) => setTimeout(resolve, TRANSFER_SETTLE_MS));
        continue;
      }
      const details = isAtollError(error, 'MERGE_REFUSED') ? error.details : undefined;
      const right = details?.['rightPartition'];
      const leftLeader = details?.['leftLeader'];
      if (details?.['reason'] !== 'leaders-differ' || typeof right !== 'number' || typeof leftLeader !== 'number' || transfers >= MAX_TRANSFERS) throw error;
      log(`partition ${right} is led elsewhere: moving its leadership to node ${leftLeader}, then merging again`);
      // A leader change meanwhile refuses the transfer: the next merge attempt says where things are.
      await client.transferLeader(right, leftLeader, { timeoutMs }).catch((transferError: unknown) => {
        if (!isAtollError(transferError) || !['NOT_LEADER', 'NO_LEADER', 'UNAVAILABLE'].includes(transferError.code)) throw transferError;
      });
      await new Promise((resolve) => setTimeout(resolve, TRANSFER_SETTLE_MS));
    }
  }
}
