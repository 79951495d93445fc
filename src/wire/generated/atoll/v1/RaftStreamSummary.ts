// Original file: proto/atoll/v1/cluster.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Internal. Sent when a Raft stream ends.
 */
export interface RaftStreamSummary {
  /**
   * How many frames the receiver accepted.
   */
  'frames'?: (number | string | Long);
}

/**
 * Internal. Sent when a Raft stream ends.
 */
export interface RaftStreamSummary__Output {
  /**
   * How many frames the receiver accepted.
   */
  'frames': (string);
}
