// Original file: proto/atoll/v1/cluster.proto


/**
 * Splits a partition's hash range in two Raft groups on the same replicas (docs/architecture.md,
 * "Partition splits"): the leader picks the split point (the median bucket hash of its keys, or
 * the range's midpoint), the source keeps [range_start, split_hash) and the new partition, whose
 * id is split_hash, owns [split_hash, range_end). Sent to the partition's leader (others answer
 * NOT_LEADER with a hint). Cluster admin only when authentication is on. Refused with
 * SPLIT_REFUSED (details.reason: 'single-bucket', 'in-progress', 'leased-keys', 'bad-split-point')
 * and nothing changed.
 */
export interface SplitPartitionRequest {
  'partition'?: (number);
}

/**
 * Splits a partition's hash range in two Raft groups on the same replicas (docs/architecture.md,
 * "Partition splits"): the leader picks the split point (the median bucket hash of its keys, or
 * the range's midpoint), the source keeps [range_start, split_hash) and the new partition, whose
 * id is split_hash, owns [split_hash, range_end). Sent to the partition's leader (others answer
 * NOT_LEADER with a hint). Cluster admin only when authentication is on. Refused with
 * SPLIT_REFUSED (details.reason: 'single-bucket', 'in-progress', 'leased-keys', 'bad-split-point')
 * and nothing changed.
 */
export interface SplitPartitionRequest__Output {
  'partition': (number);
}
