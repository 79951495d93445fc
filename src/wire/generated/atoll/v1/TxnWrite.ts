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
  /**
   * Attach the put key to this lease ("<partition>.<n>"), as PutRequest.lease: the lease must be
   * of the transaction's partition (INVALID_ARGUMENT, LEASE_WRONG_PARTITION) and live
   * (NOT_FOUND, LEASE_NOT_FOUND); a bad lease fails the whole commit, which changes nothing.
   */
  'lease'?: (string);
  /**
   * A fenced put, as PutRequest.if_fence: a FENCED write fails the whole commit.
   */
  'ifFence'?: (number | string | Long);
  '_ttlMs'?: "ttlMs";
  '_ifFence'?: "ifFence";
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
  /**
   * Attach the put key to this lease ("<partition>.<n>"), as PutRequest.lease: the lease must be
   * of the transaction's partition (INVALID_ARGUMENT, LEASE_WRONG_PARTITION) and live
   * (NOT_FOUND, LEASE_NOT_FOUND); a bad lease fails the whole commit, which changes nothing.
   */
  'lease': (string);
  /**
   * A fenced put, as PutRequest.if_fence: a FENCED write fails the whole commit.
   */
  'ifFence'?: (string);
  '_ttlMs'?: "ttlMs";
  '_ifFence'?: "ifFence";
}
