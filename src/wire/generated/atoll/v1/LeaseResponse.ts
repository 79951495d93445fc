// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

export interface LeaseResponse {
  /**
   * The lease id, "<partition>.<n>".
   */
  'lease'?: (string);
  /**
   * The lease's TTL in milliseconds.
   */
  'ttlMs'?: (number | string | Long);
  /**
   * GRANT, KEEP_ALIVE, INFO: milliseconds until the leader ends the lease unless kept alive.
   */
  'ttlLeftMs'?: (number | string | Long);
  /**
   * INFO: the keys attached to the lease.
   */
  'keys'?: (string)[];
  /**
   * REVOKE: the revision of the deletes (the partition's revision when it had no keys).
   */
  'revision'?: (number | string | Long);
}

export interface LeaseResponse__Output {
  /**
   * The lease id, "<partition>.<n>".
   */
  'lease': (string);
  /**
   * The lease's TTL in milliseconds.
   */
  'ttlMs': (string);
  /**
   * GRANT, KEEP_ALIVE, INFO: milliseconds until the leader ends the lease unless kept alive.
   */
  'ttlLeftMs': (string);
  /**
   * INFO: the keys attached to the lease.
   */
  'keys': (string)[];
  /**
   * REVOKE: the revision of the deletes (the partition's revision when it had no keys).
   */
  'revision': (string);
}
