// Original file: proto/atoll/v1/cluster.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { BackupPageRequest as _atoll_v1_BackupPageRequest, BackupPageRequest__Output as _atoll_v1_BackupPageRequest__Output } from '../../atoll/v1/BackupPageRequest.js';
import type { BackupPageResponse as _atoll_v1_BackupPageResponse, BackupPageResponse__Output as _atoll_v1_BackupPageResponse__Output } from '../../atoll/v1/BackupPageResponse.js';
import type { ClusterInfoRequest as _atoll_v1_ClusterInfoRequest, ClusterInfoRequest__Output as _atoll_v1_ClusterInfoRequest__Output } from '../../atoll/v1/ClusterInfoRequest.js';
import type { ClusterInfoResponse as _atoll_v1_ClusterInfoResponse, ClusterInfoResponse__Output as _atoll_v1_ClusterInfoResponse__Output } from '../../atoll/v1/ClusterInfoResponse.js';
import type { MoveReplicaRequest as _atoll_v1_MoveReplicaRequest, MoveReplicaRequest__Output as _atoll_v1_MoveReplicaRequest__Output } from '../../atoll/v1/MoveReplicaRequest.js';
import type { MoveReplicaResponse as _atoll_v1_MoveReplicaResponse, MoveReplicaResponse__Output as _atoll_v1_MoveReplicaResponse__Output } from '../../atoll/v1/MoveReplicaResponse.js';
import type { TransferLeaderRequest as _atoll_v1_TransferLeaderRequest, TransferLeaderRequest__Output as _atoll_v1_TransferLeaderRequest__Output } from '../../atoll/v1/TransferLeaderRequest.js';
import type { TransferLeaderResponse as _atoll_v1_TransferLeaderResponse, TransferLeaderResponse__Output as _atoll_v1_TransferLeaderResponse__Output } from '../../atoll/v1/TransferLeaderResponse.js';

export interface ClusterClient extends grpc.Client {
  /**
   * One page of a partition's live keys at a fixed revision, for backups (BackupPageRequest).
   */
  BackupPage(argument: _atoll_v1_BackupPageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_BackupPageResponse__Output>): grpc.ClientUnaryCall;
  BackupPage(argument: _atoll_v1_BackupPageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_BackupPageResponse__Output>): grpc.ClientUnaryCall;
  BackupPage(argument: _atoll_v1_BackupPageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_BackupPageResponse__Output>): grpc.ClientUnaryCall;
  BackupPage(argument: _atoll_v1_BackupPageRequest, callback: grpc.requestCallback<_atoll_v1_BackupPageResponse__Output>): grpc.ClientUnaryCall;
  /**
   * One page of a partition's live keys at a fixed revision, for backups (BackupPageRequest).
   */
  backupPage(argument: _atoll_v1_BackupPageRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_BackupPageResponse__Output>): grpc.ClientUnaryCall;
  backupPage(argument: _atoll_v1_BackupPageRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_BackupPageResponse__Output>): grpc.ClientUnaryCall;
  backupPage(argument: _atoll_v1_BackupPageRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_BackupPageResponse__Output>): grpc.ClientUnaryCall;
  backupPage(argument: _atoll_v1_BackupPageRequest, callback: grpc.requestCallback<_atoll_v1_BackupPageResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * The cluster's membership, partition table and leaders, as the answering node sees them.
   */
  ClusterInfo(argument: _atoll_v1_ClusterInfoRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ClusterInfoResponse__Output>): grpc.ClientUnaryCall;
  ClusterInfo(argument: _atoll_v1_ClusterInfoRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ClusterInfoResponse__Output>): grpc.ClientUnaryCall;
  ClusterInfo(argument: _atoll_v1_ClusterInfoRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ClusterInfoResponse__Output>): grpc.ClientUnaryCall;
  ClusterInfo(argument: _atoll_v1_ClusterInfoRequest, callback: grpc.requestCallback<_atoll_v1_ClusterInfoResponse__Output>): grpc.ClientUnaryCall;
  /**
   * The cluster's membership, partition table and leaders, as the answering node sees them.
   */
  clusterInfo(argument: _atoll_v1_ClusterInfoRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ClusterInfoResponse__Output>): grpc.ClientUnaryCall;
  clusterInfo(argument: _atoll_v1_ClusterInfoRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ClusterInfoResponse__Output>): grpc.ClientUnaryCall;
  clusterInfo(argument: _atoll_v1_ClusterInfoRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ClusterInfoResponse__Output>): grpc.ClientUnaryCall;
  clusterInfo(argument: _atoll_v1_ClusterInfoRequest, callback: grpc.requestCallback<_atoll_v1_ClusterInfoResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Moves one replica of a partition to another node (MoveReplicaRequest).
   */
  MoveReplica(argument: _atoll_v1_MoveReplicaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_MoveReplicaResponse__Output>): grpc.ClientUnaryCall;
  MoveReplica(argument: _atoll_v1_MoveReplicaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_MoveReplicaResponse__Output>): grpc.ClientUnaryCall;
  MoveReplica(argument: _atoll_v1_MoveReplicaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_MoveReplicaResponse__Output>): grpc.ClientUnaryCall;
  MoveReplica(argument: _atoll_v1_MoveReplicaRequest, callback: grpc.requestCallback<_atoll_v1_MoveReplicaResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Moves one replica of a partition to another node (MoveReplicaRequest).
   */
  moveReplica(argument: _atoll_v1_MoveReplicaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_MoveReplicaResponse__Output>): grpc.ClientUnaryCall;
  moveReplica(argument: _atoll_v1_MoveReplicaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_MoveReplicaResponse__Output>): grpc.ClientUnaryCall;
  moveReplica(argument: _atoll_v1_MoveReplicaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_MoveReplicaResponse__Output>): grpc.ClientUnaryCall;
  moveReplica(argument: _atoll_v1_MoveReplicaRequest, callback: grpc.requestCallback<_atoll_v1_MoveReplicaResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Asks a partition's leader to hand leadership to another replica.
   */
  TransferLeader(argument: _atoll_v1_TransferLeaderRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  TransferLeader(argument: _atoll_v1_TransferLeaderRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  TransferLeader(argument: _atoll_v1_TransferLeaderRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  TransferLeader(argument: _atoll_v1_TransferLeaderRequest, callback: grpc.requestCallback<_atoll_v1_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Asks a partition's leader to hand leadership to another replica.
   */
  transferLeader(argument: _atoll_v1_TransferLeaderRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  transferLeader(argument: _atoll_v1_TransferLeaderRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  transferLeader(argument: _atoll_v1_TransferLeaderRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  transferLeader(argument: _atoll_v1_TransferLeaderRequest, callback: grpc.requestCallback<_atoll_v1_TransferLeaderResponse__Output>): grpc.ClientUnaryCall;
  
}

export interface ClusterHandlers extends grpc.UntypedServiceImplementation {
  /**
   * One page of a partition's live keys at a fixed revision, for backups (BackupPageRequest).
   */
  BackupPage: grpc.handleUnaryCall<_atoll_v1_BackupPageRequest__Output, _atoll_v1_BackupPageResponse>;
  
  /**
   * The cluster's membership, partition table and leaders, as the answering node sees them.
   */
  ClusterInfo: grpc.handleUnaryCall<_atoll_v1_ClusterInfoRequest__Output, _atoll_v1_ClusterInfoResponse>;
  
  /**
   * Moves one replica of a partition to another node (MoveReplicaRequest).
   */
  MoveReplica: grpc.handleUnaryCall<_atoll_v1_MoveReplicaRequest__Output, _atoll_v1_MoveReplicaResponse>;
  
  /**
   * Asks a partition's leader to hand leadership to another replica.
   */
  TransferLeader: grpc.handleUnaryCall<_atoll_v1_TransferLeaderRequest__Output, _atoll_v1_TransferLeaderResponse>;
  
}

export interface ClusterDefinition extends grpc.ServiceDefinition {
  BackupPage: MethodDefinition<_atoll_v1_BackupPageRequest, _atoll_v1_BackupPageResponse, _atoll_v1_BackupPageRequest__Output, _atoll_v1_BackupPageResponse__Output>
  ClusterInfo: MethodDefinition<_atoll_v1_ClusterInfoRequest, _atoll_v1_ClusterInfoResponse, _atoll_v1_ClusterInfoRequest__Output, _atoll_v1_ClusterInfoResponse__Output>
  MoveReplica: MethodDefinition<_atoll_v1_MoveReplicaRequest, _atoll_v1_MoveReplicaResponse, _atoll_v1_MoveReplicaRequest__Output, _atoll_v1_MoveReplicaResponse__Output>
  TransferLeader: MethodDefinition<_atoll_v1_TransferLeaderRequest, _atoll_v1_TransferLeaderResponse, _atoll_v1_TransferLeaderRequest__Output, _atoll_v1_TransferLeaderResponse__Output>
}
