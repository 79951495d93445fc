/**
 * The gRPC implementation of the node's transport (src/node/ports.ts NodeTransport): Raft frames on
 * one long-lived stream per peer, forwarded requests on another (forward-stream.ts; unary Forward
 * calls to a peer without it), ClusterInfo as unary calls, and the server side of Peer.Raft. It
 * sits above both src/node and src/server, so the node never depends on protobuf.
 */
import * as grpc from '@grpc/grpc-js';
import type { VoteFloor } from '../raft/types.js';
import type { Logger } from 'pino';
import { limits } from '../limits.js';
import { grpcChannelOptions, keepaliveChannelOptions } from '../wire/channel-options.js';
import { decodeClusterInfoResponse } from '../wire/cluster-convert.js';
import { decodeForwardResponse, encodeForwardRequest, forwardRequestSerializer } from '../wire/forward-codec.js';
import type { ClusterInfoResponse } from '../api/node-api.js';
import { AtollError } from '../errors.js';
import { atollErrorOfServiceError, serviceErrorOf } from '../wire/grpc-errors.js';
import type { KvOperation, KvResult } from '../api/operations.js';
import type { NodeTransport, TransportEvents } from '../node/ports.js';
import { packageDefinition } from '../wire/protos.js';
import { formatWireInt64 } from '../wire/wire-numbers.js';
import { clusterIdMetadataKey, nodeIdMetadataKey } from '../node/cluster/cluster-descriptor.js';
import { peerSecretMetadataKey } from '../node/peers/peer-secret.js';
import { decodeRaftFrame, encodeRaftFrame, type GroupMessage } from '../node/raft-wire.js';
import { decodeNodeStatus, type NodeStatus } from '../wire/status-codec.js';
import { Forwarder, type ForwardStats } from './forward-stream.js';
import type { CallSignal } from '../api/call-signal.js';

type ClusterClient = grpc.Client & {
  clusterInfo(request: unknown, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<unknown>): grpc.ClientUnaryCall;
};

type PeerClient = grpc.Client & {
  raft(callback: grpc.requestCallback<unknown>): grpc.ClientWritableStream<unknown>;
  raft(metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<unknown>): grpc.ClientWritableStream<unknown>;
  forward(request: unknown, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<unknown>): grpc.ClientUnaryCall;
  forwardStream(metadata: grpc.Metadata, options?: grpc.CallOptions): grpc.ClientDuplexStream<Buffer, unknown>;
  prepareReplica(request: unknown, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<unknown>): grpc.ClientUnaryCall;
  nodeStatus(request: unknown, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<unknown>): grpc.ClientUnaryCall;
};

const loadedPackage = grpc.loadPackageDefinition(packageDefinition) as unknown as {
  atoll: {
    v1: {
      Cluster: new (address: string, credentials: grpc.ChannelCredentials, options?: object) => ClusterClient;
    };
  };
};
/**
 * The Peer client, but Forward's request serializer sends an envelope written already as it is
 * (forward-codec.ts), and ForwardStream's its frames, which are always written already
 * (forward-stream-codec.ts).
 */
const peerDefinition = packageDefinition['atoll.v1.Peer'] as unknown as grpc.ServiceDefinition;
const forwardDefinition = peerDefinition['Forward'] as grpc.MethodDefinition<unknown, unknown>;
const forwardStreamDefinition = peerDefinition['ForwardStream'] as grpc.MethodDefinition<unknown, unknown>;
const PeerClientConstructor = grpc.makeClientConstructor(
  {
    ...peerDefinition,
    Forward: { ...forwardDefinition, requestSerialize: forwardRequestSerializer(forwardDefinition.requestSerialize) },
    ForwardStream: { ...forwardStreamDefinition, requestSerialize: forwardRequestSerializer(forwardStreamDefinition.requestSerialize) },
  },
  'atoll.v1.Peer',
) as unknown as new (address: string, credentials: grpc.ChannelCredentials, options?: object) => PeerClient;
const ClusterClientConstructor = loadedPackage.atoll.v1.Cluster;

/** Limits of the Raft stream to one peer. Raft tolerates loss, so beyond them frames are dropped. */
const MAX_QUEUED_FRAMES = 256;
const RECONNECT_DELAY_MS = 200;
/** Long-lived, but still bounded: the stream is reopened when it expires. */
const RAFT_STREAM_DEADLINE_MS = 60 * 60 * 1000;
/** Frames stay well under the gRPC message limit (one Raft message is at most 1 MiB of entries). */
const MAX_FRAME_BYTES = Math.floor(limits.maxMessageBytes * 0.75);
/** A stream open this long on a connected channel was not refused: the peer is reachable. */
const STREAM_SETTLED_MS = 100;
/** The election timeout of the node defaults (100 ms ticks, 10 of them), for a transport made without one. */
const DEFAULT_WARN_UNREACHABLE_AFTER_MS = 1_000;
/**
 * How long a peer this node has not reached yet may stay unreachable before the warning: the nodes
 * of a cluster start at about the same time, not at the same instant. `npm start` on a loaded
 * 2-core machine measured 1.0-2.0 s from a node's transport being made until its stream to a peer
 * got through (1.0-1.5 s from the first failed one: the nodes open their partitions before they
 * listen, then grpc-js's reconnect backoff, up to 1 s), so the election timeout alone would warn on
 * a healthy start.
 */
const DEFAULT_START_GRACE_MS = 10_000;

interface PeerLink {
  readonly id: number;
  readonly address: string;
  readonly client: PeerClient;
  readonly cluster: ClusterClient;
  /** Forwarded requests to the peer. */
  readonly forwarder: Forwarder;
  stream: grpc.ClientWritableStream<unknown> | undefined;
  /** When `stream` was opened (ms). */
  streamOpenedMs: number;
  /** Frames waiting for 'drain' (back-pressure), oldest first. */
  queued: Uint8Array[];
  draining: boolean;
  lastFailureMs: number;
  reachable: boolean;
  /**
   * The outage log lines (checkOutage, warnIfDownTooLong), apart from `reachable` (which frames
   * from the peer set): a stream of this node's got through to the peer, and none failed since.
   */
  up: boolean;
  /** While not up: since when (ms), from the first send or failure of the outage; 0 before either. */
  downSinceMs: number;
  /** The last failure of this outage, for its log lines. */
  lastError: string | undefined;
  /** This outage was logged at warn (once); its end is then logged at info. */
  downWarned: boolean;
  /** A stream to this peer got through at least once. */
  everUp: boolean;
  droppedFrames: number;
}

/** Options of a PeerTransport beyond its wiring. */
export interface PeerTransportOptions {
  /**
   * How long a peer may stay unreachable before the transport warns (once per outage, with an
   * info line when it is back); shorter outages, such as peers still starting, are logged at
   * debug. The node's election timeout (tickMs * electionTicks); default 1000 ms.
   */
  readonly warnUnreachableAfterMs?: number;
  /**
   * The same for a peer this transport has not reached yet (start-up: the peers start at about the
   * same time); at least warnUnreachableAfterMs. Default 10 s.
   */
  readonly startGraceMs?: number;
}

/**
 * Node-to-node traffic. Raft: one long-lived client-streaming call per ordered node pair, carrying
 * one frame per loop iteration with every group's messages to that peer; writes respect
 * back-pressure ('drain'). Forward: one long-lived bidirectional stream per peer, each request
 * with the caller's deadline (forward-stream.ts).
 */
export class PeerTransport implements NodeTransport {
  private readonly links = new Map<number, PeerLink>();
  private closed = false;

  constructor(
    private readonly selfId: number,
    peers: ReadonlyMap<number, string>,
    private readonly events: TransportEvents,
    private readonly logger: Logger,
    /** The cluster peer secret, sent as `atoll-peer-secret` on every call to a peer. */
    private readonly peerSecret: string,
    /** How to dial peers: plaintext unless peer TLS is configured (server/server-tls.ts). */
    credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(),
    /** This node's cluster id (node/cluster/cluster-descriptor.ts), sent as `atoll-cluster-id` with the secret. */
    private readonly clusterId?: string,
    options: PeerTransportOptions = {},
  ) {
    this.credentials = credentials;
    this.warnUnreachableAfterMs = options.warnUnreachableAfterMs ?? DEFAULT_WARN_UNREACHABLE_AFTER_MS;
    this.warnUnreachedAfterMs = Math.max(this.warnUnreachableAfterMs, options.startGraceMs ?? DEFAULT_START_GRACE_MS);
    for (const [id, address] of peers) if (id !== selfId) this.addPeer(id, address, credentials);
  }

  private readonly credentials: grpc.ChannelCredentials;
  private readonly warnUnreachableAfterMs: number;
  private readonly warnUnreachedAfterMs: number;

  /** Dials a new member at `address` (its peer port; membership.ts). A peer with a link keeps it. */
  addPeer(id: number, address: string, credentials: grpc.ChannelCredentials = this.credentials): void {
    if (id === this.selfId || this.links.has(id) || this.closed) return;
    const client = new PeerClientConstructor(address, credentials, {
      ...grpcChannelOptions,
      ...keepaliveChannelOptions,
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1000,
    });
    const cluster = new ClusterClientConstructor(address, credentials, { 'grpc.max_reconnect_backoff_ms': 1000 });
    const forwarder = new Forwarder(id, {
      openStream: () => client.forwardStream(this.metadata()),
      unary: (request, deadlineMs, signal) =>
        this.unary(id, (link, callback) => link.client.forward(request, this.metadata(), { deadline: deadlineMs }, callback), decodeForwardResponse, signal),
    });
    this.links.set(id, {
      id,
      address,
      client,
      cluster,
      forwarder,
      stream: undefined,
      streamOpenedMs: 0,
      queued: [],
      draining: false,
      lastFailureMs: 0,
      reachable: true,
      up: false,
      downSinceMs: 0,
      lastError: undefined,
      downWarned: false,
      everUp: false,
      droppedFrames: 0,
    });
  }

  /** Closes the link to a removed member; nothing is sent to it afterwards. */
  dropPeer(id: number): void {
    const link = this.links.get(id);
    if (link === undefined) return;
    this.links.delete(id);
    link.forwarder.close();
    link.stream?.end();
    link.client.close();
    link.cluster.close();
  }

  addressOf(peer: number): string | undefined {
    return this.links.get(peer)?.address;
  }

  isReachable(peer: number): boolean {
    return peer === this.selfId || (this.links.get(peer)?.reachable ?? false);
  }

  /**
   * Sends messages for many groups to `peer`, in as few frames as fit (none: an empty frame, the
   * node heartbeat of src/node/peers/liveness.ts). Never throws: Raft retries.
   */
  send(peer: number, messages: GroupMessage[]): void {
    const link = this.links.get(peer);
    if (!link || this.closed) return;
    const frame = encodeRaftFrame(messages);
    if (frame.length > MAX_FRAME_BYTES && messages.length > 1) {
      // A frame must fit in one gRPC message: split the batch rather than break the stream.
      const half = Math.ceil(messages.length / 2);
      this.send(peer, messages.slice(0, half));
      this.send(peer, messages.slice(half));
      return;
    }
    this.sendFrame(link, frame);
  }

  private sendFrame(link: PeerLink, frame: Uint8Array): void {
    if (!link.up) this.checkOutage(link);
    if (link.draining) {
      if (link.queued.length >= MAX_QUEUED_FRAMES) {
        link.queued.shift();
        link.droppedFrames++;
      }
      link.queued.push(frame);
      return;
    }
    const stream = this.streamFor(link);
    if (!stream) return;
    this.write(link, stream, frame);
  }

  private write(link: PeerLink, stream: grpc.ClientWritableStream<unknown>, frame: Uint8Array): void {
    const ok = stream.write({ fromNode: this.selfId, payload: Buffer.from(frame.buffer, frame.byteOffset, frame.byteLength) });
    if (!ok) {
      link.draining = true;
      stream.once('drain', () => {
        link.draining = false;
        const queued = link.queued;
        link.queued = [];
        for (const next of queued) {
          if (link.draining || link.stream !== stream) {
            link.queued.push(next);
            continue;
          }
          this.write(link, stream, next);
        }
      });
    }
  }

  private streamFor(link: PeerLink): grpc.ClientWritableStream<unknown> | undefined {
    if (link.stream) return link.stream;
    if (Date.now() - link.lastFailureMs < RECONNECT_DELAY_MS) return undefined;
    const stream = link.client.raft(this.metadata(), { deadline: Date.now() + RAFT_STREAM_DEADLINE_MS }, (error) => {
      if (link.stream === stream) link.stream = undefined;
      if (error && !this.closed) this.markFailed(link, error);
    });
    stream.on('error', () => {
      // Reported through the callback above; this handler only keeps the error from being thrown.
    });
    link.stream = stream;
    link.streamOpenedMs = Date.now();
    return stream;
  }

  private markFailed(link: PeerLink, error: grpc.ServiceError): void {
    const now = Date.now();
    link.lastFailureMs = now;
    link.draining = false;
    link.queued = [];
    if (link.up || link.downSinceMs === 0) link.downSinceMs = now;
    link.up = false;
    // Debug, once per outage and error: every retry fails the same way until the peer is back.
    if (link.lastError !== error.message) this.logger.debug({ peer: link.id, address: link.address, err: error.message }, 'raft stream to peer failed');
    link.lastError = error.message;
    this.warnIfDownTooLong(link, now);
    link.reachable = false;
    this.events.onPeerUnreachable(link.id);
  }

  /**
   * At a send to a peer in an outage: a stream open for a while (a refused call, such as one
   * without the peer secret, fails within a round trip) on a connected channel has got through, so
   * the outage is over; otherwise it may now have lasted long enough to warn about.
   */
  private checkOutage(link: PeerLink): void {
    const now = Date.now();
    if (link.downSinceMs === 0) link.downSinceMs = now;
    if (
      link.stream !== undefined &&
      now - link.streamOpenedMs >= STREAM_SETTLED_MS &&
      link.client.getChannel().getConnectivityState(false) === grpc.connectivityState.READY
    ) {
      const fields = { peer: link.id, address: link.address, unreachableMs: now - link.downSinceMs };
      if (link.downWarned) this.logger.info(fields, 'peer reachable again');
      else this.logger.debug(fields, link.everUp ? 'raft stream to peer reconnected' : 'raft stream to peer connected');
      link.up = true;
      link.lastError = undefined;
      link.downWarned = false;
      link.everUp = true;
      return;
    }
    this.warnIfDownTooLong(link, now);
  }

  /**
   * One warning per outage, once it outlasts the election timeout (for a peer not reached yet, the
   * start-up grace): a peer back within that time (a restart, a dropped connection) or still
   * starting is no news to the operator.
   */
  private warnIfDownTooLong(link: PeerLink, now: number): void {
    if (link.up || link.downWarned || link.downSinceMs === 0) return;
    const unreachableMs = now - link.downSinceMs;
    if (unreachableMs < (link.everUp ? this.warnUnreachableAfterMs : this.warnUnreachedAfterMs)) return;
    link.downWarned = true;
    const fields = { peer: link.id, address: link.address, unreachableMs, err: link.lastError ?? 'no connection yet' };
    if (link.everUp) this.logger.warn(fields, 'peer unreachable for longer than the election timeout; retrying (logged again when it is back)');
    else this.logger.warn(fields, 'peer not reached since this node started; retrying (logged again when it is back)');
  }

  /**
   * Server side of Peer.Raft: decodes frames from one peer until it hangs up. A frame that does not
   * decode ends this stream with INVALID_ARGUMENT (logged); the node and its other streams go on,
   * and a real peer simply reconnects.
   */
  handleRaftStream(call: grpc.ServerReadableStream<unknown, unknown>, callback: grpc.sendUnaryData<unknown>): void {
    let frames = 0;
    let finished = false;
    const finish = (error: grpc.StatusObject | null): void => {
      if (finished) return;
      finished = true;
      call.removeAllListeners('data');
      if (error) callback(error);
      else callback(null, { frames: String(frames) });
    };
    call.on('data', (frame: { fromNode?: number; payload?: Uint8Array }) => {
      if (finished) return;
      const from = Number(frame.fromNode ?? 0);
      let messages: GroupMessage[];
      try {
        messages = decodeRaftFrame(frame.payload ?? new Uint8Array(0));
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        this.logger.warn({ from, frames, err: reason }, 'malformed raft frame; closing that stream');
        finish(serviceErrorOf(new AtollError('INVALID_ARGUMENT', `malformed raft frame: ${reason}`), this.logger));
        return;
      }
      frames++;
      // The outage log lines follow this node's own streams to the peer (checkOutage).
      const link = this.links.get(from);
      if (link) link.reachable = true;
      this.events.onMessages(from, messages);
    });
    call.on('end', () => finish(null));
    call.on('error', () => {
      // The peer went away; its own side reconnects.
    });
  }

  /** The metadata of every call to a peer. */
  private metadata(): grpc.Metadata {
    const metadata = new grpc.Metadata();
    metadata.set(peerSecretMetadataKey, this.peerSecret);
    if (this.clusterId !== undefined) metadata.set(clusterIdMetadataKey, this.clusterId);
    metadata.set(nodeIdMetadataKey, String(this.selfId));
    return metadata;
  }

  /** Sends a client request to another node, with the caller's deadline: on the peer's forward stream (forward-stream.ts). */
  forward(peer: number, operation: KvOperation, hops: number, deadlineMs: number, signal?: CallSignal, tenant?: string): Promise<KvResult> {
    const link = this.links.get(peer);
    if (!link) return Promise.reject(noLink(peer));
    return link.forwarder.forward(encodeForwardRequest({ hops, operation, ...(tenant !== undefined && { tenant }) }), deadlineMs, signal);
  }

  /** How this node's forwards to `peer` travelled (streams opened, calls on them, unary calls); undefined without a link. */
  forwardStats(peer: number): Readonly<ForwardStats> | undefined {
    return this.links.get(peer)?.forwarder.stats;
  }

  /** A peer's view of the cluster (used to learn leaders of partitions this node does not host). */
  clusterInfo(peer: number, deadlineMs: number, partitions?: readonly number[]): Promise<ClusterInfoResponse> {
    return this.unary(peer, (link, callback) => link.cluster.clusterInfo({ partitions: partitions ?? [] }, this.metadata(), { deadline: deadlineMs }, callback), decodeClusterInfoResponse);
  }

  /** Asks a peer to open an empty replica of `partition` (Peer.PrepareReplica; replica-moves.ts). */
  prepareReplica(peer: number, partition: number, voteFloor: VoteFloor, deadlineMs: number): Promise<void> {
    const link = this.links.get(peer);
    if (!link) return Promise.reject(new AtollError('INVALID_ARGUMENT', `unknown peer ${peer}`));
    return new Promise((resolve, reject) => {
      link.client.prepareReplica({ partition, voteFloorTerm: formatWireInt64(voteFloor.term), voteFloorIndex: formatWireInt64(voteFloor.index) }, this.metadata(), { deadline: deadlineMs }, (error) => {
        if (error) reject(atollErrorOfServiceError(error));
        else resolve();
      });
    });
  }

  /**
   * A peer's own status for this node's status page (Peer.NodeStatus): over the peer port, with the
   * peer secret (and peer TLS when configured), within `deadlineMs`.
   */
  nodeStatus(peer: number, deadlineMs: number): Promise<NodeStatus> {
    return this.unary(peer, (link, callback) => link.client.nodeStatus({}, this.metadata(), { deadline: deadlineMs }, callback), decodeNodeStatus);
  }

  /**
   * One unary call to `peer` (`start` makes it), its answer decoded; an answer that does not decode
   * rejects. `signal` cancels the call.
   */
  private unary<T>(peer: number, start: (link: PeerLink, callback: grpc.requestCallback<unknown>) => grpc.ClientUnaryCall, decode: (response: unknown) => T, signal?: CallSignal): Promise<T> {
    const link = this.links.get(peer);
    if (!link) return Promise.reject(noLink(peer));
    return new Promise((resolve, reject) => {
      const call = start(link, (error, response) => {
        signal?.removeEventListener('abort', abort);
        if (error) {
          reject(atollErrorOfServiceError(error));
          return;
        }
        try {
          resolve(decode(response));
        } catch (decodeError) {
          reject(decodeError);
        }
      });
      const abort = (): void => call.cancel();
      signal?.addEventListener('abort', abort, { once: true });
    });
  }

  close(): void {
    this.closed = true;
    for (const link of this.links.values()) {
      link.forwarder.close();
      link.stream?.end();
      link.client.close();
      link.cluster.close();
    }
  }
}

/**
 * A call to a node this one has no link to: removed from the cluster (a leader cache may still name
 * it) or not yet known. Never sent, so the caller may retry it elsewhere; UNAVAILABLE, not a bug.
 */
function noLink(peer: number): AtollError {
  return new AtollError('UNAVAILABLE', `no link to node ${peer}: not a member this node knows (removed, or not yet followed)`, { neverSent: true });
}
