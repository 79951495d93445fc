/**
 * The KV operations a node executes, as tagged values (`{ kind: 'put', request }`), so code that
 * handles "any of them" (the executor, the router, forwarding, the client) writes one path. Plain
 * TypeScript types over src/api/node-api.ts; their protobuf encoding lives in src/wire/kv-operation.ts.
 * The kind names are the oneof case names shared by StreamRequest, StreamResponse, ForwardRequest
 * and ForwardResponse.
 */
import type {
  BeginTransactionRequest,
  BeginTransactionResponse,
  CommitRequest,
  CommitResponse,
  DeleteRequest,
  DeleteResponse,
  ExecuteScriptRequest,
  ExecuteScriptResponse,
  ExistsRequest,
  ExistsResponse,
  ExtendRequest,
  ExtendResponse,
  GetByPrefixRequest,
  GetByPrefixResponse,
  GetRequest,
  GetResponse,
  IncrementRequest,
  IncrementResponse,
  LeaseRequest,
  LeaseResponse,
  PutRequest,
  PutResponse,
  CallContext,
} from './node-api.js';

/** Request and response types of each operation, by kind. */
export interface KvTypes {
  get: { request: GetRequest; response: GetResponse };
  put: { request: PutRequest; response: PutResponse };
  delete: { request: DeleteRequest; response: DeleteResponse };
  increment: { request: IncrementRequest; response: IncrementResponse };
  exists: { request: ExistsRequest; response: ExistsResponse };
  extend: { request: ExtendRequest; response: ExtendResponse };
  getByPrefix: { request: GetByPrefixRequest; response: GetByPrefixResponse };
  beginTransaction: { request: BeginTransactionRequest; response: BeginTransactionResponse };
  commit: { request: CommitRequest; response: CommitResponse };
  executeScript: { request: ExecuteScriptRequest; response: ExecuteScriptResponse };
  lease: { request: LeaseRequest; response: LeaseResponse };
}

export type KvKind = keyof KvTypes;

/**
 * `sent`: the request message's bytes as the node received them (a unary call's, or a KV.Stream
 * request's operation field), so a node that forwards the operation sends them as they are
 * (src/wire/forward-codec.ts) instead of encoding the request again.
 */
export type KvOperation = { [K in KvKind]: { readonly kind: K; readonly request: KvTypes[K]['request']; readonly sent?: Uint8Array } }[KvKind];
export type KvResult = { [K in KvKind]: { readonly kind: K; readonly response: KvTypes[K]['response'] } }[KvKind];

/**
 * A node that runs any operation in one call (AtollNode.runKv): the server hands it the operation it
 * decoded instead of unwrapping it into the NodeApi method of its kind (which wraps it again).
 */
export interface KvRunner {
  runKv(operation: KvOperation, context: CallContext): Promise<KvResult>;
}

/** The node's one-call runner, bound, when it has one (test fakes implement only the NodeApi methods). */
export function kvRunnerOf(api: object): KvRunner['runKv'] | undefined {
  const runKv = (api as Partial<KvRunner>).runKv;
  return typeof runKv === 'function' ? runKv.bind(api) : undefined;
}

/** A KvResult narrowed to one kind. */
export type KvResultOf<K extends KvKind> = Extract<KvResult, { kind: K }>;

export const kvKinds: readonly KvKind[] = Object.freeze([
  'get',
  'put',
  'delete',
  'increment',
  'exists',
  'extend',
  'getByPrefix',
  'beginTransaction',
  'commit',
  'executeScript',
  'lease',
]);

/** Operations that change state: a client must not blindly retry one whose outcome is unknown. */
const writeKinds: ReadonlySet<KvKind> = new Set(['put', 'delete', 'increment', 'extend', 'commit', 'executeScript', 'lease']);

export function isWriteKind(kind: KvKind): boolean {
  return writeKinds.has(kind);
}

export function isKvKind(value: unknown): value is KvKind {
  return typeof value === 'string' && (kvKinds as readonly string[]).includes(value);
}
