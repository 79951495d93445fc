/**
 * The KV and Cluster services through a plain grpc-js client built from the .proto files alone:
 * every RPC, the error mapping (status + `atoll-code` metadata), deadlines, cancellation, a
 * handler bug answered INTERNAL without taking the server down, health and reflection.
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { AtollError } from '../../src/errors.js';
import { limits } from '../../src/limits.js';
import { hangUntilAborted } from './fake-node.js';
import { deadlineIn, genericClient, startNode, type GenericClient, type GenericError, type RunningNode } from './harness.js';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

let running: RunningNode;
let kv: GenericClient;
let cluster: GenericClient;

beforeAll(async () => {
  running = await startNode({ nodeId: 1, partitionCount: 4 });
  kv = genericClient('KV', running.address);
  cluster = genericClient('Cluster', running.address);
});

afterAll(async () => {
  kv.close();
  cluster.close();
  await running.stop();
});

beforeEach(() => {
  running.node.before = undefined;
});

async function failure(promise: Promise<unknown>): Promise<GenericError> {
  try {
    await promise;
  } catch (error) {
    return error as GenericError;
  }
  throw new Error('expected the call to fail');
}

describe('every KV RPC through a generic client', () => {
  it('Put then Get returns the value, revisions and found', async () => {
    const put = await kv.call('Put', { key: 'svc/get-me', value: bytes('hello') });
    expect(put).toMatchObject({ applied: true, previous: null });
    const revision = Number(put['revision']);
    expect(revision).toBeGreaterThan(0);

    const got = await kv.call('Get', { key: 'svc/get-me' });
    expect(got).toMatchObject({ found: true, createRevision: String(revision), modRevision: String(revision), version: '1', expiresAtMs: '0' });
    expect(Buffer.from(got['value'] as Buffer).toString()).toBe('hello');
  });

  it('a missing key is found=false, not an error; a stored empty value and "0" are hits', async () => {
    expect(await kv.call('Get', { key: 'svc/missing' })).toMatchObject({ found: false, version: '0' });
    await kv.call('Put', { key: 'svc/empty', value: Buffer.alloc(0) });
    await kv.call('Put', { key: 'svc/zero', value: bytes('0') });
    expect(await kv.call('Get', { key: 'svc/empty' })).toMatchObject({ found: true });
    const zero = await kv.call('Get', { key: 'svc/zero' });
    expect(zero['found']).toBe(true);
    expect(Buffer.from(zero['value'] as Buffer).toString()).toBe('0');
  });

  it('Put conditions, TTL and return_previous', async () => {
    const first = await kv.call('Put', { key: 'svc/cond', value: bytes('a'), ifAbsent: true });
    expect(first['applied']).toBe(true);
    expect((await kv.call('Put', { key: 'svc/cond', value: bytes('b'), ifAbsent: true }))['applied']).toBe(false);
    expect((await kv.call('Put', { key: 'svc/cond', value: bytes('b'), ifModRevision: '999999' }))['applied']).toBe(false);
    const swapped = await kv.call('Put', { key: 'svc/cond', value: bytes('c'), ifModRevision: first['revision'], returnPrevious: true });
    expect(swapped['applied']).toBe(true);
    expect(swapped['previous']).toMatchObject({ key: 'svc/cond', version: '1' });
    expect((await kv.call('Put', { key: 'svc/cond', value: bytes('d'), ifValue: bytes('c') }))['applied']).toBe(true);
    const withTtl = await kv.call('Put', { key: 'svc/ttl', value: bytes('x'), ttlMs: '60000' });
    expect(withTtl['applied']).toBe(true);
    const got = await kv.call('Get', { key: 'svc/ttl' });
    expect(Number(got['expiresAtMs'])).toBeGreaterThan(Date.now());
  });

  it('Get at a past revision', async () => {
    const first = await kv.call('Put', { key: 'svc/history', value: bytes('v1') });
    await kv.call('Put', { key: 'svc/history', value: bytes('v2') });
    const old = await kv.call('Get', { key: 'svc/history', revision: first['revision'] });
    expect(Buffer.from(old['value'] as Buffer).toString()).toBe('v1');
    expect(running.node.callsOf('get').at(-1)!.request).toMatchObject({ revision: Number(first['revision']) });
  });

  it('Delete, Exists, Increment, Extend', async () => {
    await kv.call('Put', { key: 'svc/del', value: bytes('x') });
    expect(await kv.call('Exists', { key: 'svc/del' })).toMatchObject({ exists: true });
    expect(await kv.call('Delete', { key: 'svc/del' })).toMatchObject({ deleted: true });
    expect(await kv.call('Delete', { key: 'svc/del' })).toMatchObject({ deleted: false });
    expect(await kv.call('Exists', { key: 'svc/del' })).toMatchObject({ exists: false });

    expect(await kv.call('Increment', { key: 'svc/counter', delta: '5' })).toMatchObject({ value: '5' });
    expect(await kv.call('Increment', { key: 'svc/counter', delta: '-7' })).toMatchObject({ value: '-2' });
    expect(await kv.call('Increment', { key: 'svc/big', delta: '9223372036854775807' })).toMatchObject({ value: '9223372036854775807' });

    expect(await kv.call('Extend', { key: 'svc/nothing', ttlMs: '1000' })).toMatchObject({ extended: false, expiresAtMs: '0' });
    const extended = await kv.call('Extend', { key: 'svc/counter', ttlMs: '60000' });
    expect(extended['extended']).toBe(true);
    expect(Number(extended['expiresAtMs'])).toBeGreaterThan(Date.now());
  });

  it('GetByPrefix pages through a bucket at one revision', async () => {
    for (const name of ['a', 'b', 'c']) await kv.call('Put', { key: `scan/${name}`, value: bytes(name) });
    const first = await kv.call<{ items: { key: string }[]; nextPageToken: string; revision: string }>('GetByPrefix', { prefix: 'scan', limit: 2 });
    expect(first.items.map((item) => item.key)).toEqual(['scan/a', 'scan/b']);
    expect(first.nextPageToken).not.toBe('');
    await kv.call('Put', { key: 'scan/d', value: bytes('d') });
    const second = await kv.call<{ items: { key: string }[]; nextPageToken: string; revision: string }>('GetByPrefix', {
      prefix: 'scan',
      limit: 2,
      pageToken: first.nextPageToken,
    });
    expect(second.items.map((item) => item.key)).toEqual(['scan/c']);
    expect(second.revision).toBe(first.revision);
    expect(second.nextPageToken).toBe('');
  });

  it('ClusterInfo and TransferLeader', async () => {
    const info = await cluster.call<{ nodeId: number; partitionCount: number; partitions: { rangeEnd: string; leader: number }[]; nodes: unknown[] }>(
      'ClusterInfo',
      {},
    );
    expect(info).toMatchObject({ nodeId: 1, partitionCount: 4, hashFunction: 'murmur3_32' });
    expect(info.partitions).toHaveLength(4);
    expect(info.partitions[3]!.rangeEnd).toBe(String(2 ** 32));
    // admin_address is a proto3 string: on the wire, unknown is its default, ''.
    // state, zone and peer_address (the member table) are unknown to this fake node: their defaults.
    expect(info.nodes).toEqual([{ id: 1, address: running.address, reachable: true, adminAddress: '', state: '', zone: '', peerAddress: '' }]);
    expect(await cluster.call('TransferLeader', { partition: 2, targetNode: 1 })).toEqual({});
    const bad = await failure(cluster.call('TransferLeader', { partition: 99, targetNode: 1 }));
    expect(bad.code).toBe(grpc.status.INVALID_ARGUMENT);
  });
});

describe('error mapping', () => {
  it('a missing key is INVALID_ARGUMENT with atoll-code INVALID_KEY and a clear message', async () => {
    const error = await failure(kv.call('Get', {}));
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error.metadata.get('atoll-code')).toEqual(['INVALID_KEY']);
    expect(error.details).toMatch(/no key/);
    expect(running.node.callsOf('get').every((call) => (call.request as { key: string }).key !== '')).toBe(true);
  });

  it('an oversized key is RESOURCE_EXHAUSTED with KEY_TOO_LARGE', async () => {
    const error = await failure(kv.call('Put', { key: 'k'.repeat(limits.maxKeyBytes + 1), value: bytes('x') }));
    expect(error.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(error.metadata.get('atoll-code')).toEqual(['KEY_TOO_LARGE']);
  });

  it('a value too large is RESOURCE_EXHAUSTED with VALUE_TOO_LARGE', async () => {
    const error = await failure(kv.call('Put', { key: 'svc/huge', value: Buffer.alloc(limits.maxValueBytes + 1) }));
    expect(error.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(error.metadata.get('atoll-code')).toEqual(['VALUE_TOO_LARGE']);
    expect((await kv.call('Exists', { key: 'svc/huge' }))['exists']).toBe(false);
  });

  it('a revision above 2^53 or a negative one is INVALID_ARGUMENT before it reaches the node', async () => {
    const before = running.node.callsOf('get').length;
    const above = await failure(kv.call('Get', { key: 'svc/x', revision: String(2 ** 53 + 2) }));
    expect(above.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(above.metadata.get('atoll-code')).toEqual(['INVALID_ARGUMENT']);
    const negative = await failure(kv.call('Put', { key: 'svc/x', value: bytes('x'), ifModRevision: '-1' }));
    expect(negative.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(running.node.callsOf('get').length).toBe(before);
  });

  it('the empty prefix is INVALID_ARGUMENT with PREFIX_SPANS_BUCKETS', async () => {
    const error = await failure(kv.call('GetByPrefix', { prefix: '' }));
    expect(error.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error.metadata.get('atoll-code')).toEqual(['PREFIX_SPANS_BUCKETS']);
  });

  it('an increment of a non-integer is FAILED_PRECONDITION with NOT_INTEGER', async () => {
    await kv.call('Put', { key: 'svc/text', value: bytes('abc') });
    const error = await failure(kv.call('Increment', { key: 'svc/text', delta: '1' }));
    expect(error.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(error.metadata.get('atoll-code')).toEqual(['NOT_INTEGER']);
  });

  it('NOT_LEADER is UNAVAILABLE with the leader hint in metadata', async () => {
    running.node.before = () => {
      throw new AtollError('NOT_LEADER', 'node 1 does not lead partition 0', { leaderHint: { nodeId: 2, address: '10.0.0.2:7002' } });
    };
    const error = await failure(kv.call('Get', { key: 'svc/a' }));
    expect(error.code).toBe(grpc.status.UNAVAILABLE);
    expect(error.metadata.get('atoll-code')).toEqual(['NOT_LEADER']);
    expect(error.metadata.get('atoll-leader-hint')).toEqual(['10.0.0.2:7002']);
    expect(error.metadata.get('atoll-leader-id')).toEqual(['2']);
  });

  it('a handler that throws a plain Error answers INTERNAL with a generic message, and the server keeps serving', async () => {
    running.node.before = () => {
      throw new Error('secret internal detail');
    };
    const error = await failure(kv.call('Put', { key: 'svc/boom', value: bytes('x') }));
    expect(error.code).toBe(grpc.status.INTERNAL);
    expect(error.metadata.get('atoll-code')).toEqual(['INTERNAL']);
    expect(error.details).not.toMatch(/secret/);
    const rejected = await failure(cluster.call('ClusterInfo', {}));
    expect(rejected.code).toBe(grpc.status.INTERNAL);

    running.node.before = undefined;
    expect((await kv.call('Put', { key: 'svc/after-boom', value: bytes('x') }))['applied']).toBe(true);
  });
});

describe('deadlines and cancellation', () => {
  it('a hanging node answers DEADLINE_EXCEEDED within the deadline and its context is aborted', async () => {
    running.node.before = (_method, _request, context) => hangUntilAborted(context);
    const startedMs = Date.now();
    const error = await failure(kv.call('Get', { key: 'svc/slow' }, { deadline: deadlineIn(200) }));
    expect(error.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(Date.now() - startedMs).toBeLessThan(3000);
    const context = running.node.callsOf('get').at(-1)!.context;
    expect(context.deadlineMs).toBeGreaterThan(startedMs);
    expect(context.deadlineMs).toBeLessThanOrEqual(startedMs + 2000);
    await expect.poll(() => context.signal?.aborted).toBe(true);
  });

  it('without a deadline the node gets the default one', async () => {
    const startedMs = Date.now();
    await kv.call('Get', { key: 'svc/default-deadline' });
    const context = running.node.callsOf('get').at(-1)!.context;
    expect(context.deadlineMs).toBeGreaterThanOrEqual(startedMs + limits.defaultCallTimeoutMs - 50);
  });

  it('cancelling the call aborts the node-side signal', async () => {
    running.node.before = (_method, _request, context) => hangUntilAborted(context);
    const request = running.node.callsOf('exists').length;
    const call = (kv.raw['Exists'] as (request: object, callback: (error: unknown) => void) => grpc.ClientUnaryCall).call(
      kv.raw,
      { key: 'svc/cancel-me' },
      () => undefined,
    );
    await expect.poll(() => running.node.callsOf('exists').length).toBe(request + 1);
    call.cancel();
    const context = running.node.callsOf('exists').at(-1)!.context;
    await expect.poll(() => context.signal?.aborted).toBe(true);
  });
});

describe('health and reflection', () => {
  it('the health service answers SERVING, and NOT_SERVING after setServing(false)', async () => {
    const definition = protoLoader.loadSync(healthProtoPath, { enums: String });
    const Health = (grpc.loadPackageDefinition(definition) as unknown as { grpc: { health: { v1: { Health: new (address: string, credentials: grpc.ChannelCredentials) => grpc.Client } } } })
      .grpc.health.v1.Health;
    const client = new Health(running.address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
    const check = (service: string) =>
      new Promise<{ status: string }>((resolve, reject) =>
        client['check']!.call(client, { service }, (error: Error | null, response: { status: string }) => (error ? reject(error) : resolve(response))),
      );
    expect(await check('')).toEqual({ status: 'SERVING' });
    expect(await check('atoll.v1.KV')).toEqual({ status: 'SERVING' });
    running.services.setServing(false);
    expect(await check('atoll.v1.KV')).toEqual({ status: 'NOT_SERVING' });
    running.services.setServing(true);
    expect(await check('')).toEqual({ status: 'SERVING' });
    client.close();
  });

  it('server reflection lists atoll.v1.KV (what `grpcurl list` asks)', async () => {
    const reflectionProto = new URL('../../node_modules/@grpc/reflection/build/proto/grpc/reflection/v1/reflection.proto', import.meta.url);
    const definition = protoLoader.loadSync(reflectionProto.pathname, { keepCase: true });
    const Reflection = (
      grpc.loadPackageDefinition(definition) as unknown as {
        grpc: { reflection: { v1: { ServerReflection: new (address: string, credentials: grpc.ChannelCredentials) => grpc.Client } } };
      }
    ).grpc.reflection.v1.ServerReflection;
    const client = new Reflection(running.address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, Function>;
    const stream = client['ServerReflectionInfo']!.call(client) as grpc.ClientDuplexStream<object, { list_services_response?: { service: { name: string }[] } }>;
    const names = await new Promise<string[]>((resolve, reject) => {
      stream.on('data', (response: { list_services_response?: { service: { name: string }[] } }) =>
        resolve((response.list_services_response?.service ?? []).map((service) => service.name)),
      );
      stream.on('error', reject);
      stream.write({ list_services: '' });
    });
    stream.end();
    client.close();
    expect(names).toContain('atoll.v1.KV');
    expect(names).toContain('atoll.v1.Cluster');
    expect(names).not.toContain('atoll.v1.Peer');
  });
});
