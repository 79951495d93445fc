/**
 * The leader's side of forwarding: Peer.Forward (one unary call per request; kept so that older
 * nodes can still forward here) and Peer.ForwardStream (all of one peer's forwards on one stream;
 * the forwarding side is forward-stream.ts). peer-service.ts checks the caller (the peer secret,
 * the cluster id) before either runs, once per stream. Both run a request alike: its wire check,
 * one decode, the caller's deadline (the call's, or the frame's time left; clamped to
 * limits.maxCallTimeoutMs, the default when none), then AtollNode.executeForwarded; and both
 * answer a failure with the status serviceErrorOf makes, the stream inside a reply.
 *
 * A stream session's invariants:
 * - At most MAX_CALLS_IN_FLIGHT of its calls run at once (the forwarding side keeps to it); a
 *   request past it is answered OVERLOADED, not applied.
 * - A cancelled call is aborted and forgotten: it gets no reply. Neither does one whose deadline
 *   passed, as grpc-js drops a unary answer past its deadline.
 * - While a reply waits for 'drain' (the peer reads its replies slower than they come), no frame
 *   is read, so gRPC's flow control holds the peer back instead of a buffer here growing.
 * - When the peer half-closes, the stream ends (OK) once its last call is answered; when it goes
 *   away, every call still running is aborted.
 * - A frame that names no call (no call id, no body, an id already running, bytes that do not
 *   decode) is a broken peer: the stream ends with a bare INVALID_ARGUMENT status, which the
 *   peer's calls in flight take as a broken stream (outcome unknown). A frame whose request alone is
 *   malformed or not UTF-8 is answered as a unary call with those bytes would be.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { KvResult } from '../api/operations.js';
import { AtollError } from '../errors.js';
import { defaultLimits } from '../limits.js';
import type { AtollNode } from '../node/atoll-node.js';
import { decodeForwardRequest, encodeForwardResponse } from '../wire/forward-codec.js';
import { decodeForwardFrame, forwardReplyOfResult, forwardReplyOfStatus, serializeForwardReply, type ForwardFrame } from '../wire/forward-stream-codec.js';
import { serviceErrorOf } from '../wire/grpc-errors.js';
import type { ForwardReplyMessage } from '../wire/wire-types.js';
import { throwIfWireProblem, wireProblemError, wireProblemOf, type WireProblem } from '../wire/wire-utf8.js';
import { MAX_CALLS_IN_FLIGHT } from './forward-stream.js';

/** Where a frame's `request` field sits in its wire problem's field path. */
const requestField = 'request';

/** Serves one unary Peer.Forward call from an admitted peer. */
export function serveForward(node: AtollNode, call: grpc.ServerUnaryCall<unknown, unknown>, callback: grpc.sendUnaryData<unknown>, logger: Logger): void {
  const deadline = call.getDeadline();
  const askedMs = deadline instanceof Date ? deadline.getTime() : Number.isFinite(deadline) ? Number(deadline) : undefined;
  executeForwardRequest(node, call.request, forwardDeadlineMs(node, askedMs)).then(
    (result) => callback(null, encodeForwardResponse(result)),
    (error: unknown) => callback(serviceErrorOf(error, logger)),
  );
}

/** Serves a Peer.ForwardStream from an admitted peer until either side ends it. */
export function serveForwardStream(node: AtollNode, call: grpc.ServerDuplexStream<unknown, unknown>, logger: Logger): void {
  new ForwardStreamSession(node, call, logger).start();
}

/** A forwarded request's deadline here: the one the caller gave (absent: the default), at most the longest a call may take. */
function forwardDeadlineMs(node: AtollNode, askedMs: number | undefined): number {
  const nowMs = Date.now();
  return Math.min(askedMs ?? nowMs + defaultLimits.defaultCallTimeoutMs, nowMs + node.limits.maxCallTimeoutMs);
}

/** Runs a received ForwardRequest: checked as it arrived, decoded once, routed with the caller's tenant and hops. */
function executeForwardRequest(node: AtollNode, request: unknown, deadlineMs: number, signal?: AbortSignal): Promise<KvResult> {
  let forwarded: ReturnType<typeof decodeForwardRequest>;
  try {
    throwIfWireProblem(request);
    forwarded = decodeForwardRequest(request);
  } catch (error) {
    return Promise.reject(error);
  }
  const context = { deadlineMs, hops: forwarded.hops, ...(forwarded.tenant !== undefined && { tenant: forwarded.tenant }), ...(signal !== undefined && { signal }) };
  return node.executeForwarded(forwarded.operation, context, forwarded.asSent === true);
}

/** One peer's Peer.ForwardStream: its calls running here, and their replies. */
class ForwardStreamSession {
  /** Calls running, by call id; aborting one cancels it. */
  private readonly running = new Map<number, AbortController>();
  /** The peer half-closed: no more frames come. */
  private peerDone = false;
  /** The stream is over (ended here, or the peer went away): nothing more is written. */
  private over = false;
  /** Reading is paused until the reply buffer drains. */
  private paused = false;

  constructor(
    private readonly node: AtollNode,
    private readonly call: grpc.ServerDuplexStream<unknown, unknown>,
    private readonly logger: Logger,
  ) {}

  start(): void {
    // Headers now: the peer learns that it was admitted, so a call it wrote may have run here.
    this.call.sendMetadata(new grpc.Metadata());
    this.call.on('data', (message: unknown) => this.receive(message));
    this.call.on('end', () => {
      this.peerDone = true;
      this.finishIfDone();
    });
    this.call.on('cancelled', () => this.abortAll());
    this.call.on('error', () => this.abortAll());
  }

  private receive(message: unknown): void {
    if (this.over) return;
    const problem = wireProblemOf(message);
    let frame: ForwardFrame;
    try {
      if (problem !== undefined && !inRequest(problem)) throw new AtollError('INVALID_ARGUMENT', problem.detail);
      frame = decodeForwardFrame(message);
      if (frame.kind === 'request' && this.running.has(frame.callId)) throw new AtollError('INVALID_ARGUMENT', `call ${frame.callId} is already running`);
    } catch (error) {
      this.fail(error instanceof Error ? error.message : String(error));
      return;
    }
    if (frame.kind === 'cancel') {
      this.running.get(frame.callId)?.abort();
      this.running.delete(frame.callId);
      this.finishIfDone();
      return;
    }
    const { callId } = frame;
    if (this.running.size >= MAX_CALLS_IN_FLIGHT) {
      const overloaded = new AtollError('OVERLOADED', `this node runs ${MAX_CALLS_IN_FLIGHT} forwarded calls of this stream already: retry later`, { neverSent: true });
      this.reply(forwardReplyOfStatus(callId, serviceErrorOf(overloaded, this.logger)));
      return;
    }
    const deadlineMs = forwardDeadlineMs(this.node, frame.timeoutMs === undefined ? undefined : Date.now() + frame.timeoutMs);
    const controller = new AbortController();
    this.running.set(callId, controller);
    const work = problem !== undefined ? Promise.reject(wireProblemError(outsideFrame(problem))) : executeForwardRequest(this.node, frame.request, deadlineMs, controller.signal);
    work.then(
      (result) => this.settle(callId, controller, deadlineMs, () => forwardReplyOfResult(callId, result)),
      (error: unknown) => this.settle(callId, controller, deadlineMs, () => forwardReplyOfStatus(callId, serviceErrorOf(error, this.logger))),
    );
  }

  /** A call finished: its reply goes out unless it was cancelled, its deadline passed, or the stream is over. */
  private settle(callId: number, controller: AbortController, deadlineMs: number, reply: () => ForwardReplyMessage): void {
    if (this.running.get(callId) !== controller) return;
    this.running.delete(callId);
    if (Date.now() <= deadlineMs) this.reply(reply());
    this.finishIfDone();
  }

  private reply(reply: ForwardReplyMessage): void {
    if (this.over) return;
    if (this.call.write(serializeForwardReply(reply)) || this.paused) return;
    this.paused = true;
    this.call.pause();
    this.call.once('drain', () => {
      this.paused = false;
      this.call.resume();
    });
  }

  private finishIfDone(): void {
    if (this.over || !this.peerDone || this.running.size > 0) return;
    this.over = true;
    this.call.end();
  }

  /** A broken peer: the stream ends with a bare status (no Atoll code), and its calls are aborted. */
  private fail(reason: string): void {
    this.logger.warn({ err: reason }, 'malformed forward frame; closing that stream');
    this.abortAll();
    this.call.emit('error', { code: grpc.status.INVALID_ARGUMENT, details: `malformed forward frame: ${reason}`, metadata: new grpc.Metadata() });
  }

  private abortAll(): void {
    this.over = true;
    for (const controller of this.running.values()) controller.abort();
    this.running.clear();
  }
}

/** The problem lies inside the frame's request, not in the frame around it. */
function inRequest(problem: WireProblem): boolean {
  return problem.field === requestField || problem.field.startsWith(`${requestField}.`);
}

/** The problem as a unary Peer.Forward of the same request reports it: its path inside the request. */
function outsideFrame(problem: WireProblem): WireProblem {
  return { ...problem, field: problem.field === requestField ? '' : problem.field.slice(requestField.length + 1) };
}
