/**
 * The node's admin HTTP port (node:http, no framework): Prometheus metrics at GET /metrics and the
 * health endpoints orchestrators probe, GET /livez and GET /readyz. More pages register with
 * `route()` (the status page will), each a GET handler answering a status, a content type and a body.
 *
 * Bounded: request bodies are never read (anything but GET or HEAD is refused with 405 and the
 * connection closed), headers are small (maxHeaderSize), every request and idle connection has a
 * timeout, connections are capped, and a handler that takes too long is answered with 503.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { NodeMetricsView } from '../node/metrics.js';

export interface AdminResponse {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

export type AdminHandler = (request: IncomingMessage) => AdminResponse | Promise<AdminResponse>;

/** A handler that has not answered within this long is answered 503 (its result is dropped). */
const HANDLER_TIMEOUT_MS = 5_000;
/** Whole request (headers included) and idle keep-alive limits. */
const REQUEST_TIMEOUT_MS = 10_000;
const HEADERS_TIMEOUT_MS = 5_000;
const KEEP_ALIVE_TIMEOUT_MS = 5_000;
const MAX_CONNECTIONS = 64;
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
}

export class AdminServer {
  private readonly routes = new Map<string, AdminHandler>();
  private readonly server: Server;

  constructor(private readonly options: AdminServerOptions) {
    this.server = createServer({ maxHeaderSize: MAX_HEADER_BYTES, requestTimeout: REQUEST_TIMEOUT_MS, headersTimeout: HEADERS_TIMEOUT_MS, keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS }, (request, response) => {
      this.handle(request, response);
    });
    this.server.maxConnections = MAX_CONNECTIONS;
    this.server.on('clientError', (_error, socket) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      else socket.destroy();
    });
    this.route('/livez', () => text(200, 'ok'));
    this.route('/readyz', () => {
      const problems = readinessProblems(options.serving(), options.view());
      return problems.length === 0 ? text(200, 'ok') : text(503, problems.join('\n'));
    });
    this.route('/metrics', async () => ({ status: 200, contentType: options.registry.contentType, body: await options.registry.metrics() }));
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
    });
  }

  private handle(request: IncomingMessage, response: ServerResponse): void {
    const send = (answer: AdminResponse): void => {
      if (response.headersSent || response.destroyed) return;
      response.writeHead(answer.status, { 'content-type': answer.contentType, 'cache-control': 'no-store', 'content-length': Buffer.byteLength(answer.body) });
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

/** The default admin address: the client address's host with its port + 1000 (port 0 stays 0: any free port). */
export function defaultAdminAddress(clientAddress: string): string {
  const split = clientAddress.lastIndexOf(':');
  const port = Number(clientAddress.slice(split + 1));
  return `${clientAddress.slice(0, split)}:${port === 0 ? 0 : port + 1000}`;
}
