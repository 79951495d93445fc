/**
 * The client port's listener: a TCP server of the node's own that hands each accepted connection
 * to grpc-js (Server.createConnectionInjector), so that the node can refuse a connection before
 * TLS, HTTP/2 or gRPC spend anything on it, and close one it no longer wants to serve.
 *
 * The gate (src/node/service/failed-auths.ts) decides: a source address blocked for failed
 * authentications has its new connections closed at accept; a connection the gate names (its calls
 * failed to authenticate too often) is closed. Everything else is exactly grpc-js's own listener:
 * the same HTTP/2 server, options, credentials (TLS included: the injected socket is the raw TCP
 * socket, and grpc-js's secure server runs the handshake) and shutdown.
 *
 * Invariant: every connection handed to grpc-js is attached to the gate under the key grpc-js's
 * getPeer() gives its calls (`remoteAddress:remotePort`), and detached when its socket closes.
 */
import net from 'node:net';
import type * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';

export interface ConnectionGate {
  /** Whether a new connection from `source` (a remote address) may be served. */
  admits(source: string, nowMs: number): boolean;
  /** `close` ends the connection `key` (remote address:port); detach when it closed. */
  attach(key: string, close: () => void): void;
  detach(key: string): void;
}

/**
 * How long a connection the gate closes keeps its socket: the answer to the call that closed it
 * (UNAUTHENTICATED, with its reason) is written first.
 */
const CLOSE_AFTER_MS = 20;
const LOG_INTERVAL_MS = 10_000;

export interface ClientListener {
  readonly port: number;
  /** Connections refused at accept since the listener opened. */
  readonly refused: number;
  /** Stops accepting; grpc-js's shutdown ends the connections it serves. */
  close(): void;
}

function splitAddress(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  if (colon < 0) throw new Error(`listen address ${JSON.stringify(address)} is not host:port`);
  const port = Number(address.slice(colon + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65_535) throw new Error(`listen address ${JSON.stringify(address)} has no valid port`);
  return { host: address.slice(0, colon).replace(/^\[(.*)\]$/, '$1'), port };
}

/** Listens on `address` (host:port; port 0 picks one) and serves `server`'s services through `gate`. */
export function listenGated(server: grpc.Server, address: string, credentials: grpc.ServerCredentials, gate: ConnectionGate, logger: Logger): Promise<ClientListener> {
  const { host, port } = splitAddress(address);
  const injector = server.createConnectionInjector(credentials);
  let refused = 0;
  let refusedSinceLog = 0;
  let loggedAtMs = 0;
  const tcp = net.createServer({ noDelay: true }, (socket) => {
    socket.on('error', () => undefined);
    const source = socket.remoteAddress;
    const nowMs = Date.now();
    if (source === undefined || !gate.admits(source, nowMs)) {
      refused++;
      refusedSinceLog++;
      if (nowMs - loggedAtMs >= LOG_INTERVAL_MS) {
        logger.warn({ source, refused: refusedSinceLog }, 'client connections refused at accept: too many failed authentications from their address');
        loggedAtMs = nowMs;
        refusedSinceLog = 0;
      }
      socket.destroy();
      return;
    }
    const key = `${source}:${socket.remotePort}`;
    gate.attach(key, () => setTimeout(() => socket.destroy(), CLOSE_AFTER_MS).unref());
    socket.once('close', () => gate.detach(key));
    injector.injectConnection(socket);
  });
  return new Promise((resolve, reject) => {
    tcp.once('error', reject);
    tcp.listen(port, host, () => {
      tcp.off('error', reject);
      tcp.on('error', (error) => logger.error({ err: error }, 'client listener error'));
      resolve({
        port: (tcp.address() as net.AddressInfo).port,
        get refused() {
          return refused;
        },
        close: () => tcp.close(),
      });
    });
  });
}
