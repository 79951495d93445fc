// Original file: proto/atoll/v1/cluster.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Internal. A partition's leader asks this node to open an empty replica of the partition, which the
 * leader then adds as a learner and catches up by snapshot (a replica move's first step).
 */
export interface PrepareReplicaRequest {
  'partition'?: (number);
  /**
   * The leader's commit index when it asked: the new replica neither votes nor campaigns until it
   * has committed through it (node ids are reused as Raft ids, so a stale snapshot may name it a voter).
   */
  'voteFloor'?: (number | string | Long);
}

/**
 * Internal. A partition's leader asks this node to open an empty replica of the partition, which the
 * leader then adds as a learner and catches up by snapshot (a replica move's first step).
 */
export interface PrepareReplicaRequest__Output {
  'partition': (number);
  /**
   * The leader's commit index when it asked: the new replica neither votes nor campaigns until it
   * has committed through it (node ids are reused as Raft ids, so a stale snapshot may name it a voter).
   */
  'voteFloor': (string);
}
