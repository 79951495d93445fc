import assert from 'node:assert/strict';

/**
 * Where each partition's replicas start, computed the same way on every node from the node list.
 * It only seeds a new cluster: afterwards a partition's replicas are its Raft group's applied
 * configuration, which replica moves change (replica-moves.ts), and a node opens the replicas on
 * its disk (replica-store.ts). The preferred leader below counts only while it is still a voter. Node ids are sorted; partition p gets `replicationFactor` consecutive nodes starting
 * at position p mod N. So every node holds about P * RF / N replicas, and the first replica (the
 * preferred leader, which the balancer moves leadership back to) rotates: each node prefers about
 * P / N partitions.
 */
export function replicasOf(partition: number, nodeIds: readonly number[], replicationFactor: number): number[] {
  const sorted = [...nodeIds].sort((a, b) => a - b);
  assert.ok(sorted.length > 0, 'placement needs at least one node');
  assert.ok(replicationFactor >= 1 && replicationFactor <= sorted.length, `replication factor ${replicationFactor} with ${sorted.length} nodes`);
  const replicas: number[] = [];
  for (let k = 0; k < replicationFactor; k++) replicas.push(sorted[(partition + k) % sorted.length] as number);
  return replicas;
}

export function preferredLeaderOf(partition: number, nodeIds: readonly number[], replicationFactor: number): number {
  return replicasOf(partition, nodeIds, replicationFactor)[0] as number;
}
