// Original file: proto/atoll/v1/cluster.proto


export interface ClusterInfoRequest {
}

export interface ClusterInfoRequest__Output {
}
