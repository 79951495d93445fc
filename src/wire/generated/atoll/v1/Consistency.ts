// Original file: proto/atoll/v1/kv.proto

/**
 * How fresh a read must be.
 */
export const Consistency = {
  /**
   * The read reflects every write acknowledged before it started (served by the leader after it
   * confirmed its leadership). The default.
   */
  LINEARIZABLE: 'LINEARIZABLE',
  /**
   * The read may be served by any replica from its local state and may miss recent writes.
   * Cheaper, and still available while a partition has no leader.
   */
  STALE: 'STALE',
} as const;

/**
 * How fresh a read must be.
 */
export type Consistency =
  /**
   * The read reflects every write acknowledged before it started (served by the leader after it
   * confirmed its leadership). The default.
   */
  | 'LINEARIZABLE'
  | 0
  /**
   * The read may be served by any replica from its local state and may miss recent writes.
   * Cheaper, and still available while a partition has no leader.
   */
  | 'STALE'
  | 1

/**
 * How fresh a read must be.
 */
export type Consistency__Output = typeof Consistency[keyof typeof Consistency]
