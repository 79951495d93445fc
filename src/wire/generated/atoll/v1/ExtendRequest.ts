// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface ExtendRequest {
  /**
   * The key whose expiry to set. Required.
   */
  'key'?: (string);
  /**
   * The new expiry, this many milliseconds from now. Required, at least 1.
   */
  'ttlMs'?: (number | string | Long);
  /**
   * Optional idempotency key (1-64 bytes): a retry carrying the same id within the partition's
   * dedup window returns the first attempt's result instead of applying again (exactly-once).
   * A timestamped id, t1.<createdAtMs>.<nonce>, resent after the window is REQUEST_ID_EXPIRED
   * (FAILED_PRECONDITION), never applied twice; a plain id then applies again (docs/api.md).
   */
  'requestId'?: (string);
  '_requestId'?: "requestId";
}

export interface ExtendRequest__Output {
  /**
   * The key whose expiry to set. Required.
   */
  'key': (string);
  /**
   * The new expiry, this many milliseconds from now. Required, at least 1.
   */
  'ttlMs': (string);
  /**
   * Optional idempotency key (1-64 bytes): a retry carrying the same id within the partition's
   * dedup window returns the first attempt's result instead of applying again (exactly-once).
   * A timestamped id, t1.<createdAtMs>.<nonce>, resent after the window is REQUEST_ID_EXPIRED
   * (FAILED_PRECONDITION), never applied twice; a plain id then applies again (docs/api.md).
   */
  'requestId'?: (string);
  '_requestId'?: "requestId";
}
