// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

/**
 * A conflict is not a response: it is the status ABORTED with atoll-code TXN_CONFLICT, and
 * nothing changed.
 */
export interface CommitResponse {
  /**
   * The revision the writes became visible at (the current one when there were none).
   */
  'revision'?: (number | string | Long);
}

/**
 * A conflict is not a response: it is the status ABORTED with atoll-code TXN_CONFLICT, and
 * nothing changed.
 */
export interface CommitResponse__Output {
  /**
   * The revision the writes became visible at (the current one when there were none).
   */
  'revision': (string);
}
