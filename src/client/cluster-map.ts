/**
 * The client's picture of the cluster, from ClusterInfo: the partition table (each partition's
 * hash range; splits make it more than P equal ranges) and which bucket hash the cluster names
 * (so the client computes a key's partition itself), each
 * partition's leader, and each node's address. Leader hints from NOT_LEADER errors patch it
 * between refreshes.
 */
import { AtollError } from '../errors.js';
import { bucketOf } from '../keys/bucket.js';
import { isBucketHashName, legacyBucketHash, type BucketHashName } from '../keys/bucket-hash.js';
import { partitionOfBucket, RangeTable } from '../keys/partition-table.js';
import { defaultTenant, tenantTag } from '../keys/tenant-keys.js';
import type { ClusterInfoResponse } from '../api/node-api.js';
import type { LeaderHint } from '../wire/grpc-errors.js';
import { clientErrorOf } from './client-error.js';

export class ClusterMap {
  readonly partitionCount: number;
  /**
   * The hash the cluster routes by; undefined when it names one this client does not know (then
   * every routed call fails with CLUSTER_MISMATCH: guessing would send keys to the wrong partition).
   */
  readonly hash: BucketHashName | undefined;
  private readonly addressById = new Map<number, string>();
  /** Leader node id by partition id; 0 when unknown. Its keys are the partitions ClusterInfo listed. */
  private readonly leaders = new Map<number, number>();
  /**
   * The ranges ClusterInfo listed, when they form a valid table (RangeTable.of); else undefined
   * and keys route by the equal-table formula (a node still starting may list none).
   */
  private readonly table: RangeTable | undefined;
  /**
   * What the node puts before the caller's keys (tenant-keys.ts): a tenant's bucket is stored, and
   * hashed, as (tenant, bucket). "" for the default tenant and for servers that do not say.
   */
  private readonly tag: string;

  constructor(readonly info: ClusterInfoResponse) {
    this.partitionCount = info.partitionCount;
    // Servers always name their hash; an empty name could only come from a build before the field
    // was filled, all of which routed by FNV-1a.
    const named = info.hashFunction === '' ? legacyBucketHash : info.hashFunction;
    this.hash = isBucketHashName(named) ? named : undefined;
    for (const node of info.nodes) if (node.address !== '') this.addressById.set(node.id, node.address);
    for (const partition of info.partitions) this.leaders.set(partition.id, partition.leader);
    let table: RangeTable | undefined;
    try {
      table = RangeTable.of(info.partitions.map((partition) => ({ id: partition.id, start: partition.rangeStart, end: partition.rangeEnd })));
    } catch {
      table = undefined;
    }
    this.table = table;
    this.tag = tenantTag(info.callerTenant ?? defaultTenant);
  }

  /** Whether the answer is usable for routing (a node still starting may report no partitions). */
  get usable(): boolean {
    return this.partitionCount >= 1;
  }

  /** The partition of one of the caller's buckets (its tenant's, as the node routes it). */
  partitionOfBucket(bucket: string): number {
    const routed = this.tag + bucket;
    if (this.hash === undefined) {
      const shown = JSON.stringify(this.info.hashFunction.slice(0, 64));
      throw clientErrorOf(
        new AtollError('CLUSTER_MISMATCH', `the cluster routes keys by the bucket hash ${shown}, which this client does not know; use a newer client`, {
          hashFunction: this.info.hashFunction.slice(0, 64),
        }),
        false,
      );
    }
    return this.table !== undefined ? this.table.partitionOfBucket(routed, this.hash) : partitionOfBucket(routed, this.partitionCount, this.hash);
  }

  /** The partition of a key: its bucket's, by the cluster's hash. */
  partitionOfKey(key: string): number {
    return this.partitionOfBucket(bucketOf(key));
  }

  /** The leader's address for a partition, or undefined when no leader (or its address) is known. */
  leaderAddressOf(partition: number): string | undefined {
    const leader = this.leaders.get(partition) ?? 0;
    return leader === 0 ? undefined : this.addressById.get(leader);
  }

  /**
   * Records a leader learned from a NOT_LEADER hint, until the next refresh replaces the map. Only
   * the node id is taken: its address stays the one ClusterInfo advertised, because an address
   * that appears only in an error is not known to belong to the cluster (the client's token must
   * not go there). A node the map does not know is ignored; the refresh will name it.
   */
  learnLeader(partition: number, hint: LeaderHint): void {
    if (!this.leaders.has(partition) && (partition < 0 || partition >= this.partitionCount)) return;
    if (!this.addressById.has(hint.nodeId)) return;
    this.leaders.set(partition, hint.nodeId);
  }

  /** The address ClusterInfo advertised for a node, if any. */
  addressOf(nodeId: number): string | undefined {
    return this.addressById.get(nodeId);
  }

  /** Forgets a partition's leader (it failed), so requests go to any node until a refresh. */
  forgetLeader(partition: number): void {
    if (this.leaders.has(partition)) this.leaders.set(partition, 0);
  }

  addresses(): string[] {
    return [...new Set(this.addressById.values())];
  }
}
