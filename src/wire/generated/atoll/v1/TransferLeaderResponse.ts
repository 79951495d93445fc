// Original file: proto/atoll/v1/cluster.proto


/**
 * Sent once the transfer has been started; the new leader is visible in ClusterInfo shortly after.
 */
export interface TransferLeaderResponse {
}

/**
 * Sent once the transfer has been started; the new leader is visible in ClusterInfo shortly after.
 */
export interface TransferLeaderResponse__Output {
}
