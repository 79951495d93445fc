// Original file: proto/atoll/v1/cluster.proto

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
import type { LeaseRequest as _atoll_v1_LeaseRequest, LeaseRequest__Output as _atoll_v1_LeaseRequest__Output } from '../../atoll/v1/LeaseRequest.js';

/**
 * Internal. A client request forwarded to the partition's leader.
 */
export interface ForwardRequest {
  /**
   * How many nodes already forwarded this request; bounded to stop forwarding loops.
   */
  'hops'?: (number);
  /**
   * The caller's tenant, as the node that authenticated the call found it (empty: "default").
   * The request's keys are already in that tenant's internal form (but in the *_as_sent cases).
   */
  'tenant'?: (string);
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
  'lease'?: (_atoll_v1_LeaseRequest | null);
  /**
   * The same requests as the caller sent them: the bytes the node that received the call got,
   * not encoded again. Their keys and request ids are in the caller's form; the leader moves
   * them into `tenant` itself. (A node older than these fields refuses them: no request case.)
   */
  'getAsSent'?: (_atoll_v1_GetRequest | null);
  'putAsSent'?: (_atoll_v1_PutRequest | null);
  'deleteAsSent'?: (_atoll_v1_DeleteRequest | null);
  'incrementAsSent'?: (_atoll_v1_IncrementRequest | null);
  'existsAsSent'?: (_atoll_v1_ExistsRequest | null);
  'extendAsSent'?: (_atoll_v1_ExtendRequest | null);
  'getByPrefixAsSent'?: (_atoll_v1_GetByPrefixRequest | null);
  'beginTransactionAsSent'?: (_atoll_v1_BeginTransactionRequest | null);
  'commitAsSent'?: (_atoll_v1_CommitRequest | null);
  'executeScriptAsSent'?: (_atoll_v1_ExecuteScriptRequest | null);
  'leaseAsSent'?: (_atoll_v1_LeaseRequest | null);
  'request'?: "get"|"put"|"delete"|"increment"|"exists"|"extend"|"getByPrefix"|"beginTransaction"|"commit"|"executeScript"|"lease"|"getAsSent"|"putAsSent"|"deleteAsSent"|"incrementAsSent"|"existsAsSent"|"extendAsSent"|"getByPrefixAsSent"|"beginTransactionAsSent"|"commitAsSent"|"executeScriptAsSent"|"leaseAsSent";
}

/**
 * Internal. A client request forwarded to the partition's leader.
 */
export interface ForwardRequest__Output {
  /**
   * How many nodes already forwarded this request; bounded to stop forwarding loops.
   */
  'hops': (number);
  /**
   * The caller's tenant, as the node that authenticated the call found it (empty: "default").
   * The request's keys are already in that tenant's internal form (but in the *_as_sent cases).
   */
  'tenant': (string);
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
  'lease'?: (_atoll_v1_LeaseRequest__Output | null);
  /**
   * The same requests as the caller sent them: the bytes the node that received the call got,
   * not encoded again. Their keys and request ids are in the caller's form; the leader moves
   * them into `tenant` itself. (A node older than these fields refuses them: no request case.)
   */
  'getAsSent'?: (_atoll_v1_GetRequest__Output | null);
  'putAsSent'?: (_atoll_v1_PutRequest__Output | null);
  'deleteAsSent'?: (_atoll_v1_DeleteRequest__Output | null);
  'incrementAsSent'?: (_atoll_v1_IncrementRequest__Output | null);
  'existsAsSent'?: (_atoll_v1_ExistsRequest__Output | null);
  'extendAsSent'?: (_atoll_v1_ExtendRequest__Output | null);
  'getByPrefixAsSent'?: (_atoll_v1_GetByPrefixRequest__Output | null);
  'beginTransactionAsSent'?: (_atoll_v1_BeginTransactionRequest__Output | null);
  'commitAsSent'?: (_atoll_v1_CommitRequest__Output | null);
  'executeScriptAsSent'?: (_atoll_v1_ExecuteScriptRequest__Output | null);
  'leaseAsSent'?: (_atoll_v1_LeaseRequest__Output | null);
  'request'?: "get"|"put"|"delete"|"increment"|"exists"|"extend"|"getByPrefix"|"beginTransaction"|"commit"|"executeScript"|"lease"|"getAsSent"|"putAsSent"|"deleteAsSent"|"incrementAsSent"|"existsAsSent"|"extendAsSent"|"getByPrefixAsSent"|"beginTransactionAsSent"|"commitAsSent"|"executeScriptAsSent"|"leaseAsSent";
}
