// Original file: proto/atoll/v1/cluster.proto

import type * as grpc from '@grpc/grpc-js'
import type { MethodDefinition } from '@grpc/proto-loader'
import type { ForwardFrame as _atoll_v1_ForwardFrame, ForwardFrame__Output as _atoll_v1_ForwardFrame__Output } from '../../atoll/v1/ForwardFrame.js';
import type { ForwardReplyFrame as _atoll_v1_ForwardReplyFrame, ForwardReplyFrame__Output as _atoll_v1_ForwardReplyFrame__Output } from '../../atoll/v1/ForwardReplyFrame.js';
import type { ForwardRequest as _atoll_v1_ForwardRequest, ForwardRequest__Output as _atoll_v1_ForwardRequest__Output } from '../../atoll/v1/ForwardRequest.js';
import type { ForwardResponse as _atoll_v1_ForwardResponse, ForwardResponse__Output as _atoll_v1_ForwardResponse__Output } from '../../atoll/v1/ForwardResponse.js';
import type { NodeStatusRequest as _atoll_v1_NodeStatusRequest, NodeStatusRequest__Output as _atoll_v1_NodeStatusRequest__Output } from '../../atoll/v1/NodeStatusRequest.js';
import type { NodeStatusResponse as _atoll_v1_NodeStatusResponse, NodeStatusResponse__Output as _atoll_v1_NodeStatusResponse__Output } from '../../atoll/v1/NodeStatusResponse.js';
import type { PrepareReplicaRequest as _atoll_v1_PrepareReplicaRequest, PrepareReplicaRequest__Output as _atoll_v1_PrepareReplicaRequest__Output } from '../../atoll/v1/PrepareReplicaRequest.js';
import type { PrepareReplicaResponse as _atoll_v1_PrepareReplicaResponse, PrepareReplicaResponse__Output as _atoll_v1_PrepareReplicaResponse__Output } from '../../atoll/v1/PrepareReplicaResponse.js';
import type { RaftFrame as _atoll_v1_RaftFrame, RaftFrame__Output as _atoll_v1_RaftFrame__Output } from '../../atoll/v1/RaftFrame.js';
import type { RaftStreamSummary as _atoll_v1_RaftStreamSummary, RaftStreamSummary__Output as _atoll_v1_RaftStreamSummary__Output } from '../../atoll/v1/RaftStreamSummary.js';

export interface PeerClient extends grpc.Client {
  /**
   * Runs a client request on this node, which should lead the key's partition.
   */
  Forward(argument: _atoll_v1_ForwardRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ForwardResponse__Output>): grpc.ClientUnaryCall;
  Forward(argument: _atoll_v1_ForwardRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ForwardResponse__Output>): grpc.ClientUnaryCall;
  Forward(argument: _atoll_v1_ForwardRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ForwardResponse__Output>): grpc.ClientUnaryCall;
  Forward(argument: _atoll_v1_ForwardRequest, callback: grpc.requestCallback<_atoll_v1_ForwardResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Runs a client request on this node, which should lead the key's partition.
   */
  forward(argument: _atoll_v1_ForwardRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ForwardResponse__Output>): grpc.ClientUnaryCall;
  forward(argument: _atoll_v1_ForwardRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_ForwardResponse__Output>): grpc.ClientUnaryCall;
  forward(argument: _atoll_v1_ForwardRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_ForwardResponse__Output>): grpc.ClientUnaryCall;
  forward(argument: _atoll_v1_ForwardRequest, callback: grpc.requestCallback<_atoll_v1_ForwardResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Forward's calls from one node to another on one long-lived stream, told apart by call_id:
   * each message carries the calls (or cancellations) and the answers ready since the last one.
   */
  ForwardStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_atoll_v1_ForwardFrame, _atoll_v1_ForwardReplyFrame__Output>;
  ForwardStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_atoll_v1_ForwardFrame, _atoll_v1_ForwardReplyFrame__Output>;
  /**
   * Forward's calls from one node to another on one long-lived stream, told apart by call_id:
   * each message carries the calls (or cancellations) and the answers ready since the last one.
   */
  forwardStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<_atoll_v1_ForwardFrame, _atoll_v1_ForwardReplyFrame__Output>;
  forwardStream(options?: grpc.CallOptions): grpc.ClientDuplexStream<_atoll_v1_ForwardFrame, _atoll_v1_ForwardReplyFrame__Output>;
  
  /**
   * This node's own status, for a peer's status page (NodeStatusResponse).
   */
  NodeStatus(argument: _atoll_v1_NodeStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_NodeStatusResponse__Output>): grpc.ClientUnaryCall;
  NodeStatus(argument: _atoll_v1_NodeStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_NodeStatusResponse__Output>): grpc.ClientUnaryCall;
  NodeStatus(argument: _atoll_v1_NodeStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_NodeStatusResponse__Output>): grpc.ClientUnaryCall;
  NodeStatus(argument: _atoll_v1_NodeStatusRequest, callback: grpc.requestCallback<_atoll_v1_NodeStatusResponse__Output>): grpc.ClientUnaryCall;
  /**
   * This node's own status, for a peer's status page (NodeStatusResponse).
   */
  nodeStatus(argument: _atoll_v1_NodeStatusRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_NodeStatusResponse__Output>): grpc.ClientUnaryCall;
  nodeStatus(argument: _atoll_v1_NodeStatusRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_NodeStatusResponse__Output>): grpc.ClientUnaryCall;
  nodeStatus(argument: _atoll_v1_NodeStatusRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_NodeStatusResponse__Output>): grpc.ClientUnaryCall;
  nodeStatus(argument: _atoll_v1_NodeStatusRequest, callback: grpc.requestCallback<_atoll_v1_NodeStatusResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * Opens an empty replica of a partition here (PrepareReplicaRequest).
   */
  PrepareReplica(argument: _atoll_v1_PrepareReplicaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_PrepareReplicaResponse__Output>): grpc.ClientUnaryCall;
  PrepareReplica(argument: _atoll_v1_PrepareReplicaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_PrepareReplicaResponse__Output>): grpc.ClientUnaryCall;
  PrepareReplica(argument: _atoll_v1_PrepareReplicaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_PrepareReplicaResponse__Output>): grpc.ClientUnaryCall;
  PrepareReplica(argument: _atoll_v1_PrepareReplicaRequest, callback: grpc.requestCallback<_atoll_v1_PrepareReplicaResponse__Output>): grpc.ClientUnaryCall;
  /**
   * Opens an empty replica of a partition here (PrepareReplicaRequest).
   */
  prepareReplica(argument: _atoll_v1_PrepareReplicaRequest, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_PrepareReplicaResponse__Output>): grpc.ClientUnaryCall;
  prepareReplica(argument: _atoll_v1_PrepareReplicaRequest, metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_PrepareReplicaResponse__Output>): grpc.ClientUnaryCall;
  prepareReplica(argument: _atoll_v1_PrepareReplicaRequest, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_PrepareReplicaResponse__Output>): grpc.ClientUnaryCall;
  prepareReplica(argument: _atoll_v1_PrepareReplicaRequest, callback: grpc.requestCallback<_atoll_v1_PrepareReplicaResponse__Output>): grpc.ClientUnaryCall;
  
  /**
   * A long-lived stream of Raft message batches from one node to another.
   */
  Raft(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RaftStreamSummary__Output>): grpc.ClientWritableStream<_atoll_v1_RaftFrame>;
  Raft(metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_RaftStreamSummary__Output>): grpc.ClientWritableStream<_atoll_v1_RaftFrame>;
  Raft(options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RaftStreamSummary__Output>): grpc.ClientWritableStream<_atoll_v1_RaftFrame>;
  Raft(callback: grpc.requestCallback<_atoll_v1_RaftStreamSummary__Output>): grpc.ClientWritableStream<_atoll_v1_RaftFrame>;
  /**
   * A long-lived stream of Raft message batches from one node to another.
   */
  raft(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RaftStreamSummary__Output>): grpc.ClientWritableStream<_atoll_v1_RaftFrame>;
  raft(metadata: grpc.Metadata, callback: grpc.requestCallback<_atoll_v1_RaftStreamSummary__Output>): grpc.ClientWritableStream<_atoll_v1_RaftFrame>;
  raft(options: grpc.CallOptions, callback: grpc.requestCallback<_atoll_v1_RaftStreamSummary__Output>): grpc.ClientWritableStream<_atoll_v1_RaftFrame>;
  raft(callback: grpc.requestCallback<_atoll_v1_RaftStreamSummary__Output>): grpc.ClientWritableStream<_atoll_v1_RaftFrame>;
  
}

export interface PeerHandlers extends grpc.UntypedServiceImplementation {
  /**
   * Runs a client request on this node, which should lead the key's partition.
   */
  Forward: grpc.handleUnaryCall<_atoll_v1_ForwardRequest__Output, _atoll_v1_ForwardResponse>;
  
  /**
   * Forward's calls from one node to another on one long-lived stream, told apart by call_id:
   * each message carries the calls (or cancellations) and the answers ready since the last one.
   */
  ForwardStream: grpc.handleBidiStreamingCall<_atoll_v1_ForwardFrame__Output, _atoll_v1_ForwardReplyFrame>;
  
  /**
   * This node's own status, for a peer's status page (NodeStatusResponse).
   */
  NodeStatus: grpc.handleUnaryCall<_atoll_v1_NodeStatusRequest__Output, _atoll_v1_NodeStatusResponse>;
  
  /**
   * Opens an empty replica of a partition here (PrepareReplicaRequest).
   */
  PrepareReplica: grpc.handleUnaryCall<_atoll_v1_PrepareReplicaRequest__Output, _atoll_v1_PrepareReplicaResponse>;
  
  /**
   * A long-lived stream of Raft message batches from one node to another.
   */
  Raft: grpc.handleClientStreamingCall<_atoll_v1_RaftFrame__Output, _atoll_v1_RaftStreamSummary>;
  
}

export interface PeerDefinition extends grpc.ServiceDefinition {
  Forward: MethodDefinition<_atoll_v1_ForwardRequest, _atoll_v1_ForwardResponse, _atoll_v1_ForwardRequest__Output, _atoll_v1_ForwardResponse__Output>
  ForwardStream: MethodDefinition<_atoll_v1_ForwardFrame, _atoll_v1_ForwardReplyFrame, _atoll_v1_ForwardFrame__Output, _atoll_v1_ForwardReplyFrame__Output>
  NodeStatus: MethodDefinition<_atoll_v1_NodeStatusRequest, _atoll_v1_NodeStatusResponse, _atoll_v1_NodeStatusRequest__Output, _atoll_v1_NodeStatusResponse__Output>
  PrepareReplica: MethodDefinition<_atoll_v1_PrepareReplicaRequest, _atoll_v1_PrepareReplicaResponse, _atoll_v1_PrepareReplicaRequest__Output, _atoll_v1_PrepareReplicaResponse__Output>
  Raft: MethodDefinition<_atoll_v1_RaftFrame, _atoll_v1_RaftStreamSummary, _atoll_v1_RaftFrame__Output, _atoll_v1_RaftStreamSummary__Output>
}
