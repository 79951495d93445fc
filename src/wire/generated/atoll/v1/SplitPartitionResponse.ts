// Original file: proto/atoll/v1/cluster.proto

import type { Long } from '@grpc/proto-loader';

export interface SplitPartitionResponse {
  /**
   * The partition that was split; it keeps [range_start, split_hash).
   */
  'partition'?: (number);
  /**
   * The new partition; it owns [split_hash, range_end).
   */
  'newPartition'?: (number);
  'rangeStart'?: (number | string | Long);
  'splitHash'?: (number | string | Long);
  'rangeEnd'?: (number | string | Long);
}

export interface SplitPartitionResponse__Output {
  /**
   * The partition that was split; it keeps [range_start, split_hash).
   */
  'partition': (number);
  /**
   * The new partition; it owns [split_hash, range_end).
   */
  'newPartition': (number);
  'rangeStart': (string);
  'splitHash': (string);
  'rangeEnd': (string);
}
