// Original file: proto/atoll/v1/kv.proto

/**
 * Why a key went away (delete events only).
 */
export const DeleteReason = {
  DELETE_REASON_UNSPECIFIED: 'DELETE_REASON_UNSPECIFIED',
  /**
   * A Delete, or a transaction or script that deleted it.
   */
  DELETED: 'DELETED',
  /**
   * Its TTL passed: the partition's leader removed it through the log.
   */
  EXPIRED: 'EXPIRED',
  /**
   * Its lease was revoked or expired: the lease's partition deleted all its keys in one entry.
   */
  LEASE: 'LEASE',
} as const;

/**
 * Why a key went away (delete events only).
 */
export type DeleteReason =
  | 'DELETE_REASON_UNSPECIFIED'
  | 0
  /**
   * A Delete, or a transaction or script that deleted it.
   */
  | 'DELETED'
  | 1
  /**
   * Its TTL passed: the partition's leader removed it through the log.
   */
  | 'EXPIRED'
  | 2
  /**
   * Its lease was revoked or expired: the lease's partition deleted all its keys in one entry.
   */
  | 'LEASE'
  | 3

/**
 * Why a key went away (delete events only).
 */
export type DeleteReason__Output = typeof DeleteReason[keyof typeof DeleteReason]
