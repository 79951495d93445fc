/**
 * The simulated network between nodes: a NodeTransport per node incarnation (src/node/ports.ts).
 * Raft frames are encoded and decoded as on the wire, then dropped, delayed (so reordered) or
 * duplicated by the current fault settings; links can be blocked one way or both ways, and a
 * connection can be cut (the sender hears onPeerUnreachable; frames in flight are lost).
 *
 * Forward and ClusterInfo keep the gRPC transport's error semantics (src/peer/grpc-peer-transport.ts
 * and its forward stream, src/peer/forward-stream.ts, with src/wire/grpc-errors.ts), which the
 * router's retry depends on:
 * - no connection to the peer (process down, not yet serving, link refused): UNAVAILABLE with
 *   fromTransport and neverSent: the request certainly did not reach the peer;
 * - the call was sent but broke (connection cut, the peer died) or its answer never came:
 *   UNAVAILABLE or DEADLINE_EXCEEDED with fromTransport and without neverSent: outcome unknown;
 * - the peer's handler threw an AtollError: its code, message, leader hint and not-applied mark
 *   arrive (other details do not travel); anything else arrives as INTERNAL.
 * The deadline travels as time remaining, as gRPC's does, and is enforced on the caller's clock.
 */
import { AtollError } from '../../errors.js';
import type { VoteFloor } from '../../raft/types.js';
import type { Rng } from '../../raft/rng.js';
import type { ClusterInfoResponse } from '../../api/node-api.js';
import type { KvOperation, KvResult } from '../../api/operations.js';
import type { NodeTransport, TransportEvents } from '../../node/ports.js';
import { decodeRaftFrame, encodeRaftFrame, type GroupMessage } from '../../node/raft-wire.js';
import type { AtollNode } from '../../node/atoll-node.js';
import type { Scheduler } from './scheduler.js';
import type { NodeHost } from './sim-host.js';
import type { Trace } from './trace.js';
import type { CallSignal } from '../../api/call-signal.js';

export interface NetworkFaults {
  readonly dropRate: number;
  readonly duplicateRate: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
}

export const calmNetwork: NetworkFaults = { dropRate: 0, duplicateRate: 0, minDelayMs: 1, maxDelayMs: 3 };

interface Endpoint {
  readonly host: NodeHost;
  readonly events: TransportEvents;
  /** Set once the node is open and serving (a gRPC server starts after AtollNode.open). */
  api: AtollNode | undefined;
  closed: boolean;
}

interface InflightCall {
  readonly from: number;
  readonly to: number;
  fail(error: AtollError): void;
}

export class SimNetwork {
  private readonly endpoints = new Map<number, Endpoint>();
  private readonly blocked = new Set<string>();
  private readonly epochs = new Map<string, number>();
  private readonly inflight = new Set<InflightCall>();
  faults: NetworkFaults = calmNetwork;
  framesSent = 0;
  /** Raft messages in the frames sent (an empty frame, a node heartbeat, carries none). */
  messagesSent = 0;
  framesDropped = 0;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly rng: Rng,
    private readonly trace: Trace,
  ) {}

  /** The transport of a new incarnation of `node` (its TransportFactory's product). */
  attach(host: NodeHost, events: TransportEvents): NodeTransport {
    const endpoint: Endpoint = { host, events, api: undefined, closed: false };
    this.endpoints.set(host.node, endpoint);
    return new SimTransport(this, host, endpoint);
  }

  /** The node's incarnation is open: it accepts Forward and ClusterInfo calls. */
  serve(node: number, api: AtollNode): void {
    const endpoint = this.endpoints.get(node);
    if (endpoint !== undefined) endpoint.api = api;
  }

  /** The node's process died: calls to it break, and its peers' streams to it fail. */
  processDied(node: number): void {
    for (const call of [...this.inflight]) {
      if (call.to === node) call.fail(transportError('UNAVAILABLE', `peer ${node} went away during the call`, false));
    }
    for (const [peer] of this.endpoints) if (peer !== node) this.tellUnreachable(peer, node);
  }

  block(from: number, to: number): void {
    this.blocked.add(`${from}>${to}`);
  }

  heal(): void {
    this.blocked.clear();
  }

  isBlocked(from: number, to: number): boolean {
    return this.blocked.has(`${from}>${to}`);
  }

  /** Cuts the connections between a and b: frames in flight are lost, calls break, both sides hear of it. */
  cut(a: number, b: number): void {
    for (const key of [`${a}>${b}`, `${b}>${a}`]) this.epochs.set(key, (this.epochs.get(key) ?? 0) + 1);
    for (const call of [...this.inflight]) {
      if ((call.from === a && call.to === b) || (call.from === b && call.to === a)) {
        call.fail(transportError('UNAVAILABLE', 'the connection to the peer broke during the call', false));
      }
    }
    this.tellUnreachable(a, b);
    this.tellUnreachable(b, a);
  }

  private tellUnreachable(node: number, peer: number): void {
    const endpoint = this.endpoints.get(node);
    if (endpoint === undefined) return;
    this.scheduler.after(this.delay(), () => {
      if (this.endpoints.get(node) === endpoint && endpoint.host.alive && !endpoint.closed) endpoint.events.onPeerUnreachable(peer);
    }, node);
  }

  private delay(): number {
    const { minDelayMs, maxDelayMs } = this.faults;
    return minDelayMs + this.rng.float() * (maxDelayMs - minDelayMs);
  }

  /** Whether `from` could open a connection to `to` now. */
  connectable(from: number, to: number): boolean {
    const target = this.endpoints.get(to);
    return !this.isBlocked(from, to) && target !== undefined && target.api !== undefined && target.host.alive && !target.closed;
  }

  send(from: Endpoint, to: number, messages: GroupMessage[]): void {
    // An empty batch is a frame too: the node heartbeat (src/node/peers/liveness.ts).
    if (!from.host.alive || from.closed || to === from.host.node) return;
    const frame = encodeRaftFrame(messages);
    this.messagesSent += messages.length;
    const key = `${from.host.node}>${to}`;
    const epoch = this.epochs.get(key) ?? 0;
    const copies = this.rng.chance(this.faults.duplicateRate) ? 2 : 1;
    for (let copy = 0; copy < copies; copy++) {
      this.framesSent++;
      if (this.isBlocked(from.host.node, to) || this.rng.chance(this.faults.dropRate)) {
        this.framesDropped++;
        continue;
      }
      this.scheduler.after(this.delay(), () => {
        const target = this.endpoints.get(to);
        if ((this.epochs.get(key) ?? 0) !== epoch || this.isBlocked(from.host.node, to)) return;
        if (target === undefined || target.api === undefined || !target.host.alive || target.closed) return;
        target.events.onMessages(from.host.node, decodeRaftFrame(frame));
      }, to);
    }
  }

  /** A unary call from `from` to `to`: runs `handler` on the peer after a network delay. */
  call<T>(from: Endpoint, to: number, deadlineMs: number, signal: CallSignal | undefined, handler: (peer: AtollNode, peerDeadlineMs: number) => Promise<T>, clone: (value: T) => T): Promise<T> {
    const fromNode = from.host.node;
    if (!from.host.alive || from.closed) return new Promise<T>(() => undefined);
    if (!this.connectable(fromNode, to)) {
      return Promise.reject(transportError('UNAVAILABLE', `No connection established to peer ${to}`, true));
    }
    const remainingMs = deadlineMs - from.host.clock.wallMs();
    if (remainingMs <= 0) return Promise.reject(transportError('DEADLINE_EXCEEDED', 'the call did not complete before its deadline', false));
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const call: InflightCall = {
        from: fromNode,
        to,
        fail: (error) => finish(() => reject(error)),
      };
      const finish = (settle: () => void): void => {
        if (done) return;
        done = true;
        this.inflight.delete(call);
        timer.cancel();
        signal?.removeEventListener('abort', abort);
        if (from.host.alive) settle();
      };
      const abort = (): void => finish(() => reject(transportError('UNAVAILABLE', 'the call was cancelled', false)));
      signal?.addEventListener('abort', abort, { once: true });
      const timer = from.host.timers.after(remainingMs, () => finish(() => reject(transportError('DEADLINE_EXCEEDED', 'the call did not complete before its deadline', false))));
      this.inflight.add(call);
      const requestDelay = this.delay();
      this.scheduler.after(requestDelay, () => {
        const target = this.endpoints.get(to);
        if (done || target === undefined || target.api === undefined || !target.host.alive || target.closed || this.isBlocked(fromNode, to)) return;
        const peerDeadlineMs = target.host.clock.wallMs() + remainingMs - requestDelay;
        const respond = (outcome: () => void): void => {
          this.scheduler.after(this.delay(), () => {
            if (this.isBlocked(to, fromNode)) return;
            finish(outcome);
          }, fromNode);
        };
        let answer: Promise<T>;
        try {
          answer = handler(target.api, peerDeadlineMs);
        } catch (error) {
          answer = Promise.reject(error);
        }
        answer.then(
          (value) => {
            if (target.host.alive) respond(() => resolve(clone(value)));
          },
          (error: unknown) => {
            // The gRPC layer logs what is not an AtollError (a bug) and answers INTERNAL.
            if (!(error instanceof AtollError)) this.trace.add(`n${to} request handler failed unexpectedly: ${error instanceof Error ? (error.stack ?? error.message).split('\n').slice(0, 4).join(' | ') : String(error)}`);
            if (target.host.alive) respond(() => reject(arrivedError(error)));
          },
        );
      }, to);
    });
  }

  note(text: string): void {
    this.trace.add(text);
  }
}

class SimTransport implements NodeTransport {
  constructor(
    private readonly network: SimNetwork,
    private readonly host: NodeHost,
    private readonly endpoint: Endpoint,
  ) {}

  send(peer: number, messages: GroupMessage[]): void {
    this.network.send(this.endpoint, peer, messages);
  }

  isReachable(peer: number): boolean {
    return peer === this.host.node || this.network.connectable(this.host.node, peer);
  }

  forward(peer: number, operation: KvOperation, hops: number, deadlineMs: number, signal?: CallSignal, tenant?: string): Promise<KvResult> {
    const copy = structuredClone(operation);
    return this.network.call(
      this.endpoint,
      peer,
      deadlineMs,
      signal,
      (node, peerDeadlineMs) => node.executeForwarded(copy, { deadlineMs: peerDeadlineMs, hops, ...(tenant !== undefined && { tenant }) }),
      (result) => structuredClone(result),
    );
  }

  clusterInfo(peer: number, deadlineMs: number, partitions?: readonly number[]): Promise<ClusterInfoResponse> {
    const request = partitions !== undefined && partitions.length > 0 ? { partitions } : undefined;
    return this.network.call(this.endpoint, peer, deadlineMs, undefined, (node, peerDeadlineMs) => node.clusterInfo({ deadlineMs: peerDeadlineMs }, request), (info) => structuredClone(info));
  }

  prepareReplica(peer: number, partition: number, voteFloor: VoteFloor, deadlineMs: number): Promise<void> {
    return this.network.call(this.endpoint, peer, deadlineMs, undefined, (node) => node.prepareReplica(partition, voteFloor), () => undefined);
  }

  close(): void {
    this.endpoint.closed = true;
  }
}

/** An error grpc-js itself produced (no Atoll handler answered): fromTransport, maybe neverSent. */
function transportError(code: 'UNAVAILABLE' | 'DEADLINE_EXCEEDED', message: string, neverSent: boolean): AtollError {
  return new AtollError(code, message, { fromTransport: true, ...(neverSent && { neverSent: true }) });
}

/** What the caller receives of an error the peer's handler threw (what gRPC metadata carries). */
function arrivedError(error: unknown): AtollError {
  if (!(error instanceof AtollError)) return new AtollError('INTERNAL', 'internal error: the server failed unexpectedly; see its log');
  const hint = error.details?.['leaderHint'] as { nodeId?: unknown; address?: unknown } | undefined;
  const validHint = hint !== undefined && typeof hint.nodeId === 'number' && hint.nodeId > 0 && typeof hint.address === 'string' && hint.address !== '';
  return new AtollError(error.code, error.message, {
    ...(validHint && { leaderHint: { nodeId: hint.nodeId, address: hint.address } }),
    ...(error.details?.['neverSent'] === true && { neverSent: true }),
  });
}
