/**
 * The client side of KV.Stream: one long-lived stream per node carries any number of concurrent
 * requests, each tagged with an id and matched to its answer whatever order answers come in. This
 * is the fast path: a streamed message costs grpc-js a fraction of a unary call.
 *
 * - Each request has its own deadline: it travels as `timeout_ms`, and a local timer rejects the
 *   request with DEADLINE_EXCEEDED even if the server never answers.
 * - Aborting a request's signal rejects it with the signal's reason and sends a cancel message.
 * - When the stream fails, every outstanding request fails with the stream's error and the
 *   multiplexer stays closed for a short while (the connection uses unary calls meanwhile), then
 *   reopens lazily on the next request. A server without Stream (UNIMPLEMENTED) is remembered.
 * - At most `maxInFlight` requests are outstanding; `hasRoom` tells the caller to use a unary
 *   call instead of queueing without bound.
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
  resolve(result: KvResult): void;
  reject(error: unknown): void;
  readonly timer: NodeJS.Timeout;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/** After a stream fails, requests go unary for this long before a new stream is tried. */
const streamReopenDelayMs = 1000;
const maxTimeoutMs = 0xffff_ffff;
/** setTimeout's longest delay; longer deadlines get no local timer (the server still has one). */
const maxTimerDelayMs = 2 ** 31 - 1;

export class StreamMultiplexer {
  private stream: KvStream | undefined;
  private readonly outstanding = new Map<string, Outstanding>();
  private nextId = 1;
  private failedAtMs = -Infinity;
  /** Set when the server answered UNIMPLEMENTED: this node is served by unary calls only. */
  private unsupported = false;
  private closed = false;

  constructor(
    private readonly client: grpc.Client,
    private readonly maxInFlight: number,
  ) {}

  /** Whether a request should go over the stream now (otherwise use a unary call). */
  hasRoom(): boolean {
    if (this.closed || this.unsupported) return false;
    if (this.stream === undefined && Date.now() - this.failedAtMs < streamReopenDelayMs) return false;
    return this.outstanding.size < this.maxInFlight;
  }

  get outstandingCount(): number {
    return this.outstanding.size;
  }

  request(operation: KvOperation, deadlineMs: number, signal: AbortSignal | undefined): Promise<KvResult> {
    return new Promise<KvResult>((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(signal.reason);
        return;
      }
      const stream = this.openStream();
      const id = String(this.nextId++);
      const remainingMs = Math.max(1, Math.ceil(deadlineMs - Date.now()));
      const timeoutMs = Math.min(maxTimeoutMs, remainingMs);
      const onAbort = (): void => {
        this.settle(id, { ok: false, error: signal!.reason });
        this.sendCancel(id);
      };
      const timer = setTimeout(() => {
        this.settle(id, { ok: false, error: new AtollError('DEADLINE_EXCEEDED', 'the request did not complete before its deadline', { grpcStatus: grpc.status.DEADLINE_EXCEEDED }) });
        this.sendCancel(id);
      }, Math.min(remainingMs, maxTimerDelayMs));
      this.outstanding.set(id, { resolve, reject, timer, signal, onAbort });
      signal?.addEventListener('abort', onAbort, { once: true });
      stream.write(encodeStreamRequest(id, timeoutMs, { kind: 'operation', operation }));
    });
  }

/** Whether a stream request failed only because the server has no KV.Stream (safe to re-send). */
  static isStreamUnsupported(error: unknown): boolean {
    return error instanceof AtollError && error.details?.['streamUnsupported'] === true;
  }

  /** Ends the stream; outstanding requests fail with UNAVAILABLE. */
  close(): void {
    this.closed = true;
    this.failAll(new AtollError('UNAVAILABLE', 'the client was closed'));
    this.stream?.cancel();
    this.stream = undefined;
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
    if (error === undefined) {
      this.failAll(new AtollError('UNAVAILABLE', 'the server ended the stream', { grpcStatus: grpc.status.UNAVAILABLE }));
      return;
    }
    this.failedAtMs = Date.now();
    if (error.code === grpc.status.UNIMPLEMENTED) {
      // The server never ran these requests; the connection re-sends them as unary calls.
      this.unsupported = true;
      this.failAll(new AtollError('UNAVAILABLE', 'the server does not support KV.Stream', { streamUnsupported: true, neverSent: true }));
      return;
    }
    this.failAll(atollErrorOfServiceError(error));
  }

  private failAll(error: AtollError): void {
    for (const id of [...this.outstanding.keys()]) this.settle(id, { ok: false, error });
  }

  private settle(id: string, outcome: { ok: true; result: KvResult } | { ok: false; error: unknown }): void {
    const request = this.outstanding.get(id);
    if (request === undefined) return;
    this.outstanding.delete(id);
    clearTimeout(request.timer);
    request.signal?.removeEventListener('abort', request.onAbort);
    if (outcome.ok) request.resolve(outcome.result);
    else request.reject(outcome.error);
  }

  private sendCancel(id: string): void {
    try {
      this.stream?.write(encodeStreamRequest(id, 0, { kind: 'cancel' }));
    } catch {
      // The stream is already failing; its end handler deals with the rest.
    }
  }
}
