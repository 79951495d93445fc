// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface GetResponse {
  /**
   * Whether the key exists. A missing key is a successful answer with found = false.
   */
  'found'?: (boolean);
  /**
   * The value when found (possibly empty); empty when not found.
   */
  'value'?: (Buffer | Uint8Array | string);
  /**
   * Revision of the write that created the key; 0 when not found.
   */
  'createRevision'?: (number | string | Long);
  /**
   * Revision of the write that produced the value read; 0 when not found.
   */
  'modRevision'?: (number | string | Long);
  /**
   * Number of writes since creation; 0 when not found.
   */
  'version'?: (number | string | Long);
  /**
   * Expiry time, Unix epoch milliseconds; 0 when the key never expires or was not found.
   */
  'expiresAtMs'?: (number | string | Long);
  /**
   * The partition revision the read was served at.
   */
  'revision'?: (number | string | Long);
}

export interface GetResponse__Output {
  /**
   * Whether the key exists. A missing key is a successful answer with found = false.
   */
  'found': (boolean);
  /**
   * The value when found (possibly empty); empty when not found.
   */
  'value': (Buffer);
  /**
   * Revision of the write that created the key; 0 when not found.
   */
  'createRevision': (string);
  /**
   * Revision of the write that produced the value read; 0 when not found.
   */
  'modRevision': (string);
  /**
   * Number of writes since creation; 0 when not found.
   */
  'version': (string);
  /**
   * Expiry time, Unix epoch milliseconds; 0 when the key never expires or was not found.
   */
  'expiresAtMs': (string);
  /**
   * The partition revision the read was served at.
   */
  'revision': (string);
}
