// Original file: proto/atoll/v1/kv.proto

import type { Consistency as _atoll_v1_Consistency, Consistency__Output as _atoll_v1_Consistency__Output } from '../../atoll/v1/Consistency.js';

export interface ExistsRequest {
  /**
   * The key to test. Required.
   */
  'key'?: (string);
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
}

export interface ExistsRequest__Output {
  /**
   * The key to test. Required.
   */
  'key': (string);
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
}
