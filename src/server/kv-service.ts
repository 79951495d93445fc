/**
 * The KV service: the seven unary methods and the multiplexed Stream. Each unary handler decodes
 * (shape errors become INVALID_ARGUMENT / INVALID_KEY), calls the NodeApi with the call's deadline
 * and cancellation, and encodes the answer.
 */
import type * as grpc from '@grpc/grpc-js';
import type { NodeApi } from '../node/api.js';
import type { ErrorLogger } from './grpc-errors.js';
import { kvCodecs, kvKinds, type KvKind } from './kv-operation.js';
import { kvStreamHandler, type KvStreamOptions } from './kv-stream.js';
import { kvWatchHandler } from './kv-watch.js';
import { unaryHandler } from './unary-handler.js';

function kvUnaryHandler(api: NodeApi, kind: KvKind, logger: ErrorLogger): grpc.handleUnaryCall<unknown, unknown> {
  const codec = kvCodecs[kind] as unknown as {
    decodeRequest(message: unknown): unknown;
    encodeResponse(response: unknown): unknown;
    run(api: NodeApi, request: unknown, context: unknown): Promise<unknown>;
  };
  return unaryHandler(logger, async (message, scope) => {
    const request = codec.decodeRequest(message);
    return codec.encodeResponse(await codec.run(api, request, scope.context));
  });
}

/** Handlers for atoll.v1.KV, keyed by method name as grpc.Server.addService expects. */
export function kvServiceHandlers(api: NodeApi, logger: ErrorLogger, streamOptions: KvStreamOptions = {}): grpc.UntypedServiceImplementation {
  const handlers: grpc.UntypedServiceImplementation = {};
  for (const kind of kvKinds) handlers[kvCodecs[kind].method] = kvUnaryHandler(api, kind, logger);
  handlers['Stream'] = kvStreamHandler(api, logger, streamOptions);
  handlers['Watch'] = kvWatchHandler(api, logger);
  return handlers;
}
