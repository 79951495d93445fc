/**
 * The KV.Stream messages: requests tagged with a client-chosen id, answers tagged with the same id,
 * and per-request errors as StreamError (the same code, status and leader hint a unary call would
 * carry in its status and metadata).
 */
import { AtollError } from '../errors.js';
import type { WatchMessage, WatchRequest } from '../api/node-api.js';
import { grpcStatusOf, isAtollErrorCode, leaderHintOf, sendableError, sendableReason, type ErrorLogger } from './grpc-errors.js';
import { decodeKvOperation, decodeKvResult, encodeKvOperation, encodeKvResult, isKvKind, type KvKind, type KvOperation, type KvResult } from './kv-operation.js';
import { decodeWatchRequest, decodeWatchResponse, encodeWatchRequest, encodeWatchResponse } from './watch-codec.js';
import { fieldBytes } from './wire-utf8.js';
import type { StreamErrorMessage, StreamRequestMessage, StreamResponseMessage } from './wire-types.js';

/**
 * One decoded StreamRequest: an operation to run, the cancellation of an earlier one, or a watch
 * (answered by many watch frames with its id until it is cancelled or fails).
 */
export type StreamRequestBody =
  | { readonly kind: 'operation'; readonly operation: KvOperation }
  | { readonly kind: 'cancel' }
  | { readonly kind: 'watch'; readonly request: WatchRequest };

export interface DecodedStreamRequest {
  readonly id: string;
  /** 0 when the client left the deadline to the server. */
  readonly timeoutMs: number;
  readonly body: StreamRequestBody;
}

const idPattern = /^\d{1,20}$/;

/** StreamRequest's field number of each kind's request (proto/atoll/v1/kv.proto). */
const requestFields: { readonly [K in KvKind]: number } = Object.freeze({
  get: 10,
  put: 11,
  delete: 12,
  increment: 13,
  exists: 14,
  extend: 15,
  getByPrefix: 16,
  beginTransaction: 17,
  commit: 18,
  executeScript: 19,
  lease: 21,
});

/** The request id alone, so that a request whose body fails to decode can still be answered. */
export function streamRequestIdOf(message: unknown): string | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const id = (message as { id?: unknown }).id;
  return typeof id === 'string' && idPattern.test(id) ? id : undefined;
}

export function encodeStreamRequest(id: string, timeoutMs: number, body: StreamRequestBody): StreamRequestMessage {
  if (body.kind === 'cancel') return { id, timeoutMs: 0, cancel: {} };
  if (body.kind === 'watch') return { id, timeoutMs, watch: encodeWatchRequest(body.request) };
  return { id, timeoutMs, ...encodeKvOperation(body.operation) };
}

/**
 * `received`: the bytes the StreamRequest arrived as (what the server's checked deserializer kept,
 * `sentBytes`), when its operation should keep its own range of them, so that a node that forwards
 * it sends that range on as it arrived (forward-codec.ts).
 */
export function decodeStreamRequest(message: unknown, received?: Uint8Array): DecodedStreamRequest {
  const id = streamRequestIdOf(message);
  if (id === undefined) throw new AtollError('INVALID_ARGUMENT', 'a stream request needs an id');
  const request = message as StreamRequestMessage;
  const timeoutMs = typeof request.timeoutMs === 'number' && request.timeoutMs > 0 ? request.timeoutMs : 0;
  if (request.request === 'cancel') return { id, timeoutMs, body: { kind: 'cancel' } };
  if (request.request === 'watch') return { id, timeoutMs, body: { kind: 'watch', request: decodeWatchRequest(request.watch) } };
  return { id, timeoutMs, body: { kind: 'operation', operation: decodeKvOperation(request, request.request, operationBytesOf(request, received)) } };
}

/** The range of `received` (a StreamRequest's bytes) its operation arrived as. */
function operationBytesOf(request: StreamRequestMessage, received: Uint8Array | undefined): Uint8Array | undefined {
  return received === undefined || !isKvKind(request.request) ? undefined : fieldBytes(received, requestFields[request.request]);
}

export function encodeStreamResult(id: string, result: KvResult): StreamResponseMessage {
  return { id, ...encodeKvResult(result) };
}

/** One message of the watch request `id` opened. */
export function encodeStreamWatchFrame(id: string, message: WatchMessage): StreamResponseMessage {
  return { id, watch: encodeWatchResponse(message) };
}

/** The StreamError for anything a request failed with; non-AtollErrors are logged and hidden. */
export function encodeStreamError(id: string, error: unknown, logger?: ErrorLogger): StreamResponseMessage {
  const atollError = sendableError(error, logger);
  const hint = leaderHintOf(atollError);
  const streamError: StreamErrorMessage = {
    code: atollError.code,
    message: atollError.message,
    grpcStatus: grpcStatusOf(atollError),
    leaderHint: hint?.address ?? '',
    leaderId: hint?.nodeId ?? 0,
    notApplied: atollError.details?.['neverSent'] === true,
    ...revisionDetailsOf(atollError),
    ...(sendableReason(atollError) !== undefined && { reason: sendableReason(atollError) }),
  };
  return { id, error: streamError };
}

/** A watch error's revisions (COMPACTED's floor, WATCH_OVERFLOW's resume point), when it has them. */
function revisionDetailsOf(error: AtollError): { compactedRevision?: string; resumeRevision?: string } {
  const detail = (name: string): string | undefined => {
    const value = error.details?.[name];
    return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? String(value) : undefined;
  };
  const compacted = detail('compactedRevision');
  const resume = detail('resumeRevision');
  return { ...(compacted !== undefined && { compactedRevision: compacted }), ...(resume !== undefined && { resumeRevision: resume }) };
}

/** One decoded StreamResponse: the request id and its result or error. */
export interface DecodedStreamResponse {
  readonly id: string;
  readonly outcome: { readonly ok: true; readonly result: KvResult } | { readonly ok: false; readonly error: AtollError };
}

/** One message of a watch opened on the stream (StreamResponse.watch). */
export interface DecodedStreamWatchFrame {
  readonly id: string;
  readonly watch: WatchMessage;
}

/** Any StreamResponse: a watch frame, or the one answer of a request (decodeStreamResponse). */
export function decodeStreamFrame(message: unknown): DecodedStreamResponse | DecodedStreamWatchFrame {
  const id = streamRequestIdOf(message);
  if (id === undefined) throw new AtollError('INTERNAL', 'a stream response has no id');
  const response = message as StreamResponseMessage;
  if (response.result === 'watch') return { id, watch: decodeWatchResponse(response.watch) };
  return decodeStreamResponse(message);
}

export function decodeStreamResponse(message: unknown): DecodedStreamResponse {
  const id = streamRequestIdOf(message);
  if (id === undefined) throw new AtollError('INTERNAL', 'a stream response has no id');
  const response = message as StreamResponseMessage;
  if (response.result === 'watch') throw new AtollError('INTERNAL', 'a watch frame is not the answer of a request');
  if (response.result === 'error') return { id, outcome: { ok: false, error: atollErrorOfStreamError(response.error) } };
  return { id, outcome: { ok: true, result: decodeKvResult(response, response.result) } };
}

/** Rebuilds the AtollError of a StreamError, with the same details a unary error would have. */
export function atollErrorOfStreamError(streamError: StreamErrorMessage | null | undefined): AtollError {
  const code = isAtollErrorCode(streamError?.code) ? streamError.code : 'INTERNAL';
  const details: Record<string, unknown> = { grpcStatus: streamError?.grpcStatus ?? 0 };
  if (streamError !== undefined && streamError !== null && streamError.leaderHint !== '' && (streamError.leaderId ?? 0) > 0) {
    details['leaderHint'] = { nodeId: streamError.leaderId, address: streamError.leaderHint };
  }
  if (streamError?.notApplied === true) details['neverSent'] = true;
  if (typeof streamError?.reason === 'string' && streamError.reason !== '') details['reason'] = streamError.reason;
  for (const name of ['compactedRevision', 'resumeRevision'] as const) {
    const value = Number(streamError?.[name] ?? 0);
    if (Number.isSafeInteger(value) && value > 0) details[name] = value;
  }
  return new AtollError(code, streamError?.message || 'the request failed', details);
}
