// Original file: proto/atoll/v1/cluster.proto


/**
 * Sent once the move finished: the partition's voters are its new replica set.
 */
export interface MoveReplicaResponse {
  /**
   * The partition's voters after the move.
   */
  'voters'?: (number)[];
}

/**
 * Sent once the move finished: the partition's voters are its new replica set.
 */
export interface MoveReplicaResponse__Output {
  /**
   * The partition's voters after the move.
   */
  'voters': (number)[];
}
