// Original file: proto/atoll/v1/cluster.proto


/**
 * Internal. One batch of Raft messages from one node to another.
 */
export interface RaftFrame {
  /**
   * The sending node's id.
   */
  'fromNode'?: (number);
  /**
   * The encoded Raft messages (the Raft transport's own format).
   */
  'payload'?: (Buffer | Uint8Array | string);
}

/**
 * Internal. One batch of Raft messages from one node to another.
 */
export interface RaftFrame__Output {
  /**
   * The sending node's id.
   */
  'fromNode': (number);
  /**
   * The encoded Raft messages (the Raft transport's own format).
   */
  'payload': (Buffer);
}
