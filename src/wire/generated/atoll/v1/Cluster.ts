// Original file: proto/atoll/v1/cluster.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { BackupPageRequest as _atoll_v1_BackupPageRequest, BackupPageRequest__Output as _atoll_v1_BackupPageRequest__Output } from '../../atoll/v1/BackupPageRequest.js';
import type { BackupPageResponse as _atoll_v1_BackupPageResponse, BackupPageResponse__Output as _atoll_v1_BackupPageResponse__Output } from '../../atoll/v1/BackupPageResponse.js';
import type { ChangeMemberRequest as _atoll_v1_ChangeMemberRequest, ChangeMemberRequest__Output as _atoll_v1_ChangeMemberRequest__Output } from '../../atoll/v1/ChangeMemberRequest.js';
import type { ChangeMemberResponse as _atoll_v1_ChangeMemberResponse, ChangeMemberResponse__Output as _atoll_v1_ChangeMemberResponse__Output } from '../../atoll/v1/ChangeMemberResponse.js';
import type { ClusterInfoRequest as _atoll_v1_ClusterInfoRequest, ClusterInfoRequest__Output as _atoll_v1_ClusterInfoRequest__Output } from '../../atoll/v1/ClusterInfoRequest.js';
import type { ClusterInfoResponse as _atoll_v1_ClusterInfoResponse, ClusterInfoResponse__Output as _atoll_v1_ClusterInfoResponse__Output } from '../../atoll/v1/ClusterInfoResponse.js';
import type { MergePartitionRequest as _atoll_v1_MergePartitionRequest, MergePartitionRequest__Output as _atoll_v1_MergePartitionRequest__Output } from '../../atoll/v1/MergePartitionRequest.js';
import type { MergePartitionResponse as _atoll_v1_MergePartitionResponse, MergePartitionResponse__Output as _atoll_v1_MergePartitionResponse__Output } from '../../atoll/v1/MergePartitionResponse.js';
import type { MoveReplicaRequest as _atoll_v1_MoveReplicaRequest, MoveReplicaRequest__Output as _atoll_v1_MoveReplicaRequest__Output } from '../../atoll/v1/MoveReplicaRequest.js';
import type { MoveReplicaResponse as _atoll_v1_MoveReplicaResponse, MoveReplicaResponse__Output as _atoll_v1_MoveReplicaResponse__Output } from '../../atoll/v1/MoveReplicaResponse.js';
import type { RebalanceRequest as _atoll_v1_RebalanceRequest, RebalanceRequest__Output as _atoll_v1_RebalanceRequest__Output } from '../../atoll/v1/RebalanceRequest.js';
import type { RebalanceResponse as _atoll_v1_RebalanceResponse, RebalanceResponse__Output as _atoll_v1_RebalanceResponse__Output } from '../../atoll/v1/RebalanceResponse.js';
import type { SplitPartitionRequest as _atoll_v1_SplitPartitionRequest, SplitPartitionRequest__Output as _atoll_v1_SplitPartitionRequest__Output } from '../../atoll/v1/SplitPartitionRequest.js';
import type { SplitPartitionResponse as _atoll_v1_SplitPartitionResponse, SplitPartitionResponse__Output as _atoll_v1_SplitPartitionResponse__Output } from '../../atoll/v1/SplitPartitionResponse.js';
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
   * Changes the member table (ChangeMemberRequest).
   */
  ChangeMember(argument: _atoll_v1_ChangeMemberRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ChangeMemberResponse__Output>): grpc.ClientUnaryCall;
  ChangeMember(argument: _atoll_v1_ChangeMemberRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ChangeMemberResponse__Output>): grpc.ClientUnaryCall;
  ChangeMember(argument: _atoll_v1_ChangeMemberRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ChangeMemberResponse__Output>): grpc.ClientUnaryCall;
  ChangeMember(argument: _atoll_v1_ChangeMemberRequest, callback: grpc.requestCallback<_atoll_v1_ChangeMemberResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Changes the member table (ChangeMemberRequest).
   */
  changeMember(argument: _atoll_v1_ChangeMemberRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ChangeMemberResponse__Output>): grpc.ClientUnaryCall;
  changeMember(argument: _atoll_v1_ChangeMemberRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ChangeMemberResponse__Output>): grpc.ClientUnaryCall;
  changeMember(argument: _atoll_v1_ChangeMemberRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ChangeMemberResponse__Output>): grpc.ClientUnaryCall;
  changeMember(argument: _atoll_v1_ChangeMemberRequest, callback: grpc.requestCallback<_atoll_v1_ChangeMemberResponse__Output>): grpc.ClientUnaryCall;
  
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
   * Joins a partition with its right neighbour (MergePartitionRequest).
   */
  MergePartition(argument: _atoll_v1_MergePartitionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_MergePartitionResponse__Output>): grpc.ClientUnaryCall;
  MergePartition(argument: _atoll_v1_MergePartitionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_MergePartitionResponse__Output>): grpc.ClientUnaryCall;
  MergePartition(argument: _atoll_v1_MergePartitionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_MergePartitionResponse__Output>): grpc.ClientUnaryCall;
  MergePartition(argument: _atoll_v1_MergePartitionRequest, callback: grpc.requestCallback<_atoll_v1_MergePartitionResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Joins a partition with its right neighbour (MergePartitionRequest).
   */
  mergePartition(argument: _atoll_v1_MergePartitionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_MergePartitionResponse__Output>): grpc.ClientUnaryCall;
  mergePartition(argument: _atoll_v1_MergePartitionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_MergePartitionResponse__Output>): grpc.ClientUnaryCall;
  mergePartition(argument: _atoll_v1_MergePartitionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_MergePartitionResponse__Output>): grpc.ClientUnaryCall;
  mergePartition(argument: _atoll_v1_MergePartitionRequest, callback: grpc.requestCallback<_atoll_v1_MergePartitionResponse__Output>): grpc.ClientUnaryCall;
  
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
   * Pauses, resumes or reports the rebalancer (RebalanceRequest).
   */
  Rebalance(argument: _atoll_v1_RebalanceRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RebalanceResponse__Output>): grpc.ClientUnaryCall;
  Rebalance(argument: _atoll_v1_RebalanceRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_RebalanceResponse__Output>): grpc.ClientUnaryCall;
  Rebalance(argument: _atoll_v1_RebalanceRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RebalanceResponse__Output>): grpc.ClientUnaryCall;
  Rebalance(argument: _atoll_v1_RebalanceRequest, callback: grpc.requestCallback<_atoll_v1_RebalanceResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Pauses, resumes or reports the rebalancer (RebalanceRequest).
   */
  rebalance(argument: _atoll_v1_RebalanceRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RebalanceResponse__Output>): grpc.ClientUnaryCall;
  rebalance(argument: _atoll_v1_RebalanceRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_RebalanceResponse__Output>): grpc.ClientUnaryCall;
  rebalance(argument: _atoll_v1_RebalanceRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RebalanceResponse__Output>): grpc.ClientUnaryCall;
  rebalance(argument: _atoll_v1_RebalanceRequest, callback: grpc.requestCallback<_atoll_v1_RebalanceResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Splits a partition's hash range in two (SplitPartitionRequest).
   */
  SplitPartition(argument: _atoll_v1_SplitPartitionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_SplitPartitionResponse__Output>): grpc.ClientUnaryCall;
  SplitPartition(argument: _atoll_v1_SplitPartitionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_SplitPartitionResponse__Output>): grpc.ClientUnaryCall;
  SplitPartition(argument: _atoll_v1_SplitPartitionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_SplitPartitionResponse__Output>): grpc.ClientUnaryCall;
  SplitPartition(argument: _atoll_v1_SplitPartitionRequest, callback: grpc.requestCallback<_atoll_v1_SplitPartitionResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Splits a partition's hash range in two (SplitPartitionRequest).
   */
  splitPartition(argument: _atoll_v1_SplitPartitionRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_SplitPartitionResponse__Output>): grpc.ClientUnaryCall;
  splitPartition(argument: _atoll_v1_SplitPartitionRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_SplitPartitionResponse__Output>): grpc.ClientUnaryCall;
  splitPartition(argument: _atoll_v1_SplitPartitionRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_SplitPartitionResponse__Output>): grpc.ClientUnaryCall;
  splitPartition(argument: _atoll_v1_SplitPartitionRequest, callback: grpc.requestCallback<_atoll_v1_SplitPartitionResponse__Output>): grpc.ClientUnaryCall;
  
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
   * Changes the member table (ChangeMemberRequest).
   */
  ChangeMember: grpc.handleUnaryCall<_atoll_v1_ChangeMemberRequest__Output, _atoll_v1_ChangeMemberResponse>;
  
  /**
   * The cluster's membership, partition table and leaders, as the answering node sees them.
   */
  ClusterInfo: grpc.handleUnaryCall<_atoll_v1_ClusterInfoRequest__Output, _atoll_v1_ClusterInfoResponse>;
  
  /**
   * Joins a partition with its right neighbour (MergePartitionRequest).
   */
  MergePartition: grpc.handleUnaryCall<_atoll_v1_MergePartitionRequest__Output, _atoll_v1_MergePartitionResponse>;
  
  /**
   * Moves one replica of a partition to another node (MoveReplicaRequest).
   */
  MoveReplica: grpc.handleUnaryCall<_atoll_v1_MoveReplicaRequest__Output, _atoll_v1_MoveReplicaResponse>;
  
  /**
   * Pauses, resumes or reports the rebalancer (RebalanceRequest).
   */
  Rebalance: grpc.handleUnaryCall<_atoll_v1_RebalanceRequest__Output, _atoll_v1_RebalanceResponse>;
  
  /**
   * Splits a partition's hash range in two (SplitPartitionRequest).
   */
  SplitPartition: grpc.handleUnaryCall<_atoll_v1_SplitPartitionRequest__Output, _atoll_v1_SplitPartitionResponse>;
  
  /**
   * Asks a partition's leader to hand leadership to another replica.
   */
  TransferLeader: grpc.handleUnaryCall<_atoll_v1_TransferLeaderRequest__Output, _atoll_v1_TransferLeaderResponse>;
  
}

export interface ClusterDefinition extends grpc.ServiceDefinition {
  BackupPage: MethodDefinition<_atoll_v1_BackupPageRequest, _atoll_v1_BackupPageResponse, _atoll_v1_BackupPageRequest__Output, _atoll_v1_BackupPageResponse__Output>
  ChangeMember: MethodDefinition<_atoll_v1_ChangeMemberRequest, _atoll_v1_ChangeMemberResponse, _atoll_v1_ChangeMemberRequest__Output, _atoll_v1_ChangeMemberResponse__Output>
  ClusterInfo: MethodDefinition<_atoll_v1_ClusterInfoRequest, _atoll_v1_ClusterInfoResponse, _atoll_v1_ClusterInfoRequest__Output, _atoll_v1_ClusterInfoResponse__Output>
  MergePartition: MethodDefinition<_atoll_v1_MergePartitionRequest, _atoll_v1_MergePartitionResponse, _atoll_v1_MergePartitionRequest__Output, _atoll_v1_MergePartitionResponse__Output>
  MoveReplica: MethodDefinition<_atoll_v1_MoveReplicaRequest, _atoll_v1_MoveReplicaResponse, _atoll_v1_MoveReplicaRequest__Output, _atoll_v1_MoveReplicaResponse__Output>
  Rebalance: MethodDefinition<_atoll_v1_RebalanceRequest, _atoll_v1_RebalanceResponse, _atoll_v1_RebalanceRequest__Output, _atoll_v1_RebalanceResponse__Output>
  SplitPartition: MethodDefinition<_atoll_v1_SplitPartitionRequest, _atoll_v1_SplitPartitionResponse, _atoll_v1_SplitPartitionRequest__Output, _atoll_v1_SplitPartitionResponse__Output>
  TransferLeader: MethodDefinition<_atoll_v1_TransferLeaderRequest, _atoll_v1_TransferLeaderResponse, _atoll_v1_TransferLeaderRequest__Output, _atoll_v1_TransferLeaderResponse__Output>
}
