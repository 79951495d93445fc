/**
 * KV.Watch on the wire: the codec of WatchRequest / WatchResponse, shared by the server's handler
 * (src/server/kv-watch.ts), KV.Stream's watch frames (stream-codec.ts) and the client.
 */
import { AtollError } from '../errors.js';
import type { WatchMessage, WatchRequest } from '../api/node-api.js';
import type { WatchEvent } from '../watch/watcher.js';
import type { WatchEvent__Output } from './generated/atoll/v1/WatchEvent.js';
import type { WatchRequest as WatchRequestMessage } from './generated/atoll/v1/WatchRequest.js';
import type { WatchResponse as WatchResponseMessage, WatchResponse__Output } from './generated/atoll/v1/WatchResponse.js';
import { formatWireInt64, parseWireCount } from './wire-numbers.js';

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
