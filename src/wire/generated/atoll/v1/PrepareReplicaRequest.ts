// Original file: proto/atoll/v1/cluster.proto

import type { Long } from '@grpc/proto-loader';

/**
 * Internal. A partition's leader asks this node to open an empty replica of the partition, which the
 * leader then adds as a learner and catches up by snapshot (a replica move's first step).
 */
export interface PrepareReplicaRequest {
  'partition'?: (number);
  /**
   * The leader's term and commit index when it asked: the new replica votes for, and campaigns with,
   * only a log at or past that position (node ids are Raft ids, so a stale snapshot may name it a voter).
   */
  'voteFloorTerm'?: (number | string | Long);
  'voteFloorIndex'?: (number | string | Long);
}

/**
 * Internal. A partition's leader asks this node to open an empty replica of the partition, which the
 * leader then adds as a learner and catches up by snapshot (a replica move's first step).
 */
export interface PrepareReplicaRequest__Output {
  'partition': (number);
  /**
   * The leader's term and commit index when it asked: the new replica votes for, and campaigns with,
   * only a log at or past that position (node ids are Raft ids, so a stale snapshot may name it a voter).
   */
  'voteFloorTerm': (string);
  'voteFloorIndex': (string);
}
