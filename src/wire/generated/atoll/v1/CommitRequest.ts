// Original file: proto/atoll/v1/kv.proto

import type { TxnWrite as _atoll_v1_TxnWrite, TxnWrite__Output as _atoll_v1_TxnWrite__Output } from '../../atoll/v1/TxnWrite.js';

export interface CommitRequest {
  /**
   * BeginTransaction's handle. Required.
   */
  'transaction'?: (string);
  /**
   * At most one write per key.
   */
  'writes'?: (_atoll_v1_TxnWrite)[];
  /**
   * Keys and raw key prefixes the transaction read (checked under SERIALIZABLE).
   */
  'readKeys'?: (string)[];
  'readPrefixes'?: (string)[];
  /**
   * Idempotency key: a retry with the same id returns the first attempt's result.
   * Timestamped ids expire as for Put (REQUEST_ID_EXPIRED; docs/api.md).
   */
  'requestId'?: (string);
  '_requestId'?: "requestId";
}

export interface CommitRequest__Output {
  /**
   * BeginTransaction's handle. Required.
   */
  'transaction': (string);
  /**
   * At most one write per key.
   */
  'writes': (_atoll_v1_TxnWrite__Output)[];
  /**
   * Keys and raw key prefixes the transaction read (checked under SERIALIZABLE).
   */
  'readKeys': (string)[];
  'readPrefixes': (string)[];
  /**
   * Idempotency key: a retry with the same id returns the first attempt's result.
   * Timestamped ids expire as for Put (REQUEST_ID_EXPIRED; docs/api.md).
   */
  'requestId'?: (string);
  '_requestId'?: "requestId";
}
