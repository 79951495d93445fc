/**
 * Hostile client, key identity on the wire (issue 23): raw protobuf bytes, as a client in another
 * language can send them, against three real nodes. Every RPC that takes a key, prefix, bucket,
 * script or script parameter is sent with invalid UTF-8 in that field, through the partition's
 * leader and through a node that is not its leader, unary and over KV.Stream (which must stay
 * usable), and through Peer.Forward directly. Each must be refused with INVALID_ARGUMENT and the
 * exact atoll-code, and nothing may change: bucket `bad` stays empty, `bad/\uFFFD` is not found,
 * and no node restarted.
 *
 * The client is a grpc-js generic client with identity serializers: the request bytes are written
 * by hand here, never by protobufjs, which could not even express invalid UTF-8 in a string.
 */
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOf } from '../../src/keys/partition-table.js';
import { keyOf } from '../../src/keys/structured-key.js';
import { LocalCluster } from '../integration/local-cluster.js';

const PARTITIONS = 4;
const callTimeoutMs = 5_000;

// ------------------------------------------------------------------ hand-encoded protobuf

function varint(value: number): number[] {
  const out: number[] = [];
  let rest = value;
  while (rest >= 0x80) {
    out.push((rest % 0x80) | 0x80);
    rest = Math.floor(rest / 0x80);
  }
  out.push(rest);
  return out;
}
const bytesOf = (value: string | number[]): number[] => (typeof value === 'string' ? [...Buffer.from(value, 'utf8')] : value);
const field = (number: number, value: string | number[]): number[] => [...varint(number * 8 + 2), ...varint(bytesOf(value).length), ...bytesOf(value)];
const varintField = (number: number, value: number): number[] => [...varint(number * 8), ...varint(value)];
const concat = (...parts: number[][]): number[] => parts.flat();

const badFF = [...bytesOf('bad/'), 0xff];
const badFE = [...bytesOf('bad/'), 0xfe];
/** What protobufjs made of both before the fix: the valid key the bad ones collided on. */
const replaced = 'bad/\uFFFD';

// ------------------------------------------------------------------ the raw client

type Raw = (bytes: Buffer) => Buffer;
const identity: Raw = (bytes) => bytes;

function rawServiceDefinition(service: string, methods: readonly string[], streaming: readonly string[] = []): grpc.ServiceDefinition {
  const definition: Record<string, grpc.MethodDefinition<Buffer, Buffer>> = {};
  for (const method of methods) {
    const stream = streaming.includes(method);
    definition[method] = {
      path: `/atoll.v1.${service}/${method}`,
      requestStream: stream,
      responseStream: stream,
      requestSerialize: identity,
      requestDeserialize: identity,
      responseSerialize: identity,
      responseDeserialize: identity,
    };
  }
  return definition;
}

const kvMethods = ['Get', 'Put', 'Delete', 'Increment', 'Exists', 'Extend', 'GetByPrefix', 'BeginTransaction', 'Commit', 'ExecuteScript', 'Stream'] as const;
const RawKv = grpc.makeGenericClientConstructor(rawServiceDefinition('KV', kvMethods, ['Stream']), 'KV');
const RawPeer = grpc.makeGenericClientConstructor(rawServiceDefinition('Peer', ['Forward']), 'Peer');
const RawAuth = grpc.makeGenericClientConstructor(rawServiceDefinition('Auth', ['CreateToken', 'ListTokens', 'GetUsage']), 'Auth');

type UnaryInvoke = (request: Buffer, metadata: grpc.Metadata, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, response?: Buffer) => void) => void;

function unary(client: grpc.Client, method: string, request: number[], metadata = new grpc.Metadata()): Promise<Buffer> {
  return new Promise((resolveCall, reject) => {
    const invoke = (client as unknown as Record<string, UnaryInvoke>)[method]!;
    invoke.call(client, Buffer.from(request), metadata, { deadline: Date.now() + callTimeoutMs }, (error, response) => (error ? reject(error) : resolveCall(response!)));
  });
}

/**
 * A valid call that must succeed: retried (at most 10 times, 300 ms apart) while the partition has
 * no leader, since a loaded machine can cost a partition an election in the middle of the test.
 */
async function valid(client: grpc.Client, method: string, request: number[]): Promise<Buffer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await unary(client, method, request);
    } catch (error) {
      if (attempt >= 10 || (error as grpc.ServiceError).code !== grpc.status.UNAVAILABLE) throw error;
      await new Promise((resolveSleep) => setTimeout(resolveSleep, 300));
    }
  }
}

async function refusal(promise: Promise<unknown>): Promise<{ status: number; code: unknown }> {
  const error = (await promise.then(
    () => undefined,
    (caught: unknown) => caught,
  )) as grpc.ServiceError | undefined;
  expect(error, 'the call should have been refused').toBeDefined();
  return { status: error!.code, code: error!.metadata?.get('atoll-code')[0] };
}

// Responses are decoded with proto-loader from the .proto files, as any user would.
const definitions = protoLoader.loadSync(['atoll/v1/kv.proto', 'atoll/v1/cluster.proto'], {
  includeDirs: [join(resolve(import.meta.dirname, '../..'), 'proto')],
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});
function decode<T = Record<string, unknown>>(type: string, bytes: Buffer): T {
  return (definitions[`atoll.v1.${type}`] as protoLoader.MessageTypeDefinition<object, object>).deserialize(bytes) as T;
}

// ------------------------------------------------------------------ the hostile requests

interface HostileCase {
  readonly name: string;
  readonly method: (typeof kvMethods)[number];
  /** The oneof field number of the same request inside StreamRequest and ForwardRequest. */
  readonly oneof: number;
  readonly code: 'INVALID_KEY' | 'INVALID_ARGUMENT';
  readonly body: (transaction: string) => number[];
}

const cases: readonly HostileCase[] = [
  { name: 'Get key', method: 'Get', oneof: 10, code: 'INVALID_KEY', body: () => field(1, badFF) },
  { name: 'Put key', method: 'Put', oneof: 11, code: 'INVALID_KEY', body: () => concat(field(1, badFF), field(2, 'one')) },
  { name: 'Delete key', method: 'Delete', oneof: 12, code: 'INVALID_KEY', body: () => field(1, badFE) },
  { name: 'Increment key', method: 'Increment', oneof: 13, code: 'INVALID_KEY', body: () => concat(field(1, badFF), varintField(2, 5)) },
  { name: 'Exists key', method: 'Exists', oneof: 14, code: 'INVALID_KEY', body: () => field(1, badFF) },
  { name: 'Extend key', method: 'Extend', oneof: 15, code: 'INVALID_KEY', body: () => concat(field(1, badFF), varintField(2, 60_000)) },
  { name: 'GetByPrefix prefix', method: 'GetByPrefix', oneof: 16, code: 'INVALID_KEY', body: () => field(1, badFF) },
  { name: 'BeginTransaction key', method: 'BeginTransaction', oneof: 17, code: 'INVALID_KEY', body: () => field(1, badFF) },
  {
    name: 'Commit write key',
    method: 'Commit',
    oneof: 18,
    code: 'INVALID_KEY',
    body: (transaction) => concat(field(1, transaction), field(2, concat(field(1, badFF), field(3, 'one')))),
  },
  {
    name: 'Commit read key',
    method: 'Commit',
    oneof: 18,
    code: 'INVALID_KEY',
    body: (transaction) => concat(field(1, transaction), field(2, concat(field(1, 'bad/written'), field(3, 'one'))), field(3, badFF)),
  },
  {
    name: 'Commit read prefix',
    method: 'Commit',
    oneof: 18,
    code: 'INVALID_KEY',
    body: (transaction) => concat(field(1, transaction), field(2, concat(field(1, 'bad/written'), field(3, 'one'))), field(4, badFE)),
  },
  { name: 'ExecuteScript script', method: 'ExecuteScript', oneof: 19, code: 'INVALID_ARGUMENT', body: () => field(1, concat(bytesOf('set "'), badFF, bytesOf('" "one"'))) },
  { name: 'ExecuteScript bucket', method: 'ExecuteScript', oneof: 19, code: 'INVALID_KEY', body: () => concat(field(1, 'set "bad/x" "one"'), field(4, badFF)) },
  {
    name: 'ExecuteScript parameter value',
    method: 'ExecuteScript',
    oneof: 19,
    code: 'INVALID_ARGUMENT',
    body: () => concat(field(1, 'set @k "one"'), field(2, concat(field(1, 'k'), field(2, concat(bytesOf('"'), badFF, bytesOf('"')))))),
  },
  {
    name: 'ExecuteScript parameter name',
    method: 'ExecuteScript',
    oneof: 19,
    code: 'INVALID_ARGUMENT',
    body: () => concat(field(1, 'set "bad/y" "one"'), field(2, concat(field(1, [0x6b, 0xff]), field(2, '1')))),
  },
];

// ------------------------------------------------------------------ the cluster

describe('hostile client: key identity on the wire', () => {
  let cluster: LocalCluster;
  let leaderId = 0;
  let followerId = 0;
  const pids = new Map<number, number | undefined>();
  const kv = new Map<number, grpc.Client>();
  const closers: grpc.Client[] = [];

  const kvOf = (id: number): grpc.Client => kv.get(id)!;
  const via = (): Array<[string, number]> => [
    ['the leader', leaderId],
    ['a node that is not the leader', followerId],
  ];

  /** A fresh transaction handle on bucket `bad`, so a Commit would succeed but for its bad field. */
  async function transactionHandle(nodeId: number): Promise<string> {
    const begun = decode<{ transaction: string }>('BeginTransactionResponse', await valid(kvOf(nodeId), 'BeginTransaction', concat(field(1, 'bad'), varintField(2, 1))));
    expect(begun.transaction).not.toBe('');
    return begun.transaction;
  }

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: PARTITIONS });
    for (const [id, address] of cluster.addresses) {
      const client = new RawKv(address, grpc.credentials.createInsecure());
      kv.set(id, client);
      closers.push(client);
      pids.set(id, cluster.pidOf(id));
    }
    const info = await cluster.clusterInfoOf(1);
    leaderId = Number(info.partitions[partitionOf('bad', PARTITIONS)]!.leader);
    followerId = [...cluster.addresses.keys()].find((id) => id !== leaderId)!;
    expect(leaderId).toBeGreaterThan(0);
  }, 60_000);

  afterAll(async () => {
    for (const client of closers) client.close();
    await cluster?.stop();
  });

  it("the issue's scenario: bad/\\xff and bad/\\xfe are refused, not merged into bad/\\uFFFD", async () => {
    const client = kvOf(followerId);
    expect(await refusal(unary(client, 'Put', concat(field(1, badFF), field(2, 'one'))))).toEqual({ status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_KEY' });
    expect(await refusal(unary(client, 'Put', concat(field(1, badFE), field(2, 'two'))))).toEqual({ status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_KEY' });
    expect(await refusal(unary(client, 'Get', field(1, badFF)))).toEqual({ status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_KEY' });
    const got = decode<{ found: boolean }>('GetResponse', await valid(client, 'Get', field(1, replaced)));
    expect(got.found).toBe(false);
  });

  it('identity is byte-exact: a composed and a decomposed é are two keys (no normalization)', async () => {
    const client = kvOf(followerId);
    const composed = 'nfc/caf\u00e9';
    const decomposed = 'nfc/cafe\u0301';
    expect(composed.normalize('NFC')).toBe(decomposed.normalize('NFC'));
    expect(keyOf('nfc', 'caf\u00e9')).not.toBe(keyOf('nfc', 'cafe\u0301'));
    await valid(client, 'Put', concat(field(1, composed), field(2, 'composed')));
    expect(decode<{ found: boolean }>('GetResponse', await valid(client, 'Get', field(1, decomposed))).found).toBe(false);
    await valid(client, 'Put', concat(field(1, decomposed), field(2, 'decomposed')));
    const got = decode<{ found: boolean; value: Buffer }>('GetResponse', await valid(client, 'Get', field(1, composed)));
    expect(got.value.toString()).toBe('composed');
    const scan = decode<{ items: Array<{ key: string }> }>('GetByPrefixResponse', await valid(client, 'GetByPrefix', field(1, 'nfc')));
    expect(scan.items.map((item) => item.key).sort()).toEqual([composed, decomposed].sort());
  });

  for (const hostile of cases) {
    it(`${hostile.name}: unary through the leader and through a node that is not the leader`, async () => {
      for (const [, nodeId] of via()) {
        const transaction = hostile.method === 'Commit' ? await transactionHandle(nodeId) : '';
        const answer = await refusal(unary(kvOf(nodeId), hostile.method, hostile.body(transaction)));
        expect(answer, `${hostile.name} via node ${nodeId}`).toEqual({ status: grpc.status.INVALID_ARGUMENT, code: hostile.code });
      }
    });
  }

  /** A raw KV.Stream on one node: `ask` writes one StreamRequest (id + body) and awaits its answer. */
  function openRawStream(nodeId: number): { ask: (id: number, body: number[]) => Promise<Record<string, unknown>>; end: () => void } {
    const stream = (kvOf(nodeId) as unknown as { Stream: (options: grpc.CallOptions) => grpc.ClientDuplexStream<Buffer, Buffer> }).Stream({
      deadline: Date.now() + 30_000,
    });
    const answers = new Map<string, (answer: Record<string, unknown>) => void>();
    stream.on('data', (bytes: Buffer) => {
      const answer = decode('StreamResponse', bytes);
      answers.get(String(answer['id']))?.(answer);
    });
    stream.on('error', () => undefined);
    const ask = (id: number, body: number[]): Promise<Record<string, unknown>> =>
      new Promise((resolveAnswer, reject) => {
        const timer = setTimeout(() => reject(new Error(`no answer to stream request ${id}`)), callTimeoutMs);
        answers.set(String(id), (answer) => {
          clearTimeout(timer);
          resolveAnswer(answer);
        });
        stream.write(Buffer.from(concat(varintField(1, id), body)));
      });
    return { ask, end: () => stream.end() };
  }

  async function expectStreamStillServes(ask: (id: number, body: number[]) => Promise<Record<string, unknown>>, id: number, after: string): Promise<void> {
    let valid = await ask(id, field(10, field(1, replaced)));
    // As in valid(): a partition between leaders answers UNAVAILABLE; ask again, a bounded number of times.
    for (let attempt = 1; attempt < 10 && (valid['error'] as { grpcStatus?: number } | undefined)?.grpcStatus === grpc.status.UNAVAILABLE; attempt++) {
      await new Promise((resolveSleep) => setTimeout(resolveSleep, 300));
      valid = await ask(id, field(10, field(1, replaced)));
    }
    expect(valid['result'], `the stream after ${after}`).toBe('get');
    expect((valid['get'] as { found: boolean }).found).toBe(false);
  }

  it('KV.Stream: each request refused with its code, and the same stream then serves a valid request', async () => {
    for (const [, nodeId] of via()) {
      const { ask, end } = openRawStream(nodeId);
      let id = 1;
      for (const hostile of cases) {
        const transaction = hostile.method === 'Commit' ? await transactionHandle(nodeId) : '';
        const refused = await ask(id++, field(hostile.oneof, hostile.body(transaction)));
        expect(refused['result'], `${hostile.name} via node ${nodeId}`).toBe('error');
        expect(refused['error'], `${hostile.name} via node ${nodeId}`).toMatchObject({ code: hostile.code, grpcStatus: grpc.status.INVALID_ARGUMENT });
        await expectStreamStillServes(ask, id++, hostile.name);
      }
      end();
    }
  });

  it('Peer.Forward with raw bytes: the node checks the forwarded request too', async () => {
    // Forward is served on the peer port only, to callers holding the cluster's peer secret: this
    // plays a node of the cluster that sends bytes no Atoll node would.
    const secret = new grpc.Metadata();
    secret.set('atoll-peer-secret', cluster.peerSecret());
    for (const [, nodeId] of via()) {
      const peer = new RawPeer(cluster.peerAddresses.get(nodeId)!, grpc.credentials.createInsecure());
      closers.push(peer);
      for (const hostile of cases) {
        const transaction = hostile.method === 'Commit' ? await transactionHandle(nodeId) : '';
        const forward = concat(varintField(1, 0), field(hostile.oneof, hostile.body(transaction)));
        expect(await refusal(unary(peer, 'Forward', forward, secret)), `${hostile.name} via node ${nodeId}`).toEqual({ status: grpc.status.INVALID_ARGUMENT, code: hostile.code });
      }
      const badTenant = concat(varintField(1, 0), field(2, [0x74, 0xff]), field(11, concat(field(1, 'bad/t'), field(2, 'one'))));
      expect(await refusal(unary(peer, 'Forward', badTenant, secret))).toEqual({ status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_ARGUMENT' });
    }
  });

  it('Auth with raw bytes: a tenant that is not UTF-8 is refused before anything reads it', async () => {
    const auth = new RawAuth(cluster.addresses.get(followerId)!, grpc.credentials.createInsecure());
    closers.push(auth);
    for (const method of ['CreateToken', 'ListTokens', 'GetUsage']) {
      expect(await refusal(unary(auth, method, field(1, [0x74, 0xff]))), method).toEqual({ status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_ARGUMENT' });
    }
  });

  it('a malformed request is INVALID_ARGUMENT, not INTERNAL, and a malformed Stream request fails only itself', async () => {
    // A key whose length runs past the end of the message.
    expect(await refusal(unary(kvOf(followerId), 'Put', [0x0a, 0x05, 0x61]))).toEqual({ status: grpc.status.INVALID_ARGUMENT, code: 'INVALID_ARGUMENT' });
    // On a stream: a put whose key arrives as a varint (protobufjs would read it as an empty key).
    const { ask, end } = openRawStream(followerId);
    const refused = await ask(1, field(11, concat(varintField(1, 5), field(2, 'one'))));
    expect(refused['error']).toMatchObject({ code: 'INVALID_ARGUMENT', grpcStatus: grpc.status.INVALID_ARGUMENT });
    await expectStreamStillServes(ask, 2, 'a malformed request');
    end();
  });

  it('nothing changed: bucket bad is empty on every node, bad/\\uFFFD is not found, and no node restarted', async () => {
    for (const [id] of cluster.addresses) {
      const scan = decode<{ items: unknown[] }>('GetByPrefixResponse', await valid(kvOf(id), 'GetByPrefix', field(1, 'bad')));
      expect(scan.items, `bucket bad via node ${id}`).toEqual([]);
      const got = decode<{ found: boolean }>('GetResponse', await valid(kvOf(id), 'Get', field(1, replaced)));
      expect(got.found).toBe(false);
      expect(cluster.isRunning(id)).toBe(true);
      expect(cluster.pidOf(id)).toBe(pids.get(id));
    }
    // A valid write in the bucket still works: the refusals left the partition healthy.
    const put = decode<{ applied: boolean }>('PutResponse', await valid(kvOf(followerId), 'Put', concat(field(1, 'bad/ok'), field(2, 'fine'))));
    expect(put.applied).toBe(true);
  });
});
