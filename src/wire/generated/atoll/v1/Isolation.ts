// Original file: proto/atoll/v1/kv.proto

/**
 * How a transaction is isolated. Both read one snapshot and commit all or nothing through one
 * Raft log entry; first committer wins.
 */
export const Isolation = {
  /**
   * Abort at commit if any key the transaction writes changed after its snapshot. Write skew is
   * possible (two transactions that read each other's keys and write different ones both commit).
   */
  SNAPSHOT: 'SNAPSHOT',
  /**
   * Also abort if any key it read, or any key under a prefix it read, changed after its
   * snapshot: transactions behave as if run one at a time, phantoms included.
   */
  SERIALIZABLE: 'SERIALIZABLE',
} as const;

/**
 * How a transaction is isolated. Both read one snapshot and commit all or nothing through one
 * Raft log entry; first committer wins.
 */
export type Isolation =
  /**
   * Abort at commit if any key the transaction writes changed after its snapshot. Write skew is
   * possible (two transactions that read each other's keys and write different ones both commit).
   */
  | 'SNAPSHOT'
  | 0
  /**
   * Also abort if any key it read, or any key under a prefix it read, changed after its
   * snapshot: transactions behave as if run one at a time, phantoms included.
   */
  | 'SERIALIZABLE'
  | 1

/**
 * How a transaction is isolated. Both read one snapshot and commit all or nothing through one
 * Raft log entry; first committer wins.
 */
export type Isolation__Output = typeof Isolation[keyof typeof Isolation]
