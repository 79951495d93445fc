// Original file: proto/atoll/v1/auth.proto

import type { Long } from '@grpc/proto-loader';

export interface Quota {
  /**
   * 0 means unlimited.
   */
  'maxKeys'?: (number | string | Long);
  'maxBytes'?: (number | string | Long);
  'maxRequestsPerSecond'?: (number | string | Long);
}

export interface Quota__Output {
  /**
   * 0 means unlimited.
   */
  'maxKeys': (string);
  'maxBytes': (string);
  'maxRequestsPerSecond': (string);
}
