/**
 * The node's admin HTTP port (node:http, no framework): Prometheus metrics at GET /metrics and the
 * health endpoints orchestrators probe, GET /livez and GET /readyz. More pages register with
 * `route()` (the status page will), each a GET handler answering a status, a content type and a body.
 *
 * Bounded: request bodies are never read (anything but GET or HEAD is refused with 405 and the
 * connection closed), headers are small (maxHeaderSize), every connection has deadlines of its own
 * (a complete header within HEADERS_TIMEOUT_MS, an answer within REQUEST_TIMEOUT_MS), one source
 * address holds at most MAX_CONNECTIONS_PER_SOURCE connections, and PROBE_RESERVE slots beyond
 * MAX_CONNECTIONS answer only /livez and /readyz (admin-connections.ts); a handler that takes too
 * long is answered with 503.
 *
 * It binds loopback unless told otherwise (defaultAdminListen): /metrics and /readyz say much about
 * the node, and probes or Prometheus from elsewhere need an address named for them.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { NodeMetricsView } from '../node/metrics.js';
import { AdminConnections, ADMIN_PORT_BUSY } from './admin-connections.js';
import { renderExposition } from './metrics-exposition.js';

export interface AdminResponse {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
  /** More response headers (`atoll-code` with an error's stable code, for one). */
  readonly headers?: Readonly<Record<string, string>>;
}

export type AdminHandler = (request: IncomingMessage) => AdminResponse | Promise<AdminResponse>;

/** A handler that has not answered within this long is answered 503 (its result is dropped). */
const HANDLER_TIMEOUT_MS = 5_000;
/** A connection's complete request header, from connecting; the next one, from an answer. */
const HEADERS_TIMEOUT_MS = 3_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/** From a request's header to its answer written (the handler's 5 s included). */
const REQUEST_TIMEOUT_MS = 10_000;
/** General connection slots, and slots beyond them that answer only /livez and /readyz. */
const MAX_CONNECTIONS = 64;
const PROBE_RESERVE = 8;
/** Connections one source address may hold. */
const MAX_CONNECTIONS_PER_SOURCE = 16;
/** How often node:http checks its own header and request timeouts (a backstop to ours). */
const CONNECTIONS_CHECK_MS = 1_000;
const MAX_HEADER_BYTES = 8 * 1024;

/**
 * A replica is caught up when it has applied all but at most this many of the entries it knows
 * committed. Applying runs one loop iteration behind committing, so a busy replica lags by a few.
 */
export const READY_MAX_APPLY_LAG = 1_000;

const text = (status: number, body: string): AdminResponse => ({ status, contentType: 'text/plain; charset=utf-8', body: body.endsWith('\n') ? body : `${body}\n` });

/**
 * Readiness from the node's state: serving, every hosted partition knows its leader, and every
 * replica has applied within READY_MAX_APPLY_LAG of its commit index. Returns the reasons it is
 * not ready (empty when ready), at most a few lines.
 */
export function readinessProblems(serving: boolean, view: NodeMetricsView): string[] {
  const problems: string[] = [];
  if (!serving) problems.push('not serving (starting or shutting down)');
  const leaderless = view.partitions.filter((p) => p.leader === 0).map((p) => p.partition);
  if (leaderless.length > 0) problems.push(`no known leader for partition(s) ${leaderless.slice(0, 20).join(',')}${leaderless.length > 20 ? ',...' : ''}`);
  const lagging = view.partitions.filter((p) => p.commitIndex - p.appliedIndex > READY_MAX_APPLY_LAG).map((p) => p.partition);
  if (lagging.length > 0) problems.push(`applied index more than ${READY_MAX_APPLY_LAG} behind commit on partition(s) ${lagging.slice(0, 20).join(',')}${lagging.length > 20 ? ',...' : ''}`);
  return problems;
}

export interface AdminServerOptions {
  readonly registry: Registry;
  /** The node's state for /readyz. */
  readonly view: () => NodeMetricsView;
  /** False while the node starts or shuts down (/readyz answers 503). */
  readonly serving: () => boolean;
  readonly logger: Logger;
  /**
   * The atoll_tenant_* series (node-metrics.ts) and who may see them (--tenant-metrics; admin-auth.ts):
   * appended to /metrics when `access` answers true; an answer it gives is sent instead (a refused
   * token). Absent: never served.
   */
  readonly tenantMetrics?: { readonly registry: Registry; readonly access: (request: IncomingMessage) => Promise<boolean | AdminResponse> };
}

export class AdminServer {
  private readonly routes = new Map<string, AdminHandler>();
  private readonly server: Server;
  private readonly connections: AdminConnections;

  constructor(private readonly options: AdminServerOptions) {
    this.connections = new AdminConnections(
      { maxConnections: MAX_CONNECTIONS, probeReserve: PROBE_RESERVE, perSource: MAX_CONNECTIONS_PER_SOURCE, headerTimeoutMs: HEADERS_TIMEOUT_MS, keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS, requestTimeoutMs: REQUEST_TIMEOUT_MS },
      options.logger,
    );
    this.server = createServer(
      { maxHeaderSize: MAX_HEADER_BYTES, requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: HEADERS_TIMEOUT_MS, keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS, connectionsCheckingInterval: CONNECTIONS_CHECK_MS },
      (request, response) => this.handle(request, response),
    );
    // Slots are counted by admin-connections.ts (server.maxConnections would drop a probe with the rest).
    this.server.on('connection', (socket: Socket) => this.connections.admit(socket));
    this.server.on('clientError', (_error, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      else socket.destroy();
    });
    this.route('/livez', () => text(200, 'ok'));
    this.route('/readyz', () => {
      const problems = readinessProblems(options.serving(), options.view());
      return problems.length === 0 ? text(200, 'ok') : text(503, problems.join('\n'));
    });
    this.route('/metrics', async (request) => {
      const tenants = options.tenantMetrics;
      const access = tenants === undefined ? false : await tenants.access(request);
      if (typeof access === 'object') return access;
      const body = await renderExposition(options.registry);
      return { status: 200, contentType: options.registry.contentType, body: access && tenants !== undefined ? `${body}${await renderExposition(tenants.registry)}` : body };
    });
  }

  /** Serves GET `path` (exact match, query string ignored) with `handler`; a later call replaces it. */
  route(path: string, handler: AdminHandler): void {
    this.routes.set(path, handler);
  }

  /** Binds `address` (host:port; port 0 picks one) and resolves with the bound address. */
  listen(address: string): Promise<AddressInfo> {
    const split = address.lastIndexOf(':');
    const host = address.slice(0, split).replace(/^\[(.*)\]$/, '$1');
    const port = Number(address.slice(split + 1));
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(port, host, () => {
        this.server.off('error', reject);
        resolve(this.server.address() as AddressInfo);
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
      this.connections.closeAll();
    });
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const finished = this.connections.requestStarted(request.socket);
    response.once('close', finished);
    const send = (answer: AdminResponse): void => {
      if (response.headersSent || response.destroyed) return;
      response.writeHead(answer.status, { 'content-type': answer.contentType, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(answer.body), ...answer.headers });
      response.end(request.method === 'HEAD' ? undefined : answer.body);
    };
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      // The body is never read: the connection closes after the answer.
      response.setHeader('connection', 'close');
      response.setHeader('allow', 'GET, HEAD');
      send(text(405, 'only GET and HEAD'));
      return;
    }
    const path = (request.url ?? '/').split('?')[0] as string;
    if (!this.connections.mayServe(request.socket, path)) {
      // A reserve slot (every general one is in a request): the probes only.
      response.setHeader('connection', 'close');
      send({ ...text(503, `${ADMIN_PORT_BUSY}: the admin port is busy; only /livez and /readyz are answered now`), headers: { 'atoll-code': ADMIN_PORT_BUSY } });
      return;
    }
    const handler = this.routes.get(path);
    if (handler === undefined) {
      send(text(404, `no ${path.slice(0, 200)} here; try /, /metrics, /livez, /readyz`));
      return;
    }
    const timer = setTimeout(() => send(text(503, `${path} did not answer within ${HANDLER_TIMEOUT_MS} ms`)), HANDLER_TIMEOUT_MS);
    Promise.resolve()
      .then(() => handler(request))
      .then(send, (error: unknown) => {
        this.options.logger.warn({ err: error, path }, 'admin request failed');
        send(text(500, 'internal error'));
      })
      .finally(() => clearTimeout(timer));
  }
}

/** The admin port of a client address: its port + 1000 (port 0 stays 0: any free port). */
function adminPortOf(clientAddress: string): { host: string; port: number } {
  const split = clientAddress.lastIndexOf(':');
  const port = Number(clientAddress.slice(split + 1));
  return { host: clientAddress.slice(0, split), port: port === 0 ? 0 : port + 1000 };
}

/** Where a node's admin port is advertised by default (ClusterInfo): the client address's host with its port + 1000. */
export function defaultAdminAddress(clientAddress: string): string {
  const { host, port } = adminPortOf(clientAddress);
  return `${host}:${port}`;
}

/**
 * Where a node binds its admin port by default: loopback, at the client port + 1000. Probes and
 * scrapes from other hosts (Kubernetes, a Prometheus elsewhere) need --admin-listen naming an
 * address they reach.
 */
export function defaultAdminListen(clientAddress: string): string {
  return `127.0.0.1:${adminPortOf(clientAddress).port}`;
}
