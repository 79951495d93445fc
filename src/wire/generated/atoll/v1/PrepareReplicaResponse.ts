// Original file: proto/atoll/v1/cluster.proto


export interface PrepareReplicaResponse {
}

export interface PrepareReplicaResponse__Output {
}
