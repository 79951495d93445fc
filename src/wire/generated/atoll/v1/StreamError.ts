// Original file: proto/atoll/v1/kv.proto

import type { Long } from '@grpc/proto-loader';

/**
 * The failure of one request on a KV.Stream; the stream itself stays open.
 */
export interface StreamError {
  /**
   * Atoll's stable error code, as in the `atoll-code` metadata of a unary call.
   */
  'code'?: (string);
  /**
   * A message for people; it may change between versions.
   */
  'message'?: (string);
  /**
   * The numeric gRPC status the same failure has in a unary call.
   */
  'grpcStatus'?: (number);
  /**
   * For NOT_LEADER / NO_LEADER: the leader's host:port when one is known, else empty.
   */
  'leaderHint'?: (string);
  /**
   * For NOT_LEADER / NO_LEADER: the leader's node id when one is known, else 0.
   */
  'leaderId'?: (number);
  /**
   * True when the request certainly was not applied (it never reached a node that could apply it),
   * so even a write may be retried. Unary calls carry the same fact as `atoll-not-applied: true`.
   */
  'notApplied'?: (boolean);
  /**
   * For a watch's COMPACTED: the oldest watchable start revision (else 0).
   */
  'compactedRevision'?: (number | string | Long);
  /**
   * For a watch's WATCH_OVERFLOW: the last revision sent; watch again after it (else 0).
   */
  'resumeRevision'?: (number | string | Long);
  /**
   * Why, in a short lowercase word, as the `atoll-reason` metadata of a unary call (for example
   * `watch-memory` on a RESOURCE_EXHAUSTED watch: retry after a pause); else empty.
   */
  'reason'?: (string);
}

/**
 * The failure of one request on a KV.Stream; the stream itself stays open.
 */
export interface StreamError__Output {
  /**
   * Atoll's stable error code, as in the `atoll-code` metadata of a unary call.
   */
  'code': (string);
  /**
   * A message for people; it may change between versions.
   */
  'message': (string);
  /**
   * The numeric gRPC status the same failure has in a unary call.
   */
  'grpcStatus': (number);
  /**
   * For NOT_LEADER / NO_LEADER: the leader's host:port when one is known, else empty.
   */
  'leaderHint': (string);
  /**
   * For NOT_LEADER / NO_LEADER: the leader's node id when one is known, else 0.
   */
  'leaderId': (number);
  /**
   * True when the request certainly was not applied (it never reached a node that could apply it),
   * so even a write may be retried. Unary calls carry the same fact as `atoll-not-applied: true`.
   */
  'notApplied': (boolean);
  /**
   * For a watch's COMPACTED: the oldest watchable start revision (else 0).
   */
  'compactedRevision': (string);
  /**
   * For a watch's WATCH_OVERFLOW: the last revision sent; watch again after it (else 0).
   */
  'resumeRevision': (string);
  /**
   * Why, in a short lowercase word, as the `atoll-reason` metadata of a unary call (for example
   * `watch-memory` on a RESOURCE_EXHAUSTED watch: retry after a pause); else empty.
   */
  'reason': (string);
}
