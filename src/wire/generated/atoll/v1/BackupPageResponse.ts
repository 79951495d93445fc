// Original file: proto/atoll/v1/cluster.proto

import type { BackupItem as _atoll_v1_BackupItem, BackupItem__Output as _atoll_v1_BackupItem__Output } from '../../atoll/v1/BackupItem.js';
import type { Long } from '@grpc/proto-loader';

export interface BackupPageResponse {
  /**
   * The revision every item was read at.
   */
  'revision'?: (number | string | Long);
  'items'?: (_atoll_v1_BackupItem)[];
  /**
   * Empty when the partition has no more keys.
   */
  'nextPageToken'?: (string);
}

export interface BackupPageResponse__Output {
  /**
   * The revision every item was read at.
   */
  'revision': (string);
  'items': (_atoll_v1_BackupItem__Output)[];
  /**
   * Empty when the partition has no more keys.
   */
  'nextPageToken': (string);
}
