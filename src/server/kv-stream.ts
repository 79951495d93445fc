/**
 * The server side of KV.Stream: many requests over one bidirectional stream, run concurrently and
 * answered in completion order.
 *
 * Bounds: at most limits.maxStreamRequestsInFlight requests run or wait to be written at once
 * (running requests plus answers not yet accepted by the stream); every answer counts, error
 * answers to malformed or duplicate-id requests included. At the bound the session pauses reading,
 * so HTTP/2 flow control slows the client instead of this process queueing without bound, and it
 * resumes once the count falls under the bound (a request finished, or 'drain' let answers out).
 * A client that never reads its answers therefore stalls only its own stream.
 *
 * Endings: when the client half-closes, the session answers what is outstanding and then ends
 * the stream with OK. When the client cancels or the stream fails, every running request's signal
 * is aborted and nothing more is written.
 *
 * Watches (a request's watch case): a watch runs like KV.Watch (the node admits it against its
 * per-node and per-tenant bounds) and its messages go out as watch frames with its id, through
 * the same answer queue, until the client cancels it (a cancel with its id: no more frames), it
 * fails (one StreamError frame with its id, after which no frame has that id), or the stream
 * ends. Its sink reports the stream's backpressure: write() says false while the stream waits for
 * 'drain', so a watcher whose frames are not read is cancelled with WATCH_OVERFLOW, as on KV.Watch.
 * A running watch holds one slot of maxInFlight. A half-close ends the running watches (the
 * client can no longer cancel them) without frames. Every watch of the stream shares one
 * transport (watch-transport.ts): the stream's watch frames count against the watch memory bounds
 * from the sink's write until grpc-js's write callback, and a cut-off resets the whole stream.
 */
import { requestTurn } from './request-turns.js';
import type * as grpc from '@grpc/grpc-js';
import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import type { NodeApi, WatchRequest, WatchSink } from '../api/node-api.js';
import { callerOf, deadlineMsOf, openCallScope, type CallScope, type Caller } from './call-context.js';
import type { ErrorLogger } from '../wire/grpc-errors.js';
import { kvCodecs, runKvOperation, type KvOperation } from '../wire/kv-operation.js';
import { rpcCode, type RpcMetrics } from './node-metrics.js';
import { decodeStreamRequest, encodeStreamError, encodeStreamResult, encodeStreamWatchFrame, streamRequestIdOf } from '../wire/stream-codec.js';
import type { StreamRequestMessage, StreamResponseMessage } from '../wire/wire-types.js';
import { sentBytes, throwIfWireProblem } from '../wire/wire-utf8.js';
import { noStreamWarning, watchTransportOf } from './watch-transport.js';
import type { WatchTransport } from '../watch/watch-memory.js';

export type KvStreamCall = grpc.ServerDuplexStream<StreamRequestMessage, StreamResponseMessage>;

export interface KvStreamOptions {
  readonly maxInFlight?: number;
  /** Counters every session of this handler updates (tests and diagnostics read them). */
  readonly stats?: KvStreamStats;
  /** Counts and times every request (the unary methods' too), by method name and outcome. */
  readonly metrics?: RpcMetrics;
}

/** What the sessions of one handler hold right now, and the most any one session held. */
export interface KvStreamStats {
  /** Answers waiting for 'drain', summed over every open session. */
  queuedAnswers: number;
  /** The largest occupancy (running + queued answers) any session reached. */
  peakOccupancy: number;
}

class KvStreamSession {
  /**
   * Running requests by id. Invariant: running.size + unwritten.length <= maxInFlight + 1: a
   * message is read only while the occupancy is under the bound (each adds one), and reading
   * pauses as soon as it reaches the bound.
   */
  private readonly running = new Map<string, CallScope>();
  /**
   * Running watches by id, each with the controller that ends it. Invariant: an id is in at most
   * one of `running` and `watches`; only the watch whose controller is stored here may write
   * frames with its id (a cancelled or ended watch writes nothing more).
   */
  private readonly watches = new Map<string, AbortController>();
  /** Watch sinks waiting for the answer queue to drain (called once it is empty and writable). */
  private readonly drainWaiters = new Set<() => void>();
  /** Answers waiting for 'drain', each with what to call once the stream has written it (watch frames). */
  private readonly unwritten: Array<{ readonly response: StreamResponseMessage; readonly written: (() => void) | undefined }> = [];
  /** The stream as the watch memory accounting sees it, made at the first watch. */
  private transport: WatchTransport | undefined;
  private waitingForDrain = false;
  private paused = false;
  private clientHalfClosed = false;
  /** Set once the stream is over (ended by us, cancelled or failed): nothing more is written. */
  private finished = false;
  private readonly streamDeadlineMs: number | undefined;
  /** Who opened the stream (its metadata): every request on it runs as that caller. */
  private readonly caller: Caller;

  constructor(
    private readonly call: KvStreamCall,
    private readonly api: NodeApi,
    private readonly logger: ErrorLogger,
    private readonly maxInFlight: number,
    private readonly stats: KvStreamStats | undefined,
    private readonly metrics?: RpcMetrics,
  ) {
    this.streamDeadlineMs = deadlineMsOf(call.getDeadline());
    this.caller = callerOf(call);
    call.on('data', (message: StreamRequestMessage) => this.handleMessage(message));
    call.on('end', () => this.handleHalfClose());
    call.on('cancelled', () => this.stop(new AtollError('UNAVAILABLE', 'the client cancelled the stream')));
    call.on('error', (error: unknown) => {
      this.logger.error({ err: error }, 'a KV stream failed');
      this.stop(new AtollError('UNAVAILABLE', 'the stream failed'));
    });
  }

  private handleMessage(message: StreamRequestMessage): void {
    if (this.finished) return;
    this.handleRequest(message);
    // Every kind of message may have added a running request or a queued answer.
    if (this.occupancy() >= this.maxInFlight) this.pauseReading();
  }

  private handleRequest(message: StreamRequestMessage): void {
    const id = streamRequestIdOf(message);
    let decoded;
    try {
      // A string field that is not UTF-8 (or a malformed request) fails this request only.
      throwIfWireProblem(message);
      // With the bytes it arrived as, so that a forward sends its operation on as it was sent.
      decoded = decodeStreamRequest(message, sentBytes.get(message));
    } catch (error) {
      // Without an id there is nobody to answer; the client's own timer will expire that request.
      if (id !== undefined) this.enqueue(encodeStreamError(id, error, this.logger));
      return;
    }
    if (decoded.body.kind === 'cancel') {
      this.running.get(decoded.id)?.abort(new AtollError('UNAVAILABLE', 'the client cancelled the request'));
      this.running.delete(decoded.id);
      this.watches.get(decoded.id)?.abort();
      this.watches.delete(decoded.id);
      this.afterSlotFreed();
      return;
    }
    if (this.running.has(decoded.id) || this.watches.has(decoded.id)) {
      this.enqueue(encodeStreamError(decoded.id, new AtollError('INVALID_ARGUMENT', `request id ${decoded.id} is already in flight`)));
      return;
    }
    if (decoded.body.kind === 'watch') this.startWatch(decoded.id, decoded.timeoutMs, decoded.body.request);
    else this.start(decoded.id, decoded.timeoutMs, decoded.body.operation);
  }

  private deadlineOf(timeoutMs: number): number {
    // A timeout past the server's maximum is clamped to it (openCallScope clamps again).
    const requestDeadlineMs = Date.now() + (timeoutMs > 0 ? Math.min(timeoutMs, limits.maxCallTimeoutMs) : limits.defaultCallTimeoutMs);
    return this.streamDeadlineMs === undefined ? requestDeadlineMs : Math.min(requestDeadlineMs, this.streamDeadlineMs);
  }

  private start(id: string, timeoutMs: number, operation: KvOperation): void {
    // Every request of the stream runs as the caller that opened it.
    const scope = openCallScope({ deadlineMs: this.deadlineOf(timeoutMs), caller: this.caller });
    this.running.set(id, scope);
    this.noteOccupancy();
    const startedMs = performance.now();
    const method = kvCodecs[operation.kind].method;
    (requestTurn() ?? Promise.resolve())
      .then(() => runKvOperation(this.api, operation, scope.context))
      .then(
        (result) => {
          this.metrics?.rpc(method, 'OK', (performance.now() - startedMs) / 1000);
          return encodeStreamResult(id, result);
        },
        (error: unknown) => {
          this.metrics?.rpc(method, rpcCode(error), (performance.now() - startedMs) / 1000);
          return encodeStreamError(id, error, this.logger);
        },
      )
      .then((response) => {
        // A request cancelled by the client (or a stream that ended) gets no answer.
        if (this.running.get(id) !== scope) return;
        this.running.delete(id);
        this.enqueue(response);
      })
      .catch((error: unknown) => this.logger.error({ err: error }, 'answering a stream request failed'))
      .finally(() => {
        scope.dispose();
        this.afterSlotFreed();
      });
  }

  /** Runs one watch until it is cancelled, fails or the stream ends (see the file comment). */
  private startWatch(id: string, timeoutMs: number, request: WatchRequest): void {
    // The deadline bounds the watch's start (its linearizable read), not the watch itself: the
    // node gets the scope's deadline but a signal that only the cancel, the stream's end and a
    // half-close abort.
    const scope = openCallScope({ deadlineMs: this.deadlineOf(timeoutMs), caller: this.caller });
    const controller = new AbortController();
    this.watches.set(id, controller);
    this.noteOccupancy();
    const ours = (): boolean => this.watches.get(id) === controller && !this.finished;
    this.transport ??= watchTransportOf(this.call, () => noStreamWarning(this.logger));
    const sink: WatchSink = {
      transport: this.transport,
      write: (message, written) => {
        // A frame not written (the watch is no longer ours) holds nothing.
        if (!ours()) {
          written?.();
          return true;
        }
        this.enqueue(encodeStreamWatchFrame(id, message), written);
        return !this.waitingForDrain;
      },
      drained: (ms) =>
        new Promise<boolean>((resolve) => {
          const finish = (drained: boolean): void => {
            clearTimeout(timer);
            this.drainWaiters.delete(onDrain);
            controller.signal.removeEventListener('abort', onAbort);
            resolve(drained);
          };
          const onDrain = (): void => finish(true);
          const onAbort = (): void => finish(false);
          const timer = setTimeout(() => finish(false), ms);
          this.drainWaiters.add(onDrain);
          controller.signal.addEventListener('abort', onAbort, { once: true });
          if (controller.signal.aborted) finish(false);
          else if (!this.waitingForDrain && this.unwritten.length === 0) finish(true);
        }),
    };
    // Not counted in the RPC metrics (as KV.Watch): a watch's lifetime is no request latency.
    Promise.resolve()
      .then(() => this.api.watch(request, { ...scope.context, signal: controller.signal }, sink))
      .then(
        () => {
          // Ended without the client asking (the node is closing): the client resumes elsewhere.
          if (ours() && !controller.signal.aborted) this.enqueue(encodeStreamError(id, new AtollError('UNAVAILABLE', 'the node ended the watch')));
        },
        (error: unknown) => {
          if (ours()) this.enqueue(encodeStreamError(id, error, this.logger));
        },
      )
      .catch((error: unknown) => this.logger.error({ err: error }, 'ending a stream watch failed'))
      .finally(() => {
        if (this.watches.get(id) === controller) this.watches.delete(id);
        controller.abort();
        scope.dispose();
        this.afterSlotFreed();
      });
  }

  private wakeDrainWaiters(): void {
    if (this.waitingForDrain || this.unwritten.length > 0) return;
    for (const wake of [...this.drainWaiters]) wake();
  }

  private occupancy(): number {
    return this.running.size + this.watches.size + this.unwritten.length;
  }

  private noteOccupancy(): void {
    if (this.stats !== undefined) this.stats.peakOccupancy = Math.max(this.stats.peakOccupancy, this.occupancy());
  }

  private pauseReading(): void {
    if (this.paused) return;
    this.paused = true;
    this.call.pause();
  }

  private afterSlotFreed(): void {
    if (this.paused && !this.finished && this.occupancy() < this.maxInFlight) {
      this.paused = false;
      this.call.resume();
    }
    this.maybeEnd();
  }

  private enqueue(response: StreamResponseMessage, written?: () => void): void {
    if (this.finished) return;
    this.unwritten.push({ response, written });
    if (this.stats !== undefined) this.stats.queuedAnswers++;
    this.noteOccupancy();
    this.flush();
    if (this.occupancy() >= this.maxInFlight) this.pauseReading();
  }

  private flush(): void {
    while (!this.finished && !this.waitingForDrain && this.unwritten.length > 0) {
      const { response, written } = this.unwritten.shift()!;
      if (this.stats !== undefined) this.stats.queuedAnswers--;
      let accepted: boolean;
      try {
        accepted = this.call.write(response, written === undefined ? undefined : () => written());
      } catch (error) {
        this.logger.error({ err: error }, 'writing a stream response failed');
        this.stop(new AtollError('UNAVAILABLE', 'the stream failed'));
        return;
      }
      if (!accepted) {
        this.waitingForDrain = true;
        this.call.once('drain', () => {
          this.waitingForDrain = false;
          this.flush();
          this.wakeDrainWaiters();
          this.afterSlotFreed();
        });
      }
    }
    this.maybeEnd();
  }

  private handleHalfClose(): void {
    this.clientHalfClosed = true;
    this.endWatches();
    this.maybeEnd();
  }

  /** Ends every running watch without a frame (the stream is ending). */
  private endWatches(): void {
    for (const controller of this.watches.values()) controller.abort();
    this.watches.clear();
  }

  /** Ends the stream with OK once the client is done sending and every answer is written. */
  private maybeEnd(): void {
    if (this.finished || !this.clientHalfClosed) return;
    if (this.running.size > 0 || this.unwritten.length > 0 || this.waitingForDrain) return;
    this.finished = true;
    this.call.end();
  }

  private stop(reason: AtollError): void {
    if (this.finished) return;
    this.finished = true;
    for (const scope of this.running.values()) scope.abort(reason);
    this.running.clear();
    this.endWatches();
    if (this.stats !== undefined) this.stats.queuedAnswers -= this.unwritten.length;
    this.unwritten.length = 0;
  }
}

export function kvStreamHandler(api: NodeApi, logger: ErrorLogger, options: KvStreamOptions = {}): grpc.handleBidiStreamingCall<StreamRequestMessage, StreamResponseMessage> {
  const maxInFlight = options.maxInFlight ?? limits.maxStreamRequestsInFlight;
  return (call) => {
    new KvStreamSession(call, api, logger, maxInFlight, options.stats, options.metrics);
  };
}
