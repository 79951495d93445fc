/**
 * The KV service: the seven unary methods and the multiplexed Stream. Each unary handler decodes
 * (shape errors become INVALID_ARGUMENT / INVALID_KEY), hands the operation to the node with the
 * call's deadline and cancellation (AtollNode.runKv; a NodeApi without it, by the method of the
 * kind), and encodes the answer.
 */
import type * as grpc from '@grpc/grpc-js';
import type { CallContext, NodeApi } from '../api/node-api.js';
import { kvRunnerOf, type KvOperation, type KvResult } from '../api/operations.js';
import type { ErrorLogger } from '../wire/grpc-errors.js';
import { decodeKvRequest, kvCodecs, kvKinds, type KvKind } from '../wire/kv-operation.js';
import { kvStreamHandler, type KvStreamOptions } from './kv-stream.js';
import { rpcCode, type RpcMetrics } from './node-metrics.js';
import { kvWatchHandler } from './kv-watch.js';
import { unaryHandler } from './unary-handler.js';

function kvUnaryHandler(api: NodeApi, kind: KvKind, logger: ErrorLogger, metrics: RpcMetrics | undefined): grpc.handleUnaryCall<unknown, unknown> {
  const codec = kvCodecs[kind] as unknown as {
    encodeResponse(response: unknown): unknown;
    run(api: NodeApi, request: unknown, context: unknown): Promise<unknown>;
  };
  const method = kvCodecs[kind].method;
  // The node runs the decoded operation itself (AtollNode.runKv); a NodeApi without it, by its method of this kind.
  const runKv = kvRunnerOf(api) ?? (async (operation: KvOperation, context: CallContext) => ({ kind, response: await codec.run(api, operation.request, context) }) as KvResult);
  return unaryHandler(logger, async (message, scope) => {
    const startedMs = performance.now();
    try {
      const response = codec.encodeResponse((await runKv(decodeKvRequest(kind, message), scope.context)).response);
      metrics?.rpc(method, 'OK', (performance.now() - startedMs) / 1000);
      return response;
    } catch (error) {
      metrics?.rpc(method, rpcCode(error), (performance.now() - startedMs) / 1000);
      throw error;
    }
  });
}

/** Handlers for atoll.v1.KV, keyed by method name as grpc.Server.addService expects. */
export function kvServiceHandlers(api: NodeApi, logger: ErrorLogger, streamOptions: KvStreamOptions = {}): grpc.UntypedServiceImplementation {
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const kind of kvKinds) handlers[kvCodecs[kind].method] = kvUnaryHandler(api, kind, logger, streamOptions.metrics);
  handlers['Stream'] = kvStreamHandler(api, logger, streamOptions);
  handlers['Watch'] = kvWatchHandler(api, logger);
  return handlers;
}
