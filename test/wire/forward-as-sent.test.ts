/**
 * A request a node forwards travels as the bytes it arrived as (issue 34 item 4): the
 * ForwardRequest carries the received message (a unary call's, or the range of a KV.Stream
 * request's operation) unchanged in its kind's `*_as_sent` field, the leader decodes it once, and
 * nothing is encoded again (src/wire/forward-codec.ts).
 */
import type * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { requestPathSnapshot } from '../../src/api/request-path-counters.js';
import { decodeForwardRequest, encodeForwardRequest, forwardRequestSerializer } from '../../src/wire/forward-codec.js';
import { decodeKvRequest, kvCodecs, type KvOperation } from '../../src/wire/kv-operation.js';
import { kvServiceDefinition, peerServiceDefinition } from '../../src/wire/protos.js';
import { decodeStreamRequest, encodeStreamRequest } from '../../src/wire/stream-codec.js';
import { sentBytes } from '../../src/wire/wire-utf8.js';

const kv = kvServiceDefinition as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
const forward = (peerServiceDefinition as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>)['Forward']!;

/** The operation as a node decodes it from a unary call: the client's bytes, received (with their bytes kept). */
function receivedUnary(operation: KvOperation): KvOperation {
  const codec = kvCodecs[operation.kind] as unknown as { method: string; encodeRequest(request: unknown): unknown };
  const method = kv[codec.method]!;
  return decodeKvRequest(operation.kind, method.requestDeserialize(method.requestSerialize(codec.encodeRequest(operation.request))));
}

const operations: KvOperation[] = [
    { kind: 'get', request: { key: 'a/b', revision: 3, consistency: 'stale' } },
    { kind: 'put', request: { key: 'a/b', value: Uint8Array.of(1, 2), ttlMs: 100, returnPrevious: true, requestId: 'r-0' } },
    { kind: 'delete', request: { key: 'a/b', ifModRevision: 0 } },
    { kind: 'increment', request: { key: 'a/b', delta: -(2n ** 63n) } },
    { kind: 'exists', request: { key: 'a/b', consistency: 'linearizable' } },
    { kind: 'extend', request: { key: 'a/b', ttlMs: 5 } },
    { kind: 'getByPrefix', request: { prefix: 'a', limit: 5, consistency: 'linearizable' } },
    { kind: 'beginTransaction', request: { key: 'bank', isolation: 'serializable' } },
    { kind: 'commit', request: { transaction: 'atx1.e30', writes: [{ key: 'bank/a', value: Uint8Array.of(1) }, { key: 'bank/b', delete: true }], readKeys: ['bank/d'], readPrefixes: ['bank/'], requestId: 'r-1' } },
    { kind: 'executeScript', request: { script: 'return @x', params: { x: '[1,"two"]' }, isolation: 'snapshot', bucket: 'b', requestId: 'r-2' } },
    { kind: 'lease', request: { action: 'grant', key: 'a/b', ttlMs: 1_000 } },
];

/** The leader's side of a forward: the envelope on the wire and decoded by Peer.Forward's deserializer. */
function atLeader(envelope: unknown): ReturnType<typeof decodeForwardRequest> {
  return decodeForwardRequest(forward.requestDeserialize(forwardRequestSerializer(forward.requestSerialize)(envelope)));
}

describe('a unary request forwarded as it was sent', () => {
  it.each(operations)('$kind: its bytes go out unchanged, the leader decodes the same request, nothing is encoded again', (operation) => {
    const received = receivedUnary(operation);
    expect(received.sent).toBeInstanceOf(Uint8Array);
    const before = requestPathSnapshot();
    // Several-byte varints (hops 300) and a tenant in more than ASCII.
    const envelope = encodeForwardRequest({ hops: 300, operation: received, tenant: 'ténant' });
    expect(Buffer.isBuffer(envelope)).toBe(true);
    expect(requestPathSnapshot().reencodes).toBe(before.reencodes);
    // The request's bytes are in the envelope as they arrived.
    expect((envelope as Buffer).includes(Buffer.from(received.sent as Uint8Array))).toBe(true);
    const decoded = atLeader(envelope);
    expect(decoded.hops).toBe(300);
    expect(decoded.tenant).toBe('ténant');
    expect(decoded.asSent).toBe(true);
    expect({ kind: decoded.operation.kind, request: decoded.operation.request }).toEqual({ kind: received.kind, request: received.request });
    // The leader's operation has no bytes of its own: if it forwards again, it encodes its mapped form.
    expect(decoded.operation.sent).toBeUndefined();
  });

  it('an operation without its bytes (a second forward, a call the node makes itself) is encoded again and counted', () => {
    const before = requestPathSnapshot();
    const message = encodeForwardRequest({ hops: 1, operation: { kind: 'get', request: { key: 'k', consistency: 'linearizable' } } });
    expect(Buffer.isBuffer(message)).toBe(false);
    expect(requestPathSnapshot().reencodes).toBe(before.reencodes + 1);
    const decoded = atLeader(message);
    expect(decoded.asSent).toBeUndefined();
    expect(decoded.operation).toEqual({ kind: 'get', request: { key: 'k', consistency: 'linearizable' } });
  });
});

describe('a KV.Stream request forwarded as it was sent', () => {
  const stream = kv['Stream']!;

  /** A StreamRequest as the server's KV.Stream session decodes it: with the bytes it arrived as. */
  function receivedOnStream(message: object): KvOperation {
    const received = stream.requestDeserialize(stream.requestSerialize(message)) as object;
    const decoded = decodeStreamRequest(received, sentBytes.get(received));
    if (decoded.body.kind !== 'operation') throw new Error('not an operation');
    return decoded.body.operation;
  }

  it.each(operations)('$kind: its operation\'s range of the StreamRequest goes out unchanged, the leader decodes the same request', (operation) => {
    // A long id and timeout before the operation, so its range starts past several-byte varints.
    const received = receivedOnStream(encodeStreamRequest('18446744073709551615', 300_000, { kind: 'operation', operation }));
    expect(received.sent).toBeInstanceOf(Uint8Array);
    const before = requestPathSnapshot();
    const envelope = encodeForwardRequest({ hops: 1, operation: received, tenant: 't' });
    expect(Buffer.isBuffer(envelope)).toBe(true);
    expect(requestPathSnapshot().reencodes).toBe(before.reencodes);
    const decoded = atLeader(envelope);
    expect(decoded.asSent).toBe(true);
    expect({ kind: decoded.operation.kind, request: decoded.operation.request }).toEqual({ kind: received.kind, request: received.request });
  });

  it('an operation whose field comes twice is encoded again (protobuf merges repeated message fields; protobufjs keeps the last)', () => {
    const once = stream.requestSerialize({ id: '1', put: { key: 'first', value: Buffer.from('a') } });
    const twice = Buffer.concat([once, stream.requestSerialize({ put: { key: 'second', value: Buffer.from('b') } })]);
    const received = stream.requestDeserialize(twice) as object;
    const decoded = decodeStreamRequest(received, sentBytes.get(received));
    expect(decoded.body.kind === 'operation' && decoded.body.operation.sent).toBeUndefined();
    expect(decoded.body.kind === 'operation' && decoded.body.operation.request).toMatchObject({ key: 'second' });
  });
});
