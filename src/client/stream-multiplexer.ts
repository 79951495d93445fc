/**
 * The client side of KV.Stream: one long-lived stream per node carries any number of concurrent
 * requests, each tagged with an id and matched to its answer whatever order answers come in. This
 * is the fast path: a streamed message costs grpc-js a fraction of a unary call.
 *
 * - Each request has its own deadline: it travels as `timeout_ms`, and a local timer rejects the
 *   request with DEADLINE_EXCEEDED even if the server never answers.
 * - Aborting a request's signal rejects it with the signal's reason and sends a cancel message.
 * - At most `maxInFlight` requests are on the stream at once (the server's own bound). Further
 *   requests wait in a FIFO, bounded at `maxQueued`; past that `hasRoom` says no and the caller
 *   uses a unary call.
 * - When the stream fails, every request fails with the stream's error (those still waiting in the
 *   queue are marked as never sent, so even writes among them may be retried) and the multiplexer
 *   stays closed for a short while, with the connection using unary calls, then reopens lazily on
 *   the next request. A server without Stream (UNIMPLEMENTED) is remembered.
 * - Watches (openWatch): a watch request on the stream, answered by watch frames with its id until
 *   it fails (one error frame), the caller stops reading (a cancel goes out) or the stream ends
 *   (it fails with the stream's error, so the caller resumes). A watch holds one of the
 *   maxInFlight slots while it runs, and watches hold at most half of them; past that openWatch
 *   says no and the caller uses KV.Watch. Frames wait in a per-watch buffer of at most maxWatchBuffered messages: a reader
 *   slower than that is cancelled with WATCH_OVERFLOW and the revision to resume after, instead of
 *   stalling every other request of the stream.
 */
import * as grpc from '@grpc/grpc-js';
import { AtollError } from '../errors.js';
import { atollErrorOfServiceError } from '../wire/grpc-errors.js';
import type { WatchMessage, WatchRequest } from '../api/node-api.js';
import type { KvOperation, KvResult } from '../wire/kv-operation.js';
import { kvServiceDefinition } from '../wire/protos.js';
import { decodeStreamFrame, encodeStreamRequest } from '../wire/stream-codec.js';
import type { StreamRequestMessage, StreamResponseMessage } from '../wire/wire-types.js';

type KvStream = grpc.ClientDuplexStream<StreamRequestMessage, StreamResponseMessage>;

interface Outstanding {
  readonly operation: KvOperation;
  readonly deadlineMs: number;
  resolve(result: KvResult): void;
  reject(error: unknown): void;
  readonly timer: NodeJS.Timeout | undefined;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
  /** Whether the request was written to the stream (else it waits in the queue). */
  sent: boolean;
}

/** One watch on the stream: frames not yet read, and how it ended (error set once, then removed). */
interface WatchSubscription {
  readonly messages: WatchMessage[];
  /** The last revision handed to the reader (or the start revision): where a resume continues. */
  delivered: number;
  error: unknown;
  wake: (() => void) | undefined;
}

/** Watch frames buffered per watch before a reader that does not keep up is cancelled. */
export const maxWatchBuffered = 1024;

/** After a stream fails, requests go unary for this long before a new stream is tried. */
const streamReopenDelayMs = 1000;
const maxTimeoutMs = 0xffff_ffff;
/** setTimeout's longest delay; longer deadlines get no local timer (the server still has one). */
const maxTimerDelayMs = 2 ** 31 - 1;
/** How many times maxInFlight may wait for a slot before callers are sent to unary calls. */
const queueFactor = 16;

export interface StreamMultiplexerOptions {
  readonly maxInFlight: number;
  readonly maxQueued?: number;
}

export class StreamMultiplexer {
  private stream: KvStream | undefined;
  /** Every request not yet settled, sent or queued, by id. */
  private readonly outstanding = new Map<string, Outstanding>();
  /** Running watches by id. Each holds a slot: it is counted in sentCount from open to end. */
  private readonly watches = new Map<string, WatchSubscription>();
  /** Ids waiting for a slot, oldest first; may hold ids already settled (skipped when dequeued). */
  private readonly queue: string[] = [];
  // Invariant: sentCount = (entries of `outstanding` with sent = true) + watches.size <= maxInFlight.
  private sentCount = 0;
  private nextId = 1;
  private failedAtMs = -Infinity;
  /** Set when the server answered UNIMPLEMENTED: this node is served by unary calls only. */
  private unsupported = false;
  private closed = false;
  private readonly maxInFlight: number;
  private readonly maxQueued: number;

  constructor(
    private readonly client: grpc.Client,
    options: StreamMultiplexerOptions,
  ) {
    this.maxInFlight = options.maxInFlight;
    this.maxQueued = options.maxQueued ?? options.maxInFlight * queueFactor;
  }

  /** Whether a request should go over the stream now (otherwise use a unary call). */
  hasRoom(): boolean {
    if (this.closed || this.unsupported) return false;
    if (this.stream === undefined && Date.now() - this.failedAtMs < streamReopenDelayMs) return false;
    return this.outstanding.size - this.sentCount < this.maxQueued;
  }

  /** Whether a stream request failed only because the server has no KV.Stream (safe to re-send). */
  static isStreamUnsupported(error: unknown): boolean {
    return error instanceof AtollError && error.details?.['streamUnsupported'] === true;
  }

  request(operation: KvOperation, deadlineMs: number, signal: AbortSignal | undefined): Promise<KvResult> {
    return new Promise<KvResult>((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(signal.reason);
        return;
      }
      const id = String(this.nextId++);
      const onAbort = (): void => this.expire(id, signal!.reason);
      const delayMs = Math.max(0, deadlineMs - Date.now());
      const timer =
        delayMs <= maxTimerDelayMs
          ? setTimeout(
              () => this.expire(id, new AtollError('DEADLINE_EXCEEDED', 'the request did not complete before its deadline', { grpcStatus: grpc.status.DEADLINE_EXCEEDED })),
              delayMs,
            )
          : undefined;
      this.outstanding.set(id, { operation, deadlineMs, resolve, reject, timer, signal, onAbort, sent: false });
      signal?.addEventListener('abort', onAbort, { once: true });
      if (this.sentCount < this.maxInFlight) this.send(id);
      else this.queue.push(id);
    });
  }

  /**
   * Opens a watch on the stream, or undefined when the stream cannot take one now (no free slot,
   * closed, failing or unsupported): then the caller uses KV.Watch. The feed yields the watch's
   * messages until it fails (throws its AtollError, or the signal's reason when aborted); leaving
   * the loop cancels the watch on the server.
   */
  openWatch(request: WatchRequest, signal: AbortSignal | undefined): AsyncGenerator<WatchMessage, void, undefined> | undefined {
    // Watches take at most half the slots, so ordinary requests always keep the other half.
    if (!this.hasRoom() || this.sentCount >= this.maxInFlight || this.watches.size >= Math.floor(this.maxInFlight / 2) || signal?.aborted === true) return undefined;
    const id = String(this.nextId++);
    const subscription: WatchSubscription = { messages: [], delivered: request.startRevision ?? 0, error: undefined, wake: undefined };
    const stream = this.openStream();
    this.watches.set(id, subscription);
    this.sentCount++;
    stream.write(encodeStreamRequest(id, 0, { kind: 'watch', request }));
    return this.watchFeed(id, subscription, signal);
  }

  private async *watchFeed(id: string, subscription: WatchSubscription, signal: AbortSignal | undefined): AsyncGenerator<WatchMessage, void, undefined> {
    const onAbort = (): void => {
      if (this.endWatch(id, signal!.reason)) this.sendCancel(id);
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        const message = subscription.messages.shift();
        if (message !== undefined) {
          subscription.delivered = message.revision;
          yield message;
          continue;
        }
        if (subscription.error !== undefined) throw subscription.error;
        await new Promise<void>((resolve) => (subscription.wake = resolve));
        subscription.wake = undefined;
      }
    } finally {
      signal?.removeEventListener('abort', onAbort);
      // The reader left (break, return or an error it threw): the server stops the watch.
      if (this.endWatch(id, new AtollError('UNAVAILABLE', 'the watch was closed'))) this.sendCancel(id);
    }
  }

  /** Ends a running watch with `error` (its reader throws it once the buffer is read); false if it had ended. */
  private endWatch(id: string, error: unknown): boolean {
    const subscription = this.watches.get(id);
    if (subscription === undefined) return false;
    this.watches.delete(id);
    this.sentCount--;
    subscription.error = error;
    subscription.wake?.();
    this.sendQueued();
    return true;
  }

  private handleWatchFrame(id: string, message: WatchMessage): void {
    const subscription = this.watches.get(id);
    if (subscription === undefined) return;
    if (subscription.messages.length >= maxWatchBuffered) {
      // Drop what the reader has not taken: it resumes after the last message it did take.
      subscription.messages.length = 0;
      const resumeRevision = subscription.delivered;
      this.endWatch(id, new AtollError('WATCH_OVERFLOW', `the watch reader fell ${maxWatchBuffered} messages behind; resume after revision ${resumeRevision}`, { resumeRevision }));
      this.sendCancel(id);
      return;
    }
    subscription.messages.push(message);
    subscription.wake?.();
  }

  /** Ends the stream; outstanding requests fail with UNAVAILABLE. */
  close(): void {
    this.closed = true;
    this.failAll(new AtollError('UNAVAILABLE', 'the client was closed'));
    this.stream?.cancel();
    this.stream = undefined;
  }

  private send(id: string): void {
    const request = this.outstanding.get(id);
    if (request === undefined) return;
    const stream = this.openStream();
    request.sent = true;
    this.sentCount++;
    const timeoutMs = Math.min(maxTimeoutMs, Math.max(1, Math.ceil(request.deadlineMs - Date.now())));
    stream.write(encodeStreamRequest(id, timeoutMs, { kind: 'operation', operation: request.operation }));
  }

  /** Sends queued requests while there are free slots. */
  private sendQueued(): void {
    while (this.sentCount < this.maxInFlight && this.queue.length > 0 && !this.closed) this.send(this.queue.shift()!);
  }

  /** Gives up on one request (deadline or abort); tells the server if it had been sent. */
  private expire(id: string, error: unknown): void {
    const wasSent = this.outstanding.get(id)?.sent === true;
    // A request that timed out in the queue never left this process: say so, it is not in doubt.
    const settledWith = !wasSent && error instanceof AtollError ? new AtollError(error.code, error.message, { ...error.details, neverSent: true }) : error;
    this.settle(id, { ok: false, error: settledWith });
    if (wasSent) this.sendCancel(id);
  }

  private openStream(): KvStream {
    if (this.stream !== undefined) return this.stream;
    const method = kvServiceDefinition['Stream']!;
    const stream = this.client.makeBidiStreamRequest(
      method.path,
      method.requestSerialize as (value: StreamRequestMessage) => Buffer,
      method.responseDeserialize as (bytes: Buffer) => StreamResponseMessage,
    );
    stream.on('data', (message: StreamResponseMessage) => this.handleAnswer(message));
    stream.on('error', (error: grpc.ServiceError) => this.handleStreamEnd(stream, error));
    stream.on('status', (status: grpc.StatusObject) => {
      if (status.code === grpc.status.OK) this.handleStreamEnd(stream, undefined);
    });
    this.stream = stream;
    return stream;
  }

  private handleAnswer(message: StreamResponseMessage): void {
    let decoded;
    try {
      decoded = decodeStreamFrame(message);
    } catch {
      // An answer we cannot read cannot be matched either; its request will time out.
      return;
    }
    if ('watch' in decoded) {
      this.handleWatchFrame(decoded.id, decoded.watch);
      return;
    }
    // A watch's one error frame ends it.
    if (this.watches.has(decoded.id)) {
      this.endWatch(decoded.id, decoded.outcome.ok ? new AtollError('INTERNAL', 'a watch got an answer instead of frames') : decoded.outcome.error);
      return;
    }
    this.settle(decoded.id, decoded.outcome.ok ? { ok: true, result: decoded.outcome.result } : { ok: false, error: decoded.outcome.error });
  }

  private handleStreamEnd(stream: KvStream, error: grpc.ServiceError | undefined): void {
    if (this.stream !== stream) return;
    this.stream = undefined;
    this.failedAtMs = Date.now();
    if (error === undefined) {
      this.failAll(new AtollError('UNAVAILABLE', 'the server ended the stream', { grpcStatus: grpc.status.UNAVAILABLE }));
      return;
    }
    if (error.code === grpc.status.UNIMPLEMENTED) {
      // The server never ran these requests; the connection re-sends them as unary calls.
      this.unsupported = true;
      this.failAll(new AtollError('UNAVAILABLE', 'the server does not support KV.Stream', { streamUnsupported: true, neverSent: true }));
      return;
    }
    this.failAll(atollErrorOfServiceError(error));
  }

  private failAll(error: AtollError): void {
    // Requests still queued never reached the stream, so they are certainly not applied.
    const unsent = error.details?.['neverSent'] === true ? error : new AtollError(error.code, error.message, { ...error.details, neverSent: true });
    this.queue.length = 0;
    for (const [id, request] of [...this.outstanding]) this.settle(id, { ok: false, error: request.sent ? error : unsent });
    for (const id of [...this.watches.keys()]) this.endWatch(id, error);
  }

  private settle(id: string, outcome: { ok: true; result: KvResult } | { ok: false; error: unknown }): void {
    const request = this.outstanding.get(id);
    if (request === undefined) return;
    this.outstanding.delete(id);
    if (request.sent) this.sentCount--;
    clearTimeout(request.timer);
    request.signal?.removeEventListener('abort', request.onAbort);
    if (outcome.ok) request.resolve(outcome.result);
    else request.reject(outcome.error);
    this.sendQueued();
  }

  private sendCancel(id: string): void {
    try {
      this.stream?.write(encodeStreamRequest(id, 0, { kind: 'cancel' }));
    } catch {
      // The stream is already failing; its end handler deals with the rest.
    }
  }
}
