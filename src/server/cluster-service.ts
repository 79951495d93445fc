/** The Cluster service: membership, partition map and leaders, and leadership transfer. */
import type * as grpc from '@grpc/grpc-js';
import type { NodeApi } from '../node/api.js';
import { decodeTransferLeaderRequest, encodeClusterInfoResponse } from './convert.js';
import type { ErrorLogger } from './grpc-errors.js';
import { unaryHandler } from './unary-handler.js';

/** Handlers for atoll.v1.Cluster, keyed by method name. */
export function clusterServiceHandlers(api: NodeApi, logger: ErrorLogger): grpc.UntypedServiceImplementation {
  return {
    ClusterInfo: unaryHandler(logger, async (_message, scope) => encodeClusterInfoResponse(await api.clusterInfo(scope.context))),
    TransferLeader: unaryHandler(logger, async (message, scope) => {
      await api.transferLeader(decodeTransferLeaderRequest(message), scope.context);
      return {};
    }),
  };
}
