// Original file: proto/atoll/v1/kv.proto

import type { GetResponse as _atoll_v1_GetResponse, GetResponse__Output as _atoll_v1_GetResponse__Output } from '../../atoll/v1/GetResponse.js';
import type { PutResponse as _atoll_v1_PutResponse, PutResponse__Output as _atoll_v1_PutResponse__Output } from '../../atoll/v1/PutResponse.js';
import type { DeleteResponse as _atoll_v1_DeleteResponse, DeleteResponse__Output as _atoll_v1_DeleteResponse__Output } from '../../atoll/v1/DeleteResponse.js';
import type { IncrementResponse as _atoll_v1_IncrementResponse, IncrementResponse__Output as _atoll_v1_IncrementResponse__Output } from '../../atoll/v1/IncrementResponse.js';
import type { ExistsResponse as _atoll_v1_ExistsResponse, ExistsResponse__Output as _atoll_v1_ExistsResponse__Output } from '../../atoll/v1/ExistsResponse.js';
import type { ExtendResponse as _atoll_v1_ExtendResponse, ExtendResponse__Output as _atoll_v1_ExtendResponse__Output } from '../../atoll/v1/ExtendResponse.js';
import type { GetByPrefixResponse as _atoll_v1_GetByPrefixResponse, GetByPrefixResponse__Output as _atoll_v1_GetByPrefixResponse__Output } from '../../atoll/v1/GetByPrefixResponse.js';
import type { BeginTransactionResponse as _atoll_v1_BeginTransactionResponse, BeginTransactionResponse__Output as _atoll_v1_BeginTransactionResponse__Output } from '../../atoll/v1/BeginTransactionResponse.js';
import type { CommitResponse as _atoll_v1_CommitResponse, CommitResponse__Output as _atoll_v1_CommitResponse__Output } from '../../atoll/v1/CommitResponse.js';
import type { ExecuteScriptResponse as _atoll_v1_ExecuteScriptResponse, ExecuteScriptResponse__Output as _atoll_v1_ExecuteScriptResponse__Output } from '../../atoll/v1/ExecuteScriptResponse.js';
import type { StreamError as _atoll_v1_StreamError, StreamError__Output as _atoll_v1_StreamError__Output } from '../../atoll/v1/StreamError.js';
import type { LeaseResponse as _atoll_v1_LeaseResponse, LeaseResponse__Output as _atoll_v1_LeaseResponse__Output } from '../../atoll/v1/LeaseResponse.js';
import type { WatchResponse as _atoll_v1_WatchResponse, WatchResponse__Output as _atoll_v1_WatchResponse__Output } from '../../atoll/v1/WatchResponse.js';
import type { Long } from '@grpc/proto-loader';

/**
 * One answer on a KV.Stream.
 */
export interface StreamResponse {
  /**
   * The id of the request this answers. Answers come in completion order, not request order.
   */
  'id'?: (number | string | Long);
  'get'?: (_atoll_v1_GetResponse | null);
  'put'?: (_atoll_v1_PutResponse | null);
  'delete'?: (_atoll_v1_DeleteResponse | null);
  'increment'?: (_atoll_v1_IncrementResponse | null);
  'exists'?: (_atoll_v1_ExistsResponse | null);
  'extend'?: (_atoll_v1_ExtendResponse | null);
  'getByPrefix'?: (_atoll_v1_GetByPrefixResponse | null);
  'beginTransaction'?: (_atoll_v1_BeginTransactionResponse | null);
  'commit'?: (_atoll_v1_CommitResponse | null);
  'executeScript'?: (_atoll_v1_ExecuteScriptResponse | null);
  'error'?: (_atoll_v1_StreamError | null);
  'lease'?: (_atoll_v1_LeaseResponse | null);
  /**
   * One message of the watch this id opened (a request's watch case); many per id.
   */
  'watch'?: (_atoll_v1_WatchResponse | null);
  /**
   * The answer, of the same kind as the request, or an error.
   */
  'result'?: "get"|"put"|"delete"|"increment"|"exists"|"extend"|"getByPrefix"|"beginTransaction"|"commit"|"executeScript"|"error"|"watch"|"lease";
}

/**
 * One answer on a KV.Stream.
 */
export interface StreamResponse__Output {
  /**
   * The id of the request this answers. Answers come in completion order, not request order.
   */
  'id': (string);
  'get'?: (_atoll_v1_GetResponse__Output | null);
  'put'?: (_atoll_v1_PutResponse__Output | null);
  'delete'?: (_atoll_v1_DeleteResponse__Output | null);
  'increment'?: (_atoll_v1_IncrementResponse__Output | null);
  'exists'?: (_atoll_v1_ExistsResponse__Output | null);
  'extend'?: (_atoll_v1_ExtendResponse__Output | null);
  'getByPrefix'?: (_atoll_v1_GetByPrefixResponse__Output | null);
  'beginTransaction'?: (_atoll_v1_BeginTransactionResponse__Output | null);
  'commit'?: (_atoll_v1_CommitResponse__Output | null);
  'executeScript'?: (_atoll_v1_ExecuteScriptResponse__Output | null);
  'error'?: (_atoll_v1_StreamError__Output | null);
  'lease'?: (_atoll_v1_LeaseResponse__Output | null);
  /**
   * One message of the watch this id opened (a request's watch case); many per id.
   */
  'watch'?: (_atoll_v1_WatchResponse__Output | null);
  /**
   * The answer, of the same kind as the request, or an error.
   */
  'result'?: "get"|"put"|"delete"|"increment"|"exists"|"extend"|"getByPrefix"|"beginTransaction"|"commit"|"executeScript"|"error"|"watch"|"lease";
}
