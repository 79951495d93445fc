/**
 * The protobuf encoding of KV operations (src/api/operations.ts defines them): one codec per kind,
 * so code that handles "any of them" (the Stream RPC, Forward, the client's router) writes one path.
 */
import { AtollError } from '../errors.js';
import type { CallContext, NodeApi } from '../api/node-api.js';
import { requestPathCounters } from '../api/request-path-counters.js';
import * as convert from './convert.js';
import { isKvKind, kvKinds, kvRunnerOf, type KvKind, type KvOperation, type KvResult, type KvTypes } from '../api/operations.js';
import type { KvRequestMessages, KvResponseMessages } from './wire-types.js';
import { sentBytes } from './wire-utf8.js';

export { isKvKind, isWriteKind, kvKinds, type KvKind, type KvOperation, type KvResult, type KvResultOf, type KvTypes } from '../api/operations.js';

interface KvCodec<K extends KvKind> {
  /** The KV method name in the .proto (the unary RPC). */
  readonly method: string;
  encodeRequest(request: KvTypes[K]['request']): KvRequestMessages[K];
  decodeRequest(message: unknown): KvTypes[K]['request'];
  encodeResponse(response: KvTypes[K]['response']): KvResponseMessages[K];
  decodeResponse(message: unknown): KvTypes[K]['response'];
  run(api: NodeApi, request: KvTypes[K]['request'], context: CallContext): Promise<KvTypes[K]['response']>;
}

export const kvCodecs: { readonly [K in KvKind]: KvCodec<K> } = Object.freeze({
  get: {
    method: 'Get',
    encodeRequest: convert.encodeGetRequest,
    decodeRequest: convert.decodeGetRequest,
    encodeResponse: convert.encodeGetResponse,
    decodeResponse: convert.decodeGetResponse,
    run: (api, request, context) => api.get(request, context),
  },
  put: {
    method: 'Put',
    encodeRequest: convert.encodePutRequest,
    decodeRequest: convert.decodePutRequest,
    encodeResponse: convert.encodePutResponse,
    decodeResponse: convert.decodePutResponse,
    run: (api, request, context) => api.put(request, context),
  },
  delete: {
    method: 'Delete',
    encodeRequest: convert.encodeDeleteRequest,
    decodeRequest: convert.decodeDeleteRequest,
    encodeResponse: convert.encodeDeleteResponse,
    decodeResponse: convert.decodeDeleteResponse,
    run: (api, request, context) => api.delete(request, context),
  },
  increment: {
    method: 'Increment',
    encodeRequest: convert.encodeIncrementRequest,
    decodeRequest: convert.decodeIncrementRequest,
    encodeResponse: convert.encodeIncrementResponse,
    decodeResponse: convert.decodeIncrementResponse,
    run: (api, request, context) => api.increment(request, context),
  },
  exists: {
    method: 'Exists',
    encodeRequest: convert.encodeExistsRequest,
    decodeRequest: convert.decodeExistsRequest,
    encodeResponse: convert.encodeExistsResponse,
    decodeResponse: convert.decodeExistsResponse,
    run: (api, request, context) => api.exists(request, context),
  },
  extend: {
    method: 'Extend',
    encodeRequest: convert.encodeExtendRequest,
    decodeRequest: convert.decodeExtendRequest,
    encodeResponse: convert.encodeExtendResponse,
    decodeResponse: convert.decodeExtendResponse,
    run: (api, request, context) => api.extend(request, context),
  },
  getByPrefix: {
    method: 'GetByPrefix',
    encodeRequest: convert.encodeGetByPrefixRequest,
    decodeRequest: convert.decodeGetByPrefixRequest,
    encodeResponse: convert.encodeGetByPrefixResponse,
    decodeResponse: convert.decodeGetByPrefixResponse,
    run: (api, request, context) => api.getByPrefix(request, context),
  },
  beginTransaction: {
    method: 'BeginTransaction',
    encodeRequest: convert.encodeBeginTransactionRequest,
    decodeRequest: convert.decodeBeginTransactionRequest,
    encodeResponse: convert.encodeBeginTransactionResponse,
    decodeResponse: convert.decodeBeginTransactionResponse,
    run: (api, request, context) => api.beginTransaction(request, context),
  },
  commit: {
    method: 'Commit',
    encodeRequest: convert.encodeCommitRequest,
    decodeRequest: convert.decodeCommitRequest,
    encodeResponse: convert.encodeCommitResponse,
    decodeResponse: convert.decodeCommitResponse,
    run: (api, request, context) => api.commit(request, context),
  },
  executeScript: {
    method: 'ExecuteScript',
    encodeRequest: convert.encodeExecuteScriptRequest,
    decodeRequest: convert.decodeExecuteScriptRequest,
    encodeResponse: convert.encodeExecuteScriptResponse,
    decodeResponse: convert.decodeExecuteScriptResponse,
    run: (api, request, context) => api.executeScript(request, context),
  },
  lease: {
    method: 'Lease',
    encodeRequest: convert.encodeLeaseRequest,
    decodeRequest: convert.decodeLeaseRequest,
    encodeResponse: convert.encodeLeaseResponse,
    decodeResponse: convert.decodeLeaseResponse,
    run: (api, request, context) => {
      if (api.lease === undefined) return Promise.reject(new AtollError('INVALID_ARGUMENT', 'this node does not serve leases'));
      return api.lease(request, context);
    },
  },
});

/**
 * The codec of one kind, typed loosely: TypeScript cannot relate `kvCodecs[operation.kind]` to
 * `operation.request` through a union, so the generic helpers below go through this one cast.
 */
function codecOf(kind: KvKind): KvCodec<KvKind> {
  return kvCodecs[kind] as unknown as KvCodec<KvKind>;
}

/** Runs an operation on a node: the one dispatch the Stream RPC and Forward servers need. */
export async function runKvOperation(api: NodeApi, operation: KvOperation, context: CallContext): Promise<KvResult> {
  const runKv = kvRunnerOf(api);
  if (runKv !== undefined) return runKv(operation, context);
  const response = await codecOf(operation.kind).run(api, operation.request as never, context);
  return { kind: operation.kind, response } as KvResult;
}

/** `{ [kind]: encoded request }`, ready to spread into a StreamRequest or ForwardRequest. */
export function encodeKvOperation(operation: KvOperation): Partial<KvRequestMessages> {
  return { [operation.kind]: codecOf(operation.kind).encodeRequest(operation.request as never) };
}

/**
 * Reads the request case of a decoded StreamRequest or ForwardRequest: the request's one decode
 * (counted). `sent`: the bytes that case arrived as, when the caller found them (a KV.Stream request's).
 */
export function decodeKvOperation(container: { readonly [K in KvKind]?: KvRequestMessages[K] | null }, kind: unknown, sent?: Uint8Array): KvOperation {
  if (!isKvKind(kind)) {
    throw new AtollError('INVALID_ARGUMENT', `the request names no operation (expected one of ${kvKinds.join(', ')})`);
  }
  return decodeKvRequest(kind, container[kind], sent);
}

/**
 * Decodes one request message of `kind` into its operation: the request's one decode (counted).
 * The operation keeps the bytes the message arrived as (a unary call's, wire-utf8.ts; or `sent`):
 * a forward sends them on.
 */
export function decodeKvRequest(kind: KvKind, message: unknown, sent = typeof message === 'object' && message !== null ? sentBytes.get(message) : undefined): KvOperation {
  requestPathCounters.decodes++;
  const request = (kvCodecs[kind] as unknown as KvCodec<KvKind>).decodeRequest(message);
  return (sent === undefined ? { kind, request } : { kind, request, sent }) as KvOperation;
}

/** `{ [kind]: encoded response }`, ready to spread into a StreamResponse or ForwardResponse. */
export function encodeKvResult(result: KvResult): Partial<KvResponseMessages> {
  return { [result.kind]: codecOf(result.kind).encodeResponse(result.response as never) };
}

/** Reads the response case of a decoded StreamResponse or ForwardResponse. */
export function decodeKvResult(container: { readonly [K in KvKind]?: KvResponseMessages[K] | null }, kind: unknown): KvResult {
  if (!isKvKind(kind)) throw new AtollError('INTERNAL', `the response carries no known result (got ${String(kind)})`);
  return { kind, response: codecOf(kind).decodeResponse(container[kind]) } as KvResult;
}
