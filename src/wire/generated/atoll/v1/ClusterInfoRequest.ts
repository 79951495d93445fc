// Original file: proto/atoll/v1/cluster.proto


export interface ClusterInfoRequest {
  /**
   * When not empty, only these partitions are listed (nodes ask each other about a few of theirs;
   * every other field of the answer is the same). Ids the answering node does not know are left
   * out; at most 65,536 ids.
   */
  'partitions'?: (number)[];
}

export interface ClusterInfoRequest__Output {
  /**
   * When not empty, only these partitions are listed (nodes ask each other about a few of theirs;
   * every other field of the answer is the same). Ids the answering node does not know are left
   * out; at most 65,536 ids.
   */
  'partitions': (number)[];
}
