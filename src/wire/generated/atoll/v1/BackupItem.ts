// Original file: proto/atoll/v1/cluster.proto

import type { Long } from '@grpc/proto-loader';

/**
 * One live key of a backup page.
 */
export interface BackupItem {
  /**
   * The key's tenant ("default" for keys written without a tenant token).
   */
  'tenant'?: (string);
  /**
   * The key as its tenant sees it.
   */
  'key'?: (string);
  'value'?: (Buffer | Uint8Array | string);
  /**
   * Unix epoch milliseconds when the key expires; 0 when it never does.
   */
  'expiresAtMs'?: (number | string | Long);
  /**
   * The key's mod revision in the backed-up partition (informational: a restore writes new revisions).
   */
  'modRevision'?: (number | string | Long);
}

/**
 * One live key of a backup page.
 */
export interface BackupItem__Output {
  /**
   * The key's tenant ("default" for keys written without a tenant token).
   */
  'tenant': (string);
  /**
   * The key as its tenant sees it.
   */
  'key': (string);
  'value': (Buffer);
  /**
   * Unix epoch milliseconds when the key expires; 0 when it never does.
   */
  'expiresAtMs': (string);
  /**
   * The key's mod revision in the backed-up partition (informational: a restore writes new revisions).
   */
  'modRevision': (string);
}
