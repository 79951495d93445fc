// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface IncrementResponse {
  /**
   * The counter's value after the increment.
   */
  'value'?: (number | string | Long);
  /**
   * The revision of the increment.
   */
  'revision'?: (number | string | Long);
}

export interface IncrementResponse__Output {
  /**
   * The counter's value after the increment.
   */
  'value': (string);
  /**
   * The revision of the increment.
   */
  'revision': (string);
}
