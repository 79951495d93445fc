/**
 * The conversions between API types and atoll.v1 messages, through real protobuf serialization:
 * round trips for every request and response (property-based), 64-bit range checks, the shape
 * checks that turn a malformed request into INVALID_ARGUMENT, and the Forward and Stream codecs.
 */
import * as grpc from '@grpc/grpc-js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import type { KeyRecord, PartitionInfo } from '../../src/api/node-api.js';
import * as convert from '../../src/wire/convert.js';
import * as clusterConvert from '../../src/wire/cluster-convert.js';
import { decodeForwardRequest, decodeForwardResponse, encodeForwardRequest, encodeForwardResponse } from '../../src/wire/forward-codec.js';
import { atollErrorOfServiceError, serviceErrorOf } from '../../src/wire/grpc-errors.js';
import type { KvOperation, KvResult } from '../../src/wire/kv-operation.js';
import { clusterServiceDefinition, kvServiceDefinition, packageDefinition, peerServiceDefinition, protoFilePaths } from '../../src/wire/protos.js';
import { decodeStreamRequest, decodeStreamResponse, encodeStreamError, encodeStreamRequest, encodeStreamResult } from '../../src/wire/stream-codec.js';

/** Encodes with protobuf and decodes again, as a message crossing the network would be. */
function overWire(method: grpc.MethodDefinition<unknown, unknown>, side: 'request' | 'response', message: unknown): unknown {
  if (side === 'request') return method.requestDeserialize(method.requestSerialize(message));
  return method.responseDeserialize(method.responseSerialize(message));
}

const kv = kvServiceDefinition as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
const peer = peerServiceDefinition as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;

const keyArbitrary = fc.string({ minLength: 1, maxLength: 40 });
const countArbitrary = fc.oneof(fc.constant(0), fc.constant(Number.MAX_SAFE_INTEGER), fc.integer({ min: 0, max: 2 ** 40 }));
const bytesArbitrary = fc.uint8Array({ maxLength: 64 });
const int64Arbitrary = fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
const recordArbitrary: fc.Arbitrary<KeyRecord> = fc.record({
  key: keyArbitrary,
  value: bytesArbitrary,
  createRevision: countArbitrary,
  modRevision: countArbitrary,
  version: countArbitrary,
  expiresAtMs: countArbitrary,
});

describe('protos', () => {
  it('load both files and every service', () => {
    expect(protoFilePaths.map((path) => path.replace(/.*proto\//, ''))).toEqual(['atoll/v1/kv.proto', 'atoll/v1/cluster.proto', 'atoll/v1/auth.proto']);
    expect(Object.keys(kvServiceDefinition)).toEqual([
      'Get',
      'Put',
      'Delete',
      'Increment',
      'Exists',
      'Extend',
      'Lease',
      'GetByPrefix',
      'BeginTransaction',
      'Commit',
      'ExecuteScript',
      'Stream',
      'Watch',
    ]);
    expect(packageDefinition['atoll.v1.Cluster']).toBeDefined();
    expect(Object.keys(peerServiceDefinition)).toEqual(['Raft', 'Forward', 'ForwardStream', 'PrepareReplica', 'NodeStatus']);
  });
});

describe('round trips through protobuf', () => {
  it('get requests and responses', () => {
    fc.assert(
      fc.property(keyArbitrary, fc.option(fc.integer({ min: 1, max: 2 ** 50 }), { nil: undefined }), fc.constantFrom('linearizable' as const, 'stale' as const), (key, revision, consistency) => {
        const request = revision === undefined ? { key, consistency } : { key, revision, consistency };
        expect(convert.decodeGetRequest(overWire(kv['Get']!, 'request', convert.encodeGetRequest(request)))).toEqual(request);
      }),
    );
    fc.assert(
      fc.property(fc.boolean(), bytesArbitrary, countArbitrary, countArbitrary, (found, value, revision, expiresAtMs) => {
        const response = { found, value, createRevision: revision, modRevision: revision, version: 1, expiresAtMs, revision };
        expect(convert.decodeGetResponse(overWire(kv['Get']!, 'response', convert.encodeGetResponse(response)))).toEqual(response);
      }),
    );
  });

  it('put requests keep every option, including an empty ifValue and ifModRevision 0', () => {
    fc.assert(
      fc.property(
        fc.record(
          {
            key: keyArbitrary,
            value: bytesArbitrary,
            ttlMs: fc.integer({ min: 1, max: 2 ** 40 }),
            keepTtl: fc.constant(true),
            ifAbsent: fc.constant(true),
            ifPresent: fc.constant(true),
            ifModRevision: countArbitrary,
            ifValue: bytesArbitrary,
            returnPrevious: fc.constant(true),
          },
          { requiredKeys: ['key', 'value'] },
        ),
        (request) => {
          expect(convert.decodePutRequest(overWire(kv['Put']!, 'request', convert.encodePutRequest(request)))).toEqual(request);
        },
      ),
    );
    const absentOnly = { key: 'k', value: new Uint8Array(), ifModRevision: 0, ifValue: new Uint8Array() };
    expect(convert.decodePutRequest(overWire(kv['Put']!, 'request', convert.encodePutRequest(absentOnly)))).toEqual(absentOnly);
  });

  it('put responses with and without previous', () => {
    fc.assert(
      fc.property(fc.boolean(), countArbitrary, fc.option(recordArbitrary, { nil: undefined }), (applied, revision, previous) => {
        const response = previous === undefined ? { applied, revision } : { applied, revision, previous };
        expect(convert.decodePutResponse(overWire(kv['Put']!, 'response', convert.encodePutResponse(response)))).toEqual(response);
      }),
    );
  });

  it('increments keep the full signed 64-bit range', () => {
    fc.assert(
      fc.property(keyArbitrary, int64Arbitrary, (key, delta) => {
        const request = { key, delta };
        expect(convert.decodeIncrementRequest(overWire(kv['Increment']!, 'request', convert.encodeIncrementRequest(request)))).toEqual(request);
        const response = { value: delta, revision: 9 };
        expect(convert.decodeIncrementResponse(overWire(kv['Increment']!, 'response', convert.encodeIncrementResponse(response)))).toEqual(response);
      }),
    );
  });

  it('delete, exists, extend and get-by-prefix', () => {
    const del = { key: 'a/b', ifModRevision: 4, ifValue: Uint8Array.of(1) };
    expect(convert.decodeDeleteRequest(overWire(kv['Delete']!, 'request', convert.encodeDeleteRequest(del)))).toEqual(del);
    const exists = { key: 'a', consistency: 'stale' as const };
    expect(convert.decodeExistsRequest(overWire(kv['Exists']!, 'request', convert.encodeExistsRequest(exists)))).toEqual(exists);
    const extend = { key: 'a', ttlMs: 1500 };
    expect(convert.decodeExtendRequest(overWire(kv['Extend']!, 'request', convert.encodeExtendRequest(extend)))).toEqual(extend);
    const extended = { extended: true, expiresAtMs: 1_700_000_000_000, revision: 3 };
    expect(convert.decodeExtendResponse(overWire(kv['Extend']!, 'response', convert.encodeExtendResponse(extended)))).toEqual(extended);
    const prefix = { prefix: 'svc', revision: 7, limit: 10, pageToken: 'abc', consistency: 'linearizable' as const };
    expect(convert.decodeGetByPrefixRequest(overWire(kv['GetByPrefix']!, 'request', convert.encodeGetByPrefixRequest(prefix)))).toEqual(prefix);
    fc.assert(
      fc.property(fc.array(recordArbitrary, { maxLength: 5 }), countArbitrary, fc.string(), (items, revision, nextPageToken) => {
        const page = { items, revision, nextPageToken };
        expect(convert.decodeGetByPrefixResponse(overWire(kv['GetByPrefix']!, 'response', convert.encodeGetByPrefixResponse(page)))).toEqual(page);
      }),
    );
  });
});

describe('shape checks', () => {
  const codeOf = (build: () => unknown): string | undefined => {
    try {
      build();
    } catch (error) {
      return error instanceof AtollError ? error.code : 'not an AtollError';
    }
    return undefined;
  };

  it('a missing key is INVALID_KEY, with a message that names the field', () => {
    expect(() => convert.decodeGetRequest({})).toThrow(/no key/);
    for (const decode of [convert.decodeGetRequest, convert.decodePutRequest, convert.decodeDeleteRequest, convert.decodeIncrementRequest, convert.decodeExistsRequest]) {
      expect(codeOf(() => decode({ key: '' }))).toBe('INVALID_KEY');
    }
  });

  it('malformed or out-of-range 64-bit integers are INVALID_ARGUMENT', () => {
    expect(codeOf(() => convert.decodeGetRequest({ key: 'a', revision: String(2 ** 53) }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => convert.decodeGetRequest({ key: 'a', revision: '9007199254740991' }))).toBeUndefined();
    expect(codeOf(() => convert.decodeGetRequest({ key: 'a', revision: '-1' }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => convert.decodeGetRequest({ key: 'a', revision: '12abc' }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => convert.decodeGetRequest({ key: 'a', revision: 1.5 }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => convert.decodeIncrementRequest({ key: 'a', delta: '9223372036854775808' }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => convert.decodePutRequest({ key: 'a', value: Buffer.alloc(0), ttlMs: '1e3' }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => convert.decodeGetRequest({ key: 'a', consistency: 'EVENTUAL' }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => convert.decodeExtendRequest({ key: 'a', ttlMs: '0' }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => clusterConvert.decodeTransferLeaderRequest({ partition: 1, targetNode: 0 }))).toBe('INVALID_ARGUMENT');
  });

  it('ClusterInfoRequest: partition ids as listed, none for all; a non-integer id or too many ids are INVALID_ARGUMENT', () => {
    expect(clusterConvert.decodeClusterInfoRequest({})).toEqual({});
    expect(clusterConvert.decodeClusterInfoRequest({ partitions: [] })).toEqual({});
    expect(clusterConvert.decodeClusterInfoRequest({ partitions: [3, 0, 4096] })).toEqual({ partitions: [3, 0, 4096] });
    expect(codeOf(() => clusterConvert.decodeClusterInfoRequest({ partitions: [1.5] }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => clusterConvert.decodeClusterInfoRequest({ partitions: [-1] }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => clusterConvert.decodeClusterInfoRequest({ partitions: 'all' }))).toBe('INVALID_ARGUMENT');
    expect(codeOf(() => clusterConvert.decodeClusterInfoRequest({ partitions: Array.from({ length: 65_537 }, () => 0) }))).toBe('INVALID_ARGUMENT');
  });

  it('revision 0 means the latest and is left out', () => {
    expect(convert.decodeGetRequest({ key: 'a', revision: '0' })).toEqual({ key: 'a', consistency: 'linearizable' });
    expect(convert.encodeGetRequest({ key: 'a', revision: 0 })).toEqual({ key: 'a', consistency: 'LINEARIZABLE' });
  });
});

describe('Forward codec (for the node)', () => {
  const operations: KvOperation[] = [
    { kind: 'get', request: { key: 'a/b', revision: 3, consistency: 'stale' } },
    { kind: 'put', request: { key: 'a/b', value: Uint8Array.of(1, 2), ttlMs: 100, returnPrevious: true } },
    { kind: 'delete', request: { key: 'a/b', ifModRevision: 0 } },
    { kind: 'increment', request: { key: 'a/b', delta: -(2n ** 63n) } },
    { kind: 'exists', request: { key: 'a/b', consistency: 'linearizable' } },
    { kind: 'extend', request: { key: 'a/b', ttlMs: 5 } },
    { kind: 'getByPrefix', request: { prefix: 'a', limit: 5, consistency: 'linearizable' } },
    { kind: 'get', request: { key: 'a/b', consistency: 'linearizable', transaction: 'atx1.e30' } },
    { kind: 'exists', request: { key: 'a/b', consistency: 'linearizable', transaction: 'atx1.e30' } },
    { kind: 'getByPrefix', request: { prefix: 'a', consistency: 'linearizable', pageToken: 'p', transaction: 'atx1.e30' } },
    { kind: 'beginTransaction', request: { key: 'bank', isolation: 'serializable' } },
    {
      kind: 'commit',
      request: {
        transaction: 'atx1.e30',
        writes: [{ key: 'bank/a', value: Uint8Array.of(1), ttlMs: 9 }, { key: 'bank/b', delete: true }, { key: 'bank/c', value: new Uint8Array(0), keepTtl: true }],
        readKeys: ['bank/d'],
        readPrefixes: ['bank/'],
        requestId: 'r-1',
      },
    },
    { kind: 'executeScript', request: { script: 'return @x', params: { x: '[1,"two"]' }, isolation: 'snapshot', bucket: 'b', requestId: 'r-2' } },
  ];

  it.each(operations)('$kind requests survive the wire with their hop count', (operation) => {
    const forwarded = { hops: 2, operation };
    expect(decodeForwardRequest(overWire(peer['Forward']!, 'request', encodeForwardRequest(forwarded)))).toEqual(forwarded);
  });

  it('responses survive the wire', () => {
    const results: KvResult[] = [
      { kind: 'get', response: { found: true, value: Uint8Array.of(7), createRevision: 1, modRevision: 2, version: 2, expiresAtMs: 0, revision: 2 } },
      { kind: 'put', response: { applied: false, revision: 5 } },
      { kind: 'increment', response: { value: 2n ** 63n - 1n, revision: 6 } },
      { kind: 'getByPrefix', response: { items: [], revision: 1, nextPageToken: '' } },
      { kind: 'beginTransaction', response: { transaction: 'atx1.e30', partition: 3, bucket: 'bank', snapshotRevision: 41, isolation: 'serializable', expiresAtMs: 1_700_000_060_000 } },
      { kind: 'commit', response: { revision: 42 } },
      { kind: 'executeScript', response: { resultJson: '{"a":[1,2]}', committed: true, revision: 43, attempts: 2 } },
    ];
    for (const result of results) {
      expect(decodeForwardResponse(overWire(peer['Forward']!, 'response', encodeForwardResponse(result)))).toEqual(result);
    }
  });

  it('a forward request without an operation is INVALID_ARGUMENT', () => {
    expect(() => decodeForwardRequest(overWire(peer['Forward']!, 'request', { hops: 1 }))).toThrow(/names no operation/);
  });
});

describe('Stream codec', () => {
  it('requests, results and errors survive the wire', () => {
    const operation: KvOperation = { kind: 'put', request: { key: 'k', value: Uint8Array.of(1) } };
    const request = overWire(kv['Stream']!, 'request', encodeStreamRequest('18446744073709551615', 250, { kind: 'operation', operation }));
    expect(decodeStreamRequest(request)).toEqual({ id: '18446744073709551615', timeoutMs: 250, body: { kind: 'operation', operation } });
    expect(decodeStreamRequest(overWire(kv['Stream']!, 'request', encodeStreamRequest('4', 0, { kind: 'cancel' })))).toEqual({ id: '4', timeoutMs: 0, body: { kind: 'cancel' } });

    const result: KvResult = { kind: 'exists', response: { exists: true, revision: 3 } };
    expect(decodeStreamResponse(overWire(kv['Stream']!, 'response', encodeStreamResult('9', result)))).toEqual({ id: '9', outcome: { ok: true, result } });

    const hinted = new AtollError('NOT_LEADER', 'not me', { leaderHint: { nodeId: 2, address: 'h:2' } });
    const decoded = decodeStreamResponse(overWire(kv['Stream']!, 'response', encodeStreamError('9', hinted)));
    expect(decoded.outcome.ok).toBe(false);
    const error = (decoded.outcome as { error: AtollError }).error;
    expect(error.code).toBe('NOT_LEADER');
    expect(error.details).toMatchObject({ grpcStatus: grpc.status.UNAVAILABLE, leaderHint: { nodeId: 2, address: 'h:2' } });
  });
});

describe('gRPC error mapping', () => {
  it('round-trips every AtollError code with its status and leader hint', () => {
    const hinted = new AtollError('NOT_LEADER', 'ask node 3', { leaderHint: { nodeId: 3, address: '10.0.0.3:7003' } });
    const status = serviceErrorOf(hinted);
    expect(status.code).toBe(grpc.status.UNAVAILABLE);
    const back = atollErrorOfServiceError(status);
    expect(back.code).toBe('NOT_LEADER');
    expect(back.message).toBe('ask node 3');
    expect(back.details).toEqual({ grpcStatus: grpc.status.UNAVAILABLE, leaderHint: { nodeId: 3, address: '10.0.0.3:7003' } });
    for (const code of ['INVALID_KEY', 'VALUE_TOO_LARGE', 'COMPACTED', 'TXN_CONFLICT', 'NOT_INTEGER'] as const) {
      expect(atollErrorOfServiceError(serviceErrorOf(new AtollError(code, 'x'))).code).toBe(code);
    }
  });

  it('carries a merge\'s details: PARTITION_MOVED mergedInto and servedPartitionId, MERGE_REFUSED rightPartition and leftLeader', () => {
    const moved = atollErrorOfServiceError(serviceErrorOf(new AtollError('PARTITION_MOVED', 'merged', { servedPartitionId: 3_000_000_000, mergedInto: 0 })));
    expect(moved.details).toMatchObject({ servedPartitionId: 3_000_000_000, mergedInto: 0 });
    const refused = atollErrorOfServiceError(serviceErrorOf(new AtollError('MERGE_REFUSED', 'leaders differ', { reason: 'leaders-differ', rightPartition: 7, leftLeader: 2 })));
    expect(refused.details).toMatchObject({ reason: 'leaders-differ', rightPartition: 7, leftLeader: 2 });
  });

  it('carries "certainly not applied" across a relay, without calling the relaying node unreachable', () => {
    const relayed = new AtollError('UNAVAILABLE', 'cannot reach the leader', { neverSent: true, fromTransport: true });
    const status = serviceErrorOf(relayed);
    expect(status.metadata.get('atoll-not-applied')).toEqual(['true']);
    const back = atollErrorOfServiceError(status);
    expect(back.details).toEqual({ grpcStatus: grpc.status.UNAVAILABLE, neverSent: true });
    const streamed = decodeStreamResponse(overWire(kv['Stream']!, 'response', encodeStreamError('1', relayed)));
    expect((streamed.outcome as { error: AtollError }).error.details).toMatchObject({ neverSent: true });
    expect(serviceErrorOf(new AtollError('UNAVAILABLE', 'maybe applied')).metadata.get('atoll-not-applied')).toEqual([]);
  });

  it('hides non-AtollErrors behind a generic INTERNAL and logs them', () => {
    const logged: unknown[] = [];
    const status = serviceErrorOf(new TypeError('secret'), { error: (object) => logged.push(object) });
    expect(status.code).toBe(grpc.status.INTERNAL);
    expect(status.details).not.toContain('secret');
    expect(logged).toHaveLength(1);
  });

  it('maps bare statuses: connection failures, deadlines, and everything else', () => {
    const refused = atollErrorOfServiceError({ code: grpc.status.UNAVAILABLE, details: 'No connection established. Last error: connect ECONNREFUSED' });
    expect(refused.code).toBe('UNAVAILABLE');
    expect(refused.details).toMatchObject({ neverSent: true, fromTransport: true });
    const dropped = atollErrorOfServiceError({ code: grpc.status.UNAVAILABLE, details: 'Connection dropped' });
    expect(dropped.details?.['neverSent']).toBeUndefined();
    expect(atollErrorOfServiceError({ code: grpc.status.DEADLINE_EXCEEDED, details: 'Deadline exceeded' }).code).toBe('DEADLINE_EXCEEDED');
    expect(atollErrorOfServiceError({ code: grpc.status.UNIMPLEMENTED, details: 'nope' }).code).toBe('INTERNAL');
    expect(atollErrorOfServiceError({ code: grpc.status.UNKNOWN, details: '' }).code).toBe('INTERNAL');
  });
});

describe('ClusterInfo load (hot partitions and keys)', () => {
  const cluster = clusterServiceDefinition as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;
  const partition = { id: 3, rangeStart: 0, rangeEnd: 2 ** 32, replicas: [1, 2, 3], leader: 2, term: 4, commitIndex: 10, appliedIndex: 10, revision: 9 };
  const info = (partitions: PartitionInfo[]) => ({ nodeId: 2, partitionCount: 1, replicationFactor: 3, hashFunction: 'fnv1a32', nodes: [], partitions });

  it('round-trips per-partition rates and top keys, truncated ones included', () => {
    const loaded = {
      ...partition,
      requestsPerSecond: 1234.5,
      topKeys: [
        { key: 'counters/visits', requestsPerSecond: 617.25, errorPerSecond: 0.5, truncated: false },
        { key: 'x/'.padEnd(256, 'é'), requestsPerSecond: 3, errorPerSecond: 0, truncated: true },
      ],
    };
    const response = info([loaded]);
    expect(clusterConvert.decodeClusterInfoResponse(overWire(cluster['ClusterInfo']!, 'response', clusterConvert.encodeClusterInfoResponse(response)))).toEqual(response);
  });

  it('decodes a partition without load as 0 requests per second and no keys, and refuses a negative rate', () => {
    const decoded = clusterConvert.decodeClusterInfoResponse(overWire(cluster['ClusterInfo']!, 'response', clusterConvert.encodeClusterInfoResponse(info([partition]))));
    expect(decoded.partitions[0]).toEqual({ ...partition, requestsPerSecond: 0, topKeys: [] });
    expect(() => clusterConvert.decodeClusterInfoResponse({ partitions: [{ requestsPerSecond: -1 }] })).toThrow(/requests_per_second/);
  });
});

describe('BackupPage over the wire', () => {
  const cluster = clusterServiceDefinition as unknown as Record<string, grpc.MethodDefinition<unknown, unknown>>;

  it('round-trips requests and pages: tenants, binary values, expiry and 64-bit revisions', () => {
    const request = { partition: 7, revision: 2 ** 40, pageToken: 'AGFjbWUAb3JkZXJzLzE', limit: 1000 };
    expect(clusterConvert.decodeBackupPageRequest(overWire(cluster['BackupPage']!, 'request', clusterConvert.encodeBackupPageRequest(request)))).toEqual(request);
    const page = {
      revision: 2 ** 40,
      items: [
        { tenant: 'acme', key: 'orders/1', value: new Uint8Array([0, 255, 1]), expiresAtMs: 1_800_000_000_000, modRevision: 12 },
        { tenant: 'default', key: 'x/é', value: new Uint8Array(0), expiresAtMs: 0, modRevision: 2 ** 40 },
      ],
      nextPageToken: '',
    };
    const decoded = clusterConvert.decodeBackupPageResponse(overWire(cluster['BackupPage']!, 'response', clusterConvert.encodeBackupPageResponse(page)));
    expect({ ...decoded, items: decoded.items.map((item) => ({ ...item, value: [...item.value] })) }).toEqual({
      ...page,
      items: page.items.map((item) => ({ ...item, value: [...item.value] })),
    });
  });

  it('refuses a malformed request: a negative revision, a partition that is not a number', () => {
    expect(() => clusterConvert.decodeBackupPageRequest({ partition: 0, revision: '-1' })).toThrow(/revision/);
    expect(() => clusterConvert.decodeBackupPageRequest({ partition: 'one' })).toThrow(/partition/);
  });
});
