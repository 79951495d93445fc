// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface IncrementRequest {
  /**
   * The counter's key. Required. An absent key counts as 0.
   */
  'key'?: (string);
  /**
   * The amount to add (negative to subtract). The stored value must be a signed 64-bit decimal
   * integer (FAILED_PRECONDITION / NOT_INTEGER otherwise) and the sum must stay in the 64-bit
   * range (OUT_OF_RANGE / OVERFLOW otherwise).
   */
  'delta'?: (number | string | Long);
  /**
   * Give the counter a new expiry this many milliseconds from now; without it the key keeps its
   * current expiry, so a windowed counter keeps its window.
   */
  'ttlMs'?: (number | string | Long);
  /**
   * Optional idempotency key (1-64 bytes): a retry carrying the same id within the partition's
   * dedup window returns the first attempt's result instead of applying again (exactly-once).
   * A timestamped id, t1.<createdAtMs>.<nonce>, resent after the window is REQUEST_ID_EXPIRED
   * (FAILED_PRECONDITION), never applied twice; a plain id then applies again (docs/api.md).
   */
  'requestId'?: (string);
  '_ttlMs'?: "ttlMs";
  '_requestId'?: "requestId";
}

export interface IncrementRequest__Output {
  /**
   * The counter's key. Required. An absent key counts as 0.
   */
  'key': (string);
  /**
   * The amount to add (negative to subtract). The stored value must be a signed 64-bit decimal
   * integer (FAILED_PRECONDITION / NOT_INTEGER otherwise) and the sum must stay in the 64-bit
   * range (OUT_OF_RANGE / OVERFLOW otherwise).
   */
  'delta': (string);
  /**
   * Give the counter a new expiry this many milliseconds from now; without it the key keeps its
   * current expiry, so a windowed counter keeps its window.
   */
  'ttlMs'?: (string);
  /**
   * Optional idempotency key (1-64 bytes): a retry carrying the same id within the partition's
   * dedup window returns the first attempt's result instead of applying again (exactly-once).
   * A timestamped id, t1.<createdAtMs>.<nonce>, resent after the window is REQUEST_ID_EXPIRED
   * (FAILED_PRECONDITION), never applied twice; a plain id then applies again (docs/api.md).
   */
  'requestId'?: (string);
  '_ttlMs'?: "ttlMs";
  '_requestId'?: "requestId";
}
