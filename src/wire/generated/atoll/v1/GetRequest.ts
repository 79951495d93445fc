// Original file: proto/atoll/v1/kv.proto

import type { Consistency as _atoll_v1_Consistency, Consistency__Output as _atoll_v1_Consistency__Output } from '../../atoll/v1/Consistency.js';
import type { Long } from '@grpc/proto-loader';

export interface GetRequest {
  /**
   * The key to read. Required.
   */
  'key'?: (string);
  /**
   * Read the key as it was at this past revision, while the partition still retains it. Absent or
   * 0 reads the latest state. A revision that was compacted fails with OUT_OF_RANGE (COMPACTED).
   */
  'revision'?: (number | string | Long);
  /**
   * LINEARIZABLE (default) or STALE.
   */
  'consistency'?: (_atoll_v1_Consistency);
  /**
   * Read inside this transaction (BeginTransaction's handle): at its snapshot revision and clock,
   * which revision and consistency must then leave unset. A key outside the transaction's partition
   * fails with FAILED_PRECONDITION (OUTSIDE_TRANSACTION).
   */
  'transaction'?: (string);
  '_revision'?: "revision";
}

export interface GetRequest__Output {
  /**
   * The key to read. Required.
   */
  'key': (string);
  /**
   * Read the key as it was at this past revision, while the partition still retains it. Absent or
   * 0 reads the latest state. A revision that was compacted fails with OUT_OF_RANGE (COMPACTED).
   */
  'revision'?: (string);
  /**
   * LINEARIZABLE (default) or STALE.
   */
  'consistency': (_atoll_v1_Consistency__Output);
  /**
   * Read inside this transaction (BeginTransaction's handle): at its snapshot revision and clock,
   * which revision and consistency must then leave unset. A key outside the transaction's partition
   * fails with FAILED_PRECONDITION (OUTSIDE_TRANSACTION).
   */
  'transaction': (string);
  '_revision'?: "revision";
}
