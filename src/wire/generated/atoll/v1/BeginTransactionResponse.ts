// Original file: proto/atoll/v1/kv.proto

import type { Isolation as _atoll_v1_Isolation, Isolation__Output as _atoll_v1_Isolation__Output } from '../../atoll/v1/Isolation.js';
import type { Long } from '@grpc/proto-loader';

/**
 * The transaction handle. The server keeps no state for an open transaction: the handle and the
 * Commit request carry everything, so a leader change between begin and commit is harmless.
 */
export interface BeginTransactionResponse {
  /**
   * Opaque; pass it as `transaction` to reads and to Commit.
   */
  'transaction'?: (string);
  'partition'?: (number);
  'bucket'?: (string);
  /**
   * Reads inside the transaction see the partition as of this revision.
   */
  'snapshotRevision'?: (number | string | Long);
  'isolation'?: (_atoll_v1_Isolation);
  /**
   * Commit fails with FAILED_PRECONDITION (TXN_EXPIRED) after this time, Unix epoch milliseconds.
   */
  'expiresAtMs'?: (number | string | Long);
}

/**
 * The transaction handle. The server keeps no state for an open transaction: the handle and the
 * Commit request carry everything, so a leader change between begin and commit is harmless.
 */
export interface BeginTransactionResponse__Output {
  /**
   * Opaque; pass it as `transaction` to reads and to Commit.
   */
  'transaction': (string);
  'partition': (number);
  'bucket': (string);
  /**
   * Reads inside the transaction see the partition as of this revision.
   */
  'snapshotRevision': (string);
  'isolation': (_atoll_v1_Isolation__Output);
  /**
   * Commit fails with FAILED_PRECONDITION (TXN_EXPIRED) after this time, Unix epoch milliseconds.
   */
  'expiresAtMs': (string);
}
