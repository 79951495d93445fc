/**
 * Opens an AtollNode that talks to its peers over gRPC: the production wiring of the node's
 * transport port (src/node/ports.ts), with the peers dialled at their dial addresses.
 */
import { AtollNode, type AtollNodeConfig } from '../node/atoll-node.js';
import type { NodeMetrics } from '../node/metrics.js';
import { systemTimers } from '../node/ports.js';
import { SharedTicker } from '../node/shared-ticker.js';
import { PeerTransport } from './grpc-peer-transport.js';

export interface GrpcNode {
  readonly node: AtollNode;
  /** The node's gRPC transport, whose server side (Peer.Raft) peer-service.ts serves. */
  readonly transport: PeerTransport;
}

/**
 * `onFatal`: told once when the node stops on a fatal error (the server shuts down on it).
 * `onRemoved`: told when the node learns it was removed from the cluster (the server exits).
 */
export async function openGrpcNode(config: AtollNodeConfig, metrics?: NodeMetrics, onFatal?: (error: Error) => void, onRemoved?: () => void): Promise<GrpcNode> {
  let transport: PeerTransport | undefined;
  const node = await AtollNode.open(config, {
    ...(metrics !== undefined && { metrics }),
    ...(onFatal !== undefined && { onFatal }),
    ...(onRemoved !== undefined && { onRemoved }),
    // The node's periodic jobs share one interval of the Raft tick (shared-ticker.ts): an idle
    // server wakes once per tick for all of them, not once per job on its own phase.
    timers: new SharedTicker(systemTimers, config.tickMs),
    transport: (events, peerSecret, clusterId) => {
      const dialable = new Map(config.peers);
      for (const [peer, address] of config.dialAddresses ?? []) if (dialable.has(peer)) dialable.set(peer, address);
      transport = new PeerTransport(config.id, dialable, events, config.logger, peerSecret, config.peerCredentials, clusterId, {
        warnUnreachableAfterMs: config.tickMs * config.electionTicks,
      });
      return transport;
    },
  });
  if (transport === undefined) throw new Error('AtollNode.open did not build its transport');
  return { node, transport };
}
