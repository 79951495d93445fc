// Original file: proto/atoll/v1/cluster.proto

import type { ForwardRequest as _atoll_v1_ForwardRequest, ForwardRequest__Output as _atoll_v1_ForwardRequest__Output } from '../../atoll/v1/ForwardRequest.js';

/**
 * Internal. One message of a Peer.ForwardStream from the forwarding node: a client request it
 * forwards to the partition's leader, or its cancellation. One stream carries every forward from one
 * node to another, each call told apart by call_id (src/peer/forward-stream.ts).
 */
export interface ForwardFrame {
  /**
   * The forwarding node's number for the call, at least 1 and unique among the stream's calls in
   * flight; the reply carries it back.
   */
  'callId'?: (number);
  /**
   * Milliseconds left until the caller's deadline when the frame was written: relative, as gRPC
   * carries a call's deadline (0: none given; the leader then uses its default).
   */
  'timeoutMs'?: (number);
  /**
   * The request, the message a unary Peer.Forward carries.
   */
  'request'?: (_atoll_v1_ForwardRequest | null);
  /**
   * The caller gave up on the call (its signal aborted, or its deadline passed): no reply is
   * wanted, and the leader may stop working on it.
   */
  'cancel'?: (boolean);
  'body'?: "request"|"cancel";
}

/**
 * Internal. One message of a Peer.ForwardStream from the forwarding node: a client request it
 * forwards to the partition's leader, or its cancellation. One stream carries every forward from one
 * node to another, each call told apart by call_id (src/peer/forward-stream.ts).
 */
export interface ForwardFrame__Output {
  /**
   * The forwarding node's number for the call, at least 1 and unique among the stream's calls in
   * flight; the reply carries it back.
   */
  'callId': (number);
  /**
   * Milliseconds left until the caller's deadline when the frame was written: relative, as gRPC
   * carries a call's deadline (0: none given; the leader then uses its default).
   */
  'timeoutMs': (number);
  /**
   * The request, the message a unary Peer.Forward carries.
   */
  'request'?: (_atoll_v1_ForwardRequest__Output | null);
  /**
   * The caller gave up on the call (its signal aborted, or its deadline passed): no reply is
   * wanted, and the leader may stop working on it.
   */
  'cancel'?: (boolean);
  'body'?: "request"|"cancel";
}
