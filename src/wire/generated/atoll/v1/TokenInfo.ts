// Original file: proto/atoll/v1/auth.proto

import type { Long } from '@grpc/proto-loader';

export interface TokenInfo {
  /**
   * A short public id of the token (the first 12 hex digits of its hash); the secret is never stored.
   */
  'id'?: (string);
  'tenant'?: (string);
  /**
   * read, readwrite or admin.
   */
  'role'?: (string);
  'name'?: (string);
  'createdAtMs'?: (number | string | Long);
  'revoked'?: (boolean);
}

export interface TokenInfo__Output {
  /**
   * A short public id of the token (the first 12 hex digits of its hash); the secret is never stored.
   */
  'id': (string);
  'tenant': (string);
  /**
   * read, readwrite or admin.
   */
  'role': (string);
  'name': (string);
  'createdAtMs': (string);
  'revoked': (boolean);
}
