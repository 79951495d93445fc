import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { BeginTransactionRequest as _atoll_v1_BeginTransactionRequest, BeginTransactionRequest__Output as _atoll_v1_BeginTransactionRequest__Output } from './atoll/v1/BeginTransactionRequest.js';
import type { BeginTransactionResponse as _atoll_v1_BeginTransactionResponse, BeginTransactionResponse__Output as _atoll_v1_BeginTransactionResponse__Output } from './atoll/v1/BeginTransactionResponse.js';
import type { CommitRequest as _atoll_v1_CommitRequest, CommitRequest__Output as _atoll_v1_CommitRequest__Output } from './atoll/v1/CommitRequest.js';
import type { CommitResponse as _atoll_v1_CommitResponse, CommitResponse__Output as _atoll_v1_CommitResponse__Output } from './atoll/v1/CommitResponse.js';
import type { DeleteRequest as _atoll_v1_DeleteRequest, DeleteRequest__Output as _atoll_v1_DeleteRequest__Output } from './atoll/v1/DeleteRequest.js';
import type { DeleteResponse as _atoll_v1_DeleteResponse, DeleteResponse__Output as _atoll_v1_DeleteResponse__Output } from './atoll/v1/DeleteResponse.js';
import type { ExecuteScriptRequest as _atoll_v1_ExecuteScriptRequest, ExecuteScriptRequest__Output as _atoll_v1_ExecuteScriptRequest__Output } from './atoll/v1/ExecuteScriptRequest.js';
import type { ExecuteScriptResponse as _atoll_v1_ExecuteScriptResponse, ExecuteScriptResponse__Output as _atoll_v1_ExecuteScriptResponse__Output } from './atoll/v1/ExecuteScriptResponse.js';
import type { ExistsRequest as _atoll_v1_ExistsRequest, ExistsRequest__Output as _atoll_v1_ExistsRequest__Output } from './atoll/v1/ExistsRequest.js';
import type { ExistsResponse as _atoll_v1_ExistsResponse, ExistsResponse__Output as _atoll_v1_ExistsResponse__Output } from './atoll/v1/ExistsResponse.js';
import type { ExtendRequest as _atoll_v1_ExtendRequest, ExtendRequest__Output as _atoll_v1_ExtendRequest__Output } from './atoll/v1/ExtendRequest.js';
import type { ExtendResponse as _atoll_v1_ExtendResponse, ExtendResponse__Output as _atoll_v1_ExtendResponse__Output } from './atoll/v1/ExtendResponse.js';
import type { GetByPrefixRequest as _atoll_v1_GetByPrefixRequest, GetByPrefixRequest__Output as _atoll_v1_GetByPrefixRequest__Output } from './atoll/v1/GetByPrefixRequest.js';
import type { GetByPrefixResponse as _atoll_v1_GetByPrefixResponse, GetByPrefixResponse__Output as _atoll_v1_GetByPrefixResponse__Output } from './atoll/v1/GetByPrefixResponse.js';
import type { GetRequest as _atoll_v1_GetRequest, GetRequest__Output as _atoll_v1_GetRequest__Output } from './atoll/v1/GetRequest.js';
import type { GetResponse as _atoll_v1_GetResponse, GetResponse__Output as _atoll_v1_GetResponse__Output } from './atoll/v1/GetResponse.js';
import type { IncrementRequest as _atoll_v1_IncrementRequest, IncrementRequest__Output as _atoll_v1_IncrementRequest__Output } from './atoll/v1/IncrementRequest.js';
import type { IncrementResponse as _atoll_v1_IncrementResponse, IncrementResponse__Output as _atoll_v1_IncrementResponse__Output } from './atoll/v1/IncrementResponse.js';
import type { KVClient as _atoll_v1_KVClient, KVDefinition as _atoll_v1_KVDefinition } from './atoll/v1/KV.js';
import type { KeyRecord as _atoll_v1_KeyRecord, KeyRecord__Output as _atoll_v1_KeyRecord__Output } from './atoll/v1/KeyRecord.js';
import type { LeaseRequest as _atoll_v1_LeaseRequest, LeaseRequest__Output as _atoll_v1_LeaseRequest__Output } from './atoll/v1/LeaseRequest.js';
import type { LeaseResponse as _atoll_v1_LeaseResponse, LeaseResponse__Output as _atoll_v1_LeaseResponse__Output } from './atoll/v1/LeaseResponse.js';
import type { PutRequest as _atoll_v1_PutRequest, PutRequest__Output as _atoll_v1_PutRequest__Output } from './atoll/v1/PutRequest.js';
import type { PutResponse as _atoll_v1_PutResponse, PutResponse__Output as _atoll_v1_PutResponse__Output } from './atoll/v1/PutResponse.js';
import type { StreamCancel as _atoll_v1_StreamCancel, StreamCancel__Output as _atoll_v1_StreamCancel__Output } from './atoll/v1/StreamCancel.js';
import type { StreamError as _atoll_v1_StreamError, StreamError__Output as _atoll_v1_StreamError__Output } from './atoll/v1/StreamError.js';
import type { StreamRequest as _atoll_v1_StreamRequest, StreamRequest__Output as _atoll_v1_StreamRequest__Output } from './atoll/v1/StreamRequest.js';
import type { StreamResponse as _atoll_v1_StreamResponse, StreamResponse__Output as _atoll_v1_StreamResponse__Output } from './atoll/v1/StreamResponse.js';
import type { TxnWrite as _atoll_v1_TxnWrite, TxnWrite__Output as _atoll_v1_TxnWrite__Output } from './atoll/v1/TxnWrite.js';
import type { WatchEvent as _atoll_v1_WatchEvent, WatchEvent__Output as _atoll_v1_WatchEvent__Output } from './atoll/v1/WatchEvent.js';
import type { WatchRequest as _atoll_v1_WatchRequest, WatchRequest__Output as _atoll_v1_WatchRequest__Output } from './atoll/v1/WatchRequest.js';
import type { WatchResponse as _atoll_v1_WatchResponse, WatchResponse__Output as _atoll_v1_WatchResponse__Output } from './atoll/v1/WatchResponse.js';

type SubtypeConstructor<Constructor extends new (...args: any) => any, Subtype> = {
  new(...args: ConstructorParameters<Constructor>): Subtype;
};

export interface ProtoGrpcType {
  atoll: {
    v1: {
      BeginTransactionRequest: MessageTypeDefinition<_atoll_v1_BeginTransactionRequest, _atoll_v1_BeginTransactionRequest__Output>
      BeginTransactionResponse: MessageTypeDefinition<_atoll_v1_BeginTransactionResponse, _atoll_v1_BeginTransactionResponse__Output>
      CommitRequest: MessageTypeDefinition<_atoll_v1_CommitRequest, _atoll_v1_CommitRequest__Output>
      CommitResponse: MessageTypeDefinition<_atoll_v1_CommitResponse, _atoll_v1_CommitResponse__Output>
      Consistency: EnumTypeDefinition
      DeleteReason: EnumTypeDefinition
      DeleteRequest: MessageTypeDefinition<_atoll_v1_DeleteRequest, _atoll_v1_DeleteRequest__Output>
      DeleteResponse: MessageTypeDefinition<_atoll_v1_DeleteResponse, _atoll_v1_DeleteResponse__Output>
      ExecuteScriptRequest: MessageTypeDefinition<_atoll_v1_ExecuteScriptRequest, _atoll_v1_ExecuteScriptRequest__Output>
      ExecuteScriptResponse: MessageTypeDefinition<_atoll_v1_ExecuteScriptResponse, _atoll_v1_ExecuteScriptResponse__Output>
      ExistsRequest: MessageTypeDefinition<_atoll_v1_ExistsRequest, _atoll_v1_ExistsRequest__Output>
      ExistsResponse: MessageTypeDefinition<_atoll_v1_ExistsResponse, _atoll_v1_ExistsResponse__Output>
      ExtendRequest: MessageTypeDefinition<_atoll_v1_ExtendRequest, _atoll_v1_ExtendRequest__Output>
      ExtendResponse: MessageTypeDefinition<_atoll_v1_ExtendResponse, _atoll_v1_ExtendResponse__Output>
      GetByPrefixRequest: MessageTypeDefinition<_atoll_v1_GetByPrefixRequest, _atoll_v1_GetByPrefixRequest__Output>
      GetByPrefixResponse: MessageTypeDefinition<_atoll_v1_GetByPrefixResponse, _atoll_v1_GetByPrefixResponse__Output>
      GetRequest: MessageTypeDefinition<_atoll_v1_GetRequest, _atoll_v1_GetRequest__Output>
      GetResponse: MessageTypeDefinition<_atoll_v1_GetResponse, _atoll_v1_GetResponse__Output>
      IncrementRequest: MessageTypeDefinition<_atoll_v1_IncrementRequest, _atoll_v1_IncrementRequest__Output>
      IncrementResponse: MessageTypeDefinition<_atoll_v1_IncrementResponse, _atoll_v1_IncrementResponse__Output>
      Isolation: EnumTypeDefinition
      KV: SubtypeConstructor<typeof grpc.Client, _atoll_v1_KVClient> & { service: _atoll_v1_KVDefinition }
      KeyRecord: MessageTypeDefinition<_atoll_v1_KeyRecord, _atoll_v1_KeyRecord__Output>
      LeaseAction: EnumTypeDefinition
      LeaseRequest: MessageTypeDefinition<_atoll_v1_LeaseRequest, _atoll_v1_LeaseRequest__Output>
      LeaseResponse: MessageTypeDefinition<_atoll_v1_LeaseResponse, _atoll_v1_LeaseResponse__Output>
      PutRequest: MessageTypeDefinition<_atoll_v1_PutRequest, _atoll_v1_PutRequest__Output>
      PutResponse: MessageTypeDefinition<_atoll_v1_PutResponse, _atoll_v1_PutResponse__Output>
      StreamCancel: MessageTypeDefinition<_atoll_v1_StreamCancel, _atoll_v1_StreamCancel__Output>
      StreamError: MessageTypeDefinition<_atoll_v1_StreamError, _atoll_v1_StreamError__Output>
      StreamRequest: MessageTypeDefinition<_atoll_v1_StreamRequest, _atoll_v1_StreamRequest__Output>
      StreamResponse: MessageTypeDefinition<_atoll_v1_StreamResponse, _atoll_v1_StreamResponse__Output>
      TxnWrite: MessageTypeDefinition<_atoll_v1_TxnWrite, _atoll_v1_TxnWrite__Output>
      WatchEvent: MessageTypeDefinition<_atoll_v1_WatchEvent, _atoll_v1_WatchEvent__Output>
      WatchEventType: EnumTypeDefinition
      WatchRequest: MessageTypeDefinition<_atoll_v1_WatchRequest, _atoll_v1_WatchRequest__Output>
      WatchResponse: MessageTypeDefinition<_atoll_v1_WatchResponse, _atoll_v1_WatchResponse__Output>
    }
  }
}

