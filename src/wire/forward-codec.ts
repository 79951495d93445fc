/**
 * The Peer.Forward messages: a node that does not lead a key's partition sends the client's request
 * to the leader in a ForwardRequest and relays the ForwardResponse (or the error status) back.
 * Failures travel as gRPC statuses in both directions: see grpc-errors.ts (`serviceErrorOf` on the
 * leader, `atollErrorOfServiceError` on the forwarding node).
 *
 * A request that came from a client (a unary call, or a KV.Stream request: the range of its
 * operation's field in the StreamRequest) travels as the bytes it arrived as (issue 34 item 4): its
 * message is written unchanged into the `*_as_sent` field of its kind, which protobuf reads exactly
 * as the embedded request message it is, so the leader decodes it once and is handed the request in
 * the caller's form, which it moves into the caller's tenant itself. Any other (a request a leader
 * that lost its leadership forwards again, the node's own calls) is encoded again, in the tenant's
 * internal form, and counted as a re-encode.
 */
import { AtollError } from '../errors.js';
import { requestPathCounters } from '../api/request-path-counters.js';
import { decodeKvOperation, decodeKvResult, encodeKvOperation, encodeKvResult, type KvKind, type KvOperation, type KvResult } from './kv-operation.js';
import { parseWireUint32 } from './wire-numbers.js';
import type { ForwardRequestMessage, ForwardResponseMessage } from './wire-types.js';

export interface ForwardedOperation {
  /** How many nodes forwarded the request before this one received it. */
  readonly hops: number;
  readonly operation: KvOperation;
  /** The caller's tenant, as the node that authenticated it found (absent: the default tenant). */
  readonly tenant?: string;
  /** The request is as the caller sent it (its keys in the caller's form), not in the tenant's internal form. */
  readonly asSent?: true;
}

/** ForwardRequest's field numbers (proto/atoll/v1/cluster.proto): hops, tenant, and each kind's request as sent. */
const hopsField = 1;
const tenantField = 2;
const asSentFields: { readonly [K in KvKind]: number } = Object.freeze({
  get: 30,
  put: 31,
  delete: 32,
  increment: 33,
  exists: 34,
  extend: 35,
  getByPrefix: 36,
  beginTransaction: 37,
  commit: 38,
  executeScript: 39,
  lease: 40,
});
/** The oneof case names of the as-sent fields end with this (`putAsSent`). */
const asSentSuffix = 'AsSent';

/**
 * The ForwardRequest to send: the request's own bytes when it has them (`operation.sent`), already
 * a whole message; else the operation encoded again into a message object (counted: a re-encode).
 */
export function encodeForwardRequest(forwarded: ForwardedOperation): ForwardRequestMessage | Buffer {
  const { sent } = forwarded.operation;
  if (sent !== undefined) return forwardEnvelope(forwarded.hops, forwarded.tenant ?? '', asSentFields[forwarded.operation.kind], sent);
  requestPathCounters.reencodes++;
  return { hops: forwarded.hops, tenant: forwarded.tenant ?? '', ...encodeKvOperation(forwarded.operation) };
}

/** Protobuf's varint of `value` (a non-negative integer below 2^32) at `at`; returns where it ended. */
export function writeVarint(out: Buffer, at: number, value: number): number {
  let rest = value;
  while (rest > 0x7f) {
    out[at++] = (rest & 0x7f) | 0x80;
    rest = Math.floor(rest / 128);
  }
  out[at++] = rest;
  return at;
}

/** How many bytes protobuf's varint of `value` (a non-negative integer below 2^32) takes. */
export function varintBytes(value: number): number {
  let bytes = 1;
  for (let rest = value; rest > 0x7f; rest = Math.floor(rest / 128)) bytes++;
  return bytes;
}

/** A ForwardRequest message written by hand: hops, the tenant, and `sent` as the length-delimited field `field`. */
function forwardEnvelope(hops: number, tenant: string, field: number, sent: Uint8Array): Buffer {
  const tenantBytes = Buffer.from(tenant, 'utf8');
  const fieldTag = (field << 3) | 2;
  const size =
    1 + varintBytes(hops) + (tenantBytes.length === 0 ? 0 : 1 + varintBytes(tenantBytes.length) + tenantBytes.length) + varintBytes(fieldTag) + varintBytes(sent.length) + sent.length;
  const out = Buffer.allocUnsafe(size);
  let at = writeVarint(out, 0, (hopsField << 3) | 0);
  at = writeVarint(out, at, hops);
  if (tenantBytes.length > 0) {
    at = writeVarint(out, at, (tenantField << 3) | 2);
    at = writeVarint(out, at, tenantBytes.length);
    out.set(tenantBytes, at);
    at += tenantBytes.length;
  }
  at = writeVarint(out, at, fieldTag);
  at = writeVarint(out, at, sent.length);
  out.set(sent, at);
  return out;
}

/** The Peer.Forward request serializer of the client: an envelope already written goes out as it is. */
export function forwardRequestSerializer(serialize: (value: unknown) => Buffer): (value: unknown) => Buffer {
  return (value) => (Buffer.isBuffer(value) ? value : serialize(value));
}

export function decodeForwardRequest(message: unknown): ForwardedOperation {
  if (typeof message !== 'object' || message === null) throw new AtollError('INVALID_ARGUMENT', 'ForwardRequest must be a message');
  const request = message as ForwardRequestMessage;
  const tenant = typeof request.tenant === 'string' && request.tenant !== '' ? request.tenant : undefined;
  const hops = parseWireUint32(request.hops ?? 0, 'hops');
  const field = request.request;
  if (typeof field === 'string' && field.endsWith(asSentSuffix)) {
    const kind = field.slice(0, -asSentSuffix.length);
    const operation = decodeKvOperation({ [kind]: (request as Record<string, unknown>)[field] } as Parameters<typeof decodeKvOperation>[0], kind);
    return { hops, operation, ...(tenant !== undefined && { tenant }), asSent: true };
  }
  return { hops, operation: decodeKvOperation(request, field), ...(tenant !== undefined && { tenant }) };
}

export function encodeForwardResponse(result: KvResult): ForwardResponseMessage {
  return encodeKvResult(result);
}

export function decodeForwardResponse(message: unknown): KvResult {
  if (typeof message !== 'object' || message === null) throw new AtollError('INTERNAL', 'ForwardResponse must be a message');
  const response = message as ForwardResponseMessage;
  return decodeKvResult(response, response.response);
}
