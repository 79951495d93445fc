// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface DeleteRequest {
  /**
   * The key to delete. Required.
   */
  'key'?: (string);
  /**
   * Delete only if the key's mod_revision equals this.
   */
  'ifModRevision'?: (number | string | Long);
  /**
   * Delete only if the key holds exactly these bytes.
   */
  'ifValue'?: (Buffer | Uint8Array | string);
  /**
   * Optional idempotency key (1-64 bytes): a retry carrying the same id within the partition's
   * dedup window returns the first attempt's result instead of applying again (exactly-once).
   * A timestamped id, t1.<createdAtMs>.<nonce>, resent after the window is REQUEST_ID_EXPIRED
   * (FAILED_PRECONDITION), never applied twice; a plain id then applies again (docs/api.md).
   */
  'requestId'?: (string);
  '_ifModRevision'?: "ifModRevision";
  '_ifValue'?: "ifValue";
  '_requestId'?: "requestId";
}

export interface DeleteRequest__Output {
  /**
   * The key to delete. Required.
   */
  'key': (string);
  /**
   * Delete only if the key's mod_revision equals this.
   */
  'ifModRevision'?: (string);
  /**
   * Delete only if the key holds exactly these bytes.
   */
  'ifValue'?: (Buffer);
  /**
   * Optional idempotency key (1-64 bytes): a retry carrying the same id within the partition's
   * dedup window returns the first attempt's result instead of applying again (exactly-once).
   * A timestamped id, t1.<createdAtMs>.<nonce>, resent after the window is REQUEST_ID_EXPIRED
   * (FAILED_PRECONDITION), never applied twice; a plain id then applies again (docs/api.md).
   */
  'requestId'?: (string);
  '_ifModRevision'?: "ifModRevision";
  '_ifValue'?: "ifValue";
  '_requestId'?: "requestId";
}
