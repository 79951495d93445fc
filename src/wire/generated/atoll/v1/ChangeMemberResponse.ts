// Original file: proto/atoll/v1/cluster.proto

import type { NodeInfo as _atoll_v1_NodeInfo, NodeInfo__Output as _atoll_v1_NodeInfo__Output } from '../../atoll/v1/NodeInfo.js';
import type { Long } from '@grpc/proto-loader';

export interface ChangeMemberResponse {
  /**
   * The member table's version after the change.
   */
  'version'?: (number | string | Long);
  /**
   * Every member that is not removed, as ClusterInfo lists them.
   */
  'members'?: (_atoll_v1_NodeInfo)[];
}

export interface ChangeMemberResponse__Output {
  /**
   * The member table's version after the change.
   */
  'version': (string);
  /**
   * Every member that is not removed, as ClusterInfo lists them.
   */
  'members': (_atoll_v1_NodeInfo__Output)[];
}
