/**
 * The Peer gRPC service of a node (Raft streams and Forward) and the peer-secret guard of every
 * service on the peer port. The node itself exposes plain methods (peerCallAllowed,
 * executeForwarded); this file turns them into gRPC handlers.
 */
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { AtollError } from '../errors.js';
import { defaultLimits } from '../limits.js';
import type { AtollNode } from '../node/atoll-node.js';
import { peerSecretMetadataKey } from '../node/peer-secret.js';
import { decodeForwardRequest, encodeForwardResponse } from '../server/forward-codec.js';
import { serviceErrorOf } from '../server/grpc-errors.js';
import { decodePrepareReplicaRequest } from '../server/move-codec.js';
import { throwIfWireProblem } from '../server/wire-utf8.js';
import type { PeerTransport } from './grpc-peer-transport.js';

/** Whether a call to the peer port carries one of the cluster's peer secrets (constant time). */
function peerCallAllowed(node: AtollNode, call: { metadata: grpc.Metadata }): boolean {
  return node.peerCallAllowed(call.metadata.get(peerSecretMetadataKey)[0]);
}

/**
 * Wraps a service's handlers (unary or client-streaming) for the peer port: a call without the
 * peer secret gets UNAUTHENTICATED before its handler runs.
 */
export function requirePeerSecret(node: AtollNode, handlers: grpc.UntypedServiceImplementation, logger: Logger): grpc.UntypedServiceImplementation {
  const guarded: grpc.UntypedServiceImplementation = {};
  for (const [name, handler] of Object.entries(handlers)) {
    guarded[name] = ((call: { metadata: grpc.Metadata }, callback: grpc.sendUnaryData<unknown>) => {
      if (!peerCallAllowed(node, call)) {
        callback(serviceErrorOf(new AtollError('UNAUTHENTICATED', `${name} on the peer port needs the cluster peer secret`), logger));
        return;
      }
      (handler as (call: unknown, callback: grpc.sendUnaryData<unknown>) => void)(call, callback);
    }) as grpc.UntypedHandleCall;
  }
  return guarded;
}

/** Handlers for the internal Peer service. */
export function peerServiceHandlers(node: AtollNode, transport: PeerTransport, logger: Logger): grpc.UntypedServiceImplementation {
  return {
    raft: (call: grpc.ServerReadableStream<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      if (!peerCallAllowed(node, call)) {
        callback(serviceErrorOf(new AtollError('UNAUTHENTICATED', 'Peer.Raft needs the cluster peer secret'), logger));
        return;
      }
      transport.handleRaftStream(call, callback);
    },
    forward: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const deadline = call.getDeadline();
      const askedMs = deadline instanceof Date ? deadline.getTime() : Number.isFinite(deadline) ? Number(deadline) : Date.now() + defaultLimits.defaultCallTimeoutMs;
      const deadlineMs = Math.min(askedMs, Date.now() + node.limits.maxCallTimeoutMs);
      let forwarded;
      try {
        if (!peerCallAllowed(node, call)) throw new AtollError('UNAUTHENTICATED', 'Peer.Forward needs the cluster peer secret');
        throwIfWireProblem(call.request);
        forwarded = decodeForwardRequest(call.request);
      } catch (error) {
        callback(serviceErrorOf(error, logger));
        return;
      }
      node.executeForwarded(forwarded.operation, { deadlineMs, hops: forwarded.hops, ...(forwarded.tenant !== undefined && { tenant: forwarded.tenant }) }).then(
        (result) => callback(null, encodeForwardResponse(result)),
        (error: unknown) => callback(serviceErrorOf(error, logger)),
      );
    },
    prepareReplica: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      let partition: number;
      try {
        if (!peerCallAllowed(node, call)) throw new AtollError('UNAUTHENTICATED', 'Peer.PrepareReplica needs the cluster peer secret');
        throwIfWireProblem(call.request);
        partition = decodePrepareReplicaRequest(call.request);
      } catch (error) {
        callback(serviceErrorOf(error, logger));
        return;
      }
      node.prepareReplica(partition).then(
        () => callback(null, {}),
        (error: unknown) => callback(serviceErrorOf(error, logger)),
      );
    },
  };
}
