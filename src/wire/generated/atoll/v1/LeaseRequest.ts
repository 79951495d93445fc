// Original file: proto/atoll/v1/kv.proto

import type { LeaseAction as _atoll_v1_LeaseAction, LeaseAction__Output as _atoll_v1_LeaseAction__Output } from '../../atoll/v1/LeaseAction.js';
import type { Long } from '@grpc/proto-loader';

/**
 * Locks (docs/api.md, "Locks and fencing") need no RPC of their own; any client can follow etcd's
 * recipe: GRANT a lease in the partition of the lock bucket ("locks") and keep it alive; Put
 * "locks/<name>/<lease id>" (empty value, if_absent, lease): its revision is the waiter's create
 * revision, and its fencing token once it holds. GetByPrefix "locks/<name>/": the key with the
 * lowest create_revision holds the lock; any other waiter Watches the key with the next lower
 * create_revision (start_revision = the read's revision) until it is deleted, then reads again.
 * Writes the lock guards carry the token as PutRequest.if_fence (or TxnWrite.if_fence). Unlock
 * with REVOKE; a dead holder's lease ends within its TTL, which deletes its key.
 * 
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
 * Locks (docs/api.md, "Locks and fencing") need no RPC of their own; any client can follow etcd's
 * recipe: GRANT a lease in the partition of the lock bucket ("locks") and keep it alive; Put
 * "locks/<name>/<lease id>" (empty value, if_absent, lease): its revision is the waiter's create
 * revision, and its fencing token once it holds. GetByPrefix "locks/<name>/": the key with the
 * lowest create_revision holds the lock; any other waiter Watches the key with the next lower
 * create_revision (start_revision = the read's revision) until it is deleted, then reads again.
 * Writes the lock guards carry the token as PutRequest.if_fence (or TxnWrite.if_fence). Unlock
 * with REVOKE; a dead holder's lease ends within its TTL, which deletes its key.
 * 
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
