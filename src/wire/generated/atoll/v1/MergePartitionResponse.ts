// Original file: proto/atoll/v1/cluster.proto

import type { Long } from '@grpc/proto-loader';

export interface MergePartitionResponse {
  /**
   * The partition that remains; it owns [range_start, range_end).
   */
  'partition'?: (number);
  /**
   * The partition merged away.
   */
  'mergedPartition'?: (number);
  'rangeStart'?: (number | string | Long);
  'rangeEnd'?: (number | string | Long);
}

export interface MergePartitionResponse__Output {
  /**
   * The partition that remains; it owns [range_start, range_end).
   */
  'partition': (number);
  /**
   * The partition merged away.
   */
  'mergedPartition': (number);
  'rangeStart': (string);
  'rangeEnd': (string);
}
