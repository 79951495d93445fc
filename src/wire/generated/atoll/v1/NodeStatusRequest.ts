// Original file: proto/atoll/v1/cluster.proto


/**
 * Internal. A node's own status for another node's status page (the admin port's /status.json):
 * asked over the peer port with the peer secret, so no viewer's token is ever sent to another node.
 */
export interface NodeStatusRequest {
}

/**
 * Internal. A node's own status for another node's status page (the admin port's /status.json):
 * asked over the peer port with the peer secret, so no viewer's token is ever sent to another node.
 */
export interface NodeStatusRequest__Output {
}
