// Original file: proto/atoll/v1/kv.proto

import type { Isolation as _atoll_v1_Isolation, Isolation__Output as _atoll_v1_Isolation__Output } from '../../atoll/v1/Isolation.js';

export interface BeginTransactionRequest {
  /**
   * A bucket name or any key in it: the transaction covers that bucket's partition. Required.
   */
  'key'?: (string);
  'isolation'?: (_atoll_v1_Isolation);
}

export interface BeginTransactionRequest__Output {
  /**
   * A bucket name or any key in it: the transaction covers that bucket's partition. Required.
   */
  'key': (string);
  'isolation': (_atoll_v1_Isolation__Output);
}
