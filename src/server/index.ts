/**
 * The gRPC edge of a node: what src/node and src/bin/atoll-server.ts use to serve clients and peers.
 *
 * - addClientServices / createGrpcServer: KV, Cluster, health and reflection on a grpc-js server.
 * - Peer.Forward: encodeForwardRequest / decodeForwardResponse on the forwarding node,
 *   decodeForwardRequest / runKvOperation / encodeForwardResponse on the leader; errors go out
 *   with serviceErrorOf and come back with atollErrorOfServiceError.
 * - openUnaryCallScope / unaryHandler: the CallContext (deadline, cancellation, hops) of a call.
 */
export { openCallScope, openUnaryCallScope, deadlineMsOf, type CallScope, type CallScopeOptions, type ServerCallLike } from './call-context.js';
export { grpcChannelOptions } from '../wire/channel-options.js';
export { clusterServiceHandlers } from './cluster-service.js';
export * from '../wire/convert.js';
export { decodeForwardRequest, decodeForwardResponse, encodeForwardRequest, encodeForwardResponse, type ForwardedOperation } from '../wire/forward-codec.js';
export {
  atollErrorOfServiceError,
  errorMetadataKeys,
  grpcStatusOf,
  internalErrorMessage,
  isNeverSentFailure,
  leaderHintOf,
  leaderHintOfMetadata,
  sendableError,
  serviceErrorOf,
  type ErrorLogger,
  type LeaderHint,
  type ReceivedStatus,
} from '../wire/grpc-errors.js';
export { addClientServices, createGrpcServer, wholeServerHealthName, type ClientServices, type ClientServicesOptions } from './grpc-server.js';
export { kvServiceHandlers } from './kv-service.js';
export {
  decodeKvOperation,
  decodeKvResult,
  encodeKvOperation,
  encodeKvResult,
  isWriteKind,
  kvCodecs,
  kvKinds,
  runKvOperation,
  type KvKind,
  type KvOperation,
  type KvResult,
  type KvResultOf,
  type KvTypes,
} from '../wire/kv-operation.js';
export { kvStreamHandler, type KvStreamOptions } from './kv-stream.js';
export {
  clusterServiceDefinition,
  kvServiceDefinition,
  packageDefinition,
  peerServiceDefinition,
  protoFileNames,
  protoFilePaths,
  protoRoot,
  serviceNames,
} from '../wire/protos.js';
export { unaryHandler } from './unary-handler.js';
export { formatWireInt64, parseWireCount, parseWireInt64, parseWireUint32 } from '../wire/wire-numbers.js';
export type * from '../wire/wire-types.js';
