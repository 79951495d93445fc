/**
 * The Peer.ForwardStream messages (proto/atoll/v1/cluster.proto): the forwarding node's frames,
 * each carrying the calls it started (a call id, the time left until its deadline and the encoded
 * ForwardRequest) or cancelled since its last one, and the leader's reply frames, each carrying the
 * answers ready since its last one (a call's ForwardResponse, or the status a unary Peer.Forward
 * would have failed with). The stream itself is src/peer/forward-stream.ts (the forwarding side)
 * and src/peer/forward-service.ts (the leader's side).
 *
 * Both sides build a frame from entries, each one call or one reply already encoded as a frame
 * that holds only it: protobuf reads concatenated messages as one with their repeated fields
 * joined, so a frame is its entries side by side, and each entry's size is known before it joins
 * one. A call is written by hand around the ForwardRequest envelope that encodeForwardRequest makes
 * (forward-codec.ts), so a request that travels as the bytes it arrived as still does. The leader
 * reads that envelope with Peer.Forward's own checked deserializer, as a unary call's. A reply's
 * failure carries the status exactly as serviceErrorOf makes it for a unary call (code, message,
 * trailing metadata: the Atoll code, leader hint, not-applied mark, and the rest of
 * grpc-errors.ts's keys), so atollErrorOfServiceError rebuilds the same AtollError on the
 * forwarding node.
 *
 * Size: an entry is at most limits.maxMessageBytes, the gRPC message bound of both ends, or a
 * frame holding it would end the whole stream. A call past it is not made (the caller sends that
 * request as a unary call); a reply past it is replaced by the RESOURCE_EXHAUSTED status grpc-js
 * gives a unary answer that is too large.
 */
import * as grpc from '@grpc/grpc-js';
import type { MethodDefinition } from '@grpc/grpc-js';
import { AtollError } from '../errors.js';
import { limits } from '../limits.js';
import type { KvResult } from '../api/operations.js';
import { encodeForwardResponse, varintBytes, writeVarint } from './forward-codec.js';
import type { ReceivedStatus } from './grpc-errors.js';
import { packageDefinition } from './protos.js';
import type { ForwardCallMessage, ForwardFrameMessage, ForwardReplyFrameMessage, ForwardReplyMessage, ForwardRequestMessage, ForwardStatusMessage } from './wire-types.js';

const peerMethods = packageDefinition['atoll.v1.Peer'] as unknown as Record<string, MethodDefinition<unknown, unknown>>;
const serializeForwardRequest = peerMethods['Forward']!.requestSerialize;
const serializeReplyFrame = peerMethods['ForwardStream']!.responseSerialize;

/** The field tag of ForwardFrame.calls (and of ForwardReplyFrame.replies): field 1, length-delimited. */
const entryTag = (1 << 3) | 2;
/** ForwardCall's field tags: call_id and timeout_ms (varints), request (length-delimited), cancel (a varint). */
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
 * The entry that starts call `callId`: the ForwardRequest `request` (bytes already written go in
 * unchanged; a message object is serialized) and the time left until its deadline, `timeoutMs`
 * (rounded up, at least 1: 0 would mean none). Undefined when it would pass the message bound.
 */
export function encodeForwardCall(callId: number, timeoutMs: number, request: ForwardRequestMessage | Buffer): Buffer | undefined {
  const envelope = Buffer.isBuffer(request) ? request : serializeForwardRequest(request);
  const timeout = Math.min(Math.max(1, Math.ceil(timeoutMs)), maxUint32);
  const callBytes = 1 + varintBytes(callId) + 1 + varintBytes(timeout) + 1 + varintBytes(envelope.length) + envelope.length;
  const size = 1 + varintBytes(callBytes) + callBytes;
  if (size > limits.maxMessageBytes) return undefined;
  const entry = Buffer.allocUnsafe(size);
  let at = writeVarint(entry, 0, entryTag);
  at = writeVarint(entry, at, callBytes);
  at = writeVarint(entry, at, callIdTag);
  at = writeVarint(entry, at, callId);
  at = writeVarint(entry, at, timeoutTag);
  at = writeVarint(entry, at, timeout);
  at = writeVarint(entry, at, requestTag);
  at = writeVarint(entry, at, envelope.length);
  envelope.copy(entry, at);
  return entry;
}

/** The entry that cancels call `callId`. */
export function encodeForwardCancel(callId: number): Buffer {
  const callBytes = 1 + varintBytes(callId) + 2;
  const entry = Buffer.allocUnsafe(2 + callBytes);
  let at = writeVarint(entry, 0, entryTag);
  at = writeVarint(entry, at, callBytes);
  at = writeVarint(entry, at, callIdTag);
  at = writeVarint(entry, at, callId);
  at = writeVarint(entry, at, cancelTag);
  writeVarint(entry, at, 1);
  return entry;
}

/** A call as the leader reads it. `timeoutMs` is undefined when the caller gave no deadline; `request` is an encoded ForwardRequest. */
export type ForwardCall =
  | { readonly kind: 'request'; readonly callId: number; readonly timeoutMs: number | undefined; readonly request: Buffer }
  | { readonly kind: 'cancel'; readonly callId: number };

/** Reads a decoded ForwardFrame's calls; a call without a call id or a body is INVALID_ARGUMENT. */
export function decodeForwardFrame(message: unknown): ForwardCall[] {
  const frame = (typeof message === 'object' && message !== null ? message : {}) as ForwardFrameMessage;
  if (!Array.isArray(frame.calls)) throw new AtollError('INVALID_ARGUMENT', 'a ForwardFrame needs its calls');
  return frame.calls.map(decodeForwardCall);
}

function decodeForwardCall(call: ForwardCallMessage): ForwardCall {
  if (!isForwardCallId(call.callId)) throw new AtollError('INVALID_ARGUMENT', 'a ForwardCall needs a call_id from 1 to 2^32 - 1');
  if (call.body === 'cancel') return { kind: 'cancel', callId: call.callId };
  if (call.body !== 'request' || !Buffer.isBuffer(call.request)) {
    throw new AtollError('INVALID_ARGUMENT', `ForwardCall ${call.callId} carries neither a request nor a cancellation`);
  }
  const timeoutMs = typeof call.timeoutMs === 'number' && call.timeoutMs > 0 ? call.timeoutMs : undefined;
  return { kind: 'request', callId: call.callId, timeoutMs, request: call.request };
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
 * The entry of a reply, for the leader to join into a frame and write as it is (the stream's
 * response serializer lets bytes through): one past the message bound would end the whole stream,
 * so it becomes the status grpc-js ends a unary call with when its answer is too large.
 */
export function encodeForwardReply(reply: ForwardReplyMessage): Buffer {
  const entry = serializeReplyFrame({ replies: [reply] } satisfies ForwardReplyFrameMessage);
  if (entry.length <= limits.maxMessageBytes) return entry;
  const tooLarge = `Sent message larger than max (${entry.length} vs. ${limits.maxMessageBytes})`;
  return serializeReplyFrame({ replies: [{ callId: reply.callId, error: { code: grpc.status.RESOURCE_EXHAUSTED, message: tooLarge, metadata: [] } }] });
}

/** The replies of a decoded ForwardReplyFrame (each for decodeForwardReply). */
export function forwardRepliesOf(message: unknown): readonly unknown[] {
  const replies = typeof message === 'object' && message !== null ? (message as ForwardReplyFrameMessage).replies : undefined;
  return Array.isArray(replies) ? replies : [];
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
