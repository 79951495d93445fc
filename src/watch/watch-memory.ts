/**
 * The bytes a node holds for its watch clients (issue 33), counted per HTTP/2 stream, per
 * connection, per tenant and per node, each level with a bound (limits.watch*Bytes).
 *
 * What is counted: everything a watcher holds for a client until the transport has written it:
 * - a read of retained history: before it reads, a watcher reserves what the read may return
 *   (watchReadBytes plus watchChangeOverheadBytes per change it may hold), and trims the
 *   reservation to the batch it got (watchChangeBytes of each change);
 * - every message handed to the transport (watchMessageBytes): from a batch it moves out of the
 *   batch's reservation, from the ring it is taken anew; it stays counted until the transport's
 *   write callback says it was written (for gRPC: HTTP/2 took it from the stream's queue), or the
 *   stream closed (every byte queued on it is gone then).
 * Sizes are estimates: key and value bytes plus a fixed overhead per change and per message
 * (objects, revision strings, protobuf framing), never below the serialized size.
 *
 * Invariants:
 * - Every level's `held` is the sum of the `held` of the charges under it (a charge is one watch;
 *   it counts at its stream, its connection, its tenant and the node), and held <= bound at every
 *   level after every take, except that a stream holding nothing takes any one item (a revision
 *   larger than the stream bound would otherwise never go out); the wider levels are never passed.
 * - A watch is admitted only while none of its existing levels is full (else RESOURCE_EXHAUSTED
 *   with reason watch-memory); a level is full when it holds its bound or a watcher waits there for
 *   room. Watches admitted together may still find no room for their first read: the watcher then
 *   refuses itself the same way (refusal()). A later take that does not fit waits for room at the
 *   level that refused it (room()), woken by every release there.
 * - A stream with bytes queued that gets none of them written for stallMs is cut off: its transport
 *   is told to close it at once (RST_STREAM, then the connection if the stream does not close),
 *   and when the transport reports it closed, every charge on it is closed and its bytes leave
 *   every level. Nothing is released before the transport has let go of the bytes.
 * - A closed charge holds nothing and takes nothing; the caller frees the watch's slot only after
 *   its charge is settled (held 0) or closed, so a slot comes back only with the memory.
 */
import { AtollError } from '../errors.js';
import { watchChangeOverheadBytes } from '../limits.js';
import type { CallSignal } from '../api/call-signal.js';

/** Per event, of watchChangeOverheadBytes: the rest is the message's share. */
const eventOverheadBytes = 128;
const messageOverheadBytes = watchChangeOverheadBytes - eventOverheadBytes;

export interface WatchMemoryBounds {
  readonly streamBytes: number;
  readonly connectionBytes: number;
  readonly tenantBytes: number;
  readonly nodeBytes: number;
}

/** The transport one or more watches write to (one HTTP/2 stream), as the accounting sees it. */
export interface WatchTransport {
  /** The connection the stream belongs to (an HTTP/2 session, or a peer address). */
  readonly connection: unknown;
  /** Closes the stream at once, dropping what is queued on it; onClosed listeners follow. */
  cutOff(): void;
  /** Calls `listener` once when the stream has closed (at once if it has); returns its removal. */
  onClosed(listener: () => void): () => void;
}

/** What a watcher takes and gives back (src/watch/watcher.ts); a WatchCharge. */
export interface WatchBudget {
  /** Takes `bytes` when every level has room; false (and blockedAt says where) when one has not. */
  tryTake(bytes: number): boolean;
  /** Resolves true when the level that refused the last take released bytes; false after `ms`, on abort or close. */
  room(ms: number, signal: CallSignal): Promise<boolean>;
  /** Gives back taken bytes that were never handed to the transport (a trimmed reservation). */
  release(bytes: number): void;
  /** Marks taken bytes as handed to the transport; the returned callback (once) says they were written. */
  sent(bytes: number): () => void;
  /** The level that refused the last take. */
  readonly blockedAt: WatchScope | undefined;
  /** The error that refuses the watch because the level that refused the last take is full (RESOURCE_EXHAUSTED, reason watch-memory). */
  refusal(): AtollError;
}

export type WatchScope = 'stream' | 'connection' | 'tenant' | 'node';

/** One change of a history read, as a watcher holds it (internal key, value, its message share). */
export function watchChangeBytes(keyBytes: number, valueBytes: number): number {
  return keyBytes + valueBytes + watchChangeOverheadBytes;
}

/** One message as it waits for the transport. At most the watchChangeBytes of the changes it carries. */
export function watchMessageBytes(message: { readonly events: ReadonlyArray<{ readonly key: string; readonly value: Uint8Array }> }): number {
  let bytes = messageOverheadBytes;
  for (const event of message.events) bytes += eventOverheadBytes + Buffer.byteLength(event.key) + event.value.length;
  return bytes;
}

/** What a read of history may hold: its byte bound, and the overhead of as many changes as it may return. */
export function watchReadReserveBytes(bounds: { readonly maxChanges: number; readonly maxBytes: number }): number {
  return bounds.maxBytes + bounds.maxChanges * watchChangeOverheadBytes;
}

class Level {
  held = 0;
  /** Charges counted here; the level is forgotten when the last one closes. */
  users = 0;
  readonly waiters = new Set<() => void>();

  constructor(
    readonly scope: WatchScope,
    readonly bound: number,
  ) {}

  remove(bytes: number): void {
    this.held -= bytes;
    if (bytes > 0) for (const wake of [...this.waiters]) wake();
  }
}

class StreamLevel extends Level {
  /** Bytes handed to the transport and not yet written (a part of held). */
  queued = 0;
  /** When a queued byte was last written, or the queue last became non-empty. */
  progressMs = 0;
  watchdog: { cancel(): void } | undefined;
  cutting = false;
  closed = false;
  readonly charges = new Set<WatchCharge>();
  stopListening: (() => void) | undefined;

  constructor(
    bound: number,
    readonly transport: WatchTransport | undefined,
  ) {
    super('stream', bound);
  }
}

export interface WatchMemoryOptions {
  readonly bounds: WatchMemoryBounds;
  /** A stream with queued bytes and no write for this long is cut off. */
  readonly stallMs: number;
  readonly monotonicMs: () => number;
  readonly after: (ms: number, run: () => void) => { cancel(): void };
}

export class WatchMemory {
  private readonly node: Level;
  private readonly tenants = new Map<string, Level>();
  private readonly connections = new Map<unknown, Level>();
  private readonly streams = new Map<object, StreamLevel>();
  private cutOffCount = 0;
  private refusalCount = 0;

  constructor(private readonly options: WatchMemoryOptions) {
    const { streamBytes, connectionBytes, tenantBytes, nodeBytes } = options.bounds;
    for (const value of [streamBytes, connectionBytes, tenantBytes, nodeBytes, options.stallMs]) {
      if (!Number.isSafeInteger(value) || value <= 0) throw new RangeError('watch memory bounds and stallMs must be positive integers');
    }
    this.node = new Level('node', nodeBytes);
  }

  /** Bytes held for watch clients on this node. */
  get heldBytes(): number {
    return this.node.held;
  }

  get limitBytes(): number {
    return this.node.bound;
  }

  /** Streams with at least one watch counted. */
  get openStreams(): number {
    return this.streams.size;
  }

  /** Streams cut off because they did not drain, since start. */
  get cutOffs(): number {
    return this.cutOffCount;
  }

  /** Watches refused because a level was full, since start. */
  get refusals(): number {
    return this.refusalCount;
  }

  /** Bytes one tenant holds (tests). */
  heldByTenant(tenant: string): number {
    return this.tenants.get(tenant)?.held ?? 0;
  }

  /**
   * Counts a new watch on `stream` (the transport object, shared by the watches of one KV.Stream;
   * an in-process sink passes itself and no transport). Throws RESOURCE_EXHAUSTED (reason
   * watch-memory) when one of its levels is full.
   */
  open(tenant: string, stream: object, transport: WatchTransport | undefined): WatchCharge {
    const { bounds } = this.options;
    const existing: Array<Level | undefined> = [
      this.streams.get(stream),
      transport === undefined ? undefined : this.connections.get(transport.connection),
      this.tenants.get(tenant),
      this.node,
    ];
    for (const level of existing) {
      if (level !== undefined && (level.held >= level.bound || level.waiters.size > 0)) throw this.refusal(level);
    }
    let streamLevel = this.streams.get(stream);
    if (streamLevel === undefined) {
      const created = new StreamLevel(bounds.streamBytes, transport);
      streamLevel = created;
      this.streams.set(stream, created);
      created.stopListening = transport?.onClosed(() => this.closeStream(stream, created));
    }
    const levels: Level[] = [streamLevel];
    if (transport !== undefined) levels.push(this.levelOf(this.connections, transport.connection, 'connection', bounds.connectionBytes));
    levels.push(this.levelOf(this.tenants, tenant, 'tenant', bounds.tenantBytes), this.node);
    for (const level of levels) level.users++;
    const charge = new WatchCharge(this, streamLevel, levels, () => this.forget(stream, tenant, transport, streamLevel, levels));
    streamLevel.charges.add(charge);
    // A stream the transport closed while the watch was admitted: the charge is closed at once.
    if (streamLevel.closed) charge.close();
    return charge;
  }

  /** A watch refused because `level` is full: counted, and said with the level's figures. */
  refusal(level: Level): AtollError {
    this.refusalCount++;
    const whose = level.scope === 'node' ? 'this node holds' : `the ${level.scope} holds`;
    return new AtollError('RESOURCE_EXHAUSTED', `${whose} ${level.held} bytes for watch clients and has no room for another watch (bound ${level.bound}): retry once its watchers have read what is queued for them`, {
      reason: 'watch-memory',
      scope: level.scope,
      heldBytes: level.held,
      limitBytes: level.bound,
    });
  }

  private levelOf<K>(map: Map<K, Level>, key: K, scope: WatchScope, bound: number): Level {
    let level = map.get(key);
    if (level === undefined) map.set(key, (level = new Level(scope, bound)));
    return level;
  }

  /** A charge closed: its levels lose a user, and a level nobody uses is forgotten. */
  private forget(stream: object, tenant: string, transport: WatchTransport | undefined, streamLevel: StreamLevel, levels: readonly Level[]): void {
    for (const level of levels) level.users--;
    if (streamLevel.users === 0 && this.streams.get(stream) === streamLevel) {
      streamLevel.watchdog?.cancel();
      streamLevel.watchdog = undefined;
      streamLevel.stopListening?.();
      this.streams.delete(stream);
    }
    if (transport !== undefined && this.connections.get(transport.connection)?.users === 0) this.connections.delete(transport.connection);
    if (this.tenants.get(tenant)?.users === 0) this.tenants.delete(tenant);
  }

  /** The transport closed the stream: every byte queued on it is gone. */
  private closeStream(stream: object, level: StreamLevel): void {
    level.closed = true;
    level.watchdog?.cancel();
    level.watchdog = undefined;
    for (const charge of [...level.charges]) charge.close();
    if (this.streams.get(stream) === level) this.streams.delete(stream);
  }

  after(ms: number, run: () => void): { cancel(): void } {
    return this.options.after(ms, run);
  }

  /** The stream's queue went from empty to not: its watchdog starts. */
  queueStarted(level: StreamLevel): void {
    level.progressMs = this.options.monotonicMs();
    if (level.transport !== undefined && level.watchdog === undefined) this.armWatchdog(level, this.options.stallMs);
  }

  written(level: StreamLevel): void {
    level.progressMs = this.options.monotonicMs();
  }

  private armWatchdog(level: StreamLevel, ms: number): void {
    level.watchdog = this.options.after(ms, () => {
      level.watchdog = undefined;
      if (level.closed || level.queued === 0) return;
      const idleMs = this.options.monotonicMs() - level.progressMs;
      if (idleMs >= this.options.stallMs) this.cutOff(level);
      else this.armWatchdog(level, this.options.stallMs - idleMs);
    });
  }

  /** Closes the stream's transport at once; its bytes leave the levels when the transport reports it closed. */
  cutOff(level: StreamLevel): void {
    if (level.closed || level.cutting || level.transport === undefined) return;
    level.cutting = true;
    this.cutOffCount++;
    level.transport.cutOff();
  }
}

/** One watch's bytes, counted at its stream, connection, tenant and node (see the file comment). */
export class WatchCharge implements WatchBudget {
  private heldBytes = 0;
  private queuedBytes = 0;
  private closedFlag = false;
  private blocked: Level | undefined;
  /** Called when held reaches 0 or the charge closes. */
  private readonly settleWaiters = new Set<() => void>();

  constructor(
    private readonly memory: WatchMemory,
    private readonly stream: StreamLevel,
    private readonly levels: readonly Level[],
    private readonly onClose: () => void,
  ) {}

  get held(): number {
    return this.heldBytes;
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  get blockedAt(): WatchScope | undefined {
    return this.blocked?.scope;
  }

  refusal(): AtollError {
    return this.memory.refusal(this.blocked ?? this.stream);
  }

  tryTake(bytes: number): boolean {
    if (this.closedFlag) return false;
    for (const level of this.levels) {
      if (level === this.stream && level.held === 0) continue;
      if (level.held + bytes > level.bound) {
        this.blocked = level;
        return false;
      }
    }
    for (const level of this.levels) level.held += bytes;
    this.heldBytes += bytes;
    return true;
  }

  room(ms: number, signal: CallSignal): Promise<boolean> {
    const level = this.blocked ?? this.stream;
    return new Promise<boolean>((resolve) => {
      if (this.closedFlag || signal.aborted) return resolve(false);
      const finish = (value: boolean): void => {
        level.waiters.delete(onRoom);
        this.settleWaiters.delete(onClosed);
        timer.cancel();
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      };
      const onRoom = (): void => finish(true);
      const onAbort = (): void => finish(false);
      const onClosed = (): void => {
        if (this.closedFlag) finish(false);
      };
      level.waiters.add(onRoom);
      this.settleWaiters.add(onClosed);
      signal.addEventListener('abort', onAbort, { once: true });
      const timer = this.memory.after(ms, () => finish(false));
    });
  }

  release(bytes: number): void {
    if (this.closedFlag) return;
    this.drop(Math.min(bytes, this.heldBytes - this.queuedBytes));
  }

  sent(bytes: number): () => void {
    if (this.closedFlag) return () => undefined;
    const moved = Math.min(bytes, this.heldBytes - this.queuedBytes);
    this.queuedBytes += moved;
    const wasEmpty = this.stream.queued === 0;
    this.stream.queued += moved;
    if (wasEmpty && moved > 0) this.memory.queueStarted(this.stream);
    let done = false;
    return () => {
      if (done || this.closedFlag) return;
      done = true;
      this.queuedBytes -= moved;
      this.stream.queued -= moved;
      this.memory.written(this.stream);
      this.drop(moved);
    };
  }

  private drop(bytes: number): void {
    if (bytes <= 0) return;
    this.heldBytes -= bytes;
    for (const level of this.levels) level.remove(bytes);
    if (this.heldBytes === 0) for (const wake of [...this.settleWaiters]) wake();
  }

  /** Resolves once the charge holds nothing (everything written) or is closed. */
  settled(): Promise<void> {
    if (this.heldBytes === 0 || this.closedFlag) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const wake = (): void => {
        if (this.heldBytes !== 0 && !this.closedFlag) return;
        this.settleWaiters.delete(wake);
        resolve();
      };
      this.settleWaiters.add(wake);
    });
  }

  /** The consumer does not keep up: close its stream now (see WatchMemory.cutOff). */
  cutOff(): void {
    this.memory.cutOff(this.stream);
  }

  /** Gives back everything the charge holds and stops counting it (idempotent). */
  close(): void {
    if (this.closedFlag) return;
    const held = this.heldBytes;
    this.stream.queued -= this.queuedBytes;
    this.queuedBytes = 0;
    this.heldBytes = 0;
    this.closedFlag = true;
    for (const level of this.levels) level.remove(held);
    this.stream.charges.delete(this);
    this.onClose();
    for (const wake of [...this.settleWaiters]) wake();
  }
}
