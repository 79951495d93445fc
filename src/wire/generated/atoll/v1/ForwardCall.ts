// Original file: proto/atoll/v1/cluster.proto


/**
 * Internal. One forwarded request, or the cancellation of one.
 */
export interface ForwardCall {
  /**
   * The forwarding node's number for the call, at least 1 and unique among the stream's calls in
   * flight; the reply carries it back.
   */
  'callId'?: (number);
  /**
   * Milliseconds left until the caller's deadline when the call was sent: relative, as gRPC
   * carries a call's deadline (0: none given; the leader then uses its default).
   */
  'timeoutMs'?: (number);
  /**
   * An encoded ForwardRequest: the bytes a unary Peer.Forward carries, which the leader checks
   * and decodes as it does that call's.
   */
  'request'?: (Buffer | Uint8Array | string);
  /**
   * The caller gave up on the call (its signal aborted, or its deadline passed): no reply is
   * wanted, and the leader may stop working on it.
   */
  'cancel'?: (boolean);
  'body'?: "request"|"cancel";
}

/**
 * Internal. One forwarded request, or the cancellation of one.
 */
export interface ForwardCall__Output {
  /**
   * The forwarding node's number for the call, at least 1 and unique among the stream's calls in
   * flight; the reply carries it back.
   */
  'callId': (number);
  /**
   * Milliseconds left until the caller's deadline when the call was sent: relative, as gRPC
   * carries a call's deadline (0: none given; the leader then uses its default).
   */
  'timeoutMs': (number);
  /**
   * An encoded ForwardRequest: the bytes a unary Peer.Forward carries, which the leader checks
   * and decodes as it does that call's.
   */
  'request'?: (Buffer);
  /**
   * The caller gave up on the call (its signal aborted, or its deadline passed): no reply is
   * wanted, and the leader may stop working on it.
   */
  'cancel'?: (boolean);
  'body'?: "request"|"cancel";
}
