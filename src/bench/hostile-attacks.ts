/**
 * The hostile patterns of issue 33, run all at once by the hostile load run (hostile-load.ts) in a
 * worker thread of its own, so that the attackers' work never delays the measuring thread:
 *
 * - watches: KV.Watch from revision 0 on a prefix with megabytes of history, over HTTP/2
 *   connections whose receive window is 0, never read (finding 1);
 * - scripts: a script that builds a 1 MiB string and lowercases it in a loop until its time
 *   limit, several at once (finding 2);
 * - admin: connections to every node's admin port that send a partial request header and never
 *   finish it, from several loopback source addresses (finding 3);
 * - leases: a flood of lease grants into one bucket (finding 4);
 * - token guesses: calls with random tokens, on connections renewed now and then so that each new
 *   connection gets its own allowance of token lookups;
 * - stream: a KV.Stream that sends many requests in one write and never reads the answers.
 *
 * Every loop is bounded in count and in time: it stops at the plan's deadline, when told to stop,
 * or at its own count bound, whichever comes first. Each pattern counts what it did and how the
 * nodes answered (`AttackStats`), which the worker posts to the measuring thread every second.
 */
import http2 from 'node:http2';
import { connect, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { AtollClient } from '../client/index.js';
import { AtollError } from '../errors.js';
import { newToken } from '../tenancy/token.js';
import { encodeWatchRequest } from '../wire/watch-codec.js';
import { kvServiceDefinition } from '../wire/protos.js';
import { encodeStreamRequest } from '../wire/stream-codec.js';

/** How much of each pattern runs (the plan's scale; hostile-load.ts has the defaults). */
export interface AttackScale {
  /** Zero-window connections for watches, spread over the nodes, and watches kept open on each. */
  readonly watchConnections: number;
  readonly watchesPerConnection: number;
  /** Bound on watches opened (refused ones included) and on connections opened, over the run. */
  readonly maxWatchesOpened: number;
  readonly maxWatchConnectionsOpened: number;
  /** Hostile scripts running at once, and the bound on scripts started over the run. */
  readonly scripts: number;
  readonly maxScripts: number;
  /** Partial-header connections kept open to each node's admin port, from this many source addresses (127.0.0.10 and up; 0: the default source). */
  readonly adminConnectionsPerNode: number;
  readonly adminSourceAddresses: number;
  readonly maxAdminConnectionsOpened: number;
  /** Lease grants: requests at once, at most this many a second, at most this many over the run. */
  readonly leaseConcurrency: number;
  readonly leaseRate: number;
  readonly maxLeaseGrants: number;
  readonly leaseTtlMs: number;
  /** Random-token calls: requests at once per node, at most this many a second in all, at most this many over the run; a new connection this often. */
  readonly guessConcurrencyPerNode: number;
  readonly guessRate: number;
  readonly maxGuesses: number;
  readonly guessConnectionEveryMs: number;
  /** Source addresses the guesses come from (127.0.0.30 and up; 0: the default source, the ordinary tenant's). */
  readonly guessSourceAddresses: number;
  /** KV.Stream requests written in one go on each never-read stream (one per node), and the bound on streams opened per node. */
  readonly streamFrames: number;
  readonly maxStreamsPerNode: number;
}

/** The hostile patterns, by the name the report and `--patterns` use. */
export const patternNames = ['watches', 'scripts', 'admin', 'leases', 'tokenGuesses', 'stream'] as const;
export type PatternName = (typeof patternNames)[number];

/** What the attacker needs to know of the cluster and the tenants. */
export interface AttackPlan {
  /** The patterns to run (all of them in a full run; fewer to find which one hurts). */
  readonly patterns: readonly PatternName[];
  /** Client addresses, node by node. */
  readonly endpoints: readonly string[];
  /** Admin HTTP addresses (host:port), node by node. */
  readonly adminAddresses: readonly string[];
  /** The read-only token of the watching tenant. */
  readonly watchToken: string;
  /**
   * Where its watches go: prefixes holding its history, each with the client address of its
   * partition's leader (one a node, so every node serves hostile watches). Connection i watches
   * target i modulo their count, and follows the node's leader hint when leadership moves.
   */
  readonly watchTargets: ReadonlyArray<{ readonly prefix: string; readonly address: string }>;
  /** The scripting tenant's token (scripts and the never-read stream). */
  readonly scriptToken: string;
  /** The leasing tenant's token, and the one bucket its grants name. */
  readonly leaseToken: string;
  readonly leaseBucket: string;
  /** Every loop stops at this moment (Date.now() milliseconds) at the latest. */
  readonly untilEpochMs: number;
  readonly scale: AttackScale;
}

/** Counts of outcomes by name (a code, or what happened to a connection). */
export type Outcomes = Record<string, number>;

export interface AttackStats {
  readonly watches: { connectionsOpened: number; opened: number; open: number; outcomes: Outcomes };
  readonly scripts: { started: number; running: number; outcomes: Outcomes };
  readonly admin: { opened: number; open: number; outcomes: Outcomes };
  readonly leases: { attempted: number; outcomes: Outcomes };
  readonly tokenGuesses: { sent: number; connections: number; outcomes: Outcomes };
  readonly stream: { streamsOpened: number; framesWritten: number; open: number; outcomes: Outcomes };
}

export function emptyAttackStats(): AttackStats {
  return {
    watches: { connectionsOpened: 0, opened: 0, open: 0, outcomes: {} },
    scripts: { started: 0, running: 0, outcomes: {} },
    admin: { opened: 0, open: 0, outcomes: {} },
    leases: { attempted: 0, outcomes: {} },
    tokenGuesses: { sent: 0, connections: 0, outcomes: {} },
    stream: { streamsOpened: 0, framesWritten: 0, open: 0, outcomes: {} },
  };
}

/** The patterns of `planned` that made no attempt at all (a run where one of them did not run proves nothing). */
export function idlePatterns(stats: AttackStats, planned: readonly PatternName[]): string[] {
  const attempts: Record<PatternName, number> = {
    watches: stats.watches.opened,
    scripts: stats.scripts.started,
    admin: stats.admin.opened,
    leases: stats.leases.attempted,
    tokenGuesses: stats.tokenGuesses.sent,
    stream: stats.stream.framesWritten,
  };
  return planned.filter((name) => attempts[name] === 0);
}

/**
 * The hostile script of finding 2: sixteen characters doubled sixteen times (1 MiB, the longest
 * string a script may build), then `lower` of it a million times: far past the 2 s time limit.
 */
export const hostileScript = [
  'let s = "0123456789abcdef"',
  'for i in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16] do',
  '  let s = s + s',
  'end',
  'let ten = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]',
  'let n = 0',
  'for a in ten do for b in ten do for c in ten do for d in ten do for e in ten do for f in ten do',
  '  let n = n + len(lower(s))',
  'end end end end end end',
  'return n',
].join('\n');

/** The code of a failed call: an Atoll error's code, a gRPC status name, or the error's name. */
export function outcomeOf(error: unknown): string {
  if (error instanceof AtollError) return error.code;
  const code = (error as { code?: unknown } | undefined)?.code;
  if (typeof code === 'number' && grpc.status[code] !== undefined) return String(grpc.status[code]);
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.name : 'UNKNOWN';
}

export function countOutcome(outcomes: Outcomes, outcome: string, by = 1): void {
  outcomes[outcome] = (outcomes[outcome] ?? 0) + by;
}

/** Whether the patterns may go on, sleeping that ends early on stop, and what to close at the end. */
class AttackControl {
  private stopped = false;
  private readonly wakers = new Set<() => void>();
  private readonly closers: Array<() => void> = [];

  constructor(private readonly untilEpochMs: number) {}

  running(): boolean {
    return !this.stopped && Date.now() < this.untilEpochMs;
  }

  /** Resolves after `ms`, at the deadline, or on stop, whichever comes first. */
  sleep(ms: number): Promise<void> {
    const waitMs = Math.max(0, Math.min(ms, this.untilEpochMs - Date.now()));
    return new Promise((resolveSleep) => {
      const done = (): void => {
        clearTimeout(timer);
        this.wakers.delete(done);
        resolveSleep();
      };
      const timer = setTimeout(done, waitMs);
      this.wakers.add(done);
    });
  }

  onStop(close: () => void): void {
    this.closers.push(close);
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const wake of [...this.wakers]) wake();
    for (const close of this.closers.splice(0)) {
      try {
        close();
      } catch {
        // Closing what may already be closed.
      }
    }
  }
}

/** Spaces operations evenly at `perSecond` across every caller of `next()`. */
class Pacer {
  private nextAtMs = Date.now();

  constructor(
    private readonly perSecond: number,
    private readonly control: AttackControl,
  ) {}

  async next(): Promise<void> {
    const atMs = Math.max(this.nextAtMs, Date.now());
    this.nextAtMs = atMs + 1000 / this.perSecond;
    if (atMs > Date.now()) await this.control.sleep(atMs - Date.now());
  }
}

/** One gRPC message with its 5-byte length prefix (uncompressed). */
function grpcFrame(message: Buffer): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}

function grpcRequestHeaders(path: string, token: string): http2.OutgoingHttpHeaders {
  return { ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', authorization: `Bearer ${token}` };
}

/** An HTTP/2 connection whose receive window is 0: the node can send it headers, never data. */
function zeroWindowSession(address: string, control: AttackControl): http2.ClientHttp2Session {
  const session = http2.connect(`http://${address}`, { settings: { initialWindowSize: 0 } });
  session.on('error', () => undefined);
  control.onStop(() => session.destroy());
  return session;
}

interface WatchConnection {
  readonly session: http2.ClientHttp2Session;
  readonly body: Buffer;
  open: number;
}

async function zeroWindowWatches(plan: AttackPlan, control: AttackControl, stats: AttackStats['watches']): Promise<void> {
  const { scale } = plan;
  const bodyOf = (prefix: string): Buffer => grpcFrame(kvServiceDefinition['Watch']!.requestSerialize(encodeWatchRequest({ prefix, startRevision: 0 }) as never) as Buffer);
  // Connection i's address: its target's leader at first, then wherever the node's hint said.
  const addresses = Array.from({ length: scale.watchConnections }, (_, index) => plan.watchTargets[index % plan.watchTargets.length]!.address);
  const connections: Array<WatchConnection | undefined> = [];
  const openWatch = (index: number, connection: WatchConnection): void => {
    const request = connection.session.request(grpcRequestHeaders('/atoll.v1.KV/Watch', plan.watchToken));
    stats.opened++;
    stats.open++;
    connection.open++;
    let metadata: http2.IncomingHttpHeaders = {};
    request.on('error', () => undefined);
    request.on('response', (headers) => (metadata = { ...metadata, ...headers }));
    request.on('trailers', (trailers) => (metadata = { ...metadata, ...trailers }));
    request.on('close', () => {
      stats.open--;
      connection.open--;
      if (!control.running()) return;
      const status = metadata['grpc-status'];
      const code = metadata['atoll-code'];
      if (request.rstCode === http2.constants.NGHTTP2_CANCEL) countOutcome(stats.outcomes, 'reset by the node');
      else if (status !== undefined) countOutcome(stats.outcomes, `ended ${String(code ?? `grpc-status ${String(status)}`)}${metadata['atoll-reason'] !== undefined ? ` (${String(metadata['atoll-reason'])})` : ''}`);
      else countOutcome(stats.outcomes, connection.session.destroyed ? 'connection closed' : `closed (rst ${request.rstCode})`);
      // The leader moved: go where the node says it is now (one of the cluster's own addresses).
      const hint = metadata['atoll-leader-hint'];
      if (code === 'NOT_LEADER' && typeof hint === 'string' && plan.endpoints.includes(hint) && addresses[index] !== hint) {
        addresses[index] = hint;
        connection.session.destroy();
      }
    });
    request.pause();
    request.end(connection.body);
  };
  while (control.running() && stats.opened < scale.maxWatchesOpened) {
    for (let index = 0; index < scale.watchConnections && control.running(); index++) {
      let connection = connections[index];
      if (connection === undefined || connection.session.destroyed || connection.session.closed) {
        if (stats.connectionsOpened >= scale.maxWatchConnectionsOpened) continue;
        connection = { session: zeroWindowSession(addresses[index]!, control), body: bodyOf(plan.watchTargets[index % plan.watchTargets.length]!.prefix), open: 0 };
        connections[index] = connection;
        stats.connectionsOpened++;
      }
      while (connection.open < scale.watchesPerConnection && stats.opened < scale.maxWatchesOpened && !connection.session.destroyed) openWatch(index, connection);
    }
    await control.sleep(500);
  }
}

async function hostileScripts(plan: AttackPlan, control: AttackControl, stats: AttackStats['scripts']): Promise<void> {
  const client = new AtollClient({ endpoints: [...plan.endpoints], token: plan.scriptToken, defaultTimeoutMs: 10_000, maxAttempts: 1 });
  control.onStop(() => client.close());
  const runner = async (index: number): Promise<void> => {
    while (control.running() && stats.started < plan.scale.maxScripts) {
      stats.started++;
      stats.running++;
      const startedMs = Date.now();
      try {
        await client.executeScript(hostileScript, { bucket: `h${index}` });
        countOutcome(stats.outcomes, 'OK');
      } catch (error) {
        if (control.running()) countOutcome(stats.outcomes, outcomeOf(error));
      } finally {
        stats.running--;
      }
      // Refused at once (a bound on running scripts): try again soon, not in a hot loop.
      if (Date.now() - startedMs < 100) await control.sleep(100);
    }
  };
  await Promise.all(Array.from({ length: plan.scale.scripts }, (_, index) => runner(index)));
}

/** A connection that sends the start of a request header and never ends it. */
function partialHeader(host: string, port: number, localAddress: string | undefined, stats: AttackStats['admin'], control: AttackControl): Promise<void> {
  return new Promise((resolveClosed) => {
    const socket: Socket = connect({ host, port, ...(localAddress !== undefined && { localAddress }) });
    stats.opened++;
    stats.open++;
    let connected = false;
    control.onStop(() => socket.destroy());
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      connected = true;
      socket.write('GET /livez HTTP/1.1\r\nHost: atoll\r\nX-Slow: ');
    });
    socket.once('close', () => {
      stats.open--;
      if (control.running()) countOutcome(stats.outcomes, connected ? 'closed by the node' : 'refused');
      resolveClosed();
    });
  });
}

async function partialHeaderConnections(plan: AttackPlan, control: AttackControl, stats: AttackStats['admin']): Promise<void> {
  const { scale } = plan;
  const slots = async (address: string): Promise<void> => {
    const colon = address.lastIndexOf(':');
    const [host, port] = [address.slice(0, colon), Number(address.slice(colon + 1))];
    const slot = async (index: number): Promise<void> => {
      const localAddress = scale.adminSourceAddresses > 0 ? `127.0.0.${10 + (index % scale.adminSourceAddresses)}` : undefined;
      while (control.running() && stats.opened < scale.maxAdminConnectionsOpened) {
        await partialHeader(host, port, localAddress, stats, control);
        await control.sleep(100);
      }
    };
    await Promise.all(Array.from({ length: scale.adminConnectionsPerNode }, (_, index) => slot(index)));
  };
  await Promise.all(plan.adminAddresses.map(slots));
}

async function leaseFlood(plan: AttackPlan, control: AttackControl, stats: AttackStats['leases']): Promise<void> {
  const client = new AtollClient({ endpoints: [...plan.endpoints], token: plan.leaseToken, defaultTimeoutMs: 10_000, maxAttempts: 1 });
  control.onStop(() => client.close());
  const pacer = new Pacer(plan.scale.leaseRate, control);
  const granter = async (): Promise<void> => {
    while (control.running() && stats.attempted < plan.scale.maxLeaseGrants) {
      await pacer.next();
      if (!control.running()) return;
      stats.attempted++;
      try {
        await client.leaseCall({ action: 'grant', key: plan.leaseBucket, ttlMs: plan.scale.leaseTtlMs });
        countOutcome(stats.outcomes, 'granted');
      } catch (error) {
        if (control.running()) countOutcome(stats.outcomes, outcomeOf(error));
      }
    }
  };
  await Promise.all(Array.from({ length: plan.scale.leaseConcurrency }, granter));
}

/**
 * One call on a raw HTTP/2 session, read to its status: the node gets exactly what a gRPC client
 * sends (headers with the token, one framed message), at a fraction of grpc-js's client cost to
 * this process, which shares the machine's cores with the nodes.
 */
/** Sessions whose node sent its HTTP/2 settings: a session closed before that was refused at accept. */
const servedSessions = new WeakSet<http2.ClientHttp2Session>();

function rawUnaryOutcome(session: http2.ClientHttp2Session, path: string, token: string, body: Buffer): Promise<string> {
  return new Promise((resolveCall) => {
    const request = session.request({ ...grpcRequestHeaders(path, token), 'grpc-timeout': '5S' });
    let metadata: http2.IncomingHttpHeaders = {};
    request.on('error', () => undefined);
    request.on('response', (headers) => (metadata = { ...metadata, ...headers }));
    request.on('trailers', (trailers) => (metadata = { ...metadata, ...trailers }));
    request.on('data', () => undefined);
    request.on('close', () => {
      const status = Number(metadata['grpc-status'] ?? Number.NaN);
      const message = decodeURIComponent(String(metadata['grpc-message'] ?? ''));
      if (status === 0) resolveCall('answered');
      else if (/too many failed authentications/.test(message)) resolveCall('UNAUTHENTICATED (refused at once)');
      else if (metadata['atoll-code'] !== undefined) resolveCall(String(metadata['atoll-code']));
      else if (!Number.isInteger(status) && !servedSessions.has(session)) resolveCall('connection refused at accept');
      else resolveCall(Number.isInteger(status) ? String(grpc.status[status] ?? status) : session.destroyed ? 'UNAVAILABLE' : `closed (rst ${request.rstCode})`);
    });
    request.end(body);
  });
}

/**
 * Whether a node admits a TCP connection from `localAddress`: its HTTP/2 server speaks first (its
 * SETTINGS), so bytes mean admitted and a close without any means closed at accept. What a guesser
 * tries after its connection was refused: as many attempts, for a fraction of an HTTP/2 session's
 * cost to this process.
 */
function admitted(host: string, port: number, localAddress: string | undefined, control: AttackControl): Promise<boolean> {
  return new Promise((resolveProbe) => {
    const socket = connect({ host, port, ...(localAddress !== undefined && { localAddress }) });
    const stop = (): void => void socket.destroy();
    control.onStop(stop);
    socket.on('error', () => undefined);
    socket.once('data', () => {
      socket.destroy();
      resolveProbe(true);
    });
    socket.once('close', () => resolveProbe(false));
  });
}

async function tokenGuesses(plan: AttackPlan, control: AttackControl, stats: AttackStats['tokenGuesses']): Promise<void> {
  const method = kvServiceDefinition['Exists']!;
  const body = grpcFrame(method.requestSerialize({ key: 'guess' } as never) as Buffer);
  const pacer = new Pacer(plan.scale.guessRate, control);
  let connections = 0;
  const node = async (address: string): Promise<void> => {
    let session: http2.ClientHttp2Session | undefined;
    let openedAtMs = 0;
    /** The source the node refused last, tried again by probes until one is admitted. */
    let refusedSource: string | undefined | null = null;
    const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
    // From source addresses of the attacker's own, not the ordinary tenant's (an attacker on other hosts).
    const nextSource = (): string | undefined => (plan.scale.guessSourceAddresses > 0 ? `127.0.0.${30 + (connections++ % plan.scale.guessSourceAddresses)}` : undefined);
    const connection = (admittedSource?: string): http2.ClientHttp2Session => {
      if (session === undefined || session.destroyed || session.closed || Date.now() - openedAtMs >= plan.scale.guessConnectionEveryMs) {
        // A new connection, a new allowance of token lookups; calls still running on the old one finish there.
        session?.close();
        const localAddress = admittedSource ?? nextSource();
        const created = http2.connect(`http://${address}`, localAddress === undefined ? {} : { createConnection: () => connect({ host, port, localAddress }) });
        created.on('error', () => undefined);
        created.once('remoteSettings', () => servedSessions.add(created));
        created.once('close', () => {
          if (!servedSessions.has(created)) refusedSource = localAddress;
        });
        control.onStop(() => created.destroy());
        session = created;
        openedAtMs = Date.now();
        stats.connections++;
      }
      return session;
    };
    const guesser = async (): Promise<void> => {
      while (control.running() && stats.sent < plan.scale.maxGuesses) {
        await pacer.next();
        if (!control.running()) return;
        stats.sent++;
        let outcome: string;
        if (refusedSource !== null) {
          // The last connection was closed at accept: the next attempt is a bare connection from the next source.
          const source = nextSource();
          stats.connections++;
          if (await admitted(host, port, source, control)) {
            refusedSource = null;
            session = undefined;
            outcome = await rawUnaryOutcome(connection(source), method.path, newToken(), body);
          } else {
            outcome = 'connection refused at accept';
          }
        } else {
          outcome = await rawUnaryOutcome(connection(), method.path, newToken(), body);
        }
        if (control.running()) countOutcome(stats.outcomes, outcome);
      }
    };
    await Promise.all(Array.from({ length: plan.scale.guessConcurrencyPerNode }, guesser));
  };
  await Promise.all(plan.endpoints.map(node));
}

/** The requests a never-read KV.Stream writes in one go, as gRPC frames. */
function streamFlood(frameCount: number): Buffer {
  const serialize = kvServiceDefinition['Stream']!.requestSerialize;
  const frames: Buffer[] = [];
  for (let id = 1; id <= frameCount; id++) {
    frames.push(grpcFrame(serialize(encodeStreamRequest(String(id), 0, { kind: 'operation', operation: { kind: 'get', request: { key: `sflood/k${id % 100}` } } }) as never) as Buffer));
  }
  return Buffer.concat(frames);
}

/**
 * What the patterns build before they start: the attacker's own work, done before the run's clock
 * starts (200,000 stream requests take a core about half a second to encode, which at the start of
 * the run took CPU from the nodes on a machine they share with the attacker).
 */
export interface PreparedAttacks {
  readonly streamFlood?: Buffer;
}

export function prepareAttacks(plan: Pick<AttackPlan, 'patterns' | 'scale'>): PreparedAttacks {
  return plan.patterns.includes('stream') ? { streamFlood: streamFlood(plan.scale.streamFrames) } : {};
}

async function neverReadStreams(plan: AttackPlan, control: AttackControl, stats: AttackStats['stream'], prepared: PreparedAttacks): Promise<void> {
  const flood = prepared.streamFlood ?? streamFlood(plan.scale.streamFrames);
  const node = async (address: string): Promise<void> => {
    for (let opened = 0; control.running() && opened < plan.scale.maxStreamsPerNode; opened++) {
      const session = zeroWindowSession(address, control);
      const stream = session.request(grpcRequestHeaders('/atoll.v1.KV/Stream', plan.scriptToken));
      stats.streamsOpened++;
      stats.open++;
      stream.on('error', () => undefined);
      stream.pause();
      stream.write(flood);
      stats.framesWritten += plan.scale.streamFrames;
      await new Promise<void>((resolveClosed) => {
        stream.once('close', () => {
          stats.open--;
          if (control.running()) countOutcome(stats.outcomes, `closed by the node (rst ${stream.rstCode})`);
          resolveClosed();
        });
        control.onStop(() => resolveClosed());
      });
      session.destroy();
      await control.sleep(1_000);
    }
  };
  await Promise.all(plan.endpoints.map(node));
}

/**
 * Runs every pattern at once until the deadline or `stopped` resolves; `stats` is updated in
 * place as they go. Resolves once every pattern has stopped and its connections are closed (a
 * pattern still waiting on a call when stopped is not waited for longer than `graceMs`).
 */
export async function runAttacks(plan: AttackPlan, stats: AttackStats, stopped: Promise<void>, graceMs = 3_000, prepared: PreparedAttacks = {}): Promise<void> {
  const control = new AttackControl(plan.untilEpochMs);
  const runners: Record<PatternName, () => Promise<void>> = {
    watches: () => zeroWindowWatches(plan, control, stats.watches),
    scripts: () => hostileScripts(plan, control, stats.scripts),
    admin: () => partialHeaderConnections(plan, control, stats.admin),
    leases: () => leaseFlood(plan, control, stats.leases),
    tokenGuesses: () => tokenGuesses(plan, control, stats.tokenGuesses),
    stream: () => neverReadStreams(plan, control, stats.stream, prepared),
  };
  const patterns = Promise.all(plan.patterns.map((name) => runners[name]()));
  const deadline = new Promise<void>((resolveDeadline) => setTimeout(resolveDeadline, Math.max(0, plan.untilEpochMs - Date.now())).unref());
  await Promise.race([patterns, stopped, deadline]);
  control.stop();
  await Promise.race([patterns, new Promise<void>((resolveGrace) => setTimeout(resolveGrace, graceMs).unref())]);
}
