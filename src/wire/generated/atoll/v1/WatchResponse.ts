// Original file: proto/atoll/v1/kv.proto

import type { WatchEvent as _atoll_v1_WatchEvent, WatchEvent__Output as _atoll_v1_WatchEvent__Output } from '../../atoll/v1/WatchEvent.js';
import type { Long } from '@grpc/proto-loader';

/**
 * One revision's changes to the watched keys, whole, or a progress message. Revisions strictly
 * increase along a stream.
 */
export interface WatchResponse {
  /**
   * The revision of the events; for a progress message, the revision every change up to which has
   * been sent (resume after it).
   */
  'revision'?: (number | string | Long);
  'events'?: (_atoll_v1_WatchEvent)[];
  'progress'?: (boolean);
}

/**
 * One revision's changes to the watched keys, whole, or a progress message. Revisions strictly
 * increase along a stream.
 */
export interface WatchResponse__Output {
  /**
   * The revision of the events; for a progress message, the revision every change up to which has
   * been sent (resume after it).
   */
  'revision': (string);
  'events': (_atoll_v1_WatchEvent__Output)[];
  'progress': (boolean);
}
