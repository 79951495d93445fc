/**
 * The HTTP/2 stream under a grpc-js server call, as the watch byte accounting needs it (issue 33):
 * which connection it belongs to, when it has closed (everything queued on it is gone then), and a
 * way to close it at once when its consumer does not drain.
 *
 * grpc-js 1.14 offers no public way to reset a server stream. Ending the call (call.end(), or a
 * status) waits for everything queued to be written, which a client whose HTTP/2 window stays at 0
 * never allows, and call.destroy() drops only grpc-js's own object buffer: the serialized message
 * in HTTP/2's queue and the stream stay (measured: 40 streams of a zero-window client kept
 * 21 MB of external memory after destroy() and after end(); after stream.close(NGHTTP2_CANCEL)
 * external memory went back to its level before the streams once collected). So the stream is
 * taken from the call's private fields (call.call is grpc-js's BaseServerInterceptingCall, or an
 * interceptor chain over it through `nextCall`, and its `stream` is the ServerHttp2Stream) and
 * closed with RST_STREAM (CANCEL: the client sees CANCELLED and resumes after the last revision it
 * got). test/server/watch-transport.test.ts checks this against the installed grpc-js. When the
 * stream cannot be found (another grpc-js layout) the cut-off destroys grpc-js's buffer only and
 * the bytes stay counted until the call ends by itself: the bounds hold, the memory comes back later.
 *
 * A stream that has not closed CONNECTION_GRACE_MS after its reset (its connection cannot even
 * send the RST_STREAM: the client stopped reading the socket) has its whole connection destroyed.
 */
import http2 from 'node:http2';
import { Duplex } from 'node:stream';
import type { EventEmitter } from 'node:events';
import type { WatchTransport } from '../watch/watch-memory.js';
import type { ErrorLogger } from '../wire/grpc-errors.js';

/** How long a reset stream may stay open before its connection is destroyed. */
export const CONNECTION_GRACE_MS = 2_000;

function isHttp2Stream(value: unknown): value is http2.ServerHttp2Stream {
  return value instanceof Duplex && typeof (value as { close?: unknown }).close === 'function' && 'session' in value && 'rstCode' in value;
}

/** The ServerHttp2Stream of a grpc-js server call, or undefined when grpc-js does not keep it where 1.14 does. */
export function http2StreamOf(call: object): http2.ServerHttp2Stream | undefined {
  let current: unknown = (call as { call?: unknown }).call;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    const stream = (current as { stream?: unknown }).stream;
    if (isHttp2Stream(stream)) return stream;
    current = (current as { nextCall?: unknown }).nextCall;
  }
  return undefined;
}

let warnedNoStream = false;

/** Said once per process: a cut-off could not reset the HTTP/2 stream. */
export function noStreamWarning(logger: ErrorLogger): void {
  if (warnedNoStream) return;
  warnedNoStream = true;
  logger.error({}, 'a watch stream that does not drain could not be reset (grpc-js keeps its HTTP/2 stream elsewhere): its bytes stay counted until the call ends');
}

interface ServerCallLike extends EventEmitter {
  getPeer(): string;
  destroy?(): void;
}

/** The transport of one server call (KV.Watch) or stream (KV.Stream: one for all its watches). */
export function watchTransportOf(call: ServerCallLike, onNoStream?: () => void): WatchTransport {
  const stream = http2StreamOf(call);
  const listeners = new Set<() => void>();
  let closed = false;
  let graceTimer: NodeJS.Timeout | undefined;
  const onClose = (): void => {
    if (closed) return;
    closed = true;
    if (graceTimer !== undefined) clearTimeout(graceTimer);
    for (const listener of [...listeners]) listener();
    listeners.clear();
  };
  if (stream !== undefined) {
    if (stream.closed || stream.destroyed) closed = true;
    else stream.once('close', onClose);
  } else {
    call.once('cancelled', onClose);
    call.once('close', onClose);
  }
  return {
    connection: stream?.session ?? call.getPeer(),
    cutOff: () => {
      if (closed) return;
      if (stream === undefined) {
        onNoStream?.();
        call.destroy?.();
        return;
      }
      const session = stream.session;
      stream.close(http2.constants.NGHTTP2_CANCEL);
      if (closed || graceTimer !== undefined) return;
      graceTimer = setTimeout(() => {
        if (!closed) session?.destroy();
      }, CONNECTION_GRACE_MS);
      graceTimer.unref();
    },
    onClosed: (listener) => {
      if (closed) {
        listener();
        return () => undefined;
      }
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
