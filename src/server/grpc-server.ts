/**
 * Puts the client-facing services on a grpc-js server: KV, Cluster, the standard health service
 * (grpc.health.v1.Health) and server reflection, so stock tools work against a node:
 *
 *   grpcurl -plaintext 127.0.0.1:7001 list
 *   grpcurl -plaintext -d '{"key":"a"}' 127.0.0.1:7001 atoll.v1.KV/Get
 *   grpc_health_probe -addr 127.0.0.1:7001
 *
 * The Peer service is the node's to register (it owns the Raft transport and forwarding).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import type { Logger } from 'pino';
import type { NodeApi } from '../api/node-api.js';
import { grpcChannelOptions } from '../wire/channel-options.js';
import { authServiceHandlers, type AuthApi } from './auth-service.js';
import { clusterServiceHandlers } from './cluster-service.js';
import { kvServiceHandlers } from './kv-service.js';
import type { KvStreamOptions } from './kv-stream.js';
import { addLazyReflection } from './lazy-reflection.js';
import type { RpcMetrics } from './node-metrics.js';
import { authServiceDefinition, clusterServiceDefinition, kvServiceDefinition, packageDefinition, serviceNames } from '../wire/protos.js';

/** The health service's name for "the whole server", as the health protocol defines it. */
export const wholeServerHealthName = '';


/** A grpc-js server with Atoll's options; pass extra options (keepalive, for example) to merge. */
export function createGrpcServer(options: grpc.ServerOptions = {}): grpc.Server {
  return new grpc.Server({ ...grpcChannelOptions, ...options });
}

export interface ClientServices {
  /** The health service, for finer control than setServing. */
  readonly health: HealthImplementation;
  /**
   * Marks the node SERVING or NOT_SERVING for '' and atoll.v1.KV. Set NOT_SERVING at the start
   * of a graceful shutdown so load balancers stop sending before the port closes.
   */
  setServing(serving: boolean): void;
}

export interface ClientServicesOptions {
  readonly stream?: KvStreamOptions;
  /** Serve atoll.v1.Auth (tokens, quotas) from this implementation. */
  readonly auth?: AuthApi;
  /** Count and time every KV request, unary and on the Stream (src/server/node-metrics.ts). */
  readonly metrics?: RpcMetrics;
}

let healthPackageDefinition: protoLoader.PackageDefinition | undefined;

/** The health proto, loaded once, so reflection can describe the health service too. */
function loadHealthPackageDefinition(): protoLoader.PackageDefinition {
  healthPackageDefinition ??= protoLoader.loadSync(healthProtoPath, { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true });
  return healthPackageDefinition;
}

/** Reflection over the client services; the Peer service is internal, so it is not advertised. */
function buildReflection(): ReflectionService {
  return new ReflectionService({ ...packageDefinition, ...loadHealthPackageDefinition() }, { services: [serviceNames.kv, serviceNames.cluster, serviceNames.auth, 'grpc.health.v1.Health'] });
}

export function addClientServices(
  server: grpc.Server,
  api: NodeApi,
  logger: Logger,
  options: ClientServicesOptions = {},
): ClientServices {
  const streamOptions = options.metrics === undefined ? options.stream : { ...options.stream, metrics: options.metrics };
  server.addService(kvServiceDefinition, kvServiceHandlers(api, logger, streamOptions));
  server.addService(clusterServiceDefinition, clusterServiceHandlers(api, logger));
  if (options.auth !== undefined) server.addService(authServiceDefinition, authServiceHandlers(options.auth, logger));

  const health = new HealthImplementation({
    [wholeServerHealthName]: 'SERVING',
    [serviceNames.kv]: 'SERVING',
    [serviceNames.cluster]: 'SERVING',
  });
  health.addToServer(server);

  addLazyReflection(server, buildReflection);

  return {
    health,
    setServing: (serving) => {
      const status = serving ? 'SERVING' : 'NOT_SERVING';
      for (const name of [wholeServerHealthName, serviceNames.kv, serviceNames.cluster]) health.setStatus(name, status);
    },
  };
}
