// Original file: proto/atoll/v1/cluster.proto

import type { ForwardResponse as _atoll_v1_ForwardResponse, ForwardResponse__Output as _atoll_v1_ForwardResponse__Output } from '../../atoll/v1/ForwardResponse.js';
import type { ForwardStatus as _atoll_v1_ForwardStatus, ForwardStatus__Output as _atoll_v1_ForwardStatus__Output } from '../../atoll/v1/ForwardStatus.js';

/**
 * Internal. The answer to one ForwardCall.
 */
export interface ForwardReply {
  /**
   * The call_id of the ForwardCall answered.
   */
  'callId'?: (number);
  'response'?: (_atoll_v1_ForwardResponse | null);
  /**
   * The status a unary Peer.Forward would have failed with.
   */
  'error'?: (_atoll_v1_ForwardStatus | null);
  'body'?: "response"|"error";
}

/**
 * Internal. The answer to one ForwardCall.
 */
export interface ForwardReply__Output {
  /**
   * The call_id of the ForwardCall answered.
   */
  'callId': (number);
  'response'?: (_atoll_v1_ForwardResponse__Output | null);
  /**
   * The status a unary Peer.Forward would have failed with.
   */
  'error'?: (_atoll_v1_ForwardStatus__Output | null);
  'body'?: "response"|"error";
}
