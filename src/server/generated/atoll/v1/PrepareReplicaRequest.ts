// Original file: proto/atoll/v1/cluster.proto


/**
 * Internal. A partition's leader asks this node to open an empty replica of the partition, which the
 * leader then adds as a learner and catches up by snapshot (a replica move's first step).
 */
export interface PrepareReplicaRequest {
  'partition'?: (number);
}

/**
 * Internal. A partition's leader asks this node to open an empty replica of the partition, which the
 * leader then adds as a learner and catches up by snapshot (a replica move's first step).
 */
export interface PrepareReplicaRequest__Output {
  'partition': (number);
}
