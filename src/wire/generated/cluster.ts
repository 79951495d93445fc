import type * as grpc from '@grpc/grpc-js';
import type { EnumTypeDefinition, MessageTypeDefinition } from '@grpc/proto-loader';

import type { BackupItem as _atoll_v1_BackupItem, BackupItem__Output as _atoll_v1_BackupItem__Output } from './atoll/v1/BackupItem.js';
import type { BackupPageRequest as _atoll_v1_BackupPageRequest, BackupPageRequest__Output as _atoll_v1_BackupPageRequest__Output } from './atoll/v1/BackupPageRequest.js';
import type { BackupPageResponse as _atoll_v1_BackupPageResponse, BackupPageResponse__Output as _atoll_v1_BackupPageResponse__Output } from './atoll/v1/BackupPageResponse.js';
import type { BeginTransactionRequest as _atoll_v1_BeginTransactionRequest, BeginTransactionRequest__Output as _atoll_v1_BeginTransactionRequest__Output } from './atoll/v1/BeginTransactionRequest.js';
import type { BeginTransactionResponse as _atoll_v1_BeginTransactionResponse, BeginTransactionResponse__Output as _atoll_v1_BeginTransactionResponse__Output } from './atoll/v1/BeginTransactionResponse.js';
import type { ChangeMemberRequest as _atoll_v1_ChangeMemberRequest, ChangeMemberRequest__Output as _atoll_v1_ChangeMemberRequest__Output } from './atoll/v1/ChangeMemberRequest.js';
import type { ChangeMemberResponse as _atoll_v1_ChangeMemberResponse, ChangeMemberResponse__Output as _atoll_v1_ChangeMemberResponse__Output } from './atoll/v1/ChangeMemberResponse.js';
import type { ClusterClient as _atoll_v1_ClusterClient, ClusterDefinition as _atoll_v1_ClusterDefinition } from './atoll/v1/Cluster.js';
import type { ClusterInfoRequest as _atoll_v1_ClusterInfoRequest, ClusterInfoRequest__Output as _atoll_v1_ClusterInfoRequest__Output } from './atoll/v1/ClusterInfoRequest.js';
import type { ClusterInfoResponse as _atoll_v1_ClusterInfoResponse, ClusterInfoResponse__Output as _atoll_v1_ClusterInfoResponse__Output } from './atoll/v1/ClusterInfoResponse.js';
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
import type { ForwardCall as _atoll_v1_ForwardCall, ForwardCall__Output as _atoll_v1_ForwardCall__Output } from './atoll/v1/ForwardCall.js';
import type { ForwardFrame as _atoll_v1_ForwardFrame, ForwardFrame__Output as _atoll_v1_ForwardFrame__Output } from './atoll/v1/ForwardFrame.js';
import type { ForwardReply as _atoll_v1_ForwardReply, ForwardReply__Output as _atoll_v1_ForwardReply__Output } from './atoll/v1/ForwardReply.js';
import type { ForwardReplyFrame as _atoll_v1_ForwardReplyFrame, ForwardReplyFrame__Output as _atoll_v1_ForwardReplyFrame__Output } from './atoll/v1/ForwardReplyFrame.js';
import type { ForwardRequest as _atoll_v1_ForwardRequest, ForwardRequest__Output as _atoll_v1_ForwardRequest__Output } from './atoll/v1/ForwardRequest.js';
import type { ForwardResponse as _atoll_v1_ForwardResponse, ForwardResponse__Output as _atoll_v1_ForwardResponse__Output } from './atoll/v1/ForwardResponse.js';
import type { ForwardStatus as _atoll_v1_ForwardStatus, ForwardStatus__Output as _atoll_v1_ForwardStatus__Output } from './atoll/v1/ForwardStatus.js';
import type { ForwardStatusMetadata as _atoll_v1_ForwardStatusMetadata, ForwardStatusMetadata__Output as _atoll_v1_ForwardStatusMetadata__Output } from './atoll/v1/ForwardStatusMetadata.js';
import type { GetByPrefixRequest as _atoll_v1_GetByPrefixRequest, GetByPrefixRequest__Output as _atoll_v1_GetByPrefixRequest__Output } from './atoll/v1/GetByPrefixRequest.js';
import type { GetByPrefixResponse as _atoll_v1_GetByPrefixResponse, GetByPrefixResponse__Output as _atoll_v1_GetByPrefixResponse__Output } from './atoll/v1/GetByPrefixResponse.js';
import type { GetRequest as _atoll_v1_GetRequest, GetRequest__Output as _atoll_v1_GetRequest__Output } from './atoll/v1/GetRequest.js';
import type { GetResponse as _atoll_v1_GetResponse, GetResponse__Output as _atoll_v1_GetResponse__Output } from './atoll/v1/GetResponse.js';
import type { IncrementRequest as _atoll_v1_IncrementRequest, IncrementRequest__Output as _atoll_v1_IncrementRequest__Output } from './atoll/v1/IncrementRequest.js';
import type { IncrementResponse as _atoll_v1_IncrementResponse, IncrementResponse__Output as _atoll_v1_IncrementResponse__Output } from './atoll/v1/IncrementResponse.js';
import type { KVClient as _atoll_v1_KVClient, KVDefinition as _atoll_v1_KVDefinition } from './atoll/v1/KV.js';
import type { KeyLoad as _atoll_v1_KeyLoad, KeyLoad__Output as _atoll_v1_KeyLoad__Output } from './atoll/v1/KeyLoad.js';
import type { KeyRecord as _atoll_v1_KeyRecord, KeyRecord__Output as _atoll_v1_KeyRecord__Output } from './atoll/v1/KeyRecord.js';
import type { LeaderChangeRecord as _atoll_v1_LeaderChangeRecord, LeaderChangeRecord__Output as _atoll_v1_LeaderChangeRecord__Output } from './atoll/v1/LeaderChangeRecord.js';
import type { LeaseRequest as _atoll_v1_LeaseRequest, LeaseRequest__Output as _atoll_v1_LeaseRequest__Output } from './atoll/v1/LeaseRequest.js';
import type { LeaseResponse as _atoll_v1_LeaseResponse, LeaseResponse__Output as _atoll_v1_LeaseResponse__Output } from './atoll/v1/LeaseResponse.js';
import type { MergePartitionRequest as _atoll_v1_MergePartitionRequest, MergePartitionRequest__Output as _atoll_v1_MergePartitionRequest__Output } from './atoll/v1/MergePartitionRequest.js';
import type { MergePartitionResponse as _atoll_v1_MergePartitionResponse, MergePartitionResponse__Output as _atoll_v1_MergePartitionResponse__Output } from './atoll/v1/MergePartitionResponse.js';
import type { MergedStart as _atoll_v1_MergedStart, MergedStart__Output as _atoll_v1_MergedStart__Output } from './atoll/v1/MergedStart.js';
import type { MoveReplicaRequest as _atoll_v1_MoveReplicaRequest, MoveReplicaRequest__Output as _atoll_v1_MoveReplicaRequest__Output } from './atoll/v1/MoveReplicaRequest.js';
import type { MoveReplicaResponse as _atoll_v1_MoveReplicaResponse, MoveReplicaResponse__Output as _atoll_v1_MoveReplicaResponse__Output } from './atoll/v1/MoveReplicaResponse.js';
import type { NodeInfo as _atoll_v1_NodeInfo, NodeInfo__Output as _atoll_v1_NodeInfo__Output } from './atoll/v1/NodeInfo.js';
import type { NodeStatusRequest as _atoll_v1_NodeStatusRequest, NodeStatusRequest__Output as _atoll_v1_NodeStatusRequest__Output } from './atoll/v1/NodeStatusRequest.js';
import type { NodeStatusResponse as _atoll_v1_NodeStatusResponse, NodeStatusResponse__Output as _atoll_v1_NodeStatusResponse__Output } from './atoll/v1/NodeStatusResponse.js';
import type { PartitionInfo as _atoll_v1_PartitionInfo, PartitionInfo__Output as _atoll_v1_PartitionInfo__Output } from './atoll/v1/PartitionInfo.js';
import type { PeerClient as _atoll_v1_PeerClient, PeerDefinition as _atoll_v1_PeerDefinition } from './atoll/v1/Peer.js';
import type { PlannedLeader as _atoll_v1_PlannedLeader, PlannedLeader__Output as _atoll_v1_PlannedLeader__Output } from './atoll/v1/PlannedLeader.js';
import type { PrepareReplicaRequest as _atoll_v1_PrepareReplicaRequest, PrepareReplicaRequest__Output as _atoll_v1_PrepareReplicaRequest__Output } from './atoll/v1/PrepareReplicaRequest.js';
import type { PrepareReplicaResponse as _atoll_v1_PrepareReplicaResponse, PrepareReplicaResponse__Output as _atoll_v1_PrepareReplicaResponse__Output } from './atoll/v1/PrepareReplicaResponse.js';
import type { PutRequest as _atoll_v1_PutRequest, PutRequest__Output as _atoll_v1_PutRequest__Output } from './atoll/v1/PutRequest.js';
import type { PutResponse as _atoll_v1_PutResponse, PutResponse__Output as _atoll_v1_PutResponse__Output } from './atoll/v1/PutResponse.js';
import type { RaftFrame as _atoll_v1_RaftFrame, RaftFrame__Output as _atoll_v1_RaftFrame__Output } from './atoll/v1/RaftFrame.js';
import type { RaftStreamSummary as _atoll_v1_RaftStreamSummary, RaftStreamSummary__Output as _atoll_v1_RaftStreamSummary__Output } from './atoll/v1/RaftStreamSummary.js';
import type { RebalanceMove as _atoll_v1_RebalanceMove, RebalanceMove__Output as _atoll_v1_RebalanceMove__Output } from './atoll/v1/RebalanceMove.js';
import type { RebalanceRequest as _atoll_v1_RebalanceRequest, RebalanceRequest__Output as _atoll_v1_RebalanceRequest__Output } from './atoll/v1/RebalanceRequest.js';
import type { RebalanceResponse as _atoll_v1_RebalanceResponse, RebalanceResponse__Output as _atoll_v1_RebalanceResponse__Output } from './atoll/v1/RebalanceResponse.js';
import type { SplitPartitionRequest as _atoll_v1_SplitPartitionRequest, SplitPartitionRequest__Output as _atoll_v1_SplitPartitionRequest__Output } from './atoll/v1/SplitPartitionRequest.js';
import type { SplitPartitionResponse as _atoll_v1_SplitPartitionResponse, SplitPartitionResponse__Output as _atoll_v1_SplitPartitionResponse__Output } from './atoll/v1/SplitPartitionResponse.js';
import type { StreamCancel as _atoll_v1_StreamCancel, StreamCancel__Output as _atoll_v1_StreamCancel__Output } from './atoll/v1/StreamCancel.js';
import type { StreamError as _atoll_v1_StreamError, StreamError__Output as _atoll_v1_StreamError__Output } from './atoll/v1/StreamError.js';
import type { StreamRequest as _atoll_v1_StreamRequest, StreamRequest__Output as _atoll_v1_StreamRequest__Output } from './atoll/v1/StreamRequest.js';
import type { StreamResponse as _atoll_v1_StreamResponse, StreamResponse__Output as _atoll_v1_StreamResponse__Output } from './atoll/v1/StreamResponse.js';
import type { TransferLeaderRequest as _atoll_v1_TransferLeaderRequest, TransferLeaderRequest__Output as _atoll_v1_TransferLeaderRequest__Output } from './atoll/v1/TransferLeaderRequest.js';
import type { TransferLeaderResponse as _atoll_v1_TransferLeaderResponse, TransferLeaderResponse__Output as _atoll_v1_TransferLeaderResponse__Output } from './atoll/v1/TransferLeaderResponse.js';
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
      BackupItem: MessageTypeDefinition<_atoll_v1_BackupItem, _atoll_v1_BackupItem__Output>
      BackupPageRequest: MessageTypeDefinition<_atoll_v1_BackupPageRequest, _atoll_v1_BackupPageRequest__Output>
      BackupPageResponse: MessageTypeDefinition<_atoll_v1_BackupPageResponse, _atoll_v1_BackupPageResponse__Output>
      BeginTransactionRequest: MessageTypeDefinition<_atoll_v1_BeginTransactionRequest, _atoll_v1_BeginTransactionRequest__Output>
      BeginTransactionResponse: MessageTypeDefinition<_atoll_v1_BeginTransactionResponse, _atoll_v1_BeginTransactionResponse__Output>
      ChangeMemberRequest: MessageTypeDefinition<_atoll_v1_ChangeMemberRequest, _atoll_v1_ChangeMemberRequest__Output>
      ChangeMemberResponse: MessageTypeDefinition<_atoll_v1_ChangeMemberResponse, _atoll_v1_ChangeMemberResponse__Output>
      Cluster: SubtypeConstructor<typeof grpc.Client, _atoll_v1_ClusterClient> & { service: _atoll_v1_ClusterDefinition }
      ClusterInfoRequest: MessageTypeDefinition<_atoll_v1_ClusterInfoRequest, _atoll_v1_ClusterInfoRequest__Output>
      ClusterInfoResponse: MessageTypeDefinition<_atoll_v1_ClusterInfoResponse, _atoll_v1_ClusterInfoResponse__Output>
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
      ForwardCall: MessageTypeDefinition<_atoll_v1_ForwardCall, _atoll_v1_ForwardCall__Output>
      ForwardFrame: MessageTypeDefinition<_atoll_v1_ForwardFrame, _atoll_v1_ForwardFrame__Output>
      ForwardReply: MessageTypeDefinition<_atoll_v1_ForwardReply, _atoll_v1_ForwardReply__Output>
      ForwardReplyFrame: MessageTypeDefinition<_atoll_v1_ForwardReplyFrame, _atoll_v1_ForwardReplyFrame__Output>
      ForwardRequest: MessageTypeDefinition<_atoll_v1_ForwardRequest, _atoll_v1_ForwardRequest__Output>
      ForwardResponse: MessageTypeDefinition<_atoll_v1_ForwardResponse, _atoll_v1_ForwardResponse__Output>
      ForwardStatus: MessageTypeDefinition<_atoll_v1_ForwardStatus, _atoll_v1_ForwardStatus__Output>
      ForwardStatusMetadata: MessageTypeDefinition<_atoll_v1_ForwardStatusMetadata, _atoll_v1_ForwardStatusMetadata__Output>
      GetByPrefixRequest: MessageTypeDefinition<_atoll_v1_GetByPrefixRequest, _atoll_v1_GetByPrefixRequest__Output>
      GetByPrefixResponse: MessageTypeDefinition<_atoll_v1_GetByPrefixResponse, _atoll_v1_GetByPrefixResponse__Output>
      GetRequest: MessageTypeDefinition<_atoll_v1_GetRequest, _atoll_v1_GetRequest__Output>
      GetResponse: MessageTypeDefinition<_atoll_v1_GetResponse, _atoll_v1_GetResponse__Output>
      IncrementRequest: MessageTypeDefinition<_atoll_v1_IncrementRequest, _atoll_v1_IncrementRequest__Output>
      IncrementResponse: MessageTypeDefinition<_atoll_v1_IncrementResponse, _atoll_v1_IncrementResponse__Output>
      Isolation: EnumTypeDefinition
      KV: SubtypeConstructor<typeof grpc.Client, _atoll_v1_KVClient> & { service: _atoll_v1_KVDefinition }
      KeyLoad: MessageTypeDefinition<_atoll_v1_KeyLoad, _atoll_v1_KeyLoad__Output>
      KeyRecord: MessageTypeDefinition<_atoll_v1_KeyRecord, _atoll_v1_KeyRecord__Output>
      LeaderChangeRecord: MessageTypeDefinition<_atoll_v1_LeaderChangeRecord, _atoll_v1_LeaderChangeRecord__Output>
      LeaseAction: EnumTypeDefinition
      LeaseRequest: MessageTypeDefinition<_atoll_v1_LeaseRequest, _atoll_v1_LeaseRequest__Output>
      LeaseResponse: MessageTypeDefinition<_atoll_v1_LeaseResponse, _atoll_v1_LeaseResponse__Output>
      MergePartitionRequest: MessageTypeDefinition<_atoll_v1_MergePartitionRequest, _atoll_v1_MergePartitionRequest__Output>
      MergePartitionResponse: MessageTypeDefinition<_atoll_v1_MergePartitionResponse, _atoll_v1_MergePartitionResponse__Output>
      MergedStart: MessageTypeDefinition<_atoll_v1_MergedStart, _atoll_v1_MergedStart__Output>
      MoveReplicaRequest: MessageTypeDefinition<_atoll_v1_MoveReplicaRequest, _atoll_v1_MoveReplicaRequest__Output>
      MoveReplicaResponse: MessageTypeDefinition<_atoll_v1_MoveReplicaResponse, _atoll_v1_MoveReplicaResponse__Output>
      NodeInfo: MessageTypeDefinition<_atoll_v1_NodeInfo, _atoll_v1_NodeInfo__Output>
      NodeStatusRequest: MessageTypeDefinition<_atoll_v1_NodeStatusRequest, _atoll_v1_NodeStatusRequest__Output>
      NodeStatusResponse: MessageTypeDefinition<_atoll_v1_NodeStatusResponse, _atoll_v1_NodeStatusResponse__Output>
      PartitionInfo: MessageTypeDefinition<_atoll_v1_PartitionInfo, _atoll_v1_PartitionInfo__Output>
      Peer: SubtypeConstructor<typeof grpc.Client, _atoll_v1_PeerClient> & { service: _atoll_v1_PeerDefinition }
      PlannedLeader: MessageTypeDefinition<_atoll_v1_PlannedLeader, _atoll_v1_PlannedLeader__Output>
      PrepareReplicaRequest: MessageTypeDefinition<_atoll_v1_PrepareReplicaRequest, _atoll_v1_PrepareReplicaRequest__Output>
      PrepareReplicaResponse: MessageTypeDefinition<_atoll_v1_PrepareReplicaResponse, _atoll_v1_PrepareReplicaResponse__Output>
      PutRequest: MessageTypeDefinition<_atoll_v1_PutRequest, _atoll_v1_PutRequest__Output>
      PutResponse: MessageTypeDefinition<_atoll_v1_PutResponse, _atoll_v1_PutResponse__Output>
      RaftFrame: MessageTypeDefinition<_atoll_v1_RaftFrame, _atoll_v1_RaftFrame__Output>
      RaftStreamSummary: MessageTypeDefinition<_atoll_v1_RaftStreamSummary, _atoll_v1_RaftStreamSummary__Output>
      RebalanceMove: MessageTypeDefinition<_atoll_v1_RebalanceMove, _atoll_v1_RebalanceMove__Output>
      RebalanceRequest: MessageTypeDefinition<_atoll_v1_RebalanceRequest, _atoll_v1_RebalanceRequest__Output>
      RebalanceResponse: MessageTypeDefinition<_atoll_v1_RebalanceResponse, _atoll_v1_RebalanceResponse__Output>
      SplitPartitionRequest: MessageTypeDefinition<_atoll_v1_SplitPartitionRequest, _atoll_v1_SplitPartitionRequest__Output>
      SplitPartitionResponse: MessageTypeDefinition<_atoll_v1_SplitPartitionResponse, _atoll_v1_SplitPartitionResponse__Output>
      StreamCancel: MessageTypeDefinition<_atoll_v1_StreamCancel, _atoll_v1_StreamCancel__Output>
      StreamError: MessageTypeDefinition<_atoll_v1_StreamError, _atoll_v1_StreamError__Output>
      StreamRequest: MessageTypeDefinition<_atoll_v1_StreamRequest, _atoll_v1_StreamRequest__Output>
      StreamResponse: MessageTypeDefinition<_atoll_v1_StreamResponse, _atoll_v1_StreamResponse__Output>
      TransferLeaderRequest: MessageTypeDefinition<_atoll_v1_TransferLeaderRequest, _atoll_v1_TransferLeaderRequest__Output>
      TransferLeaderResponse: MessageTypeDefinition<_atoll_v1_TransferLeaderResponse, _atoll_v1_TransferLeaderResponse__Output>
      TxnWrite: MessageTypeDefinition<_atoll_v1_TxnWrite, _atoll_v1_TxnWrite__Output>
      WatchEvent: MessageTypeDefinition<_atoll_v1_WatchEvent, _atoll_v1_WatchEvent__Output>
      WatchEventType: EnumTypeDefinition
      WatchRequest: MessageTypeDefinition<_atoll_v1_WatchRequest, _atoll_v1_WatchRequest__Output>
      WatchResponse: MessageTypeDefinition<_atoll_v1_WatchResponse, _atoll_v1_WatchResponse__Output>
    }
  }
}

