/**
 * The admin port's connection slots (admin-server.ts), so that no one who can reach the port can
 * keep the health probes from being answered (issue 33, finding 3: 64 idle connections that sent a
 * partial request header left /livez unanswered for 75 s).
 *
 * - Every connection has a deadline of its own, checked by its own timer (node:http checks its
 *   headersTimeout only every connectionsCheckingInterval, 30 s by default): a complete request
 *   header within `headerTimeoutMs` of connecting, the next one within `keepAliveTimeoutMs` of the
 *   last answer, and each request answered within `requestTimeoutMs`. Past a deadline the socket
 *   is destroyed.
 * - One source address holds at most `perSource` connections. A newcomer past that closes the
 *   oldest of that source's connections that is not in a request (waiting for a header, or idle
 *   between requests); when all of them are in a request, the newcomer is refused.
 * - `maxConnections` general slots, and `probeReserve` more that serve only the probe paths. When
 *   the general slots are full, the oldest connection not in a request is closed to make room;
 *   when every general connection is in a request (each bounded by `requestTimeoutMs`), the
 *   newcomer takes a reserve slot, where only /livez and /readyz are answered. When the reserve is
 *   full too, the newcomer is refused.
 *
 * A refused connection gets a 503 with `atoll-code: ADMIN_PORT_BUSY` and is closed. Refusals and
 * evictions are logged at most once per LOG_INTERVAL_MS, with counts.
 */
import type { Socket } from 'node:net';
import type { Logger } from 'pino';

export interface AdminConnectionLimits {
  /** General slots: any path. */
  readonly maxConnections: number;
  /** Slots beyond maxConnections that serve only the probe paths. */
  readonly probeReserve: number;
  /** Connections one source address may hold (general and reserve together). */
  readonly perSource: number;
  /** From connecting to a complete request header. */
  readonly headerTimeoutMs: number;
  /** From an answer to the next request's complete header. */
  readonly keepAliveTimeoutMs: number;
  /** From a complete request header to its answer written. */
  readonly requestTimeoutMs: number;
}

/** The paths a reserve slot serves. */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/livez', '/readyz']);

/** The stable code of a refusal (the `atoll-code` header and the body's first word). */
export const ADMIN_PORT_BUSY = 'ADMIN_PORT_BUSY';

const LOG_INTERVAL_MS = 10_000;
/** A refused socket that never reads its 503 is destroyed after this long. */
const REFUSAL_LINGER_MS = 1_000;

interface Slot {
  readonly socket: Socket;
  readonly source: string;
  readonly reserve: boolean;
  /** Requests whose header arrived and whose answer is not yet written. */
  inRequest: number;
  /** When the slot last started waiting for a request header (monotonic ms); eviction order. */
  waitingSinceMs: number;
  timer: NodeJS.Timeout | undefined;
}

const busyAnswer = (reason: string): string => {
  const body = `${ADMIN_PORT_BUSY}: ${reason}\n`;
  return `HTTP/1.1 503 Service Unavailable\r\natoll-code: ${ADMIN_PORT_BUSY}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
};

/** The source address of a socket, IPv4-mapped IPv6 addresses as plain IPv4. */
function sourceOf(socket: Socket): string | undefined {
  const address = socket.remoteAddress;
  return address?.startsWith('::ffff:') === true && address.includes('.') ? address.slice(7) : address;
}

export class AdminConnections {
  private readonly slots = new Map<Socket, Slot>();
  private readonly bySource = new Map<string, Set<Slot>>();
  private general = 0;
  private reserved = 0;
  private refused = 0;
  private evicted = 0;
  private lastLogMs = -Infinity;

  constructor(
    private readonly limits: AdminConnectionLimits,
    private readonly logger: Logger,
    private readonly nowMs: () => number = () => performance.now(),
  ) {}

  /** Open connections: general and reserve. */
  get counts(): { general: number; reserve: number } {
    return { general: this.general, reserve: this.reserved };
  }

  /** A new connection (the server's 'connection' event): admitted, or answered 503 and closed. */
  admit(socket: Socket): void {
    const source = sourceOf(socket);
    if (source === undefined) {
      // Already gone.
      socket.destroy();
      return;
    }
    const own = this.bySource.get(source);
    if (own !== undefined && own.size >= this.limits.perSource && !this.evictOldest(own)) {
      this.refuse(socket, source, `${source} holds ${own.size} connections, each in a request`);
      return;
    }
    let reserve = false;
    if (this.general >= this.limits.maxConnections && !this.evictOldest(this.slots.values(), false)) {
      if (this.reserved >= this.limits.probeReserve) {
        this.refuse(socket, source, 'every connection slot is in a request');
        return;
      }
      reserve = true;
    }
    const slot: Slot = { socket, source, reserve, inRequest: 0, waitingSinceMs: this.nowMs(), timer: undefined };
    this.slots.set(socket, slot);
    let sourceSlots = this.bySource.get(source);
    if (sourceSlots === undefined) this.bySource.set(source, (sourceSlots = new Set()));
    sourceSlots.add(slot);
    if (reserve) this.reserved++;
    else this.general++;
    this.arm(slot, this.limits.headerTimeoutMs);
    socket.once('close', () => this.release(slot));
  }

  /** Whether the connection may be answered for `path`: a reserve slot serves only the probes. */
  mayServe(socket: Socket, path: string): boolean {
    const slot = this.slots.get(socket);
    return slot === undefined || !slot.reserve || PROBE_PATHS.has(path);
  }

  /** A request's header arrived on `socket`; `finished` is called once its answer is written or the request is gone. */
  requestStarted(socket: Socket): () => void {
    const slot = this.slots.get(socket);
    if (slot === undefined) return () => undefined;
    slot.inRequest++;
    this.arm(slot, this.limits.requestTimeoutMs);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      slot.inRequest--;
      if (slot.inRequest > 0 || !this.slots.has(socket)) return;
      slot.waitingSinceMs = this.nowMs();
      this.arm(slot, this.limits.keepAliveTimeoutMs);
    };
  }

  /** Closes every connection (the server closes). */
  closeAll(): void {
    for (const slot of [...this.slots.values()]) slot.socket.destroy();
  }

  private arm(slot: Slot, ms: number): void {
    if (slot.timer !== undefined) clearTimeout(slot.timer);
    slot.timer = setTimeout(() => slot.socket.destroy(), ms);
    slot.timer.unref();
  }

  /** Closes the connection not in a request that has waited longest; false when there is none. */
  private evictOldest(candidates: Iterable<Slot>, reserveToo = true): boolean {
    let oldest: Slot | undefined;
    for (const slot of candidates) {
      if (slot.inRequest > 0 || (!reserveToo && slot.reserve)) continue;
      if (oldest === undefined || slot.waitingSinceMs < oldest.waitingSinceMs) oldest = slot;
    }
    if (oldest === undefined) return false;
    // Released now, not at its 'close' event: the newcomer takes the slot at once.
    this.release(oldest);
    oldest.socket.destroy();
    this.evicted++;
    this.maybeLog();
    return true;
  }

  private release(slot: Slot): void {
    if (this.slots.get(slot.socket) !== slot) return;
    this.slots.delete(slot.socket);
    if (slot.timer !== undefined) clearTimeout(slot.timer);
    slot.timer = undefined;
    const sourceSlots = this.bySource.get(slot.source);
    sourceSlots?.delete(slot);
    if (sourceSlots?.size === 0) this.bySource.delete(slot.source);
    if (slot.reserve) this.reserved--;
    else this.general--;
  }

  private refuse(socket: Socket, source: string, reason: string): void {
    this.refused++;
    this.maybeLog(source, reason);
    socket.on('error', () => undefined);
    socket.end(busyAnswer(reason));
    setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS).unref();
  }

  private maybeLog(source?: string, reason?: string): void {
    const now = this.nowMs();
    if (now - this.lastLogMs < LOG_INTERVAL_MS) return;
    this.lastLogMs = now;
    this.logger.warn(
      { code: ADMIN_PORT_BUSY, refused: this.refused, evicted: this.evicted, general: this.general, reserve: this.reserved, ...(source !== undefined && { source, reason }) },
      'admin port: connections refused or closed to keep slots free (counts since start)',
    );
  }
}
