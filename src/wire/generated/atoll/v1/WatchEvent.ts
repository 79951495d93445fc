// Original file: proto/atoll/v1/kv.proto

import type { WatchEventType as _atoll_v1_WatchEventType, WatchEventType__Output as _atoll_v1_WatchEventType__Output } from '../../atoll/v1/WatchEventType.js';
import type { DeleteReason as _atoll_v1_DeleteReason, DeleteReason__Output as _atoll_v1_DeleteReason__Output } from '../../atoll/v1/DeleteReason.js';
import type { Long } from '@grpc/proto-loader';

export interface WatchEvent {
  'type'?: (_atoll_v1_WatchEventType);
  /**
   * The key, exactly as written.
   */
  'key'?: (string);
  /**
   * A put's value (empty with keys_only, and for deletes).
   */
  'value'?: (Buffer | Uint8Array | string);
  /**
   * The revision of the change.
   */
  'revision'?: (number | string | Long);
  /**
   * A put's create revision, version and expiry (0 when none); 0 for deletes.
   */
  'createRevision'?: (number | string | Long);
  'version'?: (number | string | Long);
  'expiresAtMs'?: (number | string | Long);
  /**
   * Deletes: DELETED or EXPIRED.
   */
  'reason'?: (_atoll_v1_DeleteReason);
}

export interface WatchEvent__Output {
  'type': (_atoll_v1_WatchEventType__Output);
  /**
   * The key, exactly as written.
   */
  'key': (string);
  /**
   * A put's value (empty with keys_only, and for deletes).
   */
  'value': (Buffer);
  /**
   * The revision of the change.
   */
  'revision': (string);
  /**
   * A put's create revision, version and expiry (0 when none); 0 for deletes.
   */
  'createRevision': (string);
  'version': (string);
  'expiresAtMs': (string);
  /**
   * Deletes: DELETED or EXPIRED.
   */
  'reason': (_atoll_v1_DeleteReason__Output);
}
