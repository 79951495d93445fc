// Original file: proto/atoll/v1/kv.proto

import type { KeyRecord as _atoll_v1_KeyRecord, KeyRecord__Output as _atoll_v1_KeyRecord__Output } from '../../atoll/v1/KeyRecord.js';
import type { Long } from '@grpc/proto-loader';

export interface GetByPrefixResponse {
  /**
   * Live keys in UTF-8 byte order.
   */
  'items'?: (_atoll_v1_KeyRecord)[];
  /**
   * The revision every item was read at.
   */
  'revision'?: (number | string | Long);
  /**
   * Pass this as page_token to read the next page; empty when there are no more pages. A page may
   * be short (even empty) and still have a next page.
   */
  'nextPageToken'?: (string);
}

export interface GetByPrefixResponse__Output {
  /**
   * Live keys in UTF-8 byte order.
   */
  'items': (_atoll_v1_KeyRecord__Output)[];
  /**
   * The revision every item was read at.
   */
  'revision': (string);
  /**
   * Pass this as page_token to read the next page; empty when there are no more pages. A page may
   * be short (even empty) and still have a next page.
   */
  'nextPageToken': (string);
}
