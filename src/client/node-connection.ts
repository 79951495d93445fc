/**
 * One channel to one node, shared by every service on it: KV requests (over the node's stream when
 * there is room, unary otherwise), ClusterInfo and TransferLeader. Failures come back as AtollErrors
 * rebuilt from the status (src/wire/grpc-errors.ts); an aborted signal rejects with its reason.
 */
import * as grpc from '@grpc/grpc-js';
import type { BackupPageRequest, BackupPageResponse, ClusterInfoResponse, MoveReplicaRequest, MoveReplicaResponse, TransferLeaderRequest, WatchMessage, WatchRequest } from '../api/node-api.js';
import { decodeMoveReplicaResponse, encodeMoveReplicaRequest } from '../wire/move-codec.js';
import { decodeWatchResponse, encodeWatchRequest } from '../wire/watch-codec.js';
import { decodeBackupPageResponse, decodeClusterInfoResponse, encodeBackupPageRequest, encodeTransferLeaderRequest } from '../wire/cluster-convert.js';
import { atollErrorOfServiceError } from '../wire/grpc-errors.js';
import { grpcChannelOptions, keepaliveChannelOptions } from '../wire/channel-options.js';
import { encodeKvOperation, decodeKvResult, kvCodecs, type KvOperation, type KvResult } from '../wire/kv-operation.js';
import { authServiceDefinition, clusterServiceDefinition, kvServiceDefinition } from '../wire/protos.js';
import type { KvRequestMessages } from '../wire/wire-types.js';
import { channelCredentialsOf, tlsChannelOptionsOf, type TlsClientOptions } from '../wire/tls-credentials.js';
import { StreamMultiplexer } from './stream-multiplexer.js';
import type { ChangeMemberRequest, ChangeMemberResponse, RebalanceRequest, RebalanceResponse } from '../api/node-api.js';
import { decodeChangeMemberResponse, decodeRebalanceResponse, encodeChangeMemberRequest, encodeRebalanceRequest } from '../wire/move-codec.js';
import { decodeMergePartitionResponse, decodeSplitPartitionResponse, encodeMergePartitionRequest, encodeSplitPartitionRequest } from '../wire/split-codec.js';
import type { MergePartitionResult, SplitPartitionResult } from '../api/node-api.js';

/** Reconnect quickly after a node restarts: grpc-js would otherwise back off for up to two minutes. */
const clientChannelOptions: grpc.ChannelOptions = Object.freeze({
  ...grpcChannelOptions,
  // A node that stops answering without closing the connection fails its calls within about 5 s.
  ...keepaliveChannelOptions,
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 2000,
});

export interface NodeConnectionOptions {
  /** Use the multiplexed KV.Stream (default true); false sends every request as a unary call. */
  readonly pipelining: boolean;
  readonly maxStreamInFlight: number;
  /** Reach the node over TLS (docs/security.md); plaintext when absent. */
  readonly tls?: TlsClientOptions;
  /** Sent as `authorization: Bearer <token>` on every call (clusters with authentication). */
  readonly token?: string;
}

/** Adds the bearer token to the metadata of every call on a channel, streams included. */
function bearerTokenInterceptor(token: string): grpc.Interceptor {
  return (options, nextCall) =>
    new grpc.InterceptingCall(nextCall(options), {
      start: (metadata, listener, next) => {
        metadata.set('authorization', `Bearer ${token}`);
        next(metadata, listener);
      },
    });
}

export class NodeConnection {
  private readonly client: grpc.Client;
  private readonly multiplexer: StreamMultiplexer;

  constructor(
    readonly address: string,
    private readonly options: NodeConnectionOptions,
  ) {
    this.client = new grpc.Client(address, channelCredentialsOf(options.tls), {
      ...clientChannelOptions,
      ...tlsChannelOptionsOf(options.tls),
      ...(options.token !== undefined && { interceptors: [bearerTokenInterceptor(options.token)] }),
    });
    this.multiplexer = new StreamMultiplexer(this.client, { maxInFlight: options.maxStreamInFlight });
  }

  /** Runs one KV operation on this node. */
  async run(operation: KvOperation, deadlineMs: number, signal: AbortSignal | undefined): Promise<KvResult> {
    if (!this.options.pipelining || !this.multiplexer.hasRoom()) return this.runUnary(operation, deadlineMs, signal);
    try {
      return await this.multiplexer.request(operation, deadlineMs, signal);
    } catch (error) {
      if (!StreamMultiplexer.isStreamUnsupported(error)) throw error;
      return this.runUnary(operation, deadlineMs, signal);
    }
  }

  async runUnary(operation: KvOperation, deadlineMs: number, signal: AbortSignal | undefined): Promise<KvResult> {
    const codec = kvCodecs[operation.kind];
    const message = (encodeKvOperation(operation) as KvRequestMessages)[operation.kind];
    const response = await this.unary(kvServiceDefinition, codec.method, message, deadlineMs, signal);
    return decodeKvResult({ [operation.kind]: response }, operation.kind);
  }

  async clusterInfo(deadlineMs: number, signal: AbortSignal | undefined): Promise<ClusterInfoResponse> {
    return decodeClusterInfoResponse(await this.unary(clusterServiceDefinition, 'ClusterInfo', {}, deadlineMs, signal));
  }

  async transferLeader(request: TransferLeaderRequest, deadlineMs: number, signal: AbortSignal | undefined): Promise<void> {
    await this.unary(clusterServiceDefinition, 'TransferLeader', encodeTransferLeaderRequest(request), deadlineMs, signal);
  }

  async moveReplica(request: MoveReplicaRequest, deadlineMs: number, signal: AbortSignal | undefined): Promise<MoveReplicaResponse> {
    return decodeMoveReplicaResponse(await this.unary(clusterServiceDefinition, 'MoveReplica', encodeMoveReplicaRequest(request), deadlineMs, signal));
  }

  async splitPartition(partition: number, deadlineMs: number, signal: AbortSignal | undefined): Promise<SplitPartitionResult> {
    return decodeSplitPartitionResponse(await this.unary(clusterServiceDefinition, 'SplitPartition', encodeSplitPartitionRequest({ partition }), deadlineMs, signal));
  }

  async mergePartition(partition: number, deadlineMs: number, signal: AbortSignal | undefined): Promise<MergePartitionResult> {
    return decodeMergePartitionResponse(await this.unary(clusterServiceDefinition, 'MergePartition', encodeMergePartitionRequest({ partition }), deadlineMs, signal));
  }

  async changeMember(request: ChangeMemberRequest, deadlineMs: number, signal: AbortSignal | undefined): Promise<ChangeMemberResponse> {
    return decodeChangeMemberResponse(await this.unary(clusterServiceDefinition, 'ChangeMember', encodeChangeMemberRequest(request), deadlineMs, signal));
  }

  async rebalance(request: RebalanceRequest, deadlineMs: number, signal: AbortSignal | undefined): Promise<RebalanceResponse> {
    return decodeRebalanceResponse(await this.unary(clusterServiceDefinition, 'Rebalance', encodeRebalanceRequest(request), deadlineMs, signal));
  }

  async backupPage(request: BackupPageRequest, deadlineMs: number, signal: AbortSignal | undefined): Promise<BackupPageResponse> {
    return decodeBackupPageResponse(await this.unary(clusterServiceDefinition, 'BackupPage', encodeBackupPageRequest(request), deadlineMs, signal));
  }

  /** One call of the Auth service (proto/atoll/v1/auth.proto), messages as proto-loader shapes them. */
  auth(method: string, request: object, deadlineMs: number, signal: AbortSignal | undefined): Promise<unknown> {
    return this.unary(authServiceDefinition, method, request, deadlineMs, signal);
  }

  /**
   * One watch on this node: its messages until the server ends it (returns) or it fails
   * (throws the AtollError it sent). Aborting `signal`, or leaving the loop, cancels the call.
   */
  async *watch(request: WatchRequest, signal: AbortSignal | undefined): AsyncGenerator<WatchMessage, void, undefined> {
    // The node's stream when it has a free slot (the main path), else a KV.Watch call of its own.
    const onStream = this.options.pipelining ? this.multiplexer.openWatch(request, signal) : undefined;
    if (onStream !== undefined) {
      yield* onStream;
      return;
    }
    yield* this.watchCall(request, signal);
  }

  /** One KV.Watch call (the fallback path of watch). */
  async *watchCall(request: WatchRequest, signal: AbortSignal | undefined): AsyncGenerator<WatchMessage, void, undefined> {
    const method = kvServiceDefinition['Watch']!;
    const call = this.client.makeServerStreamRequest(method.path, method.requestSerialize, method.responseDeserialize, encodeWatchRequest(request), new grpc.Metadata(), {});
    const onAbort = (): void => call.cancel();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for await (const message of call as AsyncIterable<unknown>) yield decodeWatchResponse(message);
    } catch (error) {
      if (error !== null && typeof error === 'object' && 'code' in error && typeof (error as grpc.ServiceError).code === 'number') {
        throw atollErrorOfServiceError(error as grpc.ServiceError);
      }
      throw error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      call.cancel();
    }
  }

  close(): void {
    this.multiplexer.close();
    this.client.close();
  }

  private unary(
    service: grpc.ServiceDefinition,
    methodName: string,
    request: unknown,
    deadlineMs: number,
    signal: AbortSignal | undefined,
  ): Promise<unknown> {
    const method = service[methodName]!;
    return new Promise((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => call.cancel();
      const call = this.client.makeUnaryRequest(
        method.path,
        method.requestSerialize,
        method.responseDeserialize,
        request,
        new grpc.Metadata(),
        { deadline: deadlineMs },
        (error, response) => {
          signal?.removeEventListener('abort', onAbort);
          if (signal?.aborted === true) reject(signal.reason);
          else if (error) reject(atollErrorOfServiceError(error));
          else resolve(response);
        },
      );
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}
