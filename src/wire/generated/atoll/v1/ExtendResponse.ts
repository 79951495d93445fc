// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface ExtendResponse {
  /**
   * False when the key is absent (nothing to extend).
   */
  'extended'?: (boolean);
  /**
   * The new expiry, Unix epoch milliseconds; 0 when not extended.
   */
  'expiresAtMs'?: (number | string | Long);
  /**
   * The revision of the change; when not extended, the partition's current revision.
   */
  'revision'?: (number | string | Long);
}

export interface ExtendResponse__Output {
  /**
   * False when the key is absent (nothing to extend).
   */
  'extended': (boolean);
  /**
   * The new expiry, Unix epoch milliseconds; 0 when not extended.
   */
  'expiresAtMs': (string);
  /**
   * The revision of the change; when not extended, the partition's current revision.
   */
  'revision': (string);
}
