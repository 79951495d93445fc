// Original file: proto/atoll/v1/kv.proto

import type { LeaseAction as _atoll_v1_LeaseAction, LeaseAction__Output as _atoll_v1_LeaseAction__Output } from '../../atoll/v1/LeaseAction.js';
import type { Long } from '@grpc/proto-loader';

/**
 * A lease (docs/api.md, "Leases"). A lease lives in one partition, the one of the key it was
 * granted for; only keys of that partition can be attached to it. It belongs to the caller's
 * tenant. Its expiry is decided by the partition's leader, which proposes the revocation through
 * the log; a new leader gives every lease a fresh TTL from its takeover, so a lease never ends
 * earlier than ttl_ms after its last acknowledged keepalive.
 */
export interface LeaseRequest {
  'action'?: (_atoll_v1_LeaseAction);
  /**
   * GRANT: a key or bucket naming the partition the lease lives in. Nothing is written under it.
   */
  'key'?: (string);
  /**
   * GRANT: the lease's TTL in milliseconds (at least 1).
   */
  'ttlMs'?: (number | string | Long);
  /**
   * KEEP_ALIVE, REVOKE, INFO: the lease id, "<partition>.<n>", as GRANT returned it.
   */
  'lease'?: (string);
}

/**
 * A lease (docs/api.md, "Leases"). A lease lives in one partition, the one of the key it was
 * granted for; only keys of that partition can be attached to it. It belongs to the caller's
 * tenant. Its expiry is decided by the partition's leader, which proposes the revocation through
 * the log; a new leader gives every lease a fresh TTL from its takeover, so a lease never ends
 * earlier than ttl_ms after its last acknowledged keepalive.
 */
export interface LeaseRequest__Output {
  'action': (_atoll_v1_LeaseAction__Output);
  /**
   * GRANT: a key or bucket naming the partition the lease lives in. Nothing is written under it.
   */
  'key': (string);
  /**
   * GRANT: the lease's TTL in milliseconds (at least 1).
   */
  'ttlMs': (string);
  /**
   * KEEP_ALIVE, REVOKE, INFO: the lease id, "<partition>.<n>", as GRANT returned it.
   */
  'lease': (string);
}
