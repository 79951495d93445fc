// Original file: proto/atoll/v1/cluster.proto

import type { ForwardReply as _atoll_v1_ForwardReply, ForwardReply__Output as _atoll_v1_ForwardReply__Output } from '../../atoll/v1/ForwardReply.js';

/**
 * Internal. One message of a Peer.ForwardStream from the leader: answers to calls of the stream,
 * in the order they were ready (none to a cancelled call).
 */
export interface ForwardReplyFrame {
  'replies'?: (_atoll_v1_ForwardReply)[];
}

/**
 * Internal. One message of a Peer.ForwardStream from the leader: answers to calls of the stream,
 * in the order they were ready (none to a cancelled call).
 */
export interface ForwardReplyFrame__Output {
  'replies': (_atoll_v1_ForwardReply__Output)[];
}
