/**
 * Cluster.TransferLeader at the node: one job, ask this node's replica of a partition (its leader)
 * to hand leadership to another replica. Moved out of atoll-node.ts, which only wires rooms.
 */
import { AtollError } from '../../errors.js';
import type * as api from '../../api/node-api.js';
import type { PartitionReplica } from '../replica/partition-replica.js';
import type { RaftDriver } from '../replica/raft-driver.js';

export function transferLeader(
  options: { id: number; driver: RaftDriver<PartitionReplica>; peers: ReadonlyMap<number, string>; notLeader: (partition: number, leader: number, why: string) => AtollError },
  request: api.TransferLeaderRequest,
): Promise<void> {
  const { id, driver, peers, notLeader } = options;
  const replica = driver.groups.get(request.partition);
  if (!replica) throw new AtollError('INVALID_ARGUMENT', `partition ${request.partition} has no replica on node ${id}`);
  if (!peers.has(request.targetNode)) throw new AtollError('INVALID_ARGUMENT', `no node ${request.targetNode}`);
  return new Promise<void>((resolve, reject) => {
    driver.enqueue(() => {
      const status = replica.raw.status();
      if (status.role !== 'leader') {
        reject(notLeader(request.partition, status.lead, 'only the leader can transfer leadership'));
        return;
      }
      try {
        if (request.targetNode !== id) replica.raw.transferLeadership(request.targetNode);
        resolve();
      } catch (error) {
        reject(new AtollError('INVALID_ARGUMENT', error instanceof Error ? error.message : String(error)));
      }
    });
  });
}
