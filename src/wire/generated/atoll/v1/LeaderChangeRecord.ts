// Original file: proto/atoll/v1/cluster.proto

import type { Long } from '@grpc/proto-loader';

/**
 * One leader change a node's replicas saw (src/node/service/leader-changes.ts).
 */
export interface LeaderChangeRecord {
  'partition'?: (number);
  /**
   * The last leader the node knew before the change (0: none yet).
   */
  'fromNode'?: (number);
  'toNode'?: (number);
  'term'?: (number | string | Long);
  /**
   * Wall-clock Unix epoch milliseconds when the node saw it.
   */
  'atMs'?: (number | string | Long);
}

/**
 * One leader change a node's replicas saw (src/node/service/leader-changes.ts).
 */
export interface LeaderChangeRecord__Output {
  'partition': (number);
  /**
   * The last leader the node knew before the change (0: none yet).
   */
  'fromNode': (number);
  'toNode': (number);
  'term': (string);
  /**
   * Wall-clock Unix epoch milliseconds when the node saw it.
   */
  'atMs': (string);
}
