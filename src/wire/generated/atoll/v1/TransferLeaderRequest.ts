// Original file: proto/atoll/v1/cluster.proto


export interface TransferLeaderRequest {
  /**
   * The partition whose leadership to move.
   */
  'partition'?: (number);
  /**
   * The replica that should become the leader.
   */
  'targetNode'?: (number);
}

export interface TransferLeaderRequest__Output {
  /**
   * The partition whose leadership to move.
   */
  'partition': (number);
  /**
   * The replica that should become the leader.
   */
  'targetNode': (number);
}
