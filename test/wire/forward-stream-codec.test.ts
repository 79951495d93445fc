/**
 * The Peer.ForwardStream messages (src/wire/forward-stream-codec.ts): a frame carries the
 * ForwardRequest envelope a unary Peer.Forward would send, byte for byte (a request forwarded as it
 * arrived is still not encoded again), and a reply carries the status a unary call would end with,
 * from which the forwarding node rebuilds the same AtollError.
 */
import type * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { requestPathSnapshot } from '../../src/api/request-path-counters.js';
import { AtollError } from '../../src/errors.js';
import { limits } from '../../src/limits.js';
import { decodeForwardRequest, encodeForwardRequest } from '../../src/wire/forward-codec.js';
import {
  decodeForwardFrame,
  decodeForwardReply,
  encodeForwardCallFrame,
  encodeForwardCancelFrame,
  forwardReplyOfStatus,
  serializeForwardReply,
} from '../../src/wire/forward-stream-codec.js';
import { atollErrorOfServiceError, serviceErrorOf } from '../../src/wire/grpc-errors.js';
import { decodeKvRequest, kvCodecs, type KvOperation } from '../../src/wire/kv-operation.js';
import { kvServiceDefinition, peerServiceDefinition } from '../../src/wire/protos.js';
import { wireProblemOf } from '../../src/wire/wire-utf8.js';

const peer = peerServiceDefinition as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
const stream = peer['ForwardStream']!;
const kv = kvServiceDefinition as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;

/** A Put as a node decodes it from a unary call: with the bytes it arrived as. */
function receivedPut(key: string): KvOperation {
  const codec = kvCodecs.put as unknown as { method: string; encodeRequest(request: unknown): unknown };
  const method = kv[codec.method]!;
  return decodeKvRequest('put', method.requestDeserialize(method.requestSerialize(codec.encodeRequest({ key, value: Uint8Array.of(1, 2, 3), requestId: 'r-1' }))));
}

describe('a ForwardStream frame', () => {
  it('carries the envelope of a request forwarded as it arrived unchanged, which the leader decodes once', () => {
    const received = receivedPut('a/b');
    const before = requestPathSnapshot();
    const envelope = encodeForwardRequest({ hops: 2, operation: received, tenant: 't' }) as Buffer;
    const frame = encodeForwardCallFrame(4_000_000_000, 1_234.2, envelope)!;
    expect(requestPathSnapshot().reencodes).toBe(before.reencodes);
    expect(frame.includes(envelope)).toBe(true);
    const decoded = decodeForwardFrame(stream.requestDeserialize(frame));
    expect(decoded).toMatchObject({ kind: 'request', callId: 4_000_000_000, timeoutMs: 1_235 });
    const forwarded = decodeForwardRequest(decoded.kind === 'request' ? decoded.request : undefined);
    expect(forwarded).toMatchObject({ hops: 2, tenant: 't', asSent: true });
    expect(forwarded.operation.request).toEqual(received.request);
  });

  it('serializes a request written as a message (a second forward) and carries it the same way', () => {
    const message = encodeForwardRequest({ hops: 1, operation: { kind: 'get', request: { key: 'k', consistency: 'linearizable' } } });
    const decoded = decodeForwardFrame(stream.requestDeserialize(encodeForwardCallFrame(1, 10, message)!));
    expect(decoded.kind === 'request' && decodeForwardRequest(decoded.request).operation).toEqual({ kind: 'get', request: { key: 'k', consistency: 'linearizable' } });
  });

  it('is not made past the message bound (the request then goes unary)', () => {
    expect(encodeForwardCallFrame(1, 10, Buffer.alloc(limits.maxMessageBytes))).toBeUndefined();
  });

  it('cancels a call by its id', () => {
    expect(decodeForwardFrame(stream.requestDeserialize(encodeForwardCancelFrame(77)))).toEqual({ kind: 'cancel', callId: 77 });
  });

  it('shows invalid UTF-8 in its request under the request field, and a frame without a call id is refused', () => {
    const envelope = Buffer.from(encodeForwardRequest({ hops: 0, operation: receivedPut('ab') }) as Buffer);
    const at = envelope.indexOf(Buffer.from('ab'));
    envelope[at] = 0xff;
    const problem = wireProblemOf(stream.requestDeserialize(encodeForwardCallFrame(5, 10, envelope)!));
    expect(problem).toMatchObject({ reason: 'invalid-utf8', keyLike: true });
    expect(problem?.field.startsWith('request.')).toBe(true);
    expect(() => decodeForwardFrame({ body: 'cancel' })).toThrow(/call_id/);
  });
});

describe('a ForwardStream reply', () => {
  it('carries the status of a failed call, from which the same AtollError is rebuilt as from a unary call', () => {
    const error = new AtollError('NOT_LEADER', 'partition 3: not the leader', { leaderHint: { nodeId: 2, address: 'h:1' }, neverSent: true, reason: 'some-reason' });
    const status = serviceErrorOf(error);
    const reply = decodeForwardReply(stream.responseDeserialize(serializeForwardReply(forwardReplyOfStatus(9, status))));
    expect(reply.callId).toBe(9);
    expect(atollErrorOfServiceError(reply.status!)).toEqual(atollErrorOfServiceError(status as grpc.ServiceError));
  });

  it('past the message bound becomes the RESOURCE_EXHAUSTED status of a unary answer too large', () => {
    const huge = { callId: 3, response: { get: { found: true, value: Buffer.alloc(limits.maxMessageBytes) } } };
    const reply = decodeForwardReply(stream.responseDeserialize(serializeForwardReply(huge)));
    expect(reply.callId).toBe(3);
    expect(atollErrorOfServiceError(reply.status!)).toMatchObject({ code: 'RESOURCE_EXHAUSTED', details: { fromTransport: true } });
  });
});
