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
 * - Each call's request is the encoded ForwardRequest a unary call carries, read with Peer.Forward's
 *   own checked deserializer: a request that is malformed or not UTF-8 is answered as that call is.
 * - At most MAX_CALLS_IN_FLIGHT of its calls run at once (the forwarding side keeps to it); a
 *   request past it is answered OVERLOADED, not applied.
 * - A cancelled call is aborted and forgotten: it gets no reply. Neither does one whose deadline
 *   passed, as grpc-js drops a unary answer past its deadline.
 * - Replies are written as the forwarding side writes its calls (forward-stream.ts): one message
 *   at a time, carrying every reply ready since the last one. While more than a message's worth
 *   waits (the peer reads slower than its calls finish), no frame is read, so gRPC's flow control
 *   holds the peer back instead of the replies here growing without bound.
 * - When the peer half-closes, the stream ends (OK) once its last call is answered and written;
 *   when it goes away, every call still running is aborted.
 * - A frame that names no call (a call without an id or a body, an id already running, bytes that
 *   do not decode) is a broken peer: the stream ends with a bare INVALID_ARGUMENT status, which the
 *   peer's calls in flight take as a broken stream (outcome unknown).
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { KvResult } from '../api/operations.js';
import { AtollError } from '../errors.js';
import { defaultLimits } from '../limits.js';
import type { AtollNode } from '../node/atoll-node.js';
import { decodeForwardRequest, encodeForwardResponse } from '../wire/forward-codec.js';
import { decodeForwardFrame, encodeForwardReply, forwardReplyOfResult, forwardReplyOfStatus, type ForwardCall } from '../wire/forward-stream-codec.js';
import { serviceErrorOf } from '../wire/grpc-errors.js';
import { peerServiceDefinition } from '../wire/protos.js';
import type { ForwardReplyMessage } from '../wire/wire-types.js';
import { throwIfWireProblem, wireProblemOf } from '../wire/wire-utf8.js';
import { FRAME_TARGET_BYTES, MAX_CALLS_IN_FLIGHT } from './forward-stream.js';
import { CallAbort, type CallSignal } from '../api/call-signal.js';

/** Peer.Forward's request deserializer: its UTF-8 and shape check (wire-utf8.ts), then protobuf. */
const deserializeForwardRequest = (peerServiceDefinition['Forward'] as grpc.MethodDefinition<unknown, unknown>).requestDeserialize;

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

/** What AbortController.abort() gives as its reason, as the calls of this stream had before CallAbort. */
function cancelled(): DOMException {
  return new DOMException('This operation was aborted', 'AbortError');
}

/** Runs a received ForwardRequest: checked as it arrived, decoded once, routed with the caller's tenant and hops. */
function executeForwardRequest(node: AtollNode, request: unknown, deadlineMs: number, signal?: CallSignal): Promise<KvResult> {
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
  private readonly running = new Map<number, CallAbort>();
  /** Reply entries waiting for the next message, in the order they were ready. */
  private outbox: Buffer[] = [];
  private outboxBytes = 0;
  /** A message was handed to gRPC and its write has not completed. */
  private writing = false;
  /** The peer half-closed: no more frames come. */
  private peerDone = false;
  /** The stream is over (ended here, or the peer went away): nothing more is written. */
  private over = false;
  /** Reading is paused until the outbox is written. */
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
    let calls: ForwardCall[];
    try {
      const problem = wireProblemOf(message);
      if (problem !== undefined) throw new AtollError('INVALID_ARGUMENT', problem.detail);
      calls = decodeForwardFrame(message);
    } catch (error) {
      this.fail(error instanceof Error ? error.message : String(error));
      return;
    }
    for (const call of calls) {
      if (call.kind === 'request' && this.running.has(call.callId)) {
        this.fail(`call ${call.callId} is already running`);
        return;
      }
      if (call.kind === 'cancel') this.cancel(call.callId);
      else this.run(call.callId, call.timeoutMs, call.request);
    }
  }

  private cancel(callId: number): void {
    this.running.get(callId)?.abort(cancelled());
    this.running.delete(callId);
    this.finishIfDone();
  }

  private run(callId: number, timeoutMs: number | undefined, request: Buffer): void {
    if (this.running.size >= MAX_CALLS_IN_FLIGHT) {
      const overloaded = new AtollError('OVERLOADED', `this node runs ${MAX_CALLS_IN_FLIGHT} forwarded calls of this stream already: retry later`, { neverSent: true });
      this.reply(forwardReplyOfStatus(callId, serviceErrorOf(overloaded, this.logger)));
      return;
    }
    const deadlineMs = forwardDeadlineMs(this.node, timeoutMs === undefined ? undefined : Date.now() + timeoutMs);
    const controller = new CallAbort();
    this.running.set(callId, controller);
    executeForwardRequest(this.node, deserializeForwardRequest(request), deadlineMs, controller.signal).then(
      (result) => this.settle(callId, controller, deadlineMs, () => forwardReplyOfResult(callId, result)),
      (error: unknown) => this.settle(callId, controller, deadlineMs, () => forwardReplyOfStatus(callId, serviceErrorOf(error, this.logger))),
    );
  }

  /** A call finished: its reply goes out unless it was cancelled, its deadline passed, or the stream is over. */
  private settle(callId: number, controller: CallAbort, deadlineMs: number, reply: () => ForwardReplyMessage): void {
    if (this.running.get(callId) !== controller) return;
    this.running.delete(callId);
    if (Date.now() <= deadlineMs) this.reply(reply());
    this.finishIfDone();
  }

  private reply(reply: ForwardReplyMessage): void {
    if (this.over) return;
    const entry = encodeForwardReply(reply);
    this.outbox.push(entry);
    this.outboxBytes += entry.length;
    this.flush();
    this.regulateReading();
  }

  /** Writes the outbox's entries as one message, unless one is being written (its completion flushes again). */
  private flush(): void {
    if (this.writing || this.over || this.outbox.length === 0) return;
    let count = 0;
    let bytes = 0;
    while (count < this.outbox.length && (count === 0 || bytes + this.outbox[count]!.length <= FRAME_TARGET_BYTES)) bytes += this.outbox[count++]!.length;
    const entries = this.outbox.splice(0, count);
    this.outboxBytes -= bytes;
    this.writing = true;
    this.call.write(entries.length === 1 ? entries[0] : Buffer.concat(entries, bytes), () => {
      this.writing = false;
      this.flush();
      this.regulateReading();
      this.finishIfDone();
    });
  }

  /** More than the next message holds waits: read no more calls until it is written. */
  private regulateReading(): void {
    const backedUp = this.outboxBytes > FRAME_TARGET_BYTES;
    if (backedUp && !this.paused) this.call.pause();
    else if (!backedUp && this.paused) this.call.resume();
    this.paused = backedUp;
  }

  private finishIfDone(): void {
    if (this.over || !this.peerDone || this.running.size > 0 || this.writing || this.outbox.length > 0) return;
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
    for (const controller of this.running.values()) controller.abort(cancelled());
    this.running.clear();
    this.outbox = [];
    this.outboxBytes = 0;
  }
}
