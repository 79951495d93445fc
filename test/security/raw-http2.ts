/**
 * Raw HTTP/2 gRPC calls from a chosen loopback source address, for the tests of the failed-
 * authentication gate (src/node/service/failed-auths.ts, src/server/client-listener.ts): grpc-js's
 * client cannot pick its source address, and these tests need one of their own so that a blocked
 * address is never the test's other clients'.
 */
import http2 from 'node:http2';
import net from 'node:net';

/**
 * A raw HTTP/2 connection from `localAddress`: `settled` is 'served' once the node's HTTP/2
 * settings arrive, 'refused' when the connection closes before (closed at accept).
 */
export function rawSession(host: string, port: number, localAddress: string): { session: http2.ClientHttp2Session; settled: Promise<'served' | 'refused'>; readonly closed: boolean } {
  const session = http2.connect(`http://${host}:${port}`, { createConnection: () => net.connect({ host, port, localAddress }) });
  session.on('error', () => undefined);
  let closed = false;
  const settled = new Promise<'served' | 'refused'>((resolveSettled) => {
    session.once('remoteSettings', () => resolveSettled('served'));
    session.once('close', () => {
      closed = true;
      resolveSettled('refused');
    });
  });
  return {
    session,
    settled,
    get closed() {
      return closed || session.closed || session.destroyed;
    },
  };
}

/**
 * A unary call to `path` with `metadata` and the framed message `body`: 'answered', 'refused at
 * once' (too many failed authentications), the status message of another refusal, or 'connection
 * closed' when the connection ended it without a status.
 */
export function rawUnary(session: http2.ClientHttp2Session, path: string, metadata: Record<string, string>, body: Buffer): Promise<string> {
  return new Promise((resolveCall) => {
    if (session.closed || session.destroyed) return resolveCall('connection closed');
    const request = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', 'grpc-timeout': '5S', ...metadata });
    let headers: http2.IncomingHttpHeaders = {};
    request.on('error', () => undefined);
    request.on('response', (received) => (headers = { ...headers, ...received }));
    request.on('trailers', (received) => (headers = { ...headers, ...received }));
    request.on('data', () => undefined);
    request.on('close', () => {
      const status = headers['grpc-status'];
      const message = decodeURIComponent(String(headers['grpc-message'] ?? ''));
      if (status === '0') resolveCall('answered');
      else if (status === undefined) resolveCall('connection closed');
      else if (/too many failed authentications/.test(message)) resolveCall('refused at once');
      else resolveCall(message);
    });
    request.end(body);
  });
}
