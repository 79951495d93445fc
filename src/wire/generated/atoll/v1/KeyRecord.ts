// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

/**
 * One live key as stored at some revision.
 */
export interface KeyRecord {
  /**
   * The key, exactly as written.
   */
  'key'?: (string);
  /**
   * The stored bytes. An empty value is a stored value, not an absent key.
   */
  'value'?: (Buffer | Uint8Array | string);
  /**
   * The revision of the write that created the key (after it was last absent).
   */
  'createRevision'?: (number | string | Long);
  /**
   * The revision of the write that produced this version.
   */
  'modRevision'?: (number | string | Long);
  /**
   * How many writes the key has seen since it was created: 1 for the creating write.
   */
  'version'?: (number | string | Long);
  /**
   * When the key expires, Unix epoch milliseconds; 0 when it never expires.
   */
  'expiresAtMs'?: (number | string | Long);
}

/**
 * One live key as stored at some revision.
 */
export interface KeyRecord__Output {
  /**
   * The key, exactly as written.
   */
  'key': (string);
  /**
   * The stored bytes. An empty value is a stored value, not an absent key.
   */
  'value': (Buffer);
  /**
   * The revision of the write that created the key (after it was last absent).
   */
  'createRevision': (string);
  /**
   * The revision of the write that produced this version.
   */
  'modRevision': (string);
  /**
   * How many writes the key has seen since it was created: 1 for the creating write.
   */
  'version': (string);
  /**
   * When the key expires, Unix epoch milliseconds; 0 when it never expires.
   */
  'expiresAtMs': (string);
}
