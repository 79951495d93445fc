/**
 * Conversions between atoll.v1 messages (wire-types.ts) and the transport-neutral types of
 * src/api/node-api.ts, in both directions, for every request and response. The KV service, the Stream
 * RPC, the client and the node's Forward client and server all go through these, so the wire
 * format is interpreted in exactly one place.
 *
 * Decoders check shape at the edge: a missing or invalid key, a malformed or out-of-range 64-bit
 * integer, an unknown enum value all fail with an AtollError (INVALID_KEY / INVALID_ARGUMENT) before
 * anything reaches a node. Semantic limits (value size, TTL range, condition combinations) are the
 * node's to check, because it must check them for forwarded requests too.
 *
 * Encoders build messages from API values the caller already holds; 64-bit fields are written as
 * decimal text, optional fields are left out when absent. The field helpers the decoders share are
 * in wire-fields.ts.
 */
import { AtollError } from '../errors.js';
import type { KeyLoad } from '../hotkeys/index.js';
import type {
  BackupItem,
  BackupPageRequest,
  BackupPageResponse,
  ClusterInfoRequest,
  ClusterInfoResponse,
  DeleteRequest,
  DeleteResponse,
  ExistsRequest,
  ExistsResponse,
  ExtendRequest,
  ExtendResponse,
  LeaseAction,
  LeaseRequest,
  LeaseResponse,
  GetByPrefixRequest,
  GetByPrefixResponse,
  GetRequest,
  GetResponse,
  BeginTransactionRequest,
  BeginTransactionResponse,
  CommitRequest,
  CommitResponse,
  ExecuteScriptRequest,
  ExecuteScriptResponse,
  IncrementRequest,
  Isolation,
  TxnWrite,
  IncrementResponse,
  KeyRecord,
  NodeInfo,
  PartitionInfo,
  PutRequest,
  PutResponse,
  TransferLeaderRequest,
} from '../api/node-api.js';
import { formatWireInt64, parseWireCount, parseWireInt64, parseWireUint32 } from './wire-numbers.js';
import type {
  BackupItemMessage,
  BackupPageRequestMessage,
  BackupPageResponseMessage,
  ClusterInfoRequestMessage,
  ClusterInfoResponseMessage,
  DeleteRequestMessage,
  DeleteResponseMessage,
  ExistsRequestMessage,
  ExistsResponseMessage,
  ExtendRequestMessage,
  ExtendResponseMessage,
  LeaseRequestMessage,
  LeaseResponseMessage,
  GetByPrefixRequestMessage,
  GetByPrefixResponseMessage,
  GetRequestMessage,
  GetResponseMessage,
  BeginTransactionRequestMessage,
  BeginTransactionResponseMessage,
  CommitRequestMessage,
  CommitResponseMessage,
  ExecuteScriptRequestMessage,
  ExecuteScriptResponseMessage,
  IncrementRequestMessage,
  IsolationName,
  TxnWriteMessage,
  IncrementResponseMessage,
  KeyRecordMessage,
  KeyLoadMessage,
  NodeInfoMessage,
  PartitionInfoMessage,
  PutRequestMessage,
  PutResponseMessage,
  TransferLeaderRequestMessage,
} from './wire-types.js';
import { decodeBoolean, decodeBytes, decodeConsistency, decodeCount, decodeKey, decodeMessage, decodeOptionalCount, decodeReadRevision, decodeRepeated, decodeRequestId, decodeText, encodeConsistency } from './wire-fields.js';

// -------------------------------------------------------------------------------------------------
// KeyRecord

export function encodeKeyRecord(record: KeyRecord): KeyRecordMessage {
  return {
    key: record.key,
    value: record.value,
    createRevision: formatWireInt64(record.createRevision),
    modRevision: formatWireInt64(record.modRevision),
    version: formatWireInt64(record.version),
    expiresAtMs: formatWireInt64(record.expiresAtMs),
  };
}

export function decodeKeyRecord(value: unknown): KeyRecord {
  const message = decodeMessage<KeyRecordMessage>(value, 'KeyRecord');
  return {
    key: decodeText(message.key, 'key'),
    value: decodeBytes(message.value, 'value'),
    createRevision: decodeCount(message.createRevision, 'create_revision'),
    modRevision: decodeCount(message.modRevision, 'mod_revision'),
    version: decodeCount(message.version, 'version'),
    expiresAtMs: decodeCount(message.expiresAtMs, 'expires_at_ms'),
  };
}

// -------------------------------------------------------------------------------------------------
// Get

export function encodeGetRequest(request: GetRequest): GetRequestMessage {
  const message: GetRequestMessage = { key: request.key, consistency: encodeConsistency(request.consistency) };
  if (request.revision !== undefined && request.revision !== 0) message.revision = formatWireInt64(request.revision);
  if (request.transaction !== undefined) message.transaction = request.transaction;
  return message;
}

export function decodeGetRequest(value: unknown): GetRequest {
  const message = decodeMessage<GetRequestMessage>(value, 'GetRequest');
  const key = decodeKey(message.key);
  const revision = decodeReadRevision(message.revision);
  const consistency = decodeConsistency(message.consistency);
  const transaction = decodeText(message.transaction, 'transaction');
  return { key, consistency, ...(revision !== undefined && { revision }), ...(transaction !== '' && { transaction }) };
}

export function encodeGetResponse(response: GetResponse): GetResponseMessage {
  return {
    found: response.found,
    value: response.value,
    createRevision: formatWireInt64(response.createRevision),
    modRevision: formatWireInt64(response.modRevision),
    version: formatWireInt64(response.version),
    expiresAtMs: formatWireInt64(response.expiresAtMs),
    revision: formatWireInt64(response.revision),
  };
}

export function decodeGetResponse(value: unknown): GetResponse {
  const message = decodeMessage<GetResponseMessage>(value, 'GetResponse');
  return {
    found: decodeBoolean(message.found, 'found'),
    value: decodeBytes(message.value, 'value'),
    createRevision: decodeCount(message.createRevision, 'create_revision'),
    modRevision: decodeCount(message.modRevision, 'mod_revision'),
    version: decodeCount(message.version, 'version'),
    expiresAtMs: decodeCount(message.expiresAtMs, 'expires_at_ms'),
    revision: decodeCount(message.revision, 'revision'),
  };
}

// -------------------------------------------------------------------------------------------------
// Put

export function encodePutRequest(request: PutRequest): PutRequestMessage {
  const message: PutRequestMessage = {
    key: request.key,
    value: request.value,
    keepTtl: request.keepTtl === true,
    ifAbsent: request.ifAbsent === true,
    ifPresent: request.ifPresent === true,
    returnPrevious: request.returnPrevious === true,
  };
  if (request.ttlMs !== undefined) message.ttlMs = formatWireInt64(request.ttlMs);
  if (request.ifModRevision !== undefined) message.ifModRevision = formatWireInt64(request.ifModRevision);
  if (request.ifValue !== undefined) message.ifValue = request.ifValue;
  if (request.requestId !== undefined) message.requestId = request.requestId;
  if (request.lease !== undefined) message.lease = request.lease;
  if (request.ifFence !== undefined) message.ifFence = formatWireInt64(request.ifFence);
  return message;
}

/** A put's fields after its key and value, in the message's order: name, wire name, kind. */
const putFields = [
  ['ttlMs', 'ttl_ms', 'count'], ['keepTtl', 'keep_ttl', 'flag'], ['ifAbsent', 'if_absent', 'flag'], ['ifPresent', 'if_present', 'flag'],
  ['ifModRevision', 'if_mod_revision', 'count'], ['ifValue', 'if_value', 'bytes'], ['returnPrevious', 'return_previous', 'flag'],
  ['requestId', 'request_id', 'id'], ['lease', 'lease', 'text'], ['ifFence', 'if_fence', 'count'],
] as const satisfies readonly (readonly [keyof PutRequest & keyof PutRequestMessage, string, string])[];
/** What leaves a field of each kind unset, as its helper reads it (and undefined and null). */
const unsetPutField = { count: undefined, bytes: undefined, flag: false, text: '', id: '' } as const;

/**
 * A put, the commonest request, reads its fields in one loop, not through a helper per field: a
 * field of its type is taken as it is, and any other goes to its helper (wire-fields.ts), which
 * throws the error it gives in every message (the checks and errors are the helpers').
 */
export function decodePutRequest(value: unknown): PutRequest {
  const message = (typeof value === 'object' && value !== null ? value : decodeMessage(value, 'PutRequest')) as Record<string, unknown>;
  const { key, value: bytes } = message;
  const request: Record<string, unknown> = {
    key: typeof key === 'string' && key !== '' ? key : decodeKey(key),
    value: bytes instanceof Uint8Array ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : decodeBytes(bytes, 'value'),
  };
  for (const [name, field, kind] of putFields) {
    const item = message[name];
    if (item === undefined || item === null || item === unsetPutField[kind]) continue;
    if (kind === 'count') request[name] = parseWireCount(item, field);
    else if (kind === 'bytes') request[name] = decodeBytes(item, field);
    else if (kind === 'flag') request[name] = item === true || decodeBoolean(item, field);
    else request[name] = typeof item === 'string' ? item : kind === 'id' ? decodeRequestId(item) : decodeText(item, field);
  }
  return request as unknown as PutRequest;
}

export function encodePutResponse(response: PutResponse): PutResponseMessage {
  const message: PutResponseMessage = { applied: response.applied, revision: formatWireInt64(response.revision) };
  if (response.previous !== undefined) message.previous = encodeKeyRecord(response.previous);
  return message;
}

export function decodePutResponse(value: unknown): PutResponse {
  const message = decodeMessage<PutResponseMessage>(value, 'PutResponse');
  const response = { applied: decodeBoolean(message.applied, 'applied'), revision: decodeCount(message.revision, 'revision') };
  if (message.previous === undefined || message.previous === null) return response;
  return { ...response, previous: decodeKeyRecord(message.previous) };
}

// -------------------------------------------------------------------------------------------------
// Delete

export function encodeDeleteRequest(request: DeleteRequest): DeleteRequestMessage {
  const message: DeleteRequestMessage = { key: request.key };
  if (request.ifModRevision !== undefined) message.ifModRevision = formatWireInt64(request.ifModRevision);
  if (request.ifValue !== undefined) message.ifValue = request.ifValue;
  if (request.requestId !== undefined) message.requestId = request.requestId;
  return message;
}

export function decodeDeleteRequest(value: unknown): DeleteRequest {
  const message = decodeMessage<DeleteRequestMessage>(value, 'DeleteRequest');
  const request: { -readonly [K in keyof DeleteRequest]: DeleteRequest[K] } = { key: decodeKey(message.key) };
  const ifModRevision = decodeOptionalCount(message.ifModRevision, 'if_mod_revision');
  if (ifModRevision !== undefined) request.ifModRevision = ifModRevision;
  if (message.ifValue !== undefined && message.ifValue !== null) request.ifValue = decodeBytes(message.ifValue, 'if_value');
  const requestId = decodeRequestId(message.requestId);
  if (requestId !== undefined) request.requestId = requestId;
  return request;
}

export function encodeDeleteResponse(response: DeleteResponse): DeleteResponseMessage {
  return { deleted: response.deleted, revision: formatWireInt64(response.revision) };
}

export function decodeDeleteResponse(value: unknown): DeleteResponse {
  const message = decodeMessage<DeleteResponseMessage>(value, 'DeleteResponse');
  return { deleted: decodeBoolean(message.deleted, 'deleted'), revision: decodeCount(message.revision, 'revision') };
}

// -------------------------------------------------------------------------------------------------
// Increment

export function encodeIncrementRequest(request: IncrementRequest): IncrementRequestMessage {
  const message: IncrementRequestMessage = { key: request.key, delta: formatWireInt64(request.delta) };
  if (request.ttlMs !== undefined) message.ttlMs = formatWireInt64(request.ttlMs);
  if (request.requestId !== undefined) message.requestId = request.requestId;
  return message;
}

export function decodeIncrementRequest(value: unknown): IncrementRequest {
  const message = decodeMessage<IncrementRequestMessage>(value, 'IncrementRequest');
  const key = decodeKey(message.key);
  const delta = parseWireInt64(message.delta ?? '0', 'delta');
  const ttlMs = decodeOptionalCount(message.ttlMs, 'ttl_ms');
  const requestId = decodeRequestId(message.requestId);
  return { key, delta, ...(ttlMs !== undefined ? { ttlMs } : {}), ...(requestId !== undefined ? { requestId } : {}) };
}

export function encodeIncrementResponse(response: IncrementResponse): IncrementResponseMessage {
  return { value: formatWireInt64(response.value), revision: formatWireInt64(response.revision) };
}

export function decodeIncrementResponse(value: unknown): IncrementResponse {
  const message = decodeMessage<IncrementResponseMessage>(value, 'IncrementResponse');
  return { value: parseWireInt64(message.value ?? '0', 'value'), revision: decodeCount(message.revision, 'revision') };
}

// -------------------------------------------------------------------------------------------------
// Exists

export function encodeExistsRequest(request: ExistsRequest): ExistsRequestMessage {
  const message: ExistsRequestMessage = { key: request.key, consistency: encodeConsistency(request.consistency) };
  if (request.transaction !== undefined) message.transaction = request.transaction;
  return message;
}

export function decodeExistsRequest(value: unknown): ExistsRequest {
  const message = decodeMessage<ExistsRequestMessage>(value, 'ExistsRequest');
  const transaction = decodeText(message.transaction, 'transaction');
  return { key: decodeKey(message.key), consistency: decodeConsistency(message.consistency), ...(transaction !== '' && { transaction }) };
}

export function encodeExistsResponse(response: ExistsResponse): ExistsResponseMessage {
  return { exists: response.exists, revision: formatWireInt64(response.revision) };
}

export function decodeExistsResponse(value: unknown): ExistsResponse {
  const message = decodeMessage<ExistsResponseMessage>(value, 'ExistsResponse');
  return { exists: decodeBoolean(message.exists, 'exists'), revision: decodeCount(message.revision, 'revision') };
}

// -------------------------------------------------------------------------------------------------
// Extend

export function encodeExtendRequest(request: ExtendRequest): ExtendRequestMessage {
  return { key: request.key, ttlMs: formatWireInt64(request.ttlMs), ...(request.requestId !== undefined ? { requestId: request.requestId } : {}) };
}

export function decodeExtendRequest(value: unknown): ExtendRequest {
  const message = decodeMessage<ExtendRequestMessage>(value, 'ExtendRequest');
  const key = decodeKey(message.key);
  if (message.ttlMs === undefined || message.ttlMs === null || message.ttlMs === '0') {
    throw new AtollError('INVALID_ARGUMENT', 'extend needs ttl_ms: the new expiry in milliseconds from now, at least 1');
  }
  const requestId = decodeRequestId(message.requestId);
  return { key, ttlMs: parseWireCount(message.ttlMs, 'ttl_ms'), ...(requestId !== undefined ? { requestId } : {}) };
}

/** An absent or empty request_id means none; a present one is checked when the node proposes. */
export function encodeExtendResponse(response: ExtendResponse): ExtendResponseMessage {
  return {
    extended: response.extended,
    expiresAtMs: formatWireInt64(response.expiresAtMs),
    revision: formatWireInt64(response.revision),
  };
}

export function decodeExtendResponse(value: unknown): ExtendResponse {
  const message = decodeMessage<ExtendResponseMessage>(value, 'ExtendResponse');
  return {
    extended: decodeBoolean(message.extended, 'extended'),
    expiresAtMs: decodeCount(message.expiresAtMs, 'expires_at_ms'),
    revision: decodeCount(message.revision, 'revision'),
  };
}

// -------------------------------------------------------------------------------------------------
// GetByPrefix

export function encodeGetByPrefixRequest(request: GetByPrefixRequest): GetByPrefixRequestMessage {
  const message: GetByPrefixRequestMessage = {
    prefix: request.prefix,
    pageToken: request.pageToken ?? '',
    consistency: encodeConsistency(request.consistency),
  };
  if (request.revision !== undefined && request.revision !== 0) message.revision = formatWireInt64(request.revision);
  if (request.limit !== undefined) message.limit = request.limit;
  if (request.transaction !== undefined) message.transaction = request.transaction;
  return message;
}

export function decodeGetByPrefixRequest(value: unknown): GetByPrefixRequest {
  const message = decodeMessage<GetByPrefixRequestMessage>(value, 'GetByPrefixRequest');
  const prefix = decodeText(message.prefix, 'prefix');
  if (prefix === '') {
    throw new AtollError(
      'PREFIX_SPANS_BUCKETS',
      'the request has no prefix: set `prefix` to a bucket name (`services`) or a prefix inside one (`services/au`)',
    );
  }
  const request: { -readonly [K in keyof GetByPrefixRequest]: GetByPrefixRequest[K] } = {
    prefix,
    consistency: decodeConsistency(message.consistency),
  };
  const revision = decodeReadRevision(message.revision);
  if (revision !== undefined) request.revision = revision;
  if (message.limit !== undefined && message.limit !== null) request.limit = parseWireUint32(message.limit, 'limit');
  const pageToken = decodeText(message.pageToken, 'page_token');
  if (pageToken !== '') request.pageToken = pageToken;
  const transaction = decodeText(message.transaction, 'transaction');
  if (transaction !== '') request.transaction = transaction;
  return request;
}

export function encodeGetByPrefixResponse(response: GetByPrefixResponse): GetByPrefixResponseMessage {
  return {
    items: response.items.map(encodeKeyRecord),
    revision: formatWireInt64(response.revision),
    nextPageToken: response.nextPageToken,
  };
}

export function decodeGetByPrefixResponse(value: unknown): GetByPrefixResponse {
  const message = decodeMessage<GetByPrefixResponseMessage>(value, 'GetByPrefixResponse');
  return {
    items: decodeRepeated(message.items, 'items', decodeKeyRecord),
    revision: decodeCount(message.revision, 'revision'),
    nextPageToken: decodeText(message.nextPageToken, 'next_page_token'),
  };
}

// -------------------------------------------------------------------------------------------------
// Transactions and scripts

function decodeIsolation(value: unknown): Isolation {
  if (value === undefined || value === null || value === 'SNAPSHOT' || value === 0) return 'snapshot';
  if (value === 'SERIALIZABLE' || value === 1) return 'serializable';
  throw new AtollError('INVALID_ARGUMENT', `isolation must be SNAPSHOT or SERIALIZABLE, got ${String(value)}`);
}

function encodeIsolation(isolation: Isolation | undefined): IsolationName {
  return isolation === 'serializable' ? 'SERIALIZABLE' : 'SNAPSHOT';
}

export function encodeBeginTransactionRequest(request: BeginTransactionRequest): BeginTransactionRequestMessage {
  return { key: request.key, isolation: encodeIsolation(request.isolation) };
}

export function decodeBeginTransactionRequest(value: unknown): BeginTransactionRequest {
  const message = decodeMessage<BeginTransactionRequestMessage>(value, 'BeginTransactionRequest');
  return { key: decodeKey(message.key), isolation: decodeIsolation(message.isolation) };
}

export function encodeBeginTransactionResponse(response: BeginTransactionResponse): BeginTransactionResponseMessage {
  return {
    transaction: response.transaction,
    partition: response.partition,
    bucket: response.bucket,
    snapshotRevision: formatWireInt64(response.snapshotRevision),
    isolation: encodeIsolation(response.isolation),
    expiresAtMs: formatWireInt64(response.expiresAtMs),
  };
}

export function decodeBeginTransactionResponse(value: unknown): BeginTransactionResponse {
  const message = decodeMessage<BeginTransactionResponseMessage>(value, 'BeginTransactionResponse');
  return {
    transaction: decodeText(message.transaction, 'transaction'),
    partition: parseWireUint32(message.partition ?? 0, 'partition'),
    bucket: decodeText(message.bucket, 'bucket'),
    snapshotRevision: decodeCount(message.snapshotRevision, 'snapshot_revision'),
    isolation: decodeIsolation(message.isolation),
    expiresAtMs: decodeCount(message.expiresAtMs, 'expires_at_ms'),
  };
}

function encodeTxnWrite(write: TxnWrite): TxnWriteMessage {
  const message: TxnWriteMessage = { key: write.key };
  if (write.delete === true) {
    message.delete = true;
    return message;
  }
  message.value = write.value ?? new Uint8Array(0);
  if (write.ttlMs !== undefined) message.ttlMs = formatWireInt64(write.ttlMs);
  if (write.keepTtl === true) message.keepTtl = true;
  if (write.lease !== undefined) message.lease = write.lease;
  if (write.ifFence !== undefined) message.ifFence = formatWireInt64(write.ifFence);
  return message;
}

function decodeTxnWrite(value: unknown): TxnWrite {
  const message = decodeMessage<TxnWriteMessage>(value, 'TxnWrite');
  const key = decodeKey(message.key);
  if (decodeBoolean(message.delete, 'delete')) return { key, delete: true };
  const ttlMs = decodeOptionalCount(message.ttlMs, 'ttl_ms');
  const lease = decodeText(message.lease, 'lease');
  const ifFence = decodeOptionalCount(message.ifFence, 'if_fence');
  return {
    key,
    value: decodeBytes(message.value, 'value'),
    ...(ttlMs !== undefined && { ttlMs }),
    ...(decodeBoolean(message.keepTtl, 'keep_ttl') && { keepTtl: true }),
    ...(lease !== '' && { lease }),
    ...(ifFence !== undefined && { ifFence }),
  };
}

export function encodeCommitRequest(request: CommitRequest): CommitRequestMessage {
  const message: CommitRequestMessage = {
    transaction: request.transaction,
    writes: request.writes.map(encodeTxnWrite),
    readKeys: [...request.readKeys],
    readPrefixes: [...request.readPrefixes],
  };
  if (request.requestId !== undefined) message.requestId = request.requestId;
  return message;
}

export function decodeCommitRequest(value: unknown): CommitRequest {
  const message = decodeMessage<CommitRequestMessage>(value, 'CommitRequest');
  const requestId = decodeRequestId(message.requestId);
  return {
    transaction: decodeText(message.transaction, 'transaction'),
    writes: decodeRepeated(message.writes, 'writes', decodeTxnWrite),
    readKeys: decodeRepeated(message.readKeys, 'read_keys', decodeKey),
    readPrefixes: decodeRepeated(message.readPrefixes, 'read_prefixes', (item) => decodeText(item, 'read_prefixes')),
    ...(requestId !== undefined && { requestId }),
  };
}

export function encodeCommitResponse(response: CommitResponse): CommitResponseMessage {
  return { revision: formatWireInt64(response.revision) };
}

export function decodeCommitResponse(value: unknown): CommitResponse {
  const message = decodeMessage<CommitResponseMessage>(value, 'CommitResponse');
  return { revision: decodeCount(message.revision, 'revision') };
}

export function encodeExecuteScriptRequest(request: ExecuteScriptRequest): ExecuteScriptRequestMessage {
  const message: ExecuteScriptRequestMessage = {
    script: request.script,
    params: { ...request.params },
    isolation: encodeIsolation(request.isolation),
  };
  if (request.bucket !== undefined) message.bucket = request.bucket;
  if (request.requestId !== undefined) message.requestId = request.requestId;
  return message;
}

function decodeParams(value: unknown): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new AtollError('INVALID_ARGUMENT', 'params must be a map of strings');
  const params: Record<string, string> = Object.create(null) as Record<string, string>;
  for (const [name, text] of Object.entries(value)) params[name] = decodeText(text, `params.${name}`);
  return params;
}

export function decodeExecuteScriptRequest(value: unknown): ExecuteScriptRequest {
  const message = decodeMessage<ExecuteScriptRequestMessage>(value, 'ExecuteScriptRequest');
  const script = decodeText(message.script, 'script');
  if (script.trim() === '') throw new AtollError('INVALID_ARGUMENT', 'the request has no script: set `script` to the script text');
  const bucket = decodeText(message.bucket, 'bucket');
  const requestId = decodeRequestId(message.requestId);
  return {
    script,
    params: decodeParams(message.params),
    isolation: decodeIsolation(message.isolation),
    ...(bucket !== '' && { bucket }),
    ...(requestId !== undefined && { requestId }),
  };
}

export function encodeExecuteScriptResponse(response: ExecuteScriptResponse): ExecuteScriptResponseMessage {
  return {
    resultJson: response.resultJson,
    committed: response.committed,
    revision: formatWireInt64(response.revision),
    attempts: response.attempts,
  };
}

export function decodeExecuteScriptResponse(value: unknown): ExecuteScriptResponse {
  const message = decodeMessage<ExecuteScriptResponseMessage>(value, 'ExecuteScriptResponse');
  return {
    resultJson: decodeText(message.resultJson, 'result_json') || 'null',
    committed: decodeBoolean(message.committed, 'committed'),
    revision: decodeCount(message.revision, 'revision'),
    attempts: parseWireUint32(message.attempts ?? 0, 'attempts'),
  };
}

// -------------------------------------------------------------------------------------------------
// Lease

const leaseActions: Readonly<Record<LeaseAction, LeaseRequestMessage['action']>> = {
  grant: 'LEASE_GRANT',
  keepAlive: 'LEASE_KEEP_ALIVE',
  revoke: 'LEASE_REVOKE',
  info: 'LEASE_INFO',
};

export function encodeLeaseRequest(request: LeaseRequest): LeaseRequestMessage {
  return {
    action: leaseActions[request.action],
    key: request.key ?? '',
    ttlMs: formatWireInt64(request.ttlMs ?? 0),
    lease: request.lease ?? '',
  };
}

export function decodeLeaseRequest(value: unknown): LeaseRequest {
  const message = decodeMessage<LeaseRequestMessage>(value, 'LeaseRequest');
  const action = (Object.keys(leaseActions) as LeaseAction[]).find((name) => leaseActions[name] === message.action || message.action === Object.keys(leaseActions).indexOf(name) + 1);
  if (action === undefined) throw new AtollError('INVALID_ARGUMENT', 'a lease call needs action: LEASE_GRANT, LEASE_KEEP_ALIVE, LEASE_REVOKE or LEASE_INFO');
  if (action === 'grant') {
    const ttlMs = decodeCount(message.ttlMs, 'ttl_ms');
    if (ttlMs < 1) throw new AtollError('INVALID_ARGUMENT', 'a lease grant needs ttl_ms: the lease TTL in milliseconds, at least 1', { ttlMs });
    return { action, key: decodeKey(message.key), ttlMs };
  }
  const lease = decodeText(message.lease, 'lease');
  if (lease === '') throw new AtollError('INVALID_ARGUMENT', 'this lease call needs lease: the id a grant returned');
  return { action, lease };
}

export function encodeLeaseResponse(response: LeaseResponse): LeaseResponseMessage {
  return {
    lease: response.lease,
    ttlMs: formatWireInt64(response.ttlMs),
    ttlLeftMs: formatWireInt64(response.ttlLeftMs),
    keys: response.keys,
    revision: formatWireInt64(response.revision),
  };
}

export function decodeLeaseResponse(value: unknown): LeaseResponse {
  const message = decodeMessage<LeaseResponseMessage>(value, 'LeaseResponse');
  return {
    lease: decodeText(message.lease, 'lease'),
    ttlMs: decodeCount(message.ttlMs, 'ttl_ms'),
    ttlLeftMs: decodeCount(message.ttlLeftMs, 'ttl_left_ms'),
    keys: decodeRepeated(message.keys, 'keys', (item) => decodeText(item, 'keys')),
    revision: decodeCount(message.revision, 'revision'),
  };
}
