// Original file: proto/atoll/v1/cluster.proto

import type { NodeInfo as _atoll_v1_NodeInfo, NodeInfo__Output as _atoll_v1_NodeInfo__Output } from '../../atoll/v1/NodeInfo.js';
import type { PartitionInfo as _atoll_v1_PartitionInfo, PartitionInfo__Output as _atoll_v1_PartitionInfo__Output } from '../../atoll/v1/PartitionInfo.js';

export interface ClusterInfoResponse {
  /**
   * The id of the node that answered.
   */
  'nodeId'?: (number);
  /**
   * P, the number of partitions. partition = floor(fnv1a32(utf8(bucket)) * P / 2^32).
   */
  'partitionCount'?: (number);
  /**
   * How many replicas each partition has.
   */
  'replicationFactor'?: (number);
  /**
   * The bucket hash function's name: "fnv1a32".
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
}

export interface ClusterInfoResponse__Output {
  /**
   * The id of the node that answered.
   */
  'nodeId': (number);
  /**
   * P, the number of partitions. partition = floor(fnv1a32(utf8(bucket)) * P / 2^32).
   */
  'partitionCount': (number);
  /**
   * How many replicas each partition has.
   */
  'replicationFactor': (number);
  /**
   * The bucket hash function's name: "fnv1a32".
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
}
