// Original file: proto/atoll/v1/cluster.proto


/**
 * Joins a partition L with its right neighbour R (the partition whose range starts at L's range
 * end) into L, atomically: R is frozen (its keys answer PARTITION_MOVED with the atoll-merged-into
 * metadata), then L takes R's keys with their history and R's request-id records, and R's id is
 * never used again. Run at L's leader (others answer NOT_LEADER with a hint), which must also lead
 * R. Cluster admin only when authentication is on. Refused with MERGE_REFUSED (details.reason:
 * 'no-right-neighbour', 'below-initial' (R is an initial partition), 'replicas-differ',
 * 'in-progress' (a replica move or split on either side), 'leaders-differ' (transfer R's leadership
 * to L's leader first), 'leased-keys') and nothing changed; a deadline may cut it off after R's
 * freeze: run it again, it continues.
 */
export interface MergePartitionRequest {
  'partition'?: (number);
}

/**
 * Joins a partition L with its right neighbour R (the partition whose range starts at L's range
 * end) into L, atomically: R is frozen (its keys answer PARTITION_MOVED with the atoll-merged-into
 * metadata), then L takes R's keys with their history and R's request-id records, and R's id is
 * never used again. Run at L's leader (others answer NOT_LEADER with a hint), which must also lead
 * R. Cluster admin only when authentication is on. Refused with MERGE_REFUSED (details.reason:
 * 'no-right-neighbour', 'below-initial' (R is an initial partition), 'replicas-differ',
 * 'in-progress' (a replica move or split on either side), 'leaders-differ' (transfer R's leadership
 * to L's leader first), 'leased-keys') and nothing changed; a deadline may cut it off after R's
 * freeze: run it again, it continues.
 */
export interface MergePartitionRequest__Output {
  'partition': (number);
}
