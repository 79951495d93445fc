/**
 * The Peer.ForwardStream messages (src/wire/forward-stream-codec.ts): a frame is the entries of the
 * calls sent together, side by side; a call carries the ForwardRequest envelope a unary
 * Peer.Forward would send, byte for byte (a request forwarded as it arrived is still not encoded
 * again), which the leader reads with Peer.Forward's own checked deserializer; a reply carries the
 * status a unary call would end with, from which the forwarding node rebuilds the same AtollError.
 */
import type * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { requestPathSnapshot } from '../../src/api/request-path-counters.js';
import { AtollError } from '../../src/errors.js';
import { limits } from '../../src/limits.js';
import { decodeForwardRequest, decodeForwardResponse, encodeForwardRequest } from '../../src/wire/forward-codec.js';
import {
  decodeForwardFrame,
  decodeForwardReply,
  encodeForwardCall,
  encodeForwardCancel,
  encodeForwardReply,
  forwardRepliesOf,
  forwardReplyOfResult,
  forwardReplyOfStatus,
} from '../../src/wire/forward-stream-codec.js';
import { atollErrorOfServiceError, serviceErrorOf } from '../../src/wire/grpc-errors.js';
import { decodeKvRequest, kvCodecs, type KvOperation } from '../../src/wire/kv-operation.js';
import { kvServiceDefinition, peerServiceDefinition } from '../../src/wire/protos.js';
import { wireProblemOf } from '../../src/wire/wire-utf8.js';

const peer = peerServiceDefinition as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
const stream = peer['ForwardStream']!;
const forward = peer['Forward']!;
const kv = kvServiceDefinition as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;

/** A Put as a node decodes it from a unary call: with the bytes it arrived as. */
function receivedPut(key: string): KvOperation {
  const codec = kvCodecs.put as unknown as { method: string; encodeRequest(request: unknown): unknown };
  const method = kv[codec.method]!;
  return decodeKvRequest('put', method.requestDeserialize(method.requestSerialize(codec.encodeRequest({ key, value: Uint8Array.of(1, 2, 3), requestId: 'r-1' }))));
}

/** The calls of a frame of `entries`, as the leader reads them off the wire. */
function atLeader(...entries: Buffer[]): ReturnType<typeof decodeForwardFrame> {
  return decodeForwardFrame(stream.requestDeserialize(Buffer.concat(entries)));
}

describe('a ForwardStream frame', () => {
  it('carries the envelope of a request forwarded as it arrived unchanged, which the leader decodes once', () => {
    const received = receivedPut('a/b');
    const before = requestPathSnapshot();
    const envelope = encodeForwardRequest({ hops: 2, operation: received, tenant: 't' }) as Buffer;
    const entry = encodeForwardCall(4_000_000_000, 1_234.2, envelope)!;
    expect(requestPathSnapshot().reencodes).toBe(before.reencodes);
    const [call] = atLeader(entry);
    expect(call).toMatchObject({ kind: 'request', callId: 4_000_000_000, timeoutMs: 1_235 });
    const request = call!.kind === 'request' ? call!.request : Buffer.alloc(0);
    expect(request.equals(envelope)).toBe(true);
    const forwarded = decodeForwardRequest(forward.requestDeserialize(request));
    expect(forwarded).toMatchObject({ hops: 2, tenant: 't', asSent: true });
    expect(forwarded.operation.request).toEqual(received.request);
  });

  it('holds the calls and cancellations sent together, in order; a request written as a message (a second forward) is serialized', () => {
    const message = encodeForwardRequest({ hops: 1, operation: { kind: 'get', request: { key: 'k', consistency: 'linearizable' } } });
    const calls = atLeader(encodeForwardCall(1, 10, message)!, encodeForwardCancel(77), encodeForwardCall(2, 20, encodeForwardRequest({ hops: 0, operation: receivedPut('x') }))!);
    expect(calls.map((call) => [call.kind, call.callId])).toEqual([['request', 1], ['cancel', 77], ['request', 2]]);
    const first = calls[0]!;
    expect(first.kind === 'request' && decodeForwardRequest(forward.requestDeserialize(first.request)).operation).toEqual({ kind: 'get', request: { key: 'k', consistency: 'linearizable' } });
  });

  it('has no call past the message bound (the request then goes unary)', () => {
    expect(encodeForwardCall(1, 10, Buffer.alloc(limits.maxMessageBytes))).toBeUndefined();
  });

  it("leaves a request's invalid UTF-8 for Peer.Forward's check, which names the field as for a unary call; a call without an id is refused", () => {
    const envelope = Buffer.from(encodeForwardRequest({ hops: 0, operation: receivedPut('ab') }) as Buffer);
    envelope[envelope.indexOf(Buffer.from('ab'))] = 0xff;
    const [call] = atLeader(encodeForwardCall(5, 10, envelope)!);
    const request = call!.kind === 'request' ? call!.request : Buffer.alloc(0);
    expect(wireProblemOf(forward.requestDeserialize(request))).toEqual(wireProblemOf(forward.requestDeserialize(envelope)));
    expect(wireProblemOf(forward.requestDeserialize(request))).toMatchObject({ reason: 'invalid-utf8', keyLike: true, field: 'put_as_sent.key' });
    expect(() => decodeForwardFrame({ calls: [{ body: 'cancel' }] })).toThrow(/call_id/);
  });
});

describe('a ForwardStream reply frame', () => {
  it('carries answers and failed calls\' statuses, from which the same AtollError is rebuilt as from a unary call', () => {
    const error = new AtollError('NOT_LEADER', 'partition 3: not the leader', { leaderHint: { nodeId: 2, address: 'h:1' }, neverSent: true, reason: 'some-reason' });
    const status = serviceErrorOf(error);
    const result = { kind: 'get', response: { found: true, value: Buffer.from('v'), createRevision: 1, modRevision: 2, version: 1, expiresAtMs: 0, revision: 3 } } as const;
    const frame = Buffer.concat([encodeForwardReply(forwardReplyOfStatus(9, status)), encodeForwardReply(forwardReplyOfResult(10, result))]);
    const [failed, answered] = forwardRepliesOf(stream.responseDeserialize(frame)).map(decodeForwardReply);
    expect(failed!.callId).toBe(9);
    expect(atollErrorOfServiceError(failed!.status!)).toEqual(atollErrorOfServiceError(status as grpc.ServiceError));
    expect(answered!.callId).toBe(10);
    expect(answered!.status === undefined && decodeForwardResponse(answered!.response)).toMatchObject({ kind: 'get', response: { found: true, revision: 3 } });
  });

  it('has a reply past the message bound replaced by the RESOURCE_EXHAUSTED status of a unary answer too large', () => {
    const huge = { callId: 3, response: { get: { found: true, value: Buffer.alloc(limits.maxMessageBytes) } } };
    const [reply] = forwardRepliesOf(stream.responseDeserialize(encodeForwardReply(huge))).map(decodeForwardReply);
    expect(reply!.callId).toBe(3);
    expect(atollErrorOfServiceError(reply!.status!)).toMatchObject({ code: 'RESOURCE_EXHAUSTED', details: { fromTransport: true } });
  });
});
