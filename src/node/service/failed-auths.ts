/**
 * Failed authentications at a node, by connection and by source address (issue 33: a flood of
 * random tokens). A call whose token fails costs a token lookup (a read of the system partition)
 * and grpc-js's whole call machinery; a flood of them took 10-13 % of a core at each node of the
 * hostile load run even when every call was refused without a lookup. So a flood is cut off where
 * it is cheapest: at the connection, and then at accept.
 *
 * Invariants (limits.ts names the numbers):
 * - A connection (remote address:port, as grpc-js getPeer() spells it) whose calls failed
 *   maxFailedAuthsPerConnection times within failedAuthWindowMs is blocked until that window ends:
 *   its calls are refused at once, without a lookup. When the node holds its socket (attach(), the
 *   client port's listener, src/server/client-listener.ts), it is closed as it reaches the limit,
 *   so a caller that wants more guesses must connect again.
 * - A source address whose connections failed maxFailedAuthsPerSource times within
 *   failedAuthSourceWindowMs is blocked until that window ends: admits() refuses its new
 *   connections (the listener closes them at accept, before TLS, HTTP/2 or gRPC cost anything),
 *   and any of its connections that fails again is blocked and closed. Its connections that never
 *   failed are left alone: clients that share an address (NAT, one host's services) and hold
 *   valid tokens keep their connections; only their new connections wait for the window.
 * - Only a well-formed token that did not authenticate counts (the caller's business, in auth.ts);
 *   a refusal of a blocked connection does not count again.
 * - Each map holds at most maxTrackedConnections entries, the oldest dropped first, so a flood from
 *   new ports or addresses cannot grow them; attached sockets are the listener's open connections.
 */
import type { Limits } from '../../limits.js';
import type { FailedAuthGate } from '../ports.js';

export type FailedAuthLimits = Pick<
  Limits,
  'maxFailedAuthsPerConnection' | 'failedAuthWindowMs' | 'maxFailedAuthsPerSource' | 'failedAuthSourceWindowMs' | 'maxTrackedConnections'
>;

interface Window {
  startedAtMs: number;
  failures: number;
}

/** Fixed windows of failures by key, at most `capacity` keys (the oldest dropped first). */
class FailureWindows {
  private readonly windows = new Map<string, Window>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly capacity: number,
  ) {}

  /** The window of `key` at `nowMs`, or undefined when it has none (or it ended). */
  current(key: string, nowMs: number): Window | undefined {
    const window = this.windows.get(key);
    if (window === undefined) return undefined;
    if (nowMs - window.startedAtMs < this.windowMs) return window;
    this.windows.delete(key);
    return undefined;
  }

  /** Milliseconds until `key` is no longer blocked, or 0. */
  blockedForMs(key: string, nowMs: number): number {
    const window = this.current(key, nowMs);
    return window !== undefined && window.failures >= this.limit ? window.startedAtMs + this.windowMs - nowMs : 0;
  }

  /** Counts a failure; true when it brought `key` to its limit. */
  record(key: string, nowMs: number): boolean {
    let window = this.current(key, nowMs);
    if (window === undefined) {
      if (this.windows.size >= this.capacity) this.windows.delete(this.windows.keys().next().value!);
      window = { startedAtMs: nowMs, failures: 0 };
      this.windows.set(key, window);
    }
    window.failures++;
    return window.failures === this.limit;
  }

  get size(): number {
    return this.windows.size;
  }
}

/** The source address of a connection key (`address:port`; IPv6 addresses keep their colons). */
export function sourceOf(connection: string): string {
  const colon = connection.lastIndexOf(':');
  return colon <= 0 ? connection : connection.slice(0, colon);
}

export interface FailedAuthRefusal {
  readonly retryAfterMs: number;
  readonly by: 'connection' | 'source';
}

export class FailedAuths implements FailedAuthGate {
  private readonly connections: FailureWindows;
  private readonly sources: FailureWindows;
  /** Open connections the node can close, by connection key. */
  private readonly closers = new Map<string, () => void>();
  /** Connections closed for failed authentications, and new connections refused at accept (metrics, tests). */
  closed = 0;
  refusedAtAccept = 0;

  constructor(limits: FailedAuthLimits) {
    this.connections = new FailureWindows(limits.maxFailedAuthsPerConnection, limits.failedAuthWindowMs, limits.maxTrackedConnections);
    this.sources = new FailureWindows(limits.maxFailedAuthsPerSource, limits.failedAuthSourceWindowMs, limits.maxTrackedConnections);
  }

  /** Why a call on `connection` is refused without looking at its token, or undefined. */
  refusal(connection: string, nowMs: number): FailedAuthRefusal | undefined {
    const own = this.connections.blockedForMs(connection, nowMs);
    if (own > 0) return { retryAfterMs: own, by: 'connection' };
    // A blocked source's connections that failed in their window are refused too; the rest serve.
    if (this.connections.current(connection, nowMs) === undefined) return undefined;
    const source = this.sources.blockedForMs(sourceOf(connection), nowMs);
    return source > 0 ? { retryAfterMs: source, by: 'source' } : undefined;
  }

  /** Counts a failed authentication on `connection`, closing it when it (or its source) is past the limit. */
  record(connection: string, nowMs: number): void {
    const source = sourceOf(connection);
    const connectionAtLimit = this.connections.record(connection, nowMs);
    this.sources.record(source, nowMs);
    if (connectionAtLimit || this.sources.blockedForMs(source, nowMs) > 0) this.close(connection);
  }

  /** Whether a new connection from `source` (a remote address) may be served. */
  admits(source: string, nowMs: number): boolean {
    if (this.sources.blockedForMs(source, nowMs) === 0) return true;
    this.refusedAtAccept++;
    return false;
  }

  /** The listener's socket of `connection`: closed by close(); detach() when it closes. */
  attach(connection: string, close: () => void): void {
    this.closers.set(connection, close);
  }

  detach(connection: string): void {
    this.closers.delete(connection);
  }

  private close(connection: string): void {
    const close = this.closers.get(connection);
    if (close === undefined) return;
    this.closers.delete(connection);
    this.closed++;
    close();
  }

  get size(): { connections: number; sources: number; attached: number } {
    return { connections: this.connections.size, sources: this.sources.size, attached: this.closers.size };
  }
}
