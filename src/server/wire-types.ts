/**
 * The shapes of atoll.v1 messages as proto-loader hands them over with the options in protos.ts:
 * lowerCamelCase fields, 64-bit integers as decimal strings, enums as names, bytes as Buffers
 * (typed here as Uint8Array), unset proto3 `optional` fields absent. The same shapes are accepted
 * when encoding. Written by hand to match proto/atoll/v1/*.proto; convert.ts is the only code
 * that should build or read them.
 */

/** A signed 64-bit integer as decimal text (uint64 fields use the same form). */
export type Int64Text = string;

export type ConsistencyName = 'LINEARIZABLE' | 'STALE';

export type IsolationName = 'SNAPSHOT' | 'SERIALIZABLE';

export interface KeyRecordMessage {
  key: string;
  value: Uint8Array;
  createRevision: Int64Text;
  modRevision: Int64Text;
  version: Int64Text;
  expiresAtMs: Int64Text;
}

export interface GetRequestMessage {
  key: string;
  revision?: Int64Text;
  consistency?: ConsistencyName;
  transaction?: string;
}

export interface GetResponseMessage {
  found: boolean;
  value: Uint8Array;
  createRevision: Int64Text;
  modRevision: Int64Text;
  version: Int64Text;
  expiresAtMs: Int64Text;
  revision: Int64Text;
}

export interface PutRequestMessage {
  key: string;
  value: Uint8Array;
  ttlMs?: Int64Text;
  keepTtl?: boolean;
  ifAbsent?: boolean;
  ifPresent?: boolean;
  ifModRevision?: Int64Text;
  ifValue?: Uint8Array;
  returnPrevious?: boolean;
  requestId?: string;
}

export interface PutResponseMessage {
  applied: boolean;
  revision: Int64Text;
  /** proto-loader reports an unset message field as null. */
  previous?: KeyRecordMessage | null;
}

export interface DeleteRequestMessage {
  key: string;
  ifModRevision?: Int64Text;
  ifValue?: Uint8Array;
  requestId?: string;
}

export interface DeleteResponseMessage {
  deleted: boolean;
  revision: Int64Text;
}

export interface IncrementRequestMessage {
  key: string;
  delta: Int64Text;
  ttlMs?: Int64Text;
  requestId?: string;
}

export interface IncrementResponseMessage {
  value: Int64Text;
  revision: Int64Text;
}

export interface ExistsRequestMessage {
  key: string;
  consistency?: ConsistencyName;
  transaction?: string;
}

export interface ExistsResponseMessage {
  exists: boolean;
  revision: Int64Text;
}

export interface ExtendRequestMessage {
  key: string;
  ttlMs: Int64Text;
  requestId?: string;
}

export interface ExtendResponseMessage {
  extended: boolean;
  expiresAtMs: Int64Text;
  revision: Int64Text;
}

export interface GetByPrefixRequestMessage {
  prefix: string;
  revision?: Int64Text;
  limit?: number;
  pageToken?: string;
  consistency?: ConsistencyName;
  transaction?: string;
}

export interface GetByPrefixResponseMessage {
  items: KeyRecordMessage[];
  revision: Int64Text;
  nextPageToken: string;
}

export interface BeginTransactionRequestMessage {
  key: string;
  isolation?: IsolationName;
}

export interface BeginTransactionResponseMessage {
  transaction: string;
  partition: number;
  bucket: string;
  snapshotRevision: Int64Text;
  isolation: IsolationName;
  expiresAtMs: Int64Text;
}

export interface TxnWriteMessage {
  key: string;
  delete?: boolean;
  value?: Uint8Array;
  ttlMs?: Int64Text;
  keepTtl?: boolean;
}

export interface CommitRequestMessage {
  transaction: string;
  writes: TxnWriteMessage[];
  readKeys: string[];
  readPrefixes: string[];
  requestId?: string;
}

export interface CommitResponseMessage {
  revision: Int64Text;
}

export interface ExecuteScriptRequestMessage {
  script: string;
  params: Record<string, string>;
  isolation?: IsolationName;
  bucket?: string;
  requestId?: string;
}

export interface ExecuteScriptResponseMessage {
  resultJson: string;
  committed: boolean;
  revision: Int64Text;
  attempts: number;
}

export interface NodeInfoMessage {
  id: number;
  address: string;
  reachable: boolean;
}

export interface PartitionInfoMessage {
  id: number;
  rangeStart: Int64Text;
  rangeEnd: Int64Text;
  replicas: number[];
  leader: number;
  term: Int64Text;
  commitIndex: Int64Text;
  appliedIndex: Int64Text;
  revision: Int64Text;
  requestsPerSecond: number;
  topKeys: KeyLoadMessage[];
}

export interface KeyLoadMessage {
  key: string;
  requestsPerSecond: number;
  errorPerSecond: number;
  truncated: boolean;
}

export interface ClusterInfoResponseMessage {
  nodeId: number;
  partitionCount: number;
  replicationFactor: number;
  hashFunction: string;
  nodes: NodeInfoMessage[];
  partitions: PartitionInfoMessage[];
}

export interface TransferLeaderRequestMessage {
  partition: number;
  targetNode: number;
}

/** Request message types by oneof case name (the same names in StreamRequest and ForwardRequest). */
export interface KvRequestMessages {
  get: GetRequestMessage;
  put: PutRequestMessage;
  delete: DeleteRequestMessage;
  increment: IncrementRequestMessage;
  exists: ExistsRequestMessage;
  extend: ExtendRequestMessage;
  getByPrefix: GetByPrefixRequestMessage;
  beginTransaction: BeginTransactionRequestMessage;
  commit: CommitRequestMessage;
  executeScript: ExecuteScriptRequestMessage;
}

/** Response message types by oneof case name (StreamResponse and ForwardResponse). */
export interface KvResponseMessages {
  get: GetResponseMessage;
  put: PutResponseMessage;
  delete: DeleteResponseMessage;
  increment: IncrementResponseMessage;
  exists: ExistsResponseMessage;
  extend: ExtendResponseMessage;
  getByPrefix: GetByPrefixResponseMessage;
  beginTransaction: BeginTransactionResponseMessage;
  commit: CommitResponseMessage;
  executeScript: ExecuteScriptResponseMessage;
}

export interface StreamErrorMessage {
  code: string;
  message: string;
  grpcStatus: number;
  leaderHint: string;
  leaderId: number;
  notApplied?: boolean;
}

/** A StreamRequest: the id, a timeout and exactly one of the request cases (or `cancel`). */
export type StreamRequestMessage = {
  id: Int64Text;
  timeoutMs?: number;
  /** Set by the decoder: which oneof case is present. */
  request?: keyof KvRequestMessages | 'cancel';
  cancel?: Record<string, never>;
} & Partial<KvRequestMessages>;

export type StreamResponseMessage = {
  id: Int64Text;
  result?: keyof KvResponseMessages | 'error';
  error?: StreamErrorMessage;
} & Partial<KvResponseMessages>;

export type ForwardRequestMessage = {
  hops: number;
  tenant?: string;
  request?: keyof KvRequestMessages;
} & Partial<KvRequestMessages>;

export type ForwardResponseMessage = {
  response?: keyof KvResponseMessages;
} & Partial<KvResponseMessages>;
