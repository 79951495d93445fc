// Original file: proto/atoll/v1/cluster.proto


/**
 * A range start merged away: the partition `start` was merged into partition `into`.
 */
export interface MergedStart {
  'start'?: (number);
  'into'?: (number);
}

/**
 * A range start merged away: the partition `start` was merged into partition `into`.
 */
export interface MergedStart__Output {
  'start': (number);
  'into': (number);
}
