// Original file: proto/atoll/v1/cluster.proto


/**
 * One replica move the rebalancer assigned and has not yet seen finished.
 */
export interface RebalanceMove {
  'partition'?: (number);
  'fromNode'?: (number);
  'toNode'?: (number);
}

/**
 * One replica move the rebalancer assigned and has not yet seen finished.
 */
export interface RebalanceMove__Output {
  'partition': (number);
  'fromNode': (number);
  'toNode': (number);
}
