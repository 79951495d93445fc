/**
 * Atoll's etcd listener: etcd's v3 gRPC services (proto/etcd/) on their own port, over the node's
 * NodeApi, so etcdctl and etcd's client libraries work against Atoll unchanged. What is served and
 * how it differs from etcd: docs/etcd-api.md.
 *
 * Who is calling: etcd clients send their auth token as `token` metadata (after
 * Auth.Authenticate, etcd-cluster.ts). On Atoll that token is an Atoll token; it reaches the node
 * as `authorization: Bearer <token>`, so the node derives the tenant as for any call. Without
 * authentication on the cluster every call is the default tenant's. With `--etcd-tenant`, a call
 * without a token acts as that tenant (a grant the node issued to this listener, etcd-tenant.ts).
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import type { NodeApi } from '../api/node-api.js';
import type { TenantGrant } from '../api/tenant-grant.js';
import { grpcChannelOptions } from '../wire/channel-options.js';
import { listenGated, type ConnectionGate } from '../server/client-listener.js';
import { clusterHandlers, etcdClusterIdOf, type EtcdNodeIdentity } from './etcd-cluster.js';
import { etcdUnary } from './etcd-call.js';
import { EtcdKeyspace } from './etcd-keyspace.js';
import { leaseHandlers } from './etcd-lease.js';
import { electionHandlers, lockHandlers } from './etcd-lock.js';
import type { DeleteRangeRequest, PutRequest, RangeRequest, ResponseHeader, TxnRequest } from './etcd-messages.js';
import { etcdServices } from './etcd-protos.js';
import { actingAsTenant } from './etcd-tenant.js';
import { watchHandler } from './etcd-watch.js';

export type { EtcdNodeIdentity } from './etcd-cluster.js';

export interface EtcdServerOptions {
  readonly identity: EtcdNodeIdentity;
  /** Calls without a token act as this grant's tenant (--etcd-tenant; etcd-tenant.ts). */
  readonly tenantGrant?: TenantGrant;
}

/** A grpc-js server serving etcd's API over `api`; the caller binds it. */
export function createEtcdServer(nodeApi: NodeApi, logger: Logger, options: EtcdServerOptions): grpc.Server {
  const api = options.tenantGrant === undefined ? nodeApi : actingAsTenant(nodeApi, options.tenantGrant);
  const server = new grpc.Server({ ...grpcChannelOptions });
  const log = logger.child({ component: 'etcd' });
  const headerOf = (revision: number): ResponseHeader => ({
    cluster_id: options.identity.clusterId,
    member_id: options.identity.memberId,
    revision,
    // Terms are per partition; Maintenance.Status reports the keyspace's (docs/etcd-api.md).
    raft_term: 0,
  });
  const keyspace = new EtcdKeyspace(api, headerOf);
  server.addService(etcdServices.kv, {
    Range: etcdUnary(log, 'Range', (request: RangeRequest, context) => keyspace.range(request, context)),
    Put: etcdUnary(log, 'Put', (request: PutRequest, context) => keyspace.put(request, context)),
    DeleteRange: etcdUnary(log, 'DeleteRange', (request: DeleteRangeRequest, context) => keyspace.deleteRange(request, context)),
    Txn: etcdUnary(log, 'Txn', (request: TxnRequest, context) => keyspace.txn(request, context)),
    Compact: etcdUnary(log, 'Compact', (request: { revision: string }, context) => keyspace.compact(request, context)),
  });
  server.addService(etcdServices.watch, { Watch: watchHandler(api, log, headerOf) });
  server.addService(etcdServices.lease, leaseHandlers(api, log, headerOf));
  const cluster = clusterHandlers(api, nodeApi, log, headerOf, options.identity);
  server.addService(etcdServices.cluster, cluster.cluster);
  server.addService(etcdServices.maintenance, cluster.maintenance);
  server.addService(etcdServices.auth, cluster.auth);
  server.addService(etcdServices.lock, lockHandlers(api, log, headerOf));
  server.addService(etcdServices.election, electionHandlers(api, log, headerOf));
  return server;
}

export interface EtcdListenerOptions {
  readonly nodeId: number;
  /** host:port to bind. */
  readonly listen: string;
  /** The node's client address (host:port): other nodes' etcd ports keep the same offset from theirs. */
  readonly clientAddress: string;
  /** Atoll's cluster id ('' when the node has none). */
  readonly clusterId: string;
  readonly credentials: grpc.ServerCredentials;
  /** Every node's etcd address by node id (--etcd-addresses); absent: client port + this node's offset. */
  readonly addresses?: ReadonlyMap<number, string>;
  /** Calls without a token act as this grant's tenant (--etcd-tenant). */
  readonly tenantGrant?: TenantGrant;
  /**
   * The node's failed-authentication gate (the client port's): with it the port listens through
   * src/server/client-listener.ts, so a source blocked for failed authentications (tokens given as
   * etcd passwords count too) has its connections here closed at accept as well.
   */
  readonly gate?: ConnectionGate;
}

export interface EtcdListener {
  readonly server: grpc.Server;
  readonly port: number;
  /** Stops accepting connections (a gated listener's own TCP server; grpc-js's shutdown ends the rest). */
  close(): void;
}

function portOf(address: string): number {
  return Number(/:(\d+)$/.exec(address)?.[1] ?? Number.NaN);
}

/** Binds the etcd listener (atoll-server --etcd-listen). */
export async function startEtcdListener(api: NodeApi, logger: Logger, options: EtcdListenerOptions): Promise<EtcdListener> {
  const server = createEtcdServer(api, logger, {
    identity: {
      nodeId: options.nodeId,
      memberId: String(options.nodeId),
      clusterId: etcdClusterIdOf(options.clusterId),
      etcdAddress: options.listen,
      etcdPortOffset: portOf(options.listen) - portOf(options.clientAddress),
      ...(options.addresses !== undefined && { addresses: options.addresses }),
    },
    ...(options.tenantGrant !== undefined && { tenantGrant: options.tenantGrant }),
  });
  if (options.gate !== undefined) {
    const listener = await listenGated(server, options.listen, options.credentials, options.gate, logger);
    return { server, port: listener.port, close: () => listener.close() };
  }
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(options.listen, options.credentials, (error, bound) => (error ? reject(error) : resolve(bound)));
  });
  return { server, port, close: () => undefined };
}
