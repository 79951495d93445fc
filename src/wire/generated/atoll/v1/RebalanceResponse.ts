// Original file: proto/atoll/v1/cluster.proto

import type { RebalanceMove as _atoll_v1_RebalanceMove, RebalanceMove__Output as _atoll_v1_RebalanceMove__Output } from '../../atoll/v1/RebalanceMove.js';
import type { PlannedLeader as _atoll_v1_PlannedLeader, PlannedLeader__Output as _atoll_v1_PlannedLeader__Output } from '../../atoll/v1/PlannedLeader.js';
import type { Long } from '@grpc/proto-loader';

export interface RebalanceResponse {
  /**
   * "paused", "running" (moves assigned) or "idle".
   */
  'state'?: (string);
  'paused'?: (boolean);
  /**
   * The rebalancer record's version.
   */
  'version'?: (number | string | Long);
  'moves'?: (_atoll_v1_RebalanceMove)[];
  /**
   * The leader the rebalancer planned for each partition it planned one for (the node the leader
   * balancer moves leadership to); frozen while paused.
   */
  'plannedLeaders'?: (_atoll_v1_PlannedLeader)[];
}

export interface RebalanceResponse__Output {
  /**
   * "paused", "running" (moves assigned) or "idle".
   */
  'state': (string);
  'paused': (boolean);
  /**
   * The rebalancer record's version.
   */
  'version': (string);
  'moves': (_atoll_v1_RebalanceMove__Output)[];
  /**
   * The leader the rebalancer planned for each partition it planned one for (the node the leader
   * balancer moves leadership to); frozen while paused.
   */
  'plannedLeaders': (_atoll_v1_PlannedLeader__Output)[];
}
