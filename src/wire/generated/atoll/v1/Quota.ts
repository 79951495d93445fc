// Original file: proto/atoll/v1/auth.proto

import type { Long } from '@grpc/proto-loader';

export interface Quota {
  /**
   * 0 means unlimited.
   */
  'maxKeys'?: (number | string | Long);
  'maxBytes'?: (number | string | Long);
  'maxRequestsPerSecond'?: (number | string | Long);
  /**
   * Leases held at once, all partitions. 0 in SetQuota: the server's default (10,000); there is no
   * unlimited (every lease costs memory on every replica). GetUsage reports the one in force.
   */
  'maxLeases'?: (number | string | Long);
}

export interface Quota__Output {
  /**
   * 0 means unlimited.
   */
  'maxKeys': (string);
  'maxBytes': (string);
  'maxRequestsPerSecond': (string);
  /**
   * Leases held at once, all partitions. 0 in SetQuota: the server's default (10,000); there is no
   * unlimited (every lease costs memory on every replica). GetUsage reports the one in force.
   */
  'maxLeases': (string);
}
