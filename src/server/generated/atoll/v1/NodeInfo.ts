// Original file: proto/atoll/v1/cluster.proto


/**
 * One node of the cluster, as the answering node sees it.
 */
export interface NodeInfo {
  /**
   * The node's id, unique in the cluster, at least 1.
   */
  'id'?: (number);
  /**
   * The node's client-facing gRPC address, host:port.
   */
  'address'?: (string);
  /**
   * Whether the answering node currently hears from this node (always true for itself).
   */
  'reachable'?: (boolean);
}

/**
 * One node of the cluster, as the answering node sees it.
 */
export interface NodeInfo__Output {
  /**
   * The node's id, unique in the cluster, at least 1.
   */
  'id': (number);
  /**
   * The node's client-facing gRPC address, host:port.
   */
  'address': (string);
  /**
   * Whether the answering node currently hears from this node (always true for itself).
   */
  'reachable': (boolean);
}
