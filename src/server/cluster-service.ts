/** The Cluster service: membership, partition map and leaders, leadership transfer, backup pages, replica moves, member changes, the rebalancer, partition splits and merges. */
import type * as grpc from '@grpc/grpc-js';
import type { NodeApi } from '../api/node-api.js';
import { AtollError } from '../errors.js';
import { decodeBackupPageRequest, decodeClusterInfoRequest, decodeTransferLeaderRequest, encodeBackupPageResponse, encodeClusterInfoResponse } from '../wire/cluster-convert.js';
import type { ErrorLogger } from '../wire/grpc-errors.js';
import { decodeChangeMemberRequest, decodeMoveReplicaRequest, decodeRebalanceRequest, encodeChangeMemberResponse, encodeMoveReplicaResponse, encodeRebalanceResponse } from '../wire/move-codec.js';
import { decodeMergePartitionRequest, decodeSplitPartitionRequest, encodeMergePartitionResponse, encodeSplitPartitionResponse } from '../wire/split-codec.js';
import type { MergeApi } from '../node/cluster/merge-admin.js';
import type { SplitApi } from '../node/cluster/split-admin.js';
import { unaryHandler } from './unary-handler.js';

/** Handlers for atoll.v1.Cluster, keyed by method name. */
export function clusterServiceHandlers(api: NodeApi, logger: ErrorLogger): grpc.UntypedServiceImplementation {
  return {
    ClusterInfo: unaryHandler(logger, async (message, scope) => encodeClusterInfoResponse(await api.clusterInfo(scope.context, decodeClusterInfoRequest(message)))),
    TransferLeader: unaryHandler(logger, async (message, scope) => {
      await api.transferLeader(decodeTransferLeaderRequest(message), scope.context);
      return {};
    }),
    BackupPage: unaryHandler(logger, async (message, scope) => {
      const request = decodeBackupPageRequest(message);
      if (api.backupPage === undefined) throw new AtollError('INVALID_ARGUMENT', 'this node does not serve backups');
      return encodeBackupPageResponse(await api.backupPage(request, scope.context));
    }),
    MoveReplica: unaryHandler(logger, async (message, scope) => {
      const request = decodeMoveReplicaRequest(message);
      if (api.moveReplica === undefined) throw new AtollError('INVALID_ARGUMENT', 'this node does not move replicas');
      return encodeMoveReplicaResponse(await api.moveReplica(request, scope.context));
    }),
    SplitPartition: unaryHandler(logger, async (message, scope) => {
      const request = decodeSplitPartitionRequest(message);
      const splitter = api as NodeApi & SplitApi;
      if (splitter.splitPartition === undefined) throw new AtollError('INVALID_ARGUMENT', 'this node does not split partitions');
      return encodeSplitPartitionResponse(await splitter.splitPartition(request, scope.context));
    }),
    MergePartition: unaryHandler(logger, async (message, scope) => {
      const request = decodeMergePartitionRequest(message);
      const merger = api as NodeApi & MergeApi;
      if (merger.mergePartition === undefined) throw new AtollError('INVALID_ARGUMENT', 'this node does not merge partitions');
      return encodeMergePartitionResponse(await merger.mergePartition(request, scope.context));
    }),
    ChangeMember: unaryHandler(logger, async (message, scope) => {
      const request = decodeChangeMemberRequest(message);
      if (api.changeMember === undefined) throw new AtollError('INVALID_ARGUMENT', 'this node does not change members');
      return encodeChangeMemberResponse(await api.changeMember(request, scope.context));
    }),
    Rebalance: unaryHandler(logger, async (message, scope) => {
      const request = decodeRebalanceRequest(message);
      if (api.rebalance === undefined) throw new AtollError('INVALID_ARGUMENT', 'this node has no rebalancer');
      return encodeRebalanceResponse(await api.rebalance(request, scope.context));
    }),
  };
}
