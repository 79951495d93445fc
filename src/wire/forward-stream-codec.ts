/**
 * The Peer.ForwardStream messages (proto/atoll/v1/cluster.proto): a forwarding node's frames (a
 * forwarded request with its call id and the time left until its deadline, or the cancellation of a
 * call) and the leader's replies (one call's ForwardResponse, or the status a unary Peer.Forward
 * would have failed with). The stream itself is src/peer/forward-stream.ts (the forwarding side)
 * and src/peer/forward-service.ts (the leader's side).
 *
 * A frame is written by hand around the ForwardRequest that encodeForwardRequest makes
 * (forward-codec.ts), so a request that travels as the bytes it arrived as still does: its
 * envelope goes into the frame's `request` field unchanged, which protobuf reads as the embedded
 * ForwardRequest it is. A reply's failure carries the status exactly as serviceErrorOf makes it for
 * a unary call (code, message, trailing metadata: the Atoll code, leader hint, not-applied mark,
 * and the rest of grpc-errors.ts's keys), so atollErrorOfServiceError rebuilds the same AtollError
 * on the forwarding node.
 *
 * Size: a frame or reply is at most limits.maxMessageBytes, the gRPC message bound of both ends, or
 * it would end the whole stream. A frame past it is not made (the caller sends that request as a
 * unary call); a reply past it is replaced by the RESOURCE_EXHAUSTED status grpc-js gives a unary
 * answer that is too large.
 */
import * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/grpc-js';
import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import type { KvResult } from '../api/operations.js';
import { encodeForwardResponse, varintBytes, writeVarint } from './forward-codec.js';
import type { ReceivedStatus } from './grpc-errors.js';
import { packageDefinition } from './protos.js';
import type { ForwardFrameMessage, ForwardReplyMessage, ForwardRequestMessage, ForwardStatusMessage } from './wire-types.js';

const peerMethods = packageDefinition['atoll.v1.Peer'] as unknown as Record<string, MethodDefinition<unknown, unknown>>;
const serializeForwardRequest = peerMethods['Forward']!.requestSerialize;
const serializeReply = peerMethods['ForwardStream']!.responseSerialize;

/** ForwardFrame's field tags: call_id and timeout_ms (varints), request (length-delimited), cancel (a varint). */
const callIdTag = (1 << 3) | 0;
const timeoutTag = (2 << 3) | 0;
const requestTag = (3 << 3) | 2;
const cancelTag = (4 << 3) | 0;
const maxUint32 = 0xffff_ffff;

/** A call id: 1 to 2^32 - 1 (0 is a frame's unset field). */
export function isForwardCallId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 && value <= maxUint32;
}

/**
 * The frame that starts call `callId`: the ForwardRequest `request` (bytes already written go in
 * unchanged; a message object is serialized) and the time left until its deadline, `timeoutMs`
 * (rounded up, at least 1: 0 would mean none). Undefined when the frame would pass the message bound.
 */
export function encodeForwardCallFrame(callId: number, timeoutMs: number, request: ForwardRequestMessage | Buffer): Buffer | undefined {
  const envelope = Buffer.isBuffer(request) ? request : serializeForwardRequest(request);
  const timeout = Math.min(Math.max(1, Math.ceil(timeoutMs)), maxUint32);
  const size = 1 + varintBytes(callId) + 1 + varintBytes(timeout) + 1 + varintBytes(envelope.length) + envelope.length;
  if (size > limits.maxMessageBytes) return undefined;
  const frame = Buffer.allocUnsafe(size);
  let at = writeVarint(frame, 0, callIdTag);
  at = writeVarint(frame, at, callId);
  at = writeVarint(frame, at, timeoutTag);
  at = writeVarint(frame, at, timeout);
  at = writeVarint(frame, at, requestTag);
  at = writeVarint(frame, at, envelope.length);
  envelope.copy(frame, at);
  return frame;
}

/** The frame that cancels call `callId`. */
export function encodeForwardCancelFrame(callId: number): Buffer {
  const frame = Buffer.allocUnsafe(1 + varintBytes(callId) + 2);
  let at = writeVarint(frame, 0, callIdTag);
  at = writeVarint(frame, at, callId);
  at = writeVarint(frame, at, cancelTag);
  writeVarint(frame, at, 1);
  return frame;
}

/** A frame as the leader reads it. `timeoutMs` is undefined when the caller gave no deadline. */
export type ForwardFrame =
  | { readonly kind: 'request'; readonly callId: number; readonly timeoutMs: number | undefined; readonly request: unknown }
  | { readonly kind: 'cancel'; readonly callId: number };

/** Reads a decoded ForwardFrame; one without a call id or a body is INVALID_ARGUMENT. */
export function decodeForwardFrame(message: unknown): ForwardFrame {
  const frame = (typeof message === 'object' && message !== null ? message : {}) as ForwardFrameMessage;
  if (!isForwardCallId(frame.callId)) throw new AtollError('INVALID_ARGUMENT', 'a ForwardFrame needs a call_id from 1 to 2^32 - 1');
  if (frame.body === 'cancel') return { kind: 'cancel', callId: frame.callId };
  if (frame.body !== 'request' || typeof frame.request !== 'object' || frame.request === null) {
    throw new AtollError('INVALID_ARGUMENT', `ForwardFrame ${frame.callId} carries neither a request nor a cancellation`);
  }
  const timeoutMs = typeof frame.timeoutMs === 'number' && frame.timeoutMs > 0 ? frame.timeoutMs : undefined;
  return { kind: 'request', callId: frame.callId, timeoutMs, request: frame.request };
}

/** The reply that answers call `callId` with `result`. */
export function forwardReplyOfResult(callId: number, result: KvResult): ForwardReplyMessage {
  return { callId, response: encodeForwardResponse(result) };
}

/** The reply that fails call `callId` with `status` (serviceErrorOf's, as a unary call would end). */
export function forwardReplyOfStatus(callId: number, status: grpc.StatusObject): ForwardReplyMessage {
  const metadata: ForwardStatusMessage['metadata'] = [];
  for (const [key, value] of Object.entries(status.metadata.getMap())) {
    if (typeof value === 'string') metadata.push({ key, value });
  }
  return { callId, error: { code: status.code, message: status.details, metadata } };
}

/**
 * A reply's bytes, for the leader to write as they are (the stream's response serializer lets a
 * Buffer through): a reply past the message bound would end the whole stream, so it becomes the
 * status grpc-js ends a unary call with when its answer is too large.
 */
export function serializeForwardReply(reply: ForwardReplyMessage): Buffer {
  const bytes = serializeReply(reply);
  if (bytes.length <= limits.maxMessageBytes) return bytes;
  const tooLarge = `Sent message larger than max (${bytes.length} vs. ${limits.maxMessageBytes})`;
  return serializeReply({ callId: reply.callId, error: { code: grpc.status.RESOURCE_EXHAUSTED, message: tooLarge, metadata: [] } });
}

/** A reply as the forwarding node reads it: the call it answers, and its ForwardResponse or its status. */
export type ForwardAnswer =
  | { readonly callId: number; readonly response: unknown; readonly status?: undefined }
  | { readonly callId: number; readonly status: ReceivedStatus };

/** Reads a decoded ForwardReply; one without a call id or an answer is INTERNAL (a broken peer). */
export function decodeForwardReply(message: unknown): ForwardAnswer {
  const reply = (typeof message === 'object' && message !== null ? message : {}) as ForwardReplyMessage;
  if (!isForwardCallId(reply.callId)) throw new AtollError('INTERNAL', 'a ForwardReply without a call id');
  if (reply.body === 'response') return { callId: reply.callId, response: reply.response };
  if (reply.body !== 'error' || typeof reply.error !== 'object' || reply.error === null) {
    throw new AtollError('INTERNAL', `ForwardReply ${reply.callId} carries neither a response nor an error`);
  }
  const { code, message: details, metadata: entries } = reply.error;
  const metadata = new grpc.Metadata();
  for (const entry of entries ?? []) {
    // Only text values travel (grpc-errors.ts sends no binary keys); a key grpc-js refuses is left out.
    if (typeof entry.key !== 'string' || typeof entry.value !== 'string' || entry.key.endsWith('-bin')) continue;
    try {
      metadata.add(entry.key, entry.value);
    } catch {
      continue;
    }
  }
  return { callId: reply.callId, status: { code: Number(code ?? grpc.status.UNKNOWN), details: typeof details === 'string' ? details : '', metadata } };
}
