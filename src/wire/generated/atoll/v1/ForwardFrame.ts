// Original file: proto/atoll/v1/cluster.proto

import type { ForwardCall as _atoll_v1_ForwardCall, ForwardCall__Output as _atoll_v1_ForwardCall__Output } from '../../atoll/v1/ForwardCall.js';

/**
 * Internal. One message of a Peer.ForwardStream from the forwarding node: the calls it started (or
 * cancelled) since its last message. One stream carries every forward from one node to another,
 * each call told apart by call_id (src/peer/forward-stream.ts).
 */
export interface ForwardFrame {
  'calls'?: (_atoll_v1_ForwardCall)[];
}

/**
 * Internal. One message of a Peer.ForwardStream from the forwarding node: the calls it started (or
 * cancelled) since its last message. One stream carries every forward from one node to another,
 * each call told apart by call_id (src/peer/forward-stream.ts).
 */
export interface ForwardFrame__Output {
  'calls': (_atoll_v1_ForwardCall__Output)[];
}
