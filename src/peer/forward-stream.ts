/**
 * A node's forwarded requests to one peer, on one long-lived bidirectional stream
 * (Peer.ForwardStream) multiplexed by call id, instead of a unary Peer.Forward call each: a unary
 * call costs a new HTTP/2 stream with its headers both ways (the peer secret, cluster id and node
 * id among them), which made up about a fifth of a non-leader's time. The stream presents that
 * metadata once, when it opens, and the peer checks it once (peer-service.ts).
 *
 * The errors are the unary call's (src/wire/grpc-errors.ts), which the router's retry depends on
 * (src/sim/node/sim-network.ts restates them):
 * - No connection (the stream failed with one of grpc-js's "no connection" statuses, before the
 *   peer saw it): UNAVAILABLE with fromTransport and neverSent. So is a call that never left this
 *   process (it was still in the outbox when the stream ended).
 * - The stream broke, or ended, after the peer accepted it (its headers arrived): every call
 *   written on it and not answered fails from the transport (UNAVAILABLE, or the status's code)
 *   without neverSent: its outcome is unknown. The next forward opens a new stream.
 * - The peer refused the stream (a wrong secret, another cluster): every call gets that refusal,
 *   as each unary call would.
 * - The peer answered a call with an error: the status a unary call would have ended with, rebuilt
 *   by atollErrorOfServiceError (code, message, leader hint, not-applied mark).
 * - Each call has its own deadline, a timer here (the call carries the time left, as gRPC carries
 *   deadlines), and its own AbortSignal: either fails the call as grpc-js fails a unary call
 *   (DEADLINE_EXCEEDED; CANCELLED, which arrives as UNAVAILABLE; both from the transport, outcome
 *   unknown) and sends a cancellation so the peer drops it.
 * - A peer that answers UNIMPLEMENTED (a version without the method, in a rolling upgrade) ran none
 *   of the stream's calls: they go out again as unary calls, and so does every forward to that peer
 *   for UNARY_FALLBACK_MS.
 *
 * Writes: one message at a time is handed to gRPC. A grpc-js stream takes its messages one by one,
 * each once the HTTP/2 layer has taken the previous one, so a message per call would queue the
 * calls behind each other (measured: a stream of one call per message forwarded slower than unary
 * calls did); instead the calls (and cancellations) started while a
 * message is being written wait in an outbox, in order, and the next message carries them all, up
 * to FRAME_TARGET_BYTES. The write's completion is how HTTP/2 flow control reaches here (and
 * write() then never reports a full buffer): a peer that reads slowly gets fewer, larger messages,
 * never more than the outbox holds.
 *
 * Bounds: a stream has at most MAX_CALLS_IN_FLIGHT calls unanswered, the node's own bound on the
 * forwards it has in flight (limits.maxForwardsInFlight, which the router admits client forwards
 * against), so only the node's own calls could pass it, and those go unary. The outbox holds at
 * most one entry per call in flight and as many cancellations (past that a cancellation is dropped:
 * the peer stops at the deadline anyway). A stream is replaced after STREAM_MAX_AGE_MS: it is
 * half-closed, answers its calls, and ends.
 */
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import type { KvResult } from '../api/operations.js';
import { AtollError } from '../errors.js';
import { defaultLimits } from '../limits.js';
import { decodeForwardResponse } from '../wire/forward-codec.js';
import { decodeForwardReply, encodeForwardCall, encodeForwardCancel, forwardRepliesOf } from '../wire/forward-stream-codec.js';
import { atollErrorOfServiceError, errorMetadataKeys, type ReceivedStatus } from '../wire/grpc-errors.js';
import type { ForwardRequestMessage } from '../wire/wire-types.js';
import type { CallSignal } from '../api/call-signal.js';

/** Calls unanswered on one stream; the leader's side refuses more (forward-service.ts). */
export const MAX_CALLS_IN_FLIGHT = defaultLimits.maxForwardsInFlight;
/** A message carries the outbox's entries up to this many bytes (at least one entry, which may be larger). */
export const FRAME_TARGET_BYTES = 256 * 1024;
/** How long forwards to a peer that lacks Peer.ForwardStream go unary before the stream is tried again. */
export const UNARY_FALLBACK_MS = 60_000;
/** Long-lived, but still bounded, as the Raft stream is: a stream this old is replaced. */
const STREAM_MAX_AGE_MS = 60 * 60 * 1000;

/** What a Forwarder needs from its link to the peer (grpc-peer-transport.ts). */
export interface ForwardLink {
  /** Opens a Peer.ForwardStream with the peer metadata. */
  openStream(): grpc.ClientDuplexStream<Buffer, unknown>;
  /** One unary Peer.Forward call. */
  unary(request: ForwardRequestMessage | Buffer, deadlineMs: number, signal?: CallSignal): Promise<KvResult>;
}

/** What a Forwarder did, for tests and the curious. */
export interface ForwardStats {
  /** Peer.ForwardStream calls opened (refused and broken ones included). */
  streamsOpened: number;
  /** Forwards sent on a stream. */
  streamCalls: number;
  /** Forwards sent as unary calls (a peer without the stream, a frame too large, past the bound, a resend). */
  unaryCalls: number;
}

/** One forwarded call, sent on a stream and not yet answered. */
interface PendingCall {
  readonly id: number;
  readonly request: ForwardRequestMessage | Buffer;
  readonly deadlineMs: number;
  readonly signal: CallSignal | undefined;
  readonly resolve: (result: KvResult) => void;
  readonly reject: (error: unknown) => void;
  timer: ReturnType<typeof setTimeout> | undefined;
  onAbort: () => void;
  /** It was handed to the gRPC stream in a message (not only waiting in the outbox). */
  written: boolean;
}

/** The forwards to one peer: the current stream, or unary calls while the peer lacks it. */
export class Forwarder {
  readonly stats: ForwardStats = { streamsOpened: 0, streamCalls: 0, unaryCalls: 0 };
  private stream: ForwardStream | undefined;
  /** Until then (wall-clock ms), forwards go unary: the peer answered UNIMPLEMENTED. */
  private unaryUntilMs = 0;
  private lastCallId = 0;
  private closed = false;

  constructor(
    private readonly peer: number,
    private readonly link: ForwardLink,
  ) {}

  /** Sends `request` (a ForwardRequest) to the peer and resolves with its answer, by `deadlineMs`. */
  forward(request: ForwardRequestMessage | Buffer, deadlineMs: number, signal?: CallSignal): Promise<KvResult> {
    const now = Date.now();
    if (this.closed || now < this.unaryUntilMs) return this.unary(request, deadlineMs, signal);
    if (signal?.aborted === true) return Promise.reject(cancelledError());
    if (deadlineMs <= now) return Promise.reject(deadlineError());
    const stream = this.currentStream(now);
    if (stream.inFlight >= MAX_CALLS_IN_FLIGHT) return this.unary(request, deadlineMs, signal);
    const id = this.nextCallId();
    const entry = encodeForwardCall(id, deadlineMs - now, request);
    if (entry === undefined) return this.unary(request, deadlineMs, signal);
    this.stats.streamCalls++;
    return stream.start({ id, request, deadlineMs, signal }, entry);
  }

  /** Half-closes the stream: calls in flight are still answered, as unary calls in flight are. */
  close(): void {
    this.closed = true;
    this.stream?.retire();
    this.stream = undefined;
  }

  private unary(request: ForwardRequestMessage | Buffer, deadlineMs: number, signal: CallSignal | undefined): Promise<KvResult> {
    this.stats.unaryCalls++;
    return this.link.unary(request, deadlineMs, signal);
  }

  private currentStream(now: number): ForwardStream {
    const current = this.stream;
    if (current !== undefined && current.open && now - current.openedMs < STREAM_MAX_AGE_MS) return current;
    current?.retire();
    const opened = new ForwardStream(this.peer, this.link.openStream(), now, (stream, unimplemented) => this.streamEnded(stream, unimplemented));
    this.stats.streamsOpened++;
    this.stream = opened;
    return opened;
  }

  /** Ids go 1, 2, ... 2^32 - 1, then 1 again: a call lives minutes at most, so none is in flight twice. */
  private nextCallId(): number {
    this.lastCallId = this.lastCallId >= 0xffff_ffff ? 1 : this.lastCallId + 1;
    return this.lastCallId;
  }

  /** A stream ended; `unimplemented`: the peer lacks the method, and these calls were never run. */
  private streamEnded(stream: ForwardStream, unimplemented: PendingCall[] | undefined): void {
    if (this.stream === stream) this.stream = undefined;
    if (unimplemented === undefined) return;
    this.unaryUntilMs = Date.now() + UNARY_FALLBACK_MS;
    for (const call of unimplemented) this.unary(call.request, call.deadlineMs, call.signal).then(call.resolve, call.reject);
  }
}

/** One Peer.ForwardStream call and the forwards on it. */
class ForwardStream {
  private readonly calls = new Map<number, PendingCall>();
  /**
   * Entries waiting for the next message, in the order they came: a call's under its id, a
   * cancellation's under minus its call's id.
   */
  private readonly outbox = new Map<number, Buffer>();
  /** A message was handed to gRPC and its write has not completed. */
  private writing = false;
  /** The peer's headers arrived: it accepted the stream, so a call written on it may have run. */
  private accepted = false;
  /** A reply arrived: the peer has the method. */
  private answered = false;
  /** This side is done: no call starts on it, and it half-closes once its outbox is written. */
  private retired = false;
  /** This side half-closed: nothing more is written. */
  private halfClosed = false;
  /** How the stream ended, once its status came; the calls fail once its replies are read too. */
  private status: grpc.StatusObject | undefined;
  private readEnded = false;
  private ended = false;

  constructor(
    private readonly peer: number,
    private readonly call: grpc.ClientDuplexStream<Buffer, unknown>,
    readonly openedMs: number,
    private readonly onEnd: (stream: ForwardStream, unimplemented: PendingCall[] | undefined) => void,
  ) {
    call.on('metadata', () => {
      this.accepted = true;
    });
    call.on('data', (frame: unknown) => {
      for (const reply of forwardRepliesOf(frame)) this.answer(reply);
    });
    // grpc-js reports the status before the replies buffered ahead of it are read: end after both.
    call.on('status', (status: grpc.StatusObject) => {
      this.status = status;
      if (this.readEnded) this.end(status);
    });
    call.on('end', () => {
      this.readEnded = true;
      if (this.status !== undefined) this.end(this.status);
    });
    call.on('error', () => {
      // Reported by 'status'; this handler only keeps the error from being thrown.
    });
  }

  get inFlight(): number {
    return this.calls.size;
  }

  /** A call may start on it: not retired, and its status has not come. */
  get open(): boolean {
    return !this.retired && this.status === undefined;
  }

  start(call: Pick<PendingCall, 'id' | 'request' | 'deadlineMs' | 'signal'>, entry: Buffer): Promise<KvResult> {
    assert(this.open, 'a forward starts only on an open stream');
    assert(!this.calls.has(call.id), 'a call id is in flight once');
    return new Promise((resolve, reject) => {
      const pending: PendingCall = { ...call, resolve, reject, timer: undefined, onAbort: () => undefined, written: false };
      pending.onAbort = () => this.giveUp(pending, cancelledError());
      pending.timer = setTimeout(() => this.giveUp(pending, deadlineError()), Math.max(0, call.deadlineMs - Date.now()));
      call.signal?.addEventListener('abort', pending.onAbort, { once: true });
      this.calls.set(call.id, pending);
      this.outbox.set(call.id, entry);
      this.flush();
    });
  }

  /** Starts no more calls, and half-closes once the outbox is written; the peer ends the stream once it has answered them. */
  retire(): void {
    if (this.retired) return;
    this.retired = true;
    this.flush();
  }

  /** Writes the outbox's entries as one message, unless one is being written (its completion flushes again). */
  private flush(): void {
    if (this.writing || this.halfClosed || this.status !== undefined) return;
    if (this.outbox.size === 0) {
      if (this.retired) {
        this.halfClosed = true;
        this.call.end();
      }
      return;
    }
    const entries: Buffer[] = [];
    let bytes = 0;
    for (const [key, entry] of this.outbox) {
      if (entries.length > 0 && bytes + entry.length > FRAME_TARGET_BYTES) break;
      this.outbox.delete(key);
      entries.push(entry);
      bytes += entry.length;
      const pending = key > 0 ? this.calls.get(key) : undefined;
      if (pending !== undefined) pending.written = true;
    }
    this.writing = true;
    this.call.write(entries.length === 1 ? entries[0] : Buffer.concat(entries, bytes), () => {
      this.writing = false;
      this.flush();
    });
  }

  /** The caller's deadline passed or its signal aborted: fail the call, and tell the peer if it was sent. */
  private giveUp(pending: PendingCall, error: AtollError): void {
    if (this.calls.get(pending.id) !== pending) return;
    this.settle(pending);
    const neverSent = this.outbox.delete(pending.id);
    if (!neverSent && this.outbox.size < MAX_CALLS_IN_FLIGHT * 2) {
      this.outbox.set(-pending.id, encodeForwardCancel(pending.id));
      this.flush();
    }
    pending.reject(error);
  }

  private settle(pending: PendingCall): void {
    this.calls.delete(pending.id);
    clearTimeout(pending.timer);
    pending.signal?.removeEventListener('abort', pending.onAbort);
  }

  private answer(message: unknown): void {
    this.answered = true;
    let answer: ReturnType<typeof decodeForwardReply>;
    try {
      answer = decodeForwardReply(message);
    } catch {
      // No call to give it to; its call fails at its deadline, or when the stream ends.
      return;
    }
    const pending = this.calls.get(answer.callId);
    if (pending === undefined) return; // given up already
    this.settle(pending);
    if (answer.status !== undefined) {
      pending.reject(atollErrorOfServiceError(answer.status));
      return;
    }
    try {
      pending.resolve(decodeForwardResponse(answer.response));
    } catch (decodeError) {
      pending.reject(decodeError);
    }
  }

  private end(status: grpc.StatusObject): void {
    if (this.ended) return;
    this.ended = true;
    const unanswered = [...this.calls.values()];
    for (const pending of unanswered) this.settle(pending);
    this.outbox.clear();
    if (status.code === grpc.status.UNIMPLEMENTED && !this.answered && status.metadata.get(errorMetadataKeys.code).length === 0) {
      this.onEnd(this, unanswered);
      return;
    }
    this.onEnd(this, undefined);
    for (const pending of unanswered) pending.reject(this.failure(status, pending));
  }

  /** Why an unanswered call failed when the stream ended with `status`. */
  private failure(status: grpc.StatusObject, pending: PendingCall): AtollError {
    const received: ReceivedStatus =
      status.code === grpc.status.OK ? { code: grpc.status.UNAVAILABLE, details: `the forward stream to node ${this.peer} ended before the call was answered` } : status;
    const error = atollErrorOfServiceError(received);
    // The peer's own refusal (it carries an Atoll code) reaches every call as it is.
    if (error.details?.['fromTransport'] !== true) return error;
    if (!pending.written) return withNeverSent(error, true);
    return this.accepted ? withNeverSent(error, false) : error;
  }
}

/** `error` with its neverSent mark set or removed. */
function withNeverSent(error: AtollError, neverSent: boolean): AtollError {
  const { neverSent: _mark, ...details } = error.details ?? {};
  return new AtollError(error.code, error.message, neverSent ? { ...details, neverSent: true } : details);
}

/** How grpc-js fails a unary call whose deadline passed, as the forwarding node reads it. */
function deadlineError(): AtollError {
  return atollErrorOfServiceError({ code: grpc.status.DEADLINE_EXCEEDED, details: 'Deadline exceeded' });
}

/** How grpc-js fails a unary call its caller cancelled, as the forwarding node reads it. */
function cancelledError(): AtollError {
  return atollErrorOfServiceError({ code: grpc.status.CANCELLED, details: 'Cancelled on client' });
}
