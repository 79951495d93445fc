// Original file: proto/atoll/v1/cluster.proto


/**
 * Moves one replica of a partition from one node to another, online (docs/operations.md, "Moving
 * a replica"). Sent to the partition's leader (others answer NOT_LEADER with a hint). Cluster admin
 * only when authentication is on. Each step is idempotent: repeating a move finishes it.
 */
export interface MoveReplicaRequest {
  'partition'?: (number);
  /**
   * The node that gives up its replica.
   */
  'fromNode'?: (number);
  /**
   * The node that receives the new replica; it must not hold one already.
   */
  'toNode'?: (number);
}

/**
 * Moves one replica of a partition from one node to another, online (docs/operations.md, "Moving
 * a replica"). Sent to the partition's leader (others answer NOT_LEADER with a hint). Cluster admin
 * only when authentication is on. Each step is idempotent: repeating a move finishes it.
 */
export interface MoveReplicaRequest__Output {
  'partition': (number);
  /**
   * The node that gives up its replica.
   */
  'fromNode': (number);
  /**
   * The node that receives the new replica; it must not hold one already.
   */
  'toNode': (number);
}
