/**
 * KV.Watch on the wire: the codec of WatchRequest / WatchResponse, and the server-streaming
 * handler. The handler gives the node a sink with the stream's backpressure (grpc-js write()
 * returns false when its buffer is full; 'drain' says it emptied) and a signal that aborts when
 * the client cancels. The call's deadline bounds only the watch's start (its linearizable read):
 * a watch runs until the client cancels it or it fails. The sink's transport (watch-transport.ts)
 * is the call's HTTP/2 stream: each message counts against the watch memory bounds until grpc-js's
 * write callback says HTTP/2 took it, and a stream that does not drain is reset.
 */
import type * as grpc from '@grpc/grpc-js';
import { AtollError } from '../errors.js';
import type { NodeApi, WatchMessage, WatchRequest, WatchSink } from '../api/node-api.js';
import type { WatchEvent } from '../watch/watcher.js';
import { openUnaryCallScope } from './call-context.js';
import type { WatchEvent__Output } from './generated/atoll/v1/WatchEvent.js';
import type { WatchRequest as WatchRequestMessage } from './generated/atoll/v1/WatchRequest.js';
import type { WatchResponse as WatchResponseMessage, WatchResponse__Output } from './generated/atoll/v1/WatchResponse.js';
import { serviceErrorOf, type ErrorLogger } from './grpc-errors.js';
import { formatWireInt64, parseWireCount } from './wire-numbers.js';
import { throwIfWireProblem } from './wire-utf8.js';
import { noStreamWarning, watchTransportOf } from './watch-transport.js';

function text(value: unknown, field: string): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string') throw new AtollError('INVALID_ARGUMENT', `${field} must be a string`, { field });
  return value;
}

export function decodeWatchRequest(value: unknown): WatchRequest {
  if (value === null || typeof value !== 'object') throw new AtollError('INVALID_ARGUMENT', 'WatchRequest must be a message');
  const message = value as Partial<Record<keyof WatchRequestMessage, unknown>>;
  const key = text(message.key, 'key');
  const prefix = text(message.prefix, 'prefix');
  const start = message.startRevision === undefined || message.startRevision === null ? undefined : parseWireCount(message.startRevision, 'startRevision');
  return {
    ...(key !== '' && { key }),
    ...(prefix !== '' && { prefix }),
    ...(start !== undefined && { startRevision: start }),
    ...(message.keysOnly === true && { keysOnly: true }),
    ...(message.progress === true && { progress: true }),
    ...(message.stale === true && { stale: true }),
  };
}

export function encodeWatchRequest(request: WatchRequest): WatchRequestMessage {
  return {
    ...(request.key !== undefined && { key: request.key }),
    ...(request.prefix !== undefined && { prefix: request.prefix }),
    ...(request.startRevision !== undefined && { startRevision: formatWireInt64(request.startRevision) }),
    keysOnly: request.keysOnly === true,
    progress: request.progress === true,
    ...(request.stale === true && { stale: true }),
  };
}

export function encodeWatchResponse(message: WatchMessage): WatchResponseMessage {
  return {
    revision: formatWireInt64(message.revision),
    progress: message.progress,
    events: message.events.map((event) => ({
      type: event.type === 'put' ? 'WATCH_PUT' : 'WATCH_DELETE',
      key: event.key,
      value: event.value,
      revision: formatWireInt64(event.revision),
      createRevision: formatWireInt64(event.createRevision),
      version: formatWireInt64(event.version),
      expiresAtMs: formatWireInt64(event.expiresAtMs),
      reason: event.reason === 'expired' ? 'EXPIRED' : event.reason === 'lease' ? 'LEASE' : event.reason === 'deleted' ? 'DELETED' : 'DELETE_REASON_UNSPECIFIED',
    })),
  };
}

function decodeEvent(event: WatchEvent__Output): WatchEvent {
  const type = event.type === 'WATCH_DELETE' ? 'delete' : 'put';
  return {
    type,
    key: text(event.key, 'key'),
    value: event.value ?? new Uint8Array(0),
    revision: parseWireCount(event.revision ?? 0, 'revision'),
    createRevision: parseWireCount(event.createRevision ?? 0, 'createRevision'),
    version: parseWireCount(event.version ?? 0, 'version'),
    expiresAtMs: parseWireCount(event.expiresAtMs ?? 0, 'expiresAtMs'),
    reason: type === 'put' ? '' : event.reason === 'EXPIRED' ? 'expired' : event.reason === 'LEASE' ? 'lease' : 'deleted',
  };
}

export function decodeWatchResponse(value: unknown): WatchMessage {
  const message = (value ?? {}) as Partial<WatchResponse__Output>;
  return {
    revision: parseWireCount(message.revision ?? 0, 'revision'),
    progress: message.progress === true,
    events: (message.events ?? []).map(decodeEvent),
  };
}

/** The KV.Watch handler (server streaming). */
export function kvWatchHandler(api: NodeApi, logger: ErrorLogger): grpc.handleServerStreamingCall<unknown, unknown> {
  return (call) => {
    const scope = openUnaryCallScope(call);
    const cancelled = new AbortController();
    const onCancelled = (): void => cancelled.abort(new AtollError('UNAVAILABLE', 'the client cancelled the watch'));
    call.on('cancelled', onCancelled);
    if (call.cancelled) onCancelled();
    const sink: WatchSink = {
      transport: watchTransportOf(call, () => noStreamWarning(logger)),
      write: (message, written) => call.write(encodeWatchResponse(message), written === undefined ? undefined : () => written()),
      drained: (ms) =>
        new Promise<boolean>((resolve) => {
          const finish = (drained: boolean): void => {
            clearTimeout(timer);
            call.removeListener('drain', onDrain);
            cancelled.signal.removeEventListener('abort', onAbort);
            resolve(drained);
          };
          const onDrain = (): void => finish(true);
          const onAbort = (): void => finish(false);
          const timer = setTimeout(() => finish(false), ms);
          call.on('drain', onDrain);
          cancelled.signal.addEventListener('abort', onAbort, { once: true });
        }),
    };
    Promise.resolve()
      .then(() => {
        throwIfWireProblem(call.request);
        return api.watch(decodeWatchRequest(call.request), { ...scope.context, signal: cancelled.signal }, sink);
      })
      .then(
        () => {
          if (!call.cancelled) call.end();
        },
        (error: unknown) => {
          if (!call.cancelled) call.emit('error', serviceErrorOf(error, logger));
        },
      )
      .catch((error: unknown) => logger.error({ err: error }, 'ending a watch failed'))
      .finally(() => {
        call.removeListener('cancelled', onCancelled);
        scope.dispose();
      });
  };
}
