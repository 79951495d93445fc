// Original file: proto/atoll/v1/kv.proto

/**
 * What a Lease call does.
 */
export const LeaseAction = {
  LEASE_ACTION_UNSPECIFIED: 'LEASE_ACTION_UNSPECIFIED',
  /**
   * Grant a lease in the partition of `key` (a key or bucket) with `ttl_ms`.
   */
  LEASE_GRANT: 'LEASE_GRANT',
  /**
   * Restart the lease's TTL. Call it well within the TTL (a third of it): the lease ends, and its
   * keys are deleted, once no keepalive reached the partition's leader for ttl_ms.
   */
  LEASE_KEEP_ALIVE: 'LEASE_KEEP_ALIVE',
  /**
   * End the lease now: its keys are deleted in one log entry (watchers see reason LEASE).
   */
  LEASE_REVOKE: 'LEASE_REVOKE',
  /**
   * The lease's TTL, time left and keys.
   */
  LEASE_INFO: 'LEASE_INFO',
} as const;

/**
 * What a Lease call does.
 */
export type LeaseAction =
  | 'LEASE_ACTION_UNSPECIFIED'
  | 0
  /**
   * Grant a lease in the partition of `key` (a key or bucket) with `ttl_ms`.
   */
  | 'LEASE_GRANT'
  | 1
  /**
   * Restart the lease's TTL. Call it well within the TTL (a third of it): the lease ends, and its
   * keys are deleted, once no keepalive reached the partition's leader for ttl_ms.
   */
  | 'LEASE_KEEP_ALIVE'
  | 2
  /**
   * End the lease now: its keys are deleted in one log entry (watchers see reason LEASE).
   */
  | 'LEASE_REVOKE'
  | 3
  /**
   * The lease's TTL, time left and keys.
   */
  | 'LEASE_INFO'
  | 4

/**
 * What a Lease call does.
 */
export type LeaseAction__Output = typeof LeaseAction[keyof typeof LeaseAction]
