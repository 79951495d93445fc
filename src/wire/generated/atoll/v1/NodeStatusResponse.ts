// Original file: proto/atoll/v1/cluster.proto

import type { ClusterInfoResponse as _atoll_v1_ClusterInfoResponse, ClusterInfoResponse__Output as _atoll_v1_ClusterInfoResponse__Output } from '../../atoll/v1/ClusterInfoResponse.js';
import type { LeaderChangeRecord as _atoll_v1_LeaderChangeRecord, LeaderChangeRecord__Output as _atoll_v1_LeaderChangeRecord__Output } from '../../atoll/v1/LeaderChangeRecord.js';

export interface NodeStatusResponse {
  'nodeId'?: (number);
  /**
   * Its /readyz verdict, and the reasons when not ready.
   */
  'ready'?: (boolean);
  'problems'?: (string)[];
  /**
   * Its ClusterInfo with every tenant's hot keys (the page needs the cluster admin token).
   */
  'info'?: (_atoll_v1_ClusterInfoResponse | null);
  /**
   * Its replicas' recent leader changes, oldest first.
   */
  'leaderChanges'?: (_atoll_v1_LeaderChangeRecord)[];
}

export interface NodeStatusResponse__Output {
  'nodeId': (number);
  /**
   * Its /readyz verdict, and the reasons when not ready.
   */
  'ready': (boolean);
  'problems': (string)[];
  /**
   * Its ClusterInfo with every tenant's hot keys (the page needs the cluster admin token).
   */
  'info': (_atoll_v1_ClusterInfoResponse__Output | null);
  /**
   * Its replicas' recent leader changes, oldest first.
   */
  'leaderChanges': (_atoll_v1_LeaderChangeRecord__Output)[];
}
