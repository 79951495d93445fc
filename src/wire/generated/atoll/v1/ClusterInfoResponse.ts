// Original file: proto/atoll/v1/cluster.proto

import type { NodeInfo as _atoll_v1_NodeInfo, NodeInfo__Output as _atoll_v1_NodeInfo__Output } from '../../atoll/v1/NodeInfo.js';
import type { PartitionInfo as _atoll_v1_PartitionInfo, PartitionInfo__Output as _atoll_v1_PartitionInfo__Output } from '../../atoll/v1/PartitionInfo.js';
import type { MergedStart as _atoll_v1_MergedStart, MergedStart__Output as _atoll_v1_MergedStart__Output } from '../../atoll/v1/MergedStart.js';
import type { Long } from '@grpc/proto-loader';

export interface ClusterInfoResponse {
  /**
   * The id of the node that answered.
   */
  'nodeId'?: (number);
  /**
   * P, the number of partitions. partition = floor(hash(utf8(bucket)) * P / 2^32), with the hash
   * hash_function names.
   */
  'partitionCount'?: (number);
  /**
   * How many replicas each partition has.
   */
  'replicationFactor'?: (number);
  /**
   * The bucket hash function's name: "murmur3_32" (MurmurHash3 x86_32, seed 0; clusters created
   * since cluster descriptors) or "fnv1a32" (32-bit FNV-1a; older clusters keep it). Clients route
   * by it and must refuse a name they do not know. Empty from no server of this version.
   */
  'hashFunction'?: (string);
  /**
   * Every node in the cluster.
   */
  'nodes'?: (_atoll_v1_NodeInfo)[];
  /**
   * Every partition, in id order.
   */
  'partitions'?: (_atoll_v1_PartitionInfo)[];
  /**
   * The cluster's id from its descriptor (32 hex digits); the same on every node of one cluster.
   * Empty from servers older than cluster descriptors.
   */
  'clusterId'?: (string);
  /**
   * The version of the member table the answering node follows (0: the founding members).
   */
  'memberTableVersion'?: (number | string | Long);
  /**
   * Range starts merged away (MergePartition) that the answering node knows: each was a split
   * partition's id and start, and is never a partition again. `partitions` does not list them.
   */
  'mergedStarts'?: (_atoll_v1_MergedStart)[];
  /**
   * The tenant of the caller's token, when it has one other than the default tenant: a tenant's
   * keys are stored and routed as (tenant, key), so a client hashes the bucket with this tenant's
   * tag (docs/api.md, "Routing") to send each request to its partition's leader. Empty for
   * callers without a token, the default tenant, and from servers older than this field.
   */
  'callerTenant'?: (string);
}

export interface ClusterInfoResponse__Output {
  /**
   * The id of the node that answered.
   */
  'nodeId': (number);
  /**
   * P, the number of partitions. partition = floor(hash(utf8(bucket)) * P / 2^32), with the hash
   * hash_function names.
   */
  'partitionCount': (number);
  /**
   * How many replicas each partition has.
   */
  'replicationFactor': (number);
  /**
   * The bucket hash function's name: "murmur3_32" (MurmurHash3 x86_32, seed 0; clusters created
   * since cluster descriptors) or "fnv1a32" (32-bit FNV-1a; older clusters keep it). Clients route
   * by it and must refuse a name they do not know. Empty from no server of this version.
   */
  'hashFunction': (string);
  /**
   * Every node in the cluster.
   */
  'nodes': (_atoll_v1_NodeInfo__Output)[];
  /**
   * Every partition, in id order.
   */
  'partitions': (_atoll_v1_PartitionInfo__Output)[];
  /**
   * The cluster's id from its descriptor (32 hex digits); the same on every node of one cluster.
   * Empty from servers older than cluster descriptors.
   */
  'clusterId': (string);
  /**
   * The version of the member table the answering node follows (0: the founding members).
   */
  'memberTableVersion': (string);
  /**
   * Range starts merged away (MergePartition) that the answering node knows: each was a split
   * partition's id and start, and is never a partition again. `partitions` does not list them.
   */
  'mergedStarts': (_atoll_v1_MergedStart__Output)[];
  /**
   * The tenant of the caller's token, when it has one other than the default tenant: a tenant's
   * keys are stored and routed as (tenant, key), so a client hashes the bucket with this tenant's
   * tag (docs/api.md, "Routing") to send each request to its partition's leader. Empty for
   * callers without a token, the default tenant, and from servers older than this field.
   */
  'callerTenant': (string);
}
