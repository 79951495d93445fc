// Original file: proto/atoll/v1/auth.proto

import type { Quota as _atoll_v1_Quota, Quota__Output as _atoll_v1_Quota__Output } from '../../atoll/v1/Quota.js';
import type { Long } from '@grpc/proto-loader';

export interface TenantUsage {
  'tenant'?: (string);
  /**
   * Live keys and their key and value bytes, summed over every partition's leader.
   */
  'keys'?: (number | string | Long);
  'bytes'?: (number | string | Long);
  /**
   * Requests per second the tenant's calls reached partition leaders with (recent average).
   */
  'requestsPerSecond'?: (number | string);
  'quota'?: (_atoll_v1_Quota | null);
  /**
   * Retained history: bytes of overwritten and deleted versions (and tombstones) the partitions
   * keep until they compact them (retention window). The bytes quota bounds bytes + history_bytes.
   */
  'historyBytes'?: (number | string | Long);
  /**
   * Leases held, summed over every partition's leader.
   */
  'leases'?: (number | string | Long);
}

export interface TenantUsage__Output {
  'tenant': (string);
  /**
   * Live keys and their key and value bytes, summed over every partition's leader.
   */
  'keys': (string);
  'bytes': (string);
  /**
   * Requests per second the tenant's calls reached partition leaders with (recent average).
   */
  'requestsPerSecond': (number);
  'quota': (_atoll_v1_Quota__Output | null);
  /**
   * Retained history: bytes of overwritten and deleted versions (and tombstones) the partitions
   * keep until they compact them (retention window). The bytes quota bounds bytes + history_bytes.
   */
  'historyBytes': (string);
  /**
   * Leases held, summed over every partition's leader.
   */
  'leases': (string);
}
