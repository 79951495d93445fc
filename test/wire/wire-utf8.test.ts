/**
 * The wire check of src/wire/wire-utf8.ts on hand-encoded protobuf bytes: every string field of
 * every request, nested, repeated and behind field numbers >= 16 (two-byte tags); bytes fields
 * that may hold anything; malformed input (truncated varints, lengths past the end, wire types
 * protobufjs would misread); a differential check against protobufjs's own decoder; and that no
 * service method's request deserializer was left unchecked.
 */
import { isUtf8 } from 'node:buffer';
import * as grpc from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import {
  authServiceDefinition,
  clusterServiceDefinition,
  kvServiceDefinition,
  messagePlans,
  packageDefinition,
  peerServiceDefinition,
} from '../../src/wire/protos.js';
import { checkedDeserializerMark, findWireProblem, isUtf8Range, wireProblemError, wireProblemOf, type MessagePlan, type WireProblem } from '../../src/wire/wire-utf8.js';
import { Rng } from '../../src/raft/rng.js';

// ------------------------------------------------------------------ a hand encoder

function varint(value: number | bigint): number[] {
  let rest = BigInt(value);
  if (rest < 0n) rest += 1n << 64n;
  const out: number[] = [];
  do {
    const low = Number(rest & 0x7fn);
    rest >>= 7n;
    out.push(rest > 0n ? low | 0x80 : low);
  } while (rest > 0n);
  return out;
}
const tag = (field: number, wireType: number): number[] => varint(field * 8 + wireType);
const lengthDelimited = (field: number, bytes: number[]): number[] => [...tag(field, 2), ...varint(bytes.length), ...bytes];
const text = (value: string): number[] => [...Buffer.from(value, 'utf8')];
const varintField = (field: number, value: number | bigint): number[] => [...tag(field, 0), ...varint(value)];

/** `bad/` followed by one byte that can never appear in UTF-8. */
const badFF = [...text('bad/'), 0xff];
const badFE = [...text('bad/'), 0xfe];

function plan(name: string): MessagePlan {
  const found = messagePlans.get(`atoll.v1.${name}`);
  expect(found, name).toBeDefined();
  return found!;
}

function problemOf(name: string, bytes: number[]): WireProblem | undefined {
  return findWireProblem(plan(name), Uint8Array.from(bytes));
}

// ------------------------------------------------------------------ every string field

/** Every string field reachable from a message, as (path, the message that declares it, field name). */
interface StringPath {
  readonly path: string;
  readonly owner: string;
  readonly encode: (leaf: number[]) => number[];
}

function descriptorOf(fullName: string): { field: Array<{ name: string; number: number; type: string; typeName: string }>; nestedType?: unknown[] } {
  // Nested types (map entries) are looked up through the plans' parents below.
  const entry = packageDefinition[fullName] as { type?: unknown } | undefined;
  return entry?.type as never;
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

function stringPaths(fullName: string, depth = 0): StringPath[] {
  if (depth > 3) return [];
  const descriptor = descriptorOf(fullName);
  const out: StringPath[] = [];
  for (const field of descriptor.field) {
    const name = snake(field.name);
    if (field.type === 'TYPE_STRING') {
      out.push({ path: name, owner: fullName, encode: (leaf) => lengthDelimited(field.number, leaf) });
    } else if (field.type === 'TYPE_MESSAGE') {
      if (field.typeName === 'Params') {
        // map<string, string> params: an entry message with key = 1 and value = 2.
        out.push({ path: 'params.key', owner: `${fullName}.Params`, encode: (leaf) => lengthDelimited(field.number, lengthDelimited(1, leaf)) });
        out.push({ path: 'params.value', owner: `${fullName}.Params`, encode: (leaf) => lengthDelimited(field.number, lengthDelimited(2, leaf)) });
        continue;
      }
      for (const inner of stringPaths(`atoll.v1.${field.typeName}`, depth + 1)) {
        out.push({ path: `${name}.${inner.path}`, owner: inner.owner, encode: (leaf) => lengthDelimited(field.number, inner.encode(leaf)) });
      }
    }
  }
  return out;
}

/** The fields whose invalid UTF-8 must be INVALID_KEY: they name keys. Everything else is INVALID_ARGUMENT. */
const keyLikeFields = new Set([
  'atoll.v1.GetRequest.key',
  'atoll.v1.PutRequest.key',
  'atoll.v1.DeleteRequest.key',
  'atoll.v1.IncrementRequest.key',
  'atoll.v1.ExistsRequest.key',
  'atoll.v1.ExtendRequest.key',
  'atoll.v1.LeaseRequest.key',
  'atoll.v1.GetByPrefixRequest.prefix',
  'atoll.v1.BeginTransactionRequest.key',
  'atoll.v1.TxnWrite.key',
  'atoll.v1.CommitRequest.read_keys',
  'atoll.v1.CommitRequest.read_prefixes',
  'atoll.v1.ExecuteScriptRequest.bucket',
  'atoll.v1.WatchRequest.key',
  'atoll.v1.WatchRequest.prefix',
]);

const services = { KV: kvServiceDefinition, Cluster: clusterServiceDefinition, Auth: authServiceDefinition, Peer: peerServiceDefinition };

function requestTypeOf(method: grpc.MethodDefinition<unknown, unknown>): string {
  return `atoll.v1.${((method as unknown as { requestType: { type: { name: string } } }).requestType.type).name}`;
}

describe('every string field of every request', () => {
  const cases: Array<{ method: string; requestType: string; path: StringPath }> = [];
  for (const [serviceName, definition] of Object.entries(services)) {
    for (const [methodName, method] of Object.entries(definition)) {
      const requestType = requestTypeOf(method);
      for (const path of stringPaths(requestType)) cases.push({ method: `${serviceName}.${methodName}`, requestType, path });
    }
  }

  it('covers the fields the issue names, through the unary calls, the Stream and Forward', () => {
    const names = new Set(cases.map((c) => `${c.method} ${c.path.path}`));
    for (const expected of [
      'KV.Put key',
      'KV.GetByPrefix prefix',
      'KV.Commit writes.key',
      'KV.Commit read_keys',
      'KV.Commit read_prefixes',
      'KV.ExecuteScript script',
      'KV.ExecuteScript bucket',
      'KV.ExecuteScript params.key',
      'KV.ExecuteScript params.value',
      'KV.Stream put.key',
      'KV.Stream get_by_prefix.prefix',
      'KV.Stream execute_script.params.value',
      'Peer.Forward tenant',
      'Peer.Forward commit.writes.key',
      'Auth.CreateToken tenant',
      'Auth.RevokeToken id',
    ]) {
      expect(names, expected).toContain(expected);
    }
    expect(cases.length).toBeGreaterThan(80);
  });

  it('refuses invalid UTF-8 in each one, with INVALID_KEY exactly for key fields, and accepts valid text there', () => {
    for (const { method, requestType, path } of cases) {
      const leafName = path.path.split('.').at(-1)!;
      const keyLike = keyLikeFields.has(`${path.owner}.${leafName}`);
      for (const bad of [badFF, badFE, [0xc0, 0x80] /* overlong NUL */, [0xed, 0xa0, 0x80] /* a surrogate */, [0x61, 0xe2, 0x82] /* cut off */]) {
        const problem = findWireProblem(messagePlans.get(requestType)!, Uint8Array.from(path.encode(bad)));
        expect(problem, `${method} ${path.path}`).toEqual({ reason: 'invalid-utf8', field: path.path, keyLike, detail: expect.any(String) });
        expect(wireProblemError(problem!).code, `${method} ${path.path}`).toBe(keyLike ? 'INVALID_KEY' : 'INVALID_ARGUMENT');
      }
      for (const good of [text('bad/\uFFFD'), text('caf\u00e9/\u{1F600}'), [], text('x'.repeat(300))]) {
        expect(findWireProblem(messagePlans.get(requestType)!, Uint8Array.from(path.encode(good))), `${method} ${path.path}`).toBeUndefined();
      }
    }
  });
});

// ------------------------------------------------------------------ shapes

describe('the walk', () => {
  it('reads field numbers >= 16 (two-byte tags) inside a StreamRequest', () => {
    expect(tag(16, 2).length).toBe(2);
    const bytes = [...varintField(1, 7), ...lengthDelimited(16, lengthDelimited(1, badFF))];
    expect(problemOf('StreamRequest', bytes)).toMatchObject({ reason: 'invalid-utf8', field: 'get_by_prefix.prefix', keyLike: true });
    const script = [...varintField(1, 8), ...lengthDelimited(19, [...lengthDelimited(1, text('return 1')), ...lengthDelimited(2, [...lengthDelimited(1, text('p')), ...lengthDelimited(2, badFE)])])];
    expect(problemOf('StreamRequest', script)).toMatchObject({ reason: 'invalid-utf8', field: 'execute_script.params.value', keyLike: false });
  });

  it('checks every element of a repeated field, not just the first', () => {
    const readKeys = [...lengthDelimited(1, text('txn')), ...lengthDelimited(3, text('b/1')), ...lengthDelimited(3, text('b/2')), ...lengthDelimited(3, badFF)];
    expect(problemOf('CommitRequest', readKeys)).toMatchObject({ field: 'read_keys', keyLike: true });
    const writes = [...lengthDelimited(2, lengthDelimited(1, text('b/ok'))), ...lengthDelimited(2, [...lengthDelimited(1, badFE), ...varintField(2, 1)])];
    expect(problemOf('CommitRequest', writes)).toMatchObject({ field: 'writes.key', keyLike: true });
  });

  it('accepts any bytes in a bytes field, and skips unknown fields by their length', () => {
    const put = [...lengthDelimited(1, text('b/k')), ...lengthDelimited(2, [0xff, 0xfe, 0x80]), ...lengthDelimited(8, [0xc0, 0x80])];
    expect(problemOf('PutRequest', put)).toBeUndefined();
    const unknown = [...lengthDelimited(1, text('b/k')), ...lengthDelimited(1000, [0xff]), ...varintField(999_999, 5), ...tag(77, 5), 1, 2, 3, 4, ...tag(78, 1), 1, 2, 3, 4, 5, 6, 7, 8];
    expect(problemOf('PutRequest', unknown)).toBeUndefined();
    // The largest field number has a 5-byte tag.
    expect(tag(536_870_911, 2).length).toBe(5);
    expect(problemOf('PutRequest', [...lengthDelimited(536_870_911, [0xff]), ...lengthDelimited(1, text('b/k'))])).toBeUndefined();
    expect(problemOf('PutRequest', [...lengthDelimited(536_870_911, []), ...lengthDelimited(1, badFF)])).toMatchObject({ field: 'key' });
    const raft = [...varintField(1, 2), ...lengthDelimited(2, [0xff, 0xff])];
    expect(problemOf('RaftFrame', raft)).toBeUndefined();
  });

  it('accepts the 10-byte varint of a negative int32 or enum, which protobufjs reads alike', () => {
    expect(varint(-1).length).toBe(10);
    expect(problemOf('GetRequest', [...lengthDelimited(1, text('b/k')), ...varintField(3, -1)])).toBeUndefined();
  });

  const malformedCases: Array<[string, string, number[]]> = [
    ['a truncated tag', 'PutRequest', [0x80]],
    ['a truncated length', 'PutRequest', [0x0a, 0x80]],
    ['a length past the end', 'PutRequest', [0x0a, 0x05, 0x61]],
    ['a length past the end of the nested message', 'StreamRequest', [...varintField(1, 1), ...tag(11, 2), 3, 0x0a, 0x05, 0x61]],
    ['a length of 2^32', 'PutRequest', [0x0a, 0x80, 0x80, 0x80, 0x80, 0x10]],
    ['a 6-byte length', 'PutRequest', [0x0a, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00]],
    ['a truncated varint value', 'GetRequest', [...lengthDelimited(1, text('k')), ...tag(2, 0), 0x80]],
    ['an 11-byte varint', 'GetRequest', [...tag(2, 0), ...Array(10).fill(0x80), 0x01]],
    ['a 6-byte uint32 that protobufjs would read as 10 bytes', 'StreamRequest', [...varintField(1, 1), ...tag(2, 0), 0x81, 0x80, 0x80, 0x80, 0x80, 0x00, ...lengthDelimited(11, lengthDelimited(1, text('k')))]],
    ['a key sent as a varint', 'PutRequest', [...varintField(1, 5)]],
    ['a nested message sent as fixed32', 'StreamRequest', [...tag(11, 5), 1, 2, 3, 4]],
    ['an int64 sent length-delimited', 'GetRequest', [...lengthDelimited(2, [1])]],
    ['field number 0', 'PutRequest', [0x02, 0x00]],
    ['a group', 'PutRequest', [...tag(50, 3), ...tag(50, 4)]],
    ['wire type 7', 'PutRequest', [...tag(50, 7), 0]],
    ['a cut fixed64', 'PutRequest', [...tag(50, 1), 1, 2, 3]],
  ];
  for (const [name, type, bytes] of malformedCases) {
    it(`treats ${name} as a malformed message`, () => {
      expect(problemOf(type, bytes)).toMatchObject({ reason: 'malformed' });
      expect(wireProblemError(problemOf(type, bytes)!).code).toBe('INVALID_ARGUMENT');
    });
  }

  it('says where a malformed field is', () => {
    expect(problemOf('StreamRequest', [...varintField(1, 1), ...tag(11, 2), 3, 0x0a, 0x05, 0x61])).toMatchObject({ field: 'put.key' });
    expect(wireProblemError(problemOf('PutRequest', [...varintField(1, 5)])!).message).toMatch(/in key/);
  });
});

// ------------------------------------------------------------------ the deserializers

describe('the request deserializers', () => {
  it('every method of KV, Cluster, Auth and Peer is checked', () => {
    let methods = 0;
    for (const [serviceName, definition] of Object.entries(services)) {
      // The services as proto-loader loaded them from the .proto files: none may be missing.
      const fromProto = Object.keys(packageDefinition[`atoll.v1.${serviceName}`] as object);
      expect(Object.keys(definition).sort(), serviceName).toEqual(fromProto.sort());
      for (const [methodName, method] of Object.entries(definition)) {
        methods++;
        const deserialize = method.requestDeserialize as ((bytes: Buffer) => unknown) & { [checkedDeserializerMark]?: string };
        expect(deserialize[checkedDeserializerMark], `${serviceName}.${methodName}`).toBe(requestTypeOf(method));
        // Behaviour, not just the mark: malformed bytes never throw, and the result says why.
        let decoded: unknown;
        expect(() => (decoded = deserialize(Buffer.from([0xff]))), `${serviceName}.${methodName}`).not.toThrow();
        expect(wireProblemOf(decoded), `${serviceName}.${methodName}`).toMatchObject({ reason: 'malformed' });
      }
    }
    // KV 13 (with Watch and Lease), Cluster 8 (with BackupPage, MoveReplica, ChangeMember, Rebalance, SplitPartition, MergePartition), Auth 6, Peer 5 (with ForwardStream, PrepareReplica and NodeStatus).
    expect(methods).toBe(13 + 8 + 6 + 5);
  });

  it('still decodes a message with invalid UTF-8, so a Stream request can be answered by its id', () => {
    const bytes = Buffer.from([...varintField(1, 42), ...lengthDelimited(11, [...lengthDelimited(1, badFF), ...lengthDelimited(2, text('one'))])]);
    const decoded = kvServiceDefinition['Stream']!.requestDeserialize(bytes) as { id: string };
    expect(decoded.id).toBe('42');
    const problem = wireProblemOf(decoded)!;
    expect(problem).toMatchObject({ reason: 'invalid-utf8', field: 'put.key', keyLike: true });
    const error = wireProblemError(problem);
    expect(error).toBeInstanceOf(AtollError);
    expect(error.code).toBe('INVALID_KEY');
  });

  it('leaves a valid message exactly as protobufjs decodes it', () => {
    const put = { key: 'caf\u00e9/\u{1F600}', value: Buffer.from([0xff, 0xfe]), ifAbsent: true };
    const bytes = kvServiceDefinition['Put']!.requestSerialize(put);
    const decoded = kvServiceDefinition['Put']!.requestDeserialize(bytes) as Record<string, unknown>;
    expect(wireProblemOf(decoded)).toBeUndefined();
    expect(decoded['key']).toBe(put.key);
    expect(decoded['value']).toEqual(put.value);
    expect(Object.getOwnPropertySymbols(decoded)).toEqual([]);
  });
});

// ------------------------------------------------------------------ against protobufjs itself

describe('the short-string UTF-8 check agrees with node:buffer isUtf8', () => {
  it('on every 1- and 2-byte string, and every 3- and 4-byte lead with boundary continuations', () => {
    const check = (bytes: number[]): void => {
      const array = Uint8Array.from(bytes);
      if (isUtf8Range(array, 0, array.length) !== isUtf8(array)) expect.fail(`disagree on ${Buffer.from(array).toString('hex')}`);
    };
    for (let a = 0; a < 256; a++) {
      check([a]);
      for (let b = 0; b < 256; b++) check([a, b]);
    }
    const edges = [0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff];
    for (let lead = 0xc0; lead < 0x100; lead++) {
      for (let b = 0; b < 256; b++) {
        for (const c of edges) {
          check([lead, b, c]);
          for (const d of edges) check([lead, b, c, d]);
        }
      }
    }
  });

  it('on random strings shorter and longer than the JavaScript path, at any offset', () => {
    const random = seeded(7);
    const pool = [0x61, 0x7f, 0x80, 0xbf, 0xc2, 0xdf, 0xe0, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0xa0, 0x90];
    for (let round = 0; round < 20_000; round++) {
      const length = Math.floor(random() * 80);
      const bytes = Uint8Array.from({ length: length + 4 }, () => pool[Math.floor(random() * pool.length)]!);
      const start = Math.floor(random() * 4);
      const end = start + length;
      expect(isUtf8Range(bytes, start, end), Buffer.from(bytes.subarray(start, end)).toString('hex')).toBe(isUtf8(bytes.subarray(start, end)));
    }
  });
});

/** The repository's seeded generator (src/raft/rng.ts), so a failure replays. */
function seeded(seed: number): () => number {
  const rng = new Rng(seed);
  return () => rng.float();
}

function stringsIn(value: unknown, out: string[] = [], depth = 0): string[] {
  if (depth > 10) return out;
  if (typeof value === 'string') out.push(value);
  else if (Array.isArray(value)) for (const item of value) stringsIn(item, out, depth + 1);
  else if (typeof value === 'object' && value !== null && !Buffer.isBuffer(value)) for (const item of Object.values(value)) stringsIn(item, out, depth + 1);
  return out;
}

function containsReplacementBytes(bytes: Buffer): boolean {
  return bytes.includes(Buffer.from([0xef, 0xbf, 0xbd]));
}

describe('differential check against protobufjs', () => {
  it('whenever the checked deserializer accepts mutated bytes, no decoded string holds an invented U+FFFD', () => {
    const stream = kvServiceDefinition['Stream']!;
    const samples = [
      { id: '1', timeoutMs: 500, put: { key: 'b/k\u00e9', value: Buffer.from('v'), requestId: 'r1' } },
      { id: '2', getByPrefix: { prefix: 'b/', pageToken: 'tok', transaction: 'tx', limit: 10 } },
      { id: '3', commit: { transaction: 't', writes: [{ key: 'b/1', value: Buffer.from([1]) }, { key: 'b/2', delete: true }], readKeys: ['b/3'], readPrefixes: ['b/'] } },
      { id: '4', executeScript: { script: 'return @x', params: { x: '"\u00fc"' }, bucket: 'b' } },
      { id: '5', cancel: {} },
    ].map((message) => stream.requestSerialize(message));
    // protobufjs alone, to show the mutations do reach its replacement decoding.
    const decodeUnchecked = (packageDefinition['atoll.v1.StreamRequest'] as { deserialize: (bytes: Buffer) => unknown }).deserialize;
    const random = seeded(23);
    const interesting = [0xff, 0xfe, 0x80, 0xc0, 0xed, 0xe2, 0x00, 0x0a, 0x12, 0x7f];
    let accepted = 0;
    let refused = 0;
    let inventedWithoutCheck = 0;
    for (let round = 0; round < 20_000; round++) {
      const bytes = Buffer.from(samples[round % samples.length]!);
      const edits = 1 + Math.floor(random() * 3);
      for (let edit = 0; edit < edits; edit++) {
        const at = Math.floor(random() * bytes.length);
        bytes[at] = random() < 0.5 ? interesting[Math.floor(random() * interesting.length)]! : Math.floor(random() * 256);
      }
      if (containsReplacementBytes(bytes)) continue;
      let decoded: unknown;
      expect(() => (decoded = stream.requestDeserialize(bytes))).not.toThrow();
      if (wireProblemOf(decoded) !== undefined) {
        refused++;
        try {
          if (stringsIn(decodeUnchecked(bytes)).some((value) => value.includes('\uFFFD'))) inventedWithoutCheck++;
        } catch {
          // protobufjs refuses these bytes too.
        }
        continue;
      }
      accepted++;
      for (const value of stringsIn(decoded)) expect(value.includes('\uFFFD'), `round ${round}: ${bytes.toString('hex')}`).toBe(false);
    }
    expect(inventedWithoutCheck).toBeGreaterThan(100);
    expect(accepted).toBeGreaterThan(1_000);
    expect(refused).toBeGreaterThan(1_000);
  });
});
