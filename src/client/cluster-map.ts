/**
 * The client's picture of the cluster, from ClusterInfo: how many partitions there are (so the
 * client computes a key's partition itself, with the documented hash), each partition's leader,
 * and each node's address. Leader hints from NOT_LEADER errors patch it between refreshes.
 */
import { partitionOfBucket } from '../keys/partition-table.js';
import type { ClusterInfoResponse } from '../node/api.js';
import type { LeaderHint } from '../server/grpc-errors.js';

export class ClusterMap {
  readonly partitionCount: number;
  private readonly addressById = new Map<number, string>();
  /** Leader node id by partition id; 0 when unknown. */
  private readonly leaders: number[];

  constructor(readonly info: ClusterInfoResponse) {
    this.partitionCount = info.partitionCount;
    for (const node of info.nodes) if (node.address !== '') this.addressById.set(node.id, node.address);
    this.leaders = new Array<number>(info.partitionCount).fill(0);
    for (const partition of info.partitions) {
      if (partition.id < info.partitionCount) this.leaders[partition.id] = partition.leader;
    }
  }

  /** Whether the answer is usable for routing (a node still starting may report no partitions). */
  get usable(): boolean {
    return this.partitionCount >= 1;
  }

  partitionOfBucket(bucket: string): number {
    return partitionOfBucket(bucket, this.partitionCount);
  }

  /** The leader's address for a partition, or undefined when no leader (or its address) is known. */
  leaderAddressOf(partition: number): string | undefined {
    const leader = this.leaders[partition] ?? 0;
    return leader === 0 ? undefined : this.addressById.get(leader);
  }

  /**
   * Records a leader learned from a NOT_LEADER hint, until the next refresh replaces the map. Only
   * the node id is taken: its address stays the one ClusterInfo advertised, because an address
   * that appears only in an error is not known to belong to the cluster (the client's token must
   * not go there). A node the map does not know is ignored; the refresh will name it.
   */
  learnLeader(partition: number, hint: LeaderHint): void {
    if (partition < 0 || partition >= this.partitionCount) return;
    if (!this.addressById.has(hint.nodeId)) return;
    this.leaders[partition] = hint.nodeId;
  }

  /** The address ClusterInfo advertised for a node, if any. */
  addressOf(nodeId: number): string | undefined {
    return this.addressById.get(nodeId);
  }

  /** Forgets a partition's leader (it failed), so requests go to any node until a refresh. */
  forgetLeader(partition: number): void {
    if (partition >= 0 && partition < this.partitionCount) this.leaders[partition] = 0;
  }

  addresses(): string[] {
    return [...new Set(this.addressById.values())];
  }
}
