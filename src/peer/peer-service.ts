/**
 * The Peer gRPC service of a node (Raft streams, Forward and ForwardStream, whose handlers are in
 * forward-service.ts, replica preparation, the node's status for a peer's status page) and the
 * guard of every service on the peer port: the peer secret, and the cluster id (a peer of another
 * cluster is refused). The node itself exposes plain methods (peerCallAllowed, executeForwarded);
 * this file turns them into gRPC handlers.
 */
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { AtollError } from '../errors.js';
import type { AtollNode } from '../node/atoll-node.js';
import { clusterIdMetadataKey, nodeIdMetadataKey } from '../node/cluster/cluster-descriptor.js';
import { removedPeerError } from '../node/cluster/membership.js';
import { peerSecretMetadataKey } from '../node/peers/peer-secret.js';
import { serviceErrorOf } from '../wire/grpc-errors.js';
import { decodePrepareReplicaRequest } from '../wire/move-codec.js';
import { encodeNodeStatus, type NodeStatus } from '../wire/status-codec.js';
import { throwIfWireProblem } from '../wire/wire-utf8.js';
import { serveForward, serveForwardStream } from './forward-service.js';
import type { PeerTransport } from './grpc-peer-transport.js';

/** The last time each node logged a refused peer of another cluster (one line per 10 s at most). */
const lastMismatchLogMs = new WeakMap<AtollNode, number>();
const MISMATCH_LOG_INTERVAL_MS = 10_000;

/**
 * Why a call to the peer port is refused, or undefined when it may go on: it must carry one of
 * the cluster's peer secrets (constant time), and, when it names a cluster id, this node's. A call
 * without an id comes from a node older than cluster descriptors (a rolling upgrade): its secret
 * alone admits it.
 */
function peerCallRefusal(node: AtollNode, call: { metadata: grpc.Metadata }, what: string, logger: Logger): AtollError | undefined {
  if (!node.peerCallAllowed(call.metadata.get(peerSecretMetadataKey)[0])) {
    return new AtollError('UNAUTHENTICATED', `${what} needs the cluster peer secret`);
  }
  // A removed member is refused even with the secret: ids are never reused (membership-table.ts).
  const caller = Number(call.metadata.get(nodeIdMetadataKey)[0] ?? 0);
  if (Number.isSafeInteger(caller) && caller > 0 && node.memberRemoved(caller)) return removedPeerError(caller);
  const presented = call.metadata.get(clusterIdMetadataKey)[0];
  if (presented === undefined || presented === node.descriptor.clusterId) return undefined;
  const shown = String(presented).slice(0, 64);
  const nowMs = Date.now();
  if (nowMs - (lastMismatchLogMs.get(node) ?? -Infinity) >= MISMATCH_LOG_INTERVAL_MS) {
    lastMismatchLogMs.set(node, nowMs);
    logger.warn(
      { clusterId: node.descriptor.clusterId, peerClusterId: shown, call: what },
      'refused a peer of another cluster: it presented another cluster id (its data directory or creation flags belong to another cluster)',
    );
  }
  return new AtollError('CLUSTER_MISMATCH', `${what}: this node belongs to cluster ${node.descriptor.clusterId}, the caller to cluster ${shown}`);
}

/**
 * Wraps a service's handlers (unary or client-streaming) for the peer port: a call without the
 * peer secret gets UNAUTHENTICATED before its handler runs.
 */
export function requirePeerSecret(node: AtollNode, handlers: grpc.UntypedServiceImplementation, logger: Logger): grpc.UntypedServiceImplementation {
  const guarded: grpc.UntypedServiceImplementation = {};
  for (const [name, handler] of Object.entries(handlers)) {
    guarded[name] = ((call: { metadata: grpc.Metadata }, callback: grpc.sendUnaryData<unknown>) => {
      const refusal = peerCallRefusal(node, call, `${name} on the peer port`, logger);
      if (refusal !== undefined) {
        callback(serviceErrorOf(refusal, logger));
        return;
      }
      (handler as (call: unknown, callback: grpc.sendUnaryData<unknown>) => void)(call, callback);
    }) as grpc.UntypedHandleCall;
  }
  return guarded;
}

/**
 * Handlers for the internal Peer service. `nodeStatus` gives this node's own status for a peer's
 * status page (Peer.NodeStatus; status-page.ts); without it that call is answered UNAVAILABLE.
 */
export function peerServiceHandlers(node: AtollNode, transport: PeerTransport, logger: Logger, nodeStatus?: () => NodeStatus): grpc.UntypedServiceImplementation {
  return {
    raft: (call: grpc.ServerReadableStream<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const refusal = peerCallRefusal(node, call, 'Peer.Raft', logger);
      if (refusal !== undefined) {
        callback(serviceErrorOf(refusal, logger));
        return;
      }
      transport.handleRaftStream(call, callback);
    },
    forward: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      const refusal = peerCallRefusal(node, call, 'Peer.Forward', logger);
      if (refusal !== undefined) {
        callback(serviceErrorOf(refusal, logger));
        return;
      }
      serveForward(node, call, callback, logger);
    },
    // The peer is checked once, when its stream opens; a refused stream ends with the status a
    // refused unary call gets, and each of its calls fails with it.
    forwardStream: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
      const refusal = peerCallRefusal(node, call, 'Peer.ForwardStream', logger);
      if (refusal !== undefined) {
        call.emit('error', serviceErrorOf(refusal, logger));
        return;
      }
      serveForwardStream(node, call, logger);
    },
    prepareReplica: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      let request: ReturnType<typeof decodePrepareReplicaRequest>;
      try {
        const refusal = peerCallRefusal(node, call, 'Peer.PrepareReplica', logger);
        if (refusal !== undefined) throw refusal;
        throwIfWireProblem(call.request);
        request = decodePrepareReplicaRequest(call.request);
      } catch (error) {
        callback(serviceErrorOf(error, logger));
        return;
      }
      node.prepareReplica(request.partition, request.voteFloor).then(
        () => callback(null, {}),
        (error: unknown) => callback(serviceErrorOf(error, logger)),
      );
    },
    nodeStatus: (call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      try {
        const refusal = peerCallRefusal(node, call, 'Peer.NodeStatus', logger);
        if (refusal !== undefined) throw refusal;
        if (nodeStatus === undefined) throw new AtollError('UNAVAILABLE', 'this node serves no status page');
        callback(null, encodeNodeStatus(nodeStatus()));
      } catch (error) {
        callback(serviceErrorOf(error, logger));
      }
    },
  };
}
