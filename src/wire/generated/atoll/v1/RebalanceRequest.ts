// Original file: proto/atoll/v1/cluster.proto


/**
 * Pauses or resumes the rebalancer, or reports it (cluster admin only when authentication is on).
 * "pause" and "resume" flip a replicated flag, so they survive leader changes and restarts; a move
 * already running when it pauses finishes, no new one starts. "status" changes nothing.
 */
export interface RebalanceRequest {
  /**
   * "pause", "resume" or "status".
   */
  'action'?: (string);
}

/**
 * Pauses or resumes the rebalancer, or reports it (cluster admin only when authentication is on).
 * "pause" and "resume" flip a replicated flag, so they survive leader changes and restarts; a move
 * already running when it pauses finishes, no new one starts. "status" changes nothing.
 */
export interface RebalanceRequest__Output {
  /**
   * "pause", "resume" or "status".
   */
  'action': (string);
}
