// Original file: proto/atoll/v1/kv.proto

import type { KeyRecord as _atoll_v1_KeyRecord, KeyRecord__Output as _atoll_v1_KeyRecord__Output } from '../../atoll/v1/KeyRecord.js';
import type { Long } from '@grpc/proto-loader';

export interface PutResponse {
  /**
   * False when a condition did not hold: nothing changed.
   */
  'applied'?: (boolean);
  /**
   * The revision of this write; when not applied, the partition's current revision.
   */
  'revision'?: (number | string | Long);
  /**
   * With return_previous: the live version the write replaced. Unset when the key was absent.
   */
  'previous'?: (_atoll_v1_KeyRecord | null);
}

export interface PutResponse__Output {
  /**
   * False when a condition did not hold: nothing changed.
   */
  'applied': (boolean);
  /**
   * The revision of this write; when not applied, the partition's current revision.
   */
  'revision': (string);
  /**
   * With return_previous: the live version the write replaced. Unset when the key was absent.
   */
  'previous': (_atoll_v1_KeyRecord__Output | null);
}
