// Original file: proto/atoll/v1/cluster.proto

import type { KeyLoad as _atoll_v1_KeyLoad, KeyLoad__Output as _atoll_v1_KeyLoad__Output } from '../../atoll/v1/KeyLoad.js';
import type { Long } from '@grpc/proto-loader';

/**
 * One partition: a Raft group owning a contiguous range of the bucket hash space.
 */
export interface PartitionInfo {
  /**
   * The partition's id, 0 .. partition_count - 1.
   */
  'id'?: (number);
  /**
   * The first bucket hash the partition owns.
   */
  'rangeStart'?: (number | string | Long);
  /**
   * The first bucket hash past the partition's range (exclusive; 2^32 for the last partition).
   */
  'rangeEnd'?: (number | string | Long);
  /**
   * The ids of the nodes that replicate the partition.
   */
  'replicas'?: (number)[];
  /**
   * The id of the node the answering node believes leads the partition; 0 when none is known.
   */
  'leader'?: (number);
  /**
   * The Raft term the answering node knows for the partition.
   */
  'term'?: (number | string | Long);
  /**
   * The answering node's commit index for the partition (0 when it is not a replica).
   */
  'commitIndex'?: (number | string | Long);
  /**
   * The answering node's applied index for the partition (0 when it is not a replica).
   */
  'appliedIndex'?: (number | string | Long);
  /**
   * The partition's MVCC revision on the answering node (0 when it is not a replica).
   */
  'revision'?: (number | string | Long);
  /**
   * Requests per second the answering node served for the partition: every request while it
   * leads, and the stale and transaction reads it answered locally as a replica. An exponentially
   * decayed rate (a request counts half after 5 s). Sum it over the nodes for the partition's load.
   */
  'requestsPerSecond'?: (number | string);
  /**
   * The partition's hottest keys among those requests, hottest first: at most 8 per partition and
   * 1,024 per response (the hottest partitions first). Approximate: see KeyLoad.
   */
  'topKeys'?: (_atoll_v1_KeyLoad)[];
  /**
   * The learners (non-voting replicas catching up for a move) of the partition's configuration as
   * the answering node applied it; empty where it hosts no replica. Meaningful only with
   * learners_reported.
   */
  'learners'?: (number)[];
  /**
   * True when the answering node reports learners (servers before this field do not).
   */
  'learnersReported'?: (boolean);
}

/**
 * One partition: a Raft group owning a contiguous range of the bucket hash space.
 */
export interface PartitionInfo__Output {
  /**
   * The partition's id, 0 .. partition_count - 1.
   */
  'id': (number);
  /**
   * The first bucket hash the partition owns.
   */
  'rangeStart': (string);
  /**
   * The first bucket hash past the partition's range (exclusive; 2^32 for the last partition).
   */
  'rangeEnd': (string);
  /**
   * The ids of the nodes that replicate the partition.
   */
  'replicas': (number)[];
  /**
   * The id of the node the answering node believes leads the partition; 0 when none is known.
   */
  'leader': (number);
  /**
   * The Raft term the answering node knows for the partition.
   */
  'term': (string);
  /**
   * The answering node's commit index for the partition (0 when it is not a replica).
   */
  'commitIndex': (string);
  /**
   * The answering node's applied index for the partition (0 when it is not a replica).
   */
  'appliedIndex': (string);
  /**
   * The partition's MVCC revision on the answering node (0 when it is not a replica).
   */
  'revision': (string);
  /**
   * Requests per second the answering node served for the partition: every request while it
   * leads, and the stale and transaction reads it answered locally as a replica. An exponentially
   * decayed rate (a request counts half after 5 s). Sum it over the nodes for the partition's load.
   */
  'requestsPerSecond': (number);
  /**
   * The partition's hottest keys among those requests, hottest first: at most 8 per partition and
   * 1,024 per response (the hottest partitions first). Approximate: see KeyLoad.
   */
  'topKeys': (_atoll_v1_KeyLoad__Output)[];
  /**
   * The learners (non-voting replicas catching up for a move) of the partition's configuration as
   * the answering node applied it; empty where it hosts no replica. Meaningful only with
   * learners_reported.
   */
  'learners': (number)[];
  /**
   * True when the answering node reports learners (servers before this field do not).
   */
  'learnersReported': (boolean);
}
