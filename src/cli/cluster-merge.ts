/**
 * `atoll cluster merge L`: joins partition L with its right neighbour (Cluster.MergePartition,
 * src/node/merge-admin.ts). L's leader must also lead the neighbour; when it does not (MERGE_REFUSED
 * 'leaders-differ'), the command asks the neighbour's leader to hand leadership to L's leader and
 * tries again, a bounded number of times (the rebalancer may move leadership meanwhile).
 */
import type { AtollClient } from '../client/index.js';
import type { MergePartitionResult } from '../node/merge-admin.js';
import { isAtollError } from '../errors.js';

/** Leadership transfers the command asks for before it gives up. */
const MAX_TRANSFERS = 5;
/** How long a transfer is given to settle before the merge is tried again. */
const TRANSFER_SETTLE_MS = 1_000;

export async function mergeWithLeaderTransfer(client: AtollClient, partition: number, timeoutMs: number, log: (line: string) => void = () => undefined): Promise<MergePartitionResult> {
  for (let transfers = 0; ; transfers++) {
    try {
      return await client.mergePartition(partition, { timeoutMs });
    } catch (error) {
      const details = isAtollError(error, 'MERGE_REFUSED') ? error.details : undefined;
      const right = details?.['rightPartition'];
      const leftLeader = details?.['leftLeader'];
      if (details?.['reason'] !== 'leaders-differ' || typeof right !== 'number' || typeof leftLeader !== 'number' || transfers >= MAX_TRANSFERS) throw error;
      log(`partition ${right} is led elsewhere: moving its leadership to node ${leftLeader}, then merging again`);
      await client.transferLeader(right, leftLeader, { timeoutMs });
      await new Promise((resolve) => setTimeout(resolve, TRANSFER_SETTLE_MS));
    }
  }
}
