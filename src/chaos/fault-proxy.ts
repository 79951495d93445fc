/**
 * A TCP fault proxy for one directed node-to-node link. Node A dials node B through P(A→B), which
 * dials B's real port; the proxy relays bytes both ways and can delay, slow, stall, drop or reset
 * them on command. It needs no privileges and works on loopback.
 *
 * Directions are named from the dialer's side: `forward` is A→B (bytes the accepted client sends
 * toward the target), `backward` is B→A (the target's replies). A full partition between A and B
 * needs a fault on both P(A→B) and P(B→A), because each node dials the other.
 *
 * Why silence stalls by default. A real network never loses bytes in the middle of a TCP stream:
 * when a partition heals, TCP retransmits and the stream resumes intact (or the connection dies as
 * a whole). Discarding bytes inside a stream instead corrupts whatever framing rides on it
 * (HTTP/2 frames, HPACK state, gRPC message lengths), a failure no real network produces, so a
 * test that saw it would report a bug that is not one. The `drop` and `blackhole` faults therefore
 * hold the silent direction's bytes (`mode: 'stall'`, the default) and deliver them when the fault
 * clears; `mode: 'discard'` throws them away (including bytes already queued when the fault
 * begins) for tests that want exactly that. Held bytes are
 * bounded: past `maxQueuedBytes` the proxy stops reading the source socket, so the sender's kernel
 * buffers fill and its writes block, as they would behind a real partition.
 *
 * Ordering: every byte of one direction leaves in the order it arrived, whatever the fault; a
 * FIN (half-close) or a reset travels behind the bytes sent before it and is held by the same
 * faults.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { Rng } from '../raft/rng.js';

/** The part of a pino logger the chaos tools use; a pino `Logger` fits it. */
export interface ChaosLogger {
  debug(fields: object, message: string): void;
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

const silentLogger: ChaosLogger = { debug() {}, info() {}, warn() {} };

export type Direction = 'forward' | 'backward';
export type FaultDirection = Direction | 'both';
/** What a silenced direction does with the bytes it receives: hold them (default) or lose them. */
export type SilenceMode = 'stall' | 'discard';

export type Fault =
  | { readonly kind: 'none' }
  /** Every chunk, both directions, waits ms plus a uniform [0, jitterMs) extra; order is kept. */
  | { readonly kind: 'delay'; readonly ms: number; readonly jitterMs?: number }
  /** Each direction of each connection is limited to this rate. */
  | { readonly kind: 'slow'; readonly bytesPerSecond: number }
  /** One direction (or both) goes silent; connections stay open. */
  | { readonly kind: 'drop'; readonly direction: FaultDirection; readonly mode?: SilenceMode }
  /** Both directions go silent; new connections are accepted but nothing flows. */
  | { readonly kind: 'blackhole'; readonly mode?: SilenceMode }
  /** Every connection is reset (RST) and new ones are reset on accept while this is set. */
  | { readonly kind: 'reset' };

const kibibyte = 1024;
const mebibyte = 1024 * kibibyte;

/** Every bound of the proxy in one place; the relations between them are asserted below. */
export const faultProxyLimits = Object.freeze({
  /** Default cap on the bytes one direction of one connection holds before pausing its source. */
  defaultMaxQueuedBytes: 8 * mebibyte,
  /** The smallest cap a caller may choose: at least one full socket read must fit. */
  minMaxQueuedBytes: 64 * kibibyte,
  /** Accepted connections beyond this are closed by Node as soon as they arrive. */
  defaultMaxConnections: 1024,
  /** A dial to the target that has not connected by then resets the client side. */
  defaultConnectTimeoutMs: 5_000,
  maxDelayMs: 60_000,
  minBytesPerSecond: 1 * kibibyte,
  /** Under `slow`, chunks are cut to this size so the rate is smooth rather than bursty. */
  slowSliceBytes: 16 * kibibyte,
});
assert.ok(faultProxyLimits.minMaxQueuedBytes <= faultProxyLimits.defaultMaxQueuedBytes);
assert.ok(faultProxyLimits.slowSliceBytes <= faultProxyLimits.minMaxQueuedBytes);
assert.ok(faultProxyLimits.minBytesPerSecond > 0);

export interface FaultProxyOptions {
  readonly listenHost: string;
  /** 0 (the default) picks a free port; read it back from `proxy.port`. */
  readonly listenPort?: number;
  readonly targetHost: string;
  readonly targetPort: number;
  readonly logger?: ChaosLogger;
  /** Seeds the jitter generator, so a run's delays replay from its seed. */
  readonly seed?: number;
  readonly maxQueuedBytes?: number;
  readonly maxConnections?: number;
  readonly connectTimeoutMs?: number;
}

export interface DirectionCounts {
  forward: number;
  backward: number;
}

export interface FaultProxyStats {
  readonly fault: Fault;
  readonly connectionsAccepted: number;
  readonly connectionsOpen: number;
  /** Connections this proxy reset: by a `reset` fault, on accept while one is set, or passing on a peer's reset. */
  readonly connectionsReset: number;
  /** Bytes written to the far side. */
  readonly bytesForwarded: Readonly<DirectionCounts>;
  /** Bytes thrown away: `discard` mode, or bytes left for a side that had already gone. */
  readonly bytesDiscarded: Readonly<DirectionCounts>;
  /** Bytes held right now (delayed, slowed or stalled), summed over connections. */
  readonly bytesQueued: Readonly<DirectionCounts>;
}

/** What one direction does right now, derived from the fault by `policyOf`. */
interface DirectionPolicy {
  readonly silence: 'no' | SilenceMode;
  readonly delayMs: number;
  readonly jitterMs: number;
  /** Infinity when the rate is not limited. */
  readonly bytesPerSecond: number;
}

const openPolicy: DirectionPolicy = { silence: 'no', delayMs: 0, jitterMs: 0, bytesPerSecond: Infinity };

function policyOf(fault: Fault, direction: Direction): DirectionPolicy {
  switch (fault.kind) {
    case 'none':
    case 'reset':
      return openPolicy;
    case 'delay':
      return { ...openPolicy, delayMs: fault.ms, jitterMs: fault.jitterMs ?? 0 };
    case 'slow':
      return { ...openPolicy, bytesPerSecond: fault.bytesPerSecond };
    case 'drop':
      if (fault.direction !== 'both' && fault.direction !== direction) return openPolicy;
      return { ...openPolicy, silence: fault.mode ?? 'stall' };
    case 'blackhole':
      return { ...openPolicy, silence: fault.mode ?? 'stall' };
  }
}

function assertValidFault(fault: Fault): void {
  const finiteIn = (value: number, low: number, high: number): boolean => Number.isFinite(value) && value >= low && value <= high;
  const modeOk = (mode: SilenceMode | undefined): boolean => mode === undefined || mode === 'stall' || mode === 'discard';
  switch (fault.kind) {
    case 'none':
    case 'reset':
      return;
    case 'delay':
      assert.ok(finiteIn(fault.ms, 0, faultProxyLimits.maxDelayMs), `delay ms out of range: ${fault.ms}`);
      assert.ok(finiteIn(fault.jitterMs ?? 0, 0, faultProxyLimits.maxDelayMs), `delay jitterMs out of range: ${fault.jitterMs}`);
      return;
    case 'slow':
      assert.ok(finiteIn(fault.bytesPerSecond, faultProxyLimits.minBytesPerSecond, Number.MAX_SAFE_INTEGER), `slow bytesPerSecond out of range: ${fault.bytesPerSecond}`);
      return;
    case 'drop':
      assert.ok(['both', 'forward', 'backward'].includes(fault.direction), `drop direction invalid: ${String(fault.direction)}`);
      assert.ok(modeOk(fault.mode), `drop mode invalid: ${String(fault.mode)}`);
      return;
    case 'blackhole':
      assert.ok(modeOk(fault.mode), `blackhole mode invalid: ${String(fault.mode)}`);
      return;
    default:
      assert.fail(`unknown fault kind: ${String((fault as { kind: unknown }).kind)}`);
  }
}

/** What a pump needs from the proxy around it. */
interface PumpContext {
  readonly maxQueuedBytes: number;
  policy(direction: Direction): DirectionPolicy;
  now(): number;
  random(): number;
  readonly forwarded: DirectionCounts;
  readonly discarded: DirectionCounts;
  readonly queued: DirectionCounts;
}

interface QueuedChunk {
  readonly bytes: Buffer;
  readonly dueMs: number;
}

/**
 * One direction of one connection: reads its source socket, queues chunks with the time each may
 * leave, and writes them to the destination in order. It owns the only pause/resume of its source.
 */
class Pump {
  // Invariant: chunks[head..] are waiting, in arrival order, with non-decreasing dueMs.
  private chunks: QueuedChunk[] = [];
  private head = 0;
  // Invariant: queuedBytes is the sum of the waiting chunks' sizes.
  private queuedBytes = 0;
  private lastDueMs = 0;
  /** What travels after the last chunk: nothing yet, a FIN, or a reset. */
  private terminal: 'none' | 'end' | 'abort' = 'none';
  private destination: net.Socket | undefined;
  private waitingForDrain = false;
  private sourcePaused = false;
  private timer: NodeJS.Timeout | undefined;
  /** The terminal was delivered or the destination is gone: nothing more will be written. */
  private done = false;

  constructor(
    readonly direction: Direction,
    private readonly source: net.Socket,
    private readonly context: PumpContext,
  ) {}

  get finished(): boolean {
    return this.done;
  }

  /** True once a FIN from the source has been passed on and nothing else is pending. */
  get deliveredEnd(): boolean {
    return this.done && this.terminal === 'end';
  }

  attachDestination(destination: net.Socket): void {
    assert.equal(this.destination, undefined, 'destination attached twice');
    this.destination = destination;
    this.flush();
  }

  push(bytes: Buffer): void {
    const policy = this.context.policy(this.direction);
    if (this.done || policy.silence === 'discard') {
      this.context.discarded[this.direction] += bytes.length;
      return;
    }
    const sliceBytes = Number.isFinite(policy.bytesPerSecond) ? faultProxyLimits.slowSliceBytes : bytes.length;
    for (let offset = 0; offset < bytes.length; offset += sliceBytes) {
      const piece = bytes.subarray(offset, offset + sliceBytes);
      this.enqueue(piece, this.dueTimeOf(piece.length, policy));
    }
    if (this.queuedBytes >= this.context.maxQueuedBytes && !this.sourcePaused) {
      this.source.pause();
      this.sourcePaused = true;
    }
    this.flush();
  }

  /** The source sent a FIN. */
  endOfSource(): void {
    if (this.terminal === 'none') this.terminal = 'end';
    this.flush();
  }

  /** The source went away without a clean close: pass a reset on, behind the queued bytes. */
  abortSource(): void {
    if (this.done) return;
    this.terminal = 'abort';
    this.flush();
  }

  /** The destination closed: nothing can be delivered any more. */
  destinationGone(): void {
    if (this.done) return;
    this.done = true;
    this.dropQueue();
  }

  /** The fault changed: a discarding direction loses what it held; otherwise try to send. */
  faultChanged(): void {
    if (this.done) return;
    if (this.context.policy(this.direction).silence === 'discard') this.dropQueue();
    this.flush();
  }

  /** The proxy is closing or resetting: stop without delivering anything. */
  stop(): void {
    this.done = true;
    this.dropQueue();
  }

  private dueTimeOf(length: number, policy: DirectionPolicy): number {
    const now = this.context.now();
    let dueMs: number;
    if (Number.isFinite(policy.bytesPerSecond)) {
      dueMs = Math.max(now, this.lastDueMs) + (length / policy.bytesPerSecond) * 1000;
    } else {
      const jitterMs = policy.jitterMs > 0 ? this.context.random() * policy.jitterMs : 0;
      dueMs = Math.max(now + policy.delayMs + jitterMs, this.lastDueMs);
    }
    this.lastDueMs = dueMs;
    return dueMs;
  }

  private enqueue(bytes: Buffer, dueMs: number): void {
    this.chunks.push({ bytes, dueMs });
    this.queuedBytes += bytes.length;
    this.context.queued[this.direction] += bytes.length;
  }

  private dropQueue(): void {
    this.clearTimer();
    const waiting = this.queuedBytes;
    this.context.discarded[this.direction] += waiting;
    this.context.queued[this.direction] -= waiting;
    this.chunks = [];
    this.head = 0;
    this.queuedBytes = 0;
    this.maybeResumeSource();
  }

  private flush(): void {
    this.clearTimer();
    const destination = this.destination;
    if (this.done || destination === undefined || this.waitingForDrain) return;
    if (this.context.policy(this.direction).silence !== 'no') return;
    const now = this.context.now();
    while (this.head < this.chunks.length) {
      const chunk = this.chunks[this.head] as QueuedChunk;
      if (chunk.dueMs > now) {
        this.timer = setTimeout(() => this.flush(), Math.max(1, Math.ceil(chunk.dueMs - now)));
        break;
      }
      this.head++;
      this.queuedBytes -= chunk.bytes.length;
      this.context.queued[this.direction] -= chunk.bytes.length;
      this.context.forwarded[this.direction] += chunk.bytes.length;
      if (!destination.write(chunk.bytes)) {
        this.waitingForDrain = true;
        destination.once('drain', () => {
          this.waitingForDrain = false;
          this.flush();
        });
        break;
      }
    }
    this.compactQueue();
    this.maybeResumeSource();
    if (!this.waitingForDrain && this.head === this.chunks.length) this.maybeDeliverTerminal(destination);
  }

  private maybeDeliverTerminal(destination: net.Socket): void {
    if (this.terminal === 'none') return;
    this.done = true;
    if (this.terminal === 'end') destination.end();
    else destination.resetAndDestroy();
  }

  private compactQueue(): void {
    if (this.head === this.chunks.length) {
      this.chunks = [];
      this.head = 0;
    } else if (this.head > 1024 && this.head * 2 > this.chunks.length) {
      this.chunks = this.chunks.slice(this.head);
      this.head = 0;
    }
  }

  /** Resume at half the cap, so a stalled sender is not woken for every small write. */
  private maybeResumeSource(): void {
    if (!this.sourcePaused || this.queuedBytes > this.context.maxQueuedBytes / 2) return;
    this.sourcePaused = false;
    if (!this.source.destroyed) this.source.resume();
  }

  private clearTimer(): void {
    if (this.timer === undefined) return;
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}

/** One accepted client connection and its dial to the target. */
class ProxiedConnection {
  private readonly upstream = new net.Socket({ allowHalfOpen: true });
  private readonly forward: Pump;
  private readonly backward: Pump;
  private upstreamStarted = false;
  private clientClosed = false;
  private upstreamClosed = false;
  private connectTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly id: number,
    private readonly client: net.Socket,
    private readonly proxy: FaultProxy,
    private readonly context: PumpContext,
  ) {
    this.forward = new Pump('forward', client, context);
    this.backward = new Pump('backward', this.upstream, context);
    this.backward.attachDestination(client);
    this.wire(client, 'client', this.forward);
    this.wire(this.upstream, 'upstream', this.backward);
    this.maybeStartUpstream();
  }

  get closed(): boolean {
    return this.clientClosed && this.upstreamClosed;
  }

  faultChanged(fault: Fault): void {
    if (fault.kind === 'reset') {
      this.reset();
      return;
    }
    this.maybeStartUpstream();
    this.forward.faultChanged();
    this.backward.faultChanged();
  }

  /** Sends RST to both sides at once. */
  reset(): void {
    this.forward.stop();
    this.backward.stop();
    this.clearConnectTimer();
    if (!this.client.destroyed) this.client.resetAndDestroy();
    if (!this.upstream.destroyed) {
      if (this.upstreamStarted) this.upstream.resetAndDestroy();
      else this.upstream.destroy();
    }
  }

  destroy(): void {
    this.forward.stop();
    this.backward.stop();
    this.clearConnectTimer();
    this.client.destroy();
    this.upstream.destroy();
  }

  private wire(socket: net.Socket, side: 'client' | 'upstream', outgoing: Pump): void {
    socket.on('data', (bytes: Buffer) => outgoing.push(bytes));
    socket.on('end', () => outgoing.endOfSource());
    socket.on('error', (error: NodeJS.ErrnoException) => this.proxy.logConnection(this.id, side, error));
    socket.on('close', () => this.onClose(side));
  }

  /**
   * The dial waits while any direction is silent: through a real partition the handshake itself
   * would not complete, so the target must not see a connection (or refuse one) before then.
   */
  private maybeStartUpstream(): void {
    if (this.upstreamStarted || this.clientClosed) return;
    if (this.context.policy('forward').silence !== 'no' || this.context.policy('backward').silence !== 'no') return;
    this.upstreamStarted = true;
    const { host, port, connectTimeoutMs } = this.proxy.target;
    this.connectTimer = setTimeout(() => this.upstream.destroy(new Error(`connect to ${host}:${port} timed out`)), connectTimeoutMs);
    this.upstream.connect({ host, port }, () => {
      this.clearConnectTimer();
      this.upstream.setNoDelay(true);
      this.forward.attachDestination(this.upstream);
    });
  }

  private onClose(side: 'client' | 'upstream'): void {
    const outgoing = side === 'client' ? this.forward : this.backward;
    const incoming = side === 'client' ? this.backward : this.forward;
    if (side === 'client') this.clientClosed = true;
    else this.upstreamClosed = true;
    // A socket that sent its FIN and received ours closed cleanly; anything else was a reset, a
    // refused dial or an error, and the far side must learn of it as a reset.
    const socket = side === 'client' ? this.client : this.upstream;
    const clean = incoming.deliveredEnd && socket.readableEnded;
    incoming.destinationGone();
    if (!clean) outgoing.abortSource();
    if (side === 'client' && !this.upstreamStarted) {
      // Nothing was dialled yet, so there is no one to tell.
      outgoing.stop();
      this.upstream.destroy();
      this.upstreamClosed = true;
    }
    if (side === 'upstream') this.clearConnectTimer();
    if (this.closed) this.proxy.forget(this);
  }

  private clearConnectTimer(): void {
    if (this.connectTimer === undefined) return;
    clearTimeout(this.connectTimer);
    this.connectTimer = undefined;
  }
}

export class FaultProxy {
  private fault: Fault = { kind: 'none' };
  private readonly connections = new Set<ProxiedConnection>();
  private nextConnectionId = 1;
  private connectionsAccepted = 0;
  private connectionsReset = 0;
  private closing: Promise<void> | undefined;
  private readonly context: PumpContext;

  private constructor(
    private readonly server: net.Server,
    readonly port: number,
    readonly target: { readonly host: string; readonly port: number; readonly connectTimeoutMs: number },
    private readonly logger: ChaosLogger,
    rng: Rng,
    maxQueuedBytes: number,
  ) {
    this.context = {
      maxQueuedBytes,
      policy: (direction) => policyOf(this.fault, direction),
      now: () => performance.now(),
      random: () => rng.float(),
      forwarded: { forward: 0, backward: 0 },
      discarded: { forward: 0, backward: 0 },
      queued: { forward: 0, backward: 0 },
    };
  }

  static async start(options: FaultProxyOptions): Promise<FaultProxy> {
    const listenPort = options.listenPort ?? 0;
    const maxQueuedBytes = options.maxQueuedBytes ?? faultProxyLimits.defaultMaxQueuedBytes;
    const maxConnections = options.maxConnections ?? faultProxyLimits.defaultMaxConnections;
    const connectTimeoutMs = options.connectTimeoutMs ?? faultProxyLimits.defaultConnectTimeoutMs;
    assert.ok(Number.isInteger(listenPort) && listenPort >= 0 && listenPort < 65536, `bad listenPort ${listenPort}`);
    assert.ok(Number.isInteger(options.targetPort) && options.targetPort > 0 && options.targetPort < 65536, `bad targetPort ${options.targetPort}`);
    assert.ok(Number.isInteger(maxQueuedBytes) && maxQueuedBytes >= faultProxyLimits.minMaxQueuedBytes, `maxQueuedBytes below ${faultProxyLimits.minMaxQueuedBytes}`);
    assert.ok(Number.isInteger(maxConnections) && maxConnections > 0, 'maxConnections must be a positive integer');
    assert.ok(Number.isFinite(connectTimeoutMs) && connectTimeoutMs > 0, 'connectTimeoutMs must be positive');

    const server = net.createServer({ allowHalfOpen: true, noDelay: true });
    server.maxConnections = maxConnections;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: options.listenHost, port: listenPort }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address();
    assert.ok(address !== null && typeof address === 'object', 'a TCP server has an address object');
    const proxy = new FaultProxy(
      server,
      address.port,
      { host: options.targetHost, port: options.targetPort, connectTimeoutMs },
      options.logger ?? silentLogger,
      new Rng(options.seed ?? 1),
      maxQueuedBytes,
    );
    server.on('connection', (socket) => proxy.accept(socket));
    server.on('error', (error) => proxy.logger.warn({ err: error.message, port: proxy.port }, 'fault proxy server error'));
    proxy.logger.debug({ port: proxy.port, target: `${options.targetHost}:${options.targetPort}` }, 'fault proxy listening');
    return proxy;
  }

  get currentFault(): Fault {
    return this.fault;
  }

  setFault(fault: Fault): void {
    assertValidFault(fault);
    assert.equal(this.closing, undefined, 'setFault on a closed proxy');
    this.fault = Object.freeze({ ...fault });
    this.logger.info({ port: this.port, target: `${this.target.host}:${this.target.port}`, fault: this.fault }, 'fault proxy fault set');
    if (fault.kind === 'reset') this.connectionsReset += this.connections.size;
    for (const connection of [...this.connections]) connection.faultChanged(this.fault);
  }

  clearFault(): void {
    this.setFault({ kind: 'none' });
  }

  stats(): FaultProxyStats {
    return {
      fault: this.fault,
      connectionsAccepted: this.connectionsAccepted,
      connectionsOpen: this.connections.size,
      connectionsReset: this.connectionsReset,
      bytesForwarded: { ...this.context.forwarded },
      bytesDiscarded: { ...this.context.discarded },
      bytesQueued: { ...this.context.queued },
    };
  }

  /** Stops listening and destroys every connection. Safe to call more than once. */
  close(): Promise<void> {
    this.closing ??= new Promise<void>((resolve) => {
      this.server.close(() => resolve());
      for (const connection of this.connections) connection.destroy();
      this.connections.clear();
    });
    return this.closing;
  }

  /** @internal */
  forget(connection: ProxiedConnection): void {
    this.connections.delete(connection);
  }

  /** @internal */
  logConnection(id: number, side: 'client' | 'upstream', error: NodeJS.ErrnoException): void {
    this.logger.debug({ port: this.port, connection: id, side, code: error.code, err: error.message }, 'fault proxy socket error');
  }

  private accept(socket: net.Socket): void {
    this.connectionsAccepted++;
    if (this.closing !== undefined) {
      socket.destroy();
      return;
    }
    if (this.fault.kind === 'reset') {
      this.connectionsReset++;
      socket.on('error', () => {});
      socket.resetAndDestroy();
      return;
    }
    socket.setNoDelay(true);
    this.connections.add(new ProxiedConnection(this.nextConnectionId++, socket, this, this.context));
  }
}
