// Original file: proto/atoll/v1/kv.proto

import type { GetRequest as _atoll_v1_GetRequest, GetRequest__Output as _atoll_v1_GetRequest__Output } from '../../atoll/v1/GetRequest.js';
import type { PutRequest as _atoll_v1_PutRequest, PutRequest__Output as _atoll_v1_PutRequest__Output } from '../../atoll/v1/PutRequest.js';
import type { DeleteRequest as _atoll_v1_DeleteRequest, DeleteRequest__Output as _atoll_v1_DeleteRequest__Output } from '../../atoll/v1/DeleteRequest.js';
import type { IncrementRequest as _atoll_v1_IncrementRequest, IncrementRequest__Output as _atoll_v1_IncrementRequest__Output } from '../../atoll/v1/IncrementRequest.js';
import type { ExistsRequest as _atoll_v1_ExistsRequest, ExistsRequest__Output as _atoll_v1_ExistsRequest__Output } from '../../atoll/v1/ExistsRequest.js';
import type { ExtendRequest as _atoll_v1_ExtendRequest, ExtendRequest__Output as _atoll_v1_ExtendRequest__Output } from '../../atoll/v1/ExtendRequest.js';
import type { GetByPrefixRequest as _atoll_v1_GetByPrefixRequest, GetByPrefixRequest__Output as _atoll_v1_GetByPrefixRequest__Output } from '../../atoll/v1/GetByPrefixRequest.js';
import type { BeginTransactionRequest as _atoll_v1_BeginTransactionRequest, BeginTransactionRequest__Output as _atoll_v1_BeginTransactionRequest__Output } from '../../atoll/v1/BeginTransactionRequest.js';
import type { CommitRequest as _atoll_v1_CommitRequest, CommitRequest__Output as _atoll_v1_CommitRequest__Output } from '../../atoll/v1/CommitRequest.js';
import type { ExecuteScriptRequest as _atoll_v1_ExecuteScriptRequest, ExecuteScriptRequest__Output as _atoll_v1_ExecuteScriptRequest__Output } from '../../atoll/v1/ExecuteScriptRequest.js';
import type { StreamCancel as _atoll_v1_StreamCancel, StreamCancel__Output as _atoll_v1_StreamCancel__Output } from '../../atoll/v1/StreamCancel.js';
import type { LeaseRequest as _atoll_v1_LeaseRequest, LeaseRequest__Output as _atoll_v1_LeaseRequest__Output } from '../../atoll/v1/LeaseRequest.js';
import type { WatchRequest as _atoll_v1_WatchRequest, WatchRequest__Output as _atoll_v1_WatchRequest__Output } from '../../atoll/v1/WatchRequest.js';
import type { Long } from '@grpc/proto-loader';

/**
 * One request on a KV.Stream.
 */
export interface StreamRequest {
  /**
   * Chosen by the client, unique among the stream's outstanding requests; echoed in the answer.
   */
  'id'?: (number | string | Long);
  /**
   * This request's own deadline, in milliseconds from when the server reads it. 0 means the
   * server's default (10 s), capped by the stream's own gRPC deadline if it has one.
   */
  'timeoutMs'?: (number);
  'get'?: (_atoll_v1_GetRequest | null);
  'put'?: (_atoll_v1_PutRequest | null);
  'delete'?: (_atoll_v1_DeleteRequest | null);
  'increment'?: (_atoll_v1_IncrementRequest | null);
  'exists'?: (_atoll_v1_ExistsRequest | null);
  'extend'?: (_atoll_v1_ExtendRequest | null);
  'getByPrefix'?: (_atoll_v1_GetByPrefixRequest | null);
  'beginTransaction'?: (_atoll_v1_BeginTransactionRequest | null);
  'commit'?: (_atoll_v1_CommitRequest | null);
  'executeScript'?: (_atoll_v1_ExecuteScriptRequest | null);
  /**
   * Cancel the outstanding request with this id.
   */
  'cancel'?: (_atoll_v1_StreamCancel | null);
  'lease'?: (_atoll_v1_LeaseRequest | null);
  /**
   * Open a watch (as KV.Watch) on this stream: its messages come back as StreamResponse.watch
   * frames with this id until the client cancels it (StreamCancel with the same id), the stream
   * ends, or it fails (one StreamError frame with this id, e.g. NOT_LEADER or WATCH_OVERFLOW with
   * the revision to resume after). timeout_ms bounds only the watch's start.
   */
  'watch'?: (_atoll_v1_WatchRequest | null);
  /**
   * The operation.
   */
  'request'?: "get"|"put"|"delete"|"increment"|"exists"|"extend"|"getByPrefix"|"beginTransaction"|"commit"|"executeScript"|"cancel"|"watch"|"lease";
}

/**
 * One request on a KV.Stream.
 */
export interface StreamRequest__Output {
  /**
   * Chosen by the client, unique among the stream's outstanding requests; echoed in the answer.
   */
  'id': (string);
  /**
   * This request's own deadline, in milliseconds from when the server reads it. 0 means the
   * server's default (10 s), capped by the stream's own gRPC deadline if it has one.
   */
  'timeoutMs': (number);
  'get'?: (_atoll_v1_GetRequest__Output | null);
  'put'?: (_atoll_v1_PutRequest__Output | null);
  'delete'?: (_atoll_v1_DeleteRequest__Output | null);
  'increment'?: (_atoll_v1_IncrementRequest__Output | null);
  'exists'?: (_atoll_v1_ExistsRequest__Output | null);
  'extend'?: (_atoll_v1_ExtendRequest__Output | null);
  'getByPrefix'?: (_atoll_v1_GetByPrefixRequest__Output | null);
  'beginTransaction'?: (_atoll_v1_BeginTransactionRequest__Output | null);
  'commit'?: (_atoll_v1_CommitRequest__Output | null);
  'executeScript'?: (_atoll_v1_ExecuteScriptRequest__Output | null);
  /**
   * Cancel the outstanding request with this id.
   */
  'cancel'?: (_atoll_v1_StreamCancel__Output | null);
  'lease'?: (_atoll_v1_LeaseRequest__Output | null);
  /**
   * Open a watch (as KV.Watch) on this stream: its messages come back as StreamResponse.watch
   * frames with this id until the client cancels it (StreamCancel with the same id), the stream
   * ends, or it fails (one StreamError frame with this id, e.g. NOT_LEADER or WATCH_OVERFLOW with
   * the revision to resume after). timeout_ms bounds only the watch's start.
   */
  'watch'?: (_atoll_v1_WatchRequest__Output | null);
  /**
   * The operation.
   */
  'request'?: "get"|"put"|"delete"|"increment"|"exists"|"extend"|"getByPrefix"|"beginTransaction"|"commit"|"executeScript"|"cancel"|"watch"|"lease";
}
