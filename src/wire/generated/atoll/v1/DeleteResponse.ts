// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface DeleteResponse {
  /**
   * True when a live key was deleted; false when it was absent or a condition did not hold.
   */
  'deleted'?: (boolean);
  /**
   * The revision of the delete; when nothing was deleted, the partition's current revision.
   */
  'revision'?: (number | string | Long);
}

export interface DeleteResponse__Output {
  /**
   * True when a live key was deleted; false when it was absent or a condition did not hold.
   */
  'deleted': (boolean);
  /**
   * The revision of the delete; when nothing was deleted, the partition's current revision.
   */
  'revision': (string);
}
