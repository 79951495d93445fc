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
  /**
   * The node's admin HTTP address, host:port: Prometheus metrics at /metrics, health at /livez
   * and /readyz. Empty when the answering node does not know it.
   */
  'adminAddress'?: (string);
  /**
   * Its state in the cluster's member table: "joining", "active" or "leaving" (removed members
   * are not listed). Empty from servers older than the member table.
   */
  'state'?: (string);
  /**
   * Its --zone label; empty when none.
   */
  'zone'?: (string);
  /**
   * Its peer port, host:port (what peers dial); empty when the answering node does not know it.
   */
  'peerAddress'?: (string);
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
  /**
   * The node's admin HTTP address, host:port: Prometheus metrics at /metrics, health at /livez
   * and /readyz. Empty when the answering node does not know it.
   */
  'adminAddress': (string);
  /**
   * Its state in the cluster's member table: "joining", "active" or "leaving" (removed members
   * are not listed). Empty from servers older than the member table.
   */
  'state': (string);
  /**
   * Its --zone label; empty when none.
   */
  'zone': (string);
  /**
   * Its peer port, host:port (what peers dial); empty when the answering node does not know it.
   */
  'peerAddress': (string);
}
