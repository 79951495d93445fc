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
 */
import * as grpc from '@grpc/grpc-js';
import { AtollError } from '../errors.js';
import { atollErrorOfServiceError } from '../server/grpc-errors.js';
import type { KvOperation, KvResult } from '../server/kv-operation.js';
import { kvServiceDefinition } from '../server/protos.js';
import { decodeStreamResponse, encodeStreamRequest } from '../server/stream-codec.js';
import type { StreamRequestMessage, StreamResponseMessage } from '../server/wire-types.js';

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
  /** Ids waiting for a slot, oldest first; may hold ids already settled (skipped when dequeued). */
  private readonly queue: string[] = [];
  // Invariant: sentCount = number of entries of `outstanding` with sent = true <= maxInFlight.
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
      decoded = decodeStreamResponse(message);
    } catch {
      // An answer we cannot read cannot be matched either; its request will time out.
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
