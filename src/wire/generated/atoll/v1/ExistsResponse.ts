// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface ExistsResponse {
  /**
   * Whether the key is present.
   */
  'exists'?: (boolean);
  /**
   * The partition revision the read was served at.
   */
  'revision'?: (number | string | Long);
}

export interface ExistsResponse__Output {
  /**
   * Whether the key is present.
   */
  'exists': (boolean);
  /**
   * The partition revision the read was served at.
   */
  'revision': (string);
}
