/**
 * The names the code uses for atoll.v1 messages, as thin aliases of the types generated from
 * proto/atoll/v1/*.proto into src/wire/generated/ (scripts/gen-wire-types.mjs; never edit those
 * by hand: `npm run gen:wire-types` rewrites them, and test/scripts/generated-wire-types.test.ts
 * fails when they are stale). The types therefore cannot drift from the API.
 *
 * Each alias is the generated *permissive* type (every field optional, bytes as Buffer or
 * Uint8Array, 64-bit integers as string, number or Long): what grpc-js accepts when encoding. The
 * encoders in convert.ts build them with 64-bit integers as decimal strings; the decoders treat a
 * received message as `Partial` of the same type and check every field at run time, since
 * proto-loader (options in protos.ts) hands over lowerCamelCase fields, 64-bit integers as decimal
 * strings, enums as names, bytes as Buffers, defaults for unset scalars, and the chosen oneof case
 * as a virtual property. convert.ts is the only code that should build or read them.
 */
import type { BackupItem } from './generated/atoll/v1/BackupItem.js';
import type { BackupPageRequest } from './generated/atoll/v1/BackupPageRequest.js';
import type { BackupPageResponse } from './generated/atoll/v1/BackupPageResponse.js';
import type { BeginTransactionRequest } from './generated/atoll/v1/BeginTransactionRequest.js';
import type { BeginTransactionResponse } from './generated/atoll/v1/BeginTransactionResponse.js';
import type { ClusterInfoRequest } from './generated/atoll/v1/ClusterInfoRequest.js';
import type { ClusterInfoResponse } from './generated/atoll/v1/ClusterInfoResponse.js';
import type { CommitRequest } from './generated/atoll/v1/CommitRequest.js';
import type { CommitResponse } from './generated/atoll/v1/CommitResponse.js';
import type { Consistency__Output } from './generated/atoll/v1/Consistency.js';
import type { DeleteRequest } from './generated/atoll/v1/DeleteRequest.js';
import type { DeleteResponse } from './generated/atoll/v1/DeleteResponse.js';
import type { ExecuteScriptRequest } from './generated/atoll/v1/ExecuteScriptRequest.js';
import type { ExecuteScriptResponse } from './generated/atoll/v1/ExecuteScriptResponse.js';
import type { ExistsRequest } from './generated/atoll/v1/ExistsRequest.js';
import type { ExistsResponse } from './generated/atoll/v1/ExistsResponse.js';
import type { ExtendRequest } from './generated/atoll/v1/ExtendRequest.js';
import type { LeaseRequest } from './generated/atoll/v1/LeaseRequest.js';
import type { LeaseResponse } from './generated/atoll/v1/LeaseResponse.js';
import type { ExtendResponse } from './generated/atoll/v1/ExtendResponse.js';
import type { ForwardCall } from './generated/atoll/v1/ForwardCall.js';
import type { ForwardFrame } from './generated/atoll/v1/ForwardFrame.js';
import type { ForwardReply } from './generated/atoll/v1/ForwardReply.js';
import type { ForwardReplyFrame } from './generated/atoll/v1/ForwardReplyFrame.js';
import type { ForwardRequest } from './generated/atoll/v1/ForwardRequest.js';
import type { ForwardResponse } from './generated/atoll/v1/ForwardResponse.js';
import type { ForwardStatus } from './generated/atoll/v1/ForwardStatus.js';
import type { GetByPrefixRequest } from './generated/atoll/v1/GetByPrefixRequest.js';
import type { GetByPrefixResponse } from './generated/atoll/v1/GetByPrefixResponse.js';
import type { GetRequest } from './generated/atoll/v1/GetRequest.js';
import type { GetResponse } from './generated/atoll/v1/GetResponse.js';
import type { IncrementRequest } from './generated/atoll/v1/IncrementRequest.js';
import type { IncrementResponse } from './generated/atoll/v1/IncrementResponse.js';
import type { Isolation__Output } from './generated/atoll/v1/Isolation.js';
import type { KeyLoad } from './generated/atoll/v1/KeyLoad.js';
import type { KeyRecord } from './generated/atoll/v1/KeyRecord.js';
import type { NodeInfo } from './generated/atoll/v1/NodeInfo.js';
import type { PartitionInfo } from './generated/atoll/v1/PartitionInfo.js';
import type { PutRequest } from './generated/atoll/v1/PutRequest.js';
import type { PutResponse } from './generated/atoll/v1/PutResponse.js';
import type { StreamError } from './generated/atoll/v1/StreamError.js';
import type { StreamRequest } from './generated/atoll/v1/StreamRequest.js';
import type { StreamResponse } from './generated/atoll/v1/StreamResponse.js';
import type { TransferLeaderRequest } from './generated/atoll/v1/TransferLeaderRequest.js';
import type { TxnWrite } from './generated/atoll/v1/TxnWrite.js';

/** A signed 64-bit integer as decimal text (uint64 fields use the same form). */
export type Int64Text = string;

/** Enum values by name, as proto-loader decodes them (enums: String). */
export type ConsistencyName = Consistency__Output;
export type IsolationName = Isolation__Output;

export type KeyRecordMessage = KeyRecord;
export type GetRequestMessage = GetRequest;
export type GetResponseMessage = GetResponse;
export type PutRequestMessage = PutRequest;
export type PutResponseMessage = PutResponse;
export type DeleteRequestMessage = DeleteRequest;
export type DeleteResponseMessage = DeleteResponse;
export type IncrementRequestMessage = IncrementRequest;
export type IncrementResponseMessage = IncrementResponse;
export type ExistsRequestMessage = ExistsRequest;
export type ExistsResponseMessage = ExistsResponse;
export type ExtendRequestMessage = ExtendRequest;
export type LeaseRequestMessage = LeaseRequest;
export type LeaseResponseMessage = LeaseResponse;
export type ExtendResponseMessage = ExtendResponse;
export type GetByPrefixRequestMessage = GetByPrefixRequest;
export type GetByPrefixResponseMessage = GetByPrefixResponse;
export type BeginTransactionRequestMessage = BeginTransactionRequest;
export type BeginTransactionResponseMessage = BeginTransactionResponse;
export type TxnWriteMessage = TxnWrite;
export type CommitRequestMessage = CommitRequest;
export type CommitResponseMessage = CommitResponse;
export type ExecuteScriptRequestMessage = ExecuteScriptRequest;
export type ExecuteScriptResponseMessage = ExecuteScriptResponse;
export type NodeInfoMessage = NodeInfo;
export type PartitionInfoMessage = PartitionInfo;
export type KeyLoadMessage = KeyLoad;
export type ClusterInfoRequestMessage = ClusterInfoRequest;
export type ClusterInfoResponseMessage = ClusterInfoResponse;
export type TransferLeaderRequestMessage = TransferLeaderRequest;
export type BackupPageRequestMessage = BackupPageRequest;
export type BackupItemMessage = BackupItem;
export type BackupPageResponseMessage = BackupPageResponse;
export type StreamErrorMessage = StreamError;
/** A StreamRequest: the id, a timeout and exactly one of the request cases (or `cancel`). */
export type StreamRequestMessage = StreamRequest;
export type StreamResponseMessage = StreamResponse;
export type ForwardRequestMessage = ForwardRequest;
export type ForwardResponseMessage = ForwardResponse;
export type ForwardFrameMessage = ForwardFrame;
export type ForwardCallMessage = ForwardCall;
export type ForwardReplyFrameMessage = ForwardReplyFrame;
export type ForwardReplyMessage = ForwardReply;
export type ForwardStatusMessage = ForwardStatus;

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
  lease: LeaseRequestMessage;
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
  lease: LeaseResponseMessage;
}
