// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

/**
 * One buffered write: a put or a delete, unconditional (evaluate conditions against the
 * transaction's reads; first committer wins makes that exact).
 */
export interface TxnWrite {
  'key'?: (string);
  /**
   * Delete the key instead of writing value.
   */
  'delete'?: (boolean);
  'value'?: (Buffer | Uint8Array | string);
  'ttlMs'?: (number | string | Long);
  'keepTtl'?: (boolean);
  '_ttlMs'?: "ttlMs";
}

/**
 * One buffered write: a put or a delete, unconditional (evaluate conditions against the
 * transaction's reads; first committer wins makes that exact).
 */
export interface TxnWrite__Output {
  'key': (string);
  /**
   * Delete the key instead of writing value.
   */
  'delete': (boolean);
  'value': (Buffer);
  'ttlMs'?: (string);
  'keepTtl': (boolean);
  '_ttlMs'?: "ttlMs";
}
