// Original file: proto/atoll/v1/kv.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { BeginTransactionRequest as _atoll_v1_BeginTransactionRequest, BeginTransactionRequest__Output as _atoll_v1_BeginTransactionRequest__Output } from '../../atoll/v1/BeginTransactionRequest.js';
import type { BeginTransactionResponse as _atoll_v1_BeginTransactionResponse, BeginTransactionResponse__Output as _atoll_v1_BeginTransactionResponse__Output } from '../../atoll/v1/BeginTransactionResponse.js';
import type { CommitRequest as _atoll_v1_CommitRequest, CommitRequest__Output as _atoll_v1_CommitRequest__Output } from '../../atoll/v1/CommitRequest.js';
import type { CommitResponse as _atoll_v1_CommitResponse, CommitResponse__Output as _atoll_v1_CommitResponse__Output } from '../../atoll/v1/CommitResponse.js';
import type { DeleteRequest as _atoll_v1_DeleteRequest, DeleteRequest__Output as _atoll_v1_DeleteRequest__Output } from '../../atoll/v1/DeleteRequest.js';
import type { DeleteResponse as _atoll_v1_DeleteResponse, DeleteResponse__Output as _atoll_v1_DeleteResponse__Output } from '../../atoll/v1/DeleteResponse.js';
import type { ExecuteScriptRequest as _atoll_v1_ExecuteScriptRequest, ExecuteScriptRequest__Output as _atoll_v1_ExecuteScriptRequest__Output } from '../../atoll/v1/ExecuteScriptRequest.js';
import type { ExecuteScriptResponse as _atoll_v1_ExecuteScriptResponse, ExecuteScriptResponse__Output as _atoll_v1_ExecuteScriptResponse__Output } from '../../atoll/v1/ExecuteScriptResponse.js';
import type { ExistsRequest as _atoll_v1_ExistsRequest, ExistsRequest__Output as _atoll_v1_ExistsRequest__Output } from '../../atoll/v1/ExistsRequest.js';
import type { ExistsResponse as _atoll_v1_ExistsResponse, ExistsResponse__Output as _atoll_v1_ExistsResponse__Output } from '../../atoll/v1/ExistsResponse.js';
import type { ExtendRequest as _atoll_v1_ExtendRequest, ExtendRequest__Output as _atoll_v1_ExtendRequest__Output } from '../../atoll/v1/ExtendRequest.js';
import type { ExtendResponse as _atoll_v1_ExtendResponse, ExtendResponse__Output as _atoll_v1_ExtendResponse__Output } from '../../atoll/v1/ExtendResponse.js';
import type { GetByPrefixRequest as _atoll_v1_GetByPrefixRequest, GetByPrefixRequest__Output as _atoll_v1_GetByPrefixRequest__Output } from '../../atoll/v1/GetByPrefixRequest.js';
import type { GetByPrefixResponse as _atoll_v1_GetByPrefixResponse, GetByPrefixResponse__Output as _atoll_v1_GetByPrefixResponse__Output } from '../../atoll/v1/GetByPrefixResponse.js';
import type { GetRequest as _atoll_v1_GetRequest, GetRequest__Output as _atoll_v1_GetRequest__Output } from '../../atoll/v1/GetRequest.js';
import type { GetResponse as _atoll_v1_GetResponse, GetResponse__Output as _atoll_v1_GetResponse__Output } from '../../atoll/v1/GetResponse.js';
import type { IncrementRequest as _atoll_v1_IncrementRequest, IncrementRequest__Output as _atoll_v1_IncrementRequest__Output } from '../../atoll/v1/IncrementRequest.js';
import type { IncrementResponse as _atoll_v1_IncrementResponse, IncrementResponse__Output as _atoll_v1_IncrementResponse__Output } from '../../atoll/v1/IncrementResponse.js';
import type { LeaseRequest as _atoll_v1_LeaseRequest, LeaseRequest__Output as _atoll_v1_LeaseRequest__Output } from '../../atoll/v1/LeaseRequest.js';
import type { LeaseResponse as _atoll_v1_LeaseResponse, LeaseResponse__Output as _atoll_v1_LeaseResponse__Output } from '../../atoll/v1/LeaseResponse.js';
import type { PutRequest as _atoll_v1_PutRequest, PutRequest__Output as _atoll_v1_PutRequest__Output } from '../../atoll/v1/PutRequest.js';
import type { PutResponse as _atoll_v1_PutResponse, PutResponse__Output as _atoll_v1_PutResponse__Output } from '../../atoll/v1/PutResponse.js';
import type { StreamRequest as _atoll_v1_StreamRequest, StreamRequest__Output as _atoll_v1_StreamRequest__Output } from '../../atoll/v1/StreamRequest.js';
import type { StreamResponse as _atoll_v1_StreamResponse, StreamResponse__Output as _atoll_v1_StreamResponse__Output } from '../../atoll/v1/StreamResponse.js';
import type { WatchRequest as _atoll_v1_WatchRequest, WatchRequest__Output as _atoll_v1_WatchRequest__Output } from '../../atoll/v1/WatchRequest.js';
import type { WatchResponse as _atoll_v1_WatchResponse, WatchResponse__Output as _atoll_v1_WatchResponse__Output } from '../../atoll/v1/WatchResponse.js';

export interface KVClient extends grpc.Client {
  /**
   * Many requests over one long-lived stream: each StreamRequest gets exactly one StreamResponse
   * with the same id (unless cancelled), in completion order. Each request has its own deadline.
   * Closing the sending side ends the stream once every outstanding request has been answered.
   * This is the fast path: one stream multiplexes any number of concurrent requests.
   * Starts a snapshot transaction over one bucket's partition (a linearizable read of its revision).
   */
  BeginTransaction(argument: _atoll_v1_BeginTransactionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_BeginTransactionResponse__Output>): grpc.ClientUnaryCall;
  BeginTransaction(argument: _atoll_v1_BeginTransactionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_BeginTransactionResponse__Output>): grpc.ClientUnaryCall;
  BeginTransaction(argument: _atoll_v1_BeginTransactionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_BeginTransactionResponse__Output>): grpc.ClientUnaryCall;
  BeginTransaction(argument: _atoll_v1_BeginTransactionRequest, callback: grpc.requestCallback<_atoll_v1_BeginTransactionResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Many requests over one long-lived stream: each StreamRequest gets exactly one StreamResponse
   * with the same id (unless cancelled), in completion order. Each request has its own deadline.
   * Closing the sending side ends the stream once every outstanding request has been answered.
   * This is the fast path: one stream multiplexes any number of concurrent requests.
   * Starts a snapshot transaction over one bucket's partition (a linearizable read of its revision).
   */
  beginTransaction(argument: _atoll_v1_BeginTransactionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_BeginTransactionResponse__Output>): grpc.ClientUnaryCall;
  beginTransaction(argument: _atoll_v1_BeginTransactionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_BeginTransactionResponse__Output>): grpc.ClientUnaryCall;
  beginTransaction(argument: _atoll_v1_BeginTransactionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_BeginTransactionResponse__Output>): grpc.ClientUnaryCall;
  beginTransaction(argument: _atoll_v1_BeginTransactionRequest, callback: grpc.requestCallback<_atoll_v1_BeginTransactionResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Validates and applies a transaction's writes atomically, or fails with ABORTED (TXN_CONFLICT).
   */
  Commit(argument: _atoll_v1_CommitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_CommitResponse__Output>): grpc.ClientUnaryCall;
  Commit(argument: _atoll_v1_CommitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_CommitResponse__Output>): grpc.ClientUnaryCall;
  Commit(argument: _atoll_v1_CommitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_CommitResponse__Output>): grpc.ClientUnaryCall;
  Commit(argument: _atoll_v1_CommitRequest, callback: grpc.requestCallback<_atoll_v1_CommitResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Validates and applies a transaction's writes atomically, or fails with ABORTED (TXN_CONFLICT).
   */
  commit(argument: _atoll_v1_CommitRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_CommitResponse__Output>): grpc.ClientUnaryCall;
  commit(argument: _atoll_v1_CommitRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_CommitResponse__Output>): grpc.ClientUnaryCall;
  commit(argument: _atoll_v1_CommitRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_CommitResponse__Output>): grpc.ClientUnaryCall;
  commit(argument: _atoll_v1_CommitRequest, callback: grpc.requestCallback<_atoll_v1_CommitResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Deletes one key, optionally with a condition.
   */
  Delete(argument: _atoll_v1_DeleteRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  Delete(argument: _atoll_v1_DeleteRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  Delete(argument: _atoll_v1_DeleteRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  Delete(argument: _atoll_v1_DeleteRequest, callback: grpc.requestCallback<_atoll_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Deletes one key, optionally with a condition.
   */
  delete(argument: _atoll_v1_DeleteRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  delete(argument: _atoll_v1_DeleteRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  delete(argument: _atoll_v1_DeleteRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  delete(argument: _atoll_v1_DeleteRequest, callback: grpc.requestCallback<_atoll_v1_DeleteResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Evaluates a script transaction at the partition's leader and commits it atomically.
   */
  ExecuteScript(argument: _atoll_v1_ExecuteScriptRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExecuteScriptResponse__Output>): grpc.ClientUnaryCall;
  ExecuteScript(argument: _atoll_v1_ExecuteScriptRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ExecuteScriptResponse__Output>): grpc.ClientUnaryCall;
  ExecuteScript(argument: _atoll_v1_ExecuteScriptRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExecuteScriptResponse__Output>): grpc.ClientUnaryCall;
  ExecuteScript(argument: _atoll_v1_ExecuteScriptRequest, callback: grpc.requestCallback<_atoll_v1_ExecuteScriptResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Evaluates a script transaction at the partition's leader and commits it atomically.
   */
  executeScript(argument: _atoll_v1_ExecuteScriptRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExecuteScriptResponse__Output>): grpc.ClientUnaryCall;
  executeScript(argument: _atoll_v1_ExecuteScriptRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ExecuteScriptResponse__Output>): grpc.ClientUnaryCall;
  executeScript(argument: _atoll_v1_ExecuteScriptRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExecuteScriptResponse__Output>): grpc.ClientUnaryCall;
  executeScript(argument: _atoll_v1_ExecuteScriptRequest, callback: grpc.requestCallback<_atoll_v1_ExecuteScriptResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Tells whether a key is present.
   */
  Exists(argument: _atoll_v1_ExistsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExistsResponse__Output>): grpc.ClientUnaryCall;
  Exists(argument: _atoll_v1_ExistsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ExistsResponse__Output>): grpc.ClientUnaryCall;
  Exists(argument: _atoll_v1_ExistsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExistsResponse__Output>): grpc.ClientUnaryCall;
  Exists(argument: _atoll_v1_ExistsRequest, callback: grpc.requestCallback<_atoll_v1_ExistsResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Tells whether a key is present.
   */
  exists(argument: _atoll_v1_ExistsRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExistsResponse__Output>): grpc.ClientUnaryCall;
  exists(argument: _atoll_v1_ExistsRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ExistsResponse__Output>): grpc.ClientUnaryCall;
  exists(argument: _atoll_v1_ExistsRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExistsResponse__Output>): grpc.ClientUnaryCall;
  exists(argument: _atoll_v1_ExistsRequest, callback: grpc.requestCallback<_atoll_v1_ExistsResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Sets a new expiry on a present key.
   */
  Extend(argument: _atoll_v1_ExtendRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExtendResponse__Output>): grpc.ClientUnaryCall;
  Extend(argument: _atoll_v1_ExtendRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ExtendResponse__Output>): grpc.ClientUnaryCall;
  Extend(argument: _atoll_v1_ExtendRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExtendResponse__Output>): grpc.ClientUnaryCall;
  Extend(argument: _atoll_v1_ExtendRequest, callback: grpc.requestCallback<_atoll_v1_ExtendResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Sets a new expiry on a present key.
   */
  extend(argument: _atoll_v1_ExtendRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExtendResponse__Output>): grpc.ClientUnaryCall;
  extend(argument: _atoll_v1_ExtendRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ExtendResponse__Output>): grpc.ClientUnaryCall;
  extend(argument: _atoll_v1_ExtendRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ExtendResponse__Output>): grpc.ClientUnaryCall;
  extend(argument: _atoll_v1_ExtendRequest, callback: grpc.requestCallback<_atoll_v1_ExtendResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Reads one key.
   */
  Get(argument: _atoll_v1_GetRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetResponse__Output>): grpc.ClientUnaryCall;
  Get(argument: _atoll_v1_GetRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_GetResponse__Output>): grpc.ClientUnaryCall;
  Get(argument: _atoll_v1_GetRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetResponse__Output>): grpc.ClientUnaryCall;
  Get(argument: _atoll_v1_GetRequest, callback: grpc.requestCallback<_atoll_v1_GetResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Reads one key.
   */
  get(argument: _atoll_v1_GetRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetResponse__Output>): grpc.ClientUnaryCall;
  get(argument: _atoll_v1_GetRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_GetResponse__Output>): grpc.ClientUnaryCall;
  get(argument: _atoll_v1_GetRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetResponse__Output>): grpc.ClientUnaryCall;
  get(argument: _atoll_v1_GetRequest, callback: grpc.requestCallback<_atoll_v1_GetResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Reads one page of the keys under a prefix inside one bucket.
   */
  GetByPrefix(argument: _atoll_v1_GetByPrefixRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetByPrefixResponse__Output>): grpc.ClientUnaryCall;
  GetByPrefix(argument: _atoll_v1_GetByPrefixRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_GetByPrefixResponse__Output>): grpc.ClientUnaryCall;
  GetByPrefix(argument: _atoll_v1_GetByPrefixRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetByPrefixResponse__Output>): grpc.ClientUnaryCall;
  GetByPrefix(argument: _atoll_v1_GetByPrefixRequest, callback: grpc.requestCallback<_atoll_v1_GetByPrefixResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Reads one page of the keys under a prefix inside one bucket.
   */
  getByPrefix(argument: _atoll_v1_GetByPrefixRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetByPrefixResponse__Output>): grpc.ClientUnaryCall;
  getByPrefix(argument: _atoll_v1_GetByPrefixRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_GetByPrefixResponse__Output>): grpc.ClientUnaryCall;
  getByPrefix(argument: _atoll_v1_GetByPrefixRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_GetByPrefixResponse__Output>): grpc.ClientUnaryCall;
  getByPrefix(argument: _atoll_v1_GetByPrefixRequest, callback: grpc.requestCallback<_atoll_v1_GetByPrefixResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Adds to a 64-bit counter atomically.
   */
  Increment(argument: _atoll_v1_IncrementRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_IncrementResponse__Output>): grpc.ClientUnaryCall;
  Increment(argument: _atoll_v1_IncrementRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_IncrementResponse__Output>): grpc.ClientUnaryCall;
  Increment(argument: _atoll_v1_IncrementRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_IncrementResponse__Output>): grpc.ClientUnaryCall;
  Increment(argument: _atoll_v1_IncrementRequest, callback: grpc.requestCallback<_atoll_v1_IncrementResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Adds to a 64-bit counter atomically.
   */
  increment(argument: _atoll_v1_IncrementRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_IncrementResponse__Output>): grpc.ClientUnaryCall;
  increment(argument: _atoll_v1_IncrementRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_IncrementResponse__Output>): grpc.ClientUnaryCall;
  increment(argument: _atoll_v1_IncrementRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_IncrementResponse__Output>): grpc.ClientUnaryCall;
  increment(argument: _atoll_v1_IncrementRequest, callback: grpc.requestCallback<_atoll_v1_IncrementResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Grants, keeps alive, revokes or describes a lease (LeaseRequest.action). Served by the lease's
   * partition leader; keys attached to a lease are deleted together when it ends.
   */
  Lease(argument: _atoll_v1_LeaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_LeaseResponse__Output>): grpc.ClientUnaryCall;
  Lease(argument: _atoll_v1_LeaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_LeaseResponse__Output>): grpc.ClientUnaryCall;
  Lease(argument: _atoll_v1_LeaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_LeaseResponse__Output>): grpc.ClientUnaryCall;
  Lease(argument: _atoll_v1_LeaseRequest, callback: grpc.requestCallback<_atoll_v1_LeaseResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Grants, keeps alive, revokes or describes a lease (LeaseRequest.action). Served by the lease's
   * partition leader; keys attached to a lease are deleted together when it ends.
   */
  lease(argument: _atoll_v1_LeaseRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_LeaseResponse__Output>): grpc.ClientUnaryCall;
  lease(argument: _atoll_v1_LeaseRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_LeaseResponse__Output>): grpc.ClientUnaryCall;
  lease(argument: _atoll_v1_LeaseRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_LeaseResponse__Output>): grpc.ClientUnaryCall;
  lease(argument: _atoll_v1_LeaseRequest, callback: grpc.requestCallback<_atoll_v1_LeaseResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Writes one key, optionally with a TTL and a condition.
   */
  Put(argument: _atoll_v1_PutRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_PutResponse__Output>): grpc.ClientUnaryCall;
  Put(argument: _atoll_v1_PutRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_PutResponse__Output>): grpc.ClientUnaryCall;
  Put(argument: _atoll_v1_PutRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_PutResponse__Output>): grpc.ClientUnaryCall;
  Put(argument: _atoll_v1_PutRequest, callback: grpc.requestCallback<_atoll_v1_PutResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Writes one key, optionally with a TTL and a condition.
   */
  put(argument: _atoll_v1_PutRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_PutResponse__Output>): grpc.ClientUnaryCall;
  put(argument: _atoll_v1_PutRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_PutResponse__Output>): grpc.ClientUnaryCall;
  put(argument: _atoll_v1_PutRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_PutResponse__Output>): grpc.ClientUnaryCall;
  put(argument: _atoll_v1_PutRequest, callback: grpc.requestCallback<_atoll_v1_PutResponse__Output>): grpc.ClientUnaryCall;
  
  Stream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_atoll_v1_StreamRequest, _atoll_v1_StreamResponse__Output>;
  Stream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_atoll_v1_StreamRequest, _atoll_v1_StreamResponse__Output>;
  stream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_atoll_v1_StreamRequest, _atoll_v1_StreamResponse__Output>;
  stream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_atoll_v1_StreamRequest, _atoll_v1_StreamResponse__Output>;
  
  /**
   * Streams every change to a key, or to the keys under a bucket or prefix, after a revision: puts,
   * deletes and expiries, in revision order, each exactly once, until the client cancels. Served by
   * the partition's leader: another node answers UNAVAILABLE (NOT_LEADER) with the leader hint, and
   * a leader that loses its leadership ends the stream the same way; resume at the new leader after
   * the last revision received. A client that stops reading for about 30 s is cancelled with
   * RESOURCE_EXHAUSTED (WATCH_OVERFLOW), `atoll-resume-revision` naming the last revision sent.
   */
  Watch(argument: _atoll_v1_WatchRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_atoll_v1_WatchResponse__Output>;
  Watch(argument: _atoll_v1_WatchRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_atoll_v1_WatchResponse__Output>;
  /**
   * Streams every change to a key, or to the keys under a bucket or prefix, after a revision: puts,
   * deletes and expiries, in revision order, each exactly once, until the client cancels. Served by
   * the partition's leader: another node answers UNAVAILABLE (NOT_LEADER) with the leader hint, and
   * a leader that loses its leadership ends the stream the same way; resume at the new leader after
   * the last revision received. A client that stops reading for about 30 s is cancelled with
   * RESOURCE_EXHAUSTED (WATCH_OVERFLOW), `atoll-resume-revision` naming the last revision sent.
   */
  watch(argument: _atoll_v1_WatchRequest, metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientReadableStream<_atoll_v1_WatchResponse__Output>;
  watch(argument: _atoll_v1_WatchRequest, options?: grpc.CallOptions): grpc.ClientReadableStream<_atoll_v1_WatchResponse__Output>;
  
}

export interface KVHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Many requests over one long-lived stream: each StreamRequest gets exactly one StreamResponse
   * with the same id (unless cancelled), in completion order. Each request has its own deadline.
   * Closing the sending side ends the stream once every outstanding request has been answered.
   * This is the fast path: one stream multiplexes any number of concurrent requests.
   * Starts a snapshot transaction over one bucket's partition (a linearizable read of its revision).
   */
  BeginTransaction: grpc.handleUnaryCall<_atoll_v1_BeginTransactionRequest__Output, _atoll_v1_BeginTransactionResponse>;
  
  /**
   * Validates and applies a transaction's writes atomically, or fails with ABORTED (TXN_CONFLICT).
   */
  Commit: grpc.handleUnaryCall<_atoll_v1_CommitRequest__Output, _atoll_v1_CommitResponse>;
  
  /**
   * Deletes one key, optionally with a condition.
   */
  Delete: grpc.handleUnaryCall<_atoll_v1_DeleteRequest__Output, _atoll_v1_DeleteResponse>;
  
  /**
   * Evaluates a script transaction at the partition's leader and commits it atomically.
   */
  ExecuteScript: grpc.handleUnaryCall<_atoll_v1_ExecuteScriptRequest__Output, _atoll_v1_ExecuteScriptResponse>;
  
  /**
   * Tells whether a key is present.
   */
  Exists: grpc.handleUnaryCall<_atoll_v1_ExistsRequest__Output, _atoll_v1_ExistsResponse>;
  
  /**
   * Sets a new expiry on a present key.
   */
  Extend: grpc.handleUnaryCall<_atoll_v1_ExtendRequest__Output, _atoll_v1_ExtendResponse>;
  
  /**
   * Reads one key.
   */
  Get: grpc.handleUnaryCall<_atoll_v1_GetRequest__Output, _atoll_v1_GetResponse>;
  
  /**
   * Reads one page of the keys under a prefix inside one bucket.
   */
  GetByPrefix: grpc.handleUnaryCall<_atoll_v1_GetByPrefixRequest__Output, _atoll_v1_GetByPrefixResponse>;
  
  /**
   * Adds to a 64-bit counter atomically.
   */
  Increment: grpc.handleUnaryCall<_atoll_v1_IncrementRequest__Output, _atoll_v1_IncrementResponse>;
  
  /**
   * Grants, keeps alive, revokes or describes a lease (LeaseRequest.action). Served by the lease's
   * partition leader; keys attached to a lease are deleted together when it ends.
   */
  Lease: grpc.handleUnaryCall<_atoll_v1_LeaseRequest__Output, _atoll_v1_LeaseResponse>;
  
  /**
   * Writes one key, optionally with a TTL and a condition.
   */
  Put: grpc.handleUnaryCall<_atoll_v1_PutRequest__Output, _atoll_v1_PutResponse>;
  
  Stream: grpc.handleBidiStreamingCall<_atoll_v1_StreamRequest__Output, _atoll_v1_StreamResponse>;
  
  /**
   * Streams every change to a key, or to the keys under a bucket or prefix, after a revision: puts,
   * deletes and expiries, in revision order, each exactly once, until the client cancels. Served by
   * the partition's leader: another node answers UNAVAILABLE (NOT_LEADER) with the leader hint, and
   * a leader that loses its leadership ends the stream the same way; resume at the new leader after
   * the last revision received. A client that stops reading for about 30 s is cancelled with
   * RESOURCE_EXHAUSTED (WATCH_OVERFLOW), `atoll-resume-revision` naming the last revision sent.
   */
  Watch: grpc.handleServerStreamingCall<_atoll_v1_WatchRequest__Output, _atoll_v1_WatchResponse>;
  
}

export interface KVDefinition extends grpc.ServiceDefinition {
  BeginTransaction: MethodDefinition<_atoll_v1_BeginTransactionRequest, _atoll_v1_BeginTransactionResponse, _atoll_v1_BeginTransactionRequest__Output, _atoll_v1_BeginTransactionResponse__Output>
  Commit: MethodDefinition<_atoll_v1_CommitRequest, _atoll_v1_CommitResponse, _atoll_v1_CommitRequest__Output, _atoll_v1_CommitResponse__Output>
  Delete: MethodDefinition<_atoll_v1_DeleteRequest, _atoll_v1_DeleteResponse, _atoll_v1_DeleteRequest__Output, _atoll_v1_DeleteResponse__Output>
  ExecuteScript: MethodDefinition<_atoll_v1_ExecuteScriptRequest, _atoll_v1_ExecuteScriptResponse, _atoll_v1_ExecuteScriptRequest__Output, _atoll_v1_ExecuteScriptResponse__Output>
  Exists: MethodDefinition<_atoll_v1_ExistsRequest, _atoll_v1_ExistsResponse, _atoll_v1_ExistsRequest__Output, _atoll_v1_ExistsResponse__Output>
  Extend: MethodDefinition<_atoll_v1_ExtendRequest, _atoll_v1_ExtendResponse, _atoll_v1_ExtendRequest__Output, _atoll_v1_ExtendResponse__Output>
  Get: MethodDefinition<_atoll_v1_GetRequest, _atoll_v1_GetResponse, _atoll_v1_GetRequest__Output, _atoll_v1_GetResponse__Output>
  GetByPrefix: MethodDefinition<_atoll_v1_GetByPrefixRequest, _atoll_v1_GetByPrefixResponse, _atoll_v1_GetByPrefixRequest__Output, _atoll_v1_GetByPrefixResponse__Output>
  Increment: MethodDefinition<_atoll_v1_IncrementRequest, _atoll_v1_IncrementResponse, _atoll_v1_IncrementRequest__Output, _atoll_v1_IncrementResponse__Output>
  Lease: MethodDefinition<_atoll_v1_LeaseRequest, _atoll_v1_LeaseResponse, _atoll_v1_LeaseRequest__Output, _atoll_v1_LeaseResponse__Output>
  Put: MethodDefinition<_atoll_v1_PutRequest, _atoll_v1_PutResponse, _atoll_v1_PutRequest__Output, _atoll_v1_PutResponse__Output>
  Stream: MethodDefinition<_atoll_v1_StreamRequest, _atoll_v1_StreamResponse, _atoll_v1_StreamRequest__Output, _atoll_v1_StreamResponse__Output>
  Watch: MethodDefinition<_atoll_v1_WatchRequest, _atoll_v1_WatchResponse, _atoll_v1_WatchRequest__Output, _atoll_v1_WatchResponse__Output>
}
