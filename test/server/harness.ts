/**
 * Real gRPC servers on 127.0.0.1 (port 0) around fake nodes, and a plain grpc-js client built from
 * the .proto files alone (no Atoll code), the way a user in another language would see the API.
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { pino } from 'pino';
import { addClientServices, createGrpcServer, type ClientServices } from '../../src/server/grpc-server.js';
import { clusterServiceHandlers } from '../../src/server/cluster-service.js';
import { kvServiceHandlers } from '../../src/server/kv-service.js';
import type { KvStreamOptions } from '../../src/server/kv-stream.js';
import { clusterServiceDefinition, kvServiceDefinition } from '../../src/wire/protos.js';
import { FakeNode, type FakeNodeOptions } from './fake-node.js';

export const silentLogger = pino({ level: 'silent' });

export interface RunningNode {
  readonly node: FakeNode;
  readonly address: string;
  readonly services: ClientServices;
  stop(): Promise<void>;
}

export interface StartNodeOptions extends FakeNodeOptions {
  readonly stream?: KvStreamOptions;
  /** Rewrites the KV handlers (to count Stream calls, or drop Stream to look like an old server). */
  readonly kvHandlers?: (handlers: grpc.UntypedServiceImplementation) => grpc.UntypedServiceImplementation;
}

export async function startNode(options: StartNodeOptions = {}): Promise<RunningNode> {
  const node = await FakeNode.create(options);
  const server = createGrpcServer();
  let services: ClientServices;
  if (options.kvHandlers === undefined) {
    services = addClientServices(server, node, silentLogger, options.stream === undefined ? {} : { stream: options.stream });
  } else {
    server.addService(kvServiceDefinition, options.kvHandlers(kvServiceHandlers(node, silentLogger, options.stream)));
    server.addService(clusterServiceDefinition, clusterServiceHandlers(node, silentLogger));
    services = { health: undefined as never, setServing: () => undefined };
  }
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, boundPort) => (error ? reject(error) : resolve(boundPort)));
  });
  const address = `127.0.0.1:${port}`;
  node.address = address;
  return {
    node,
    address,
    services,
    // Open client streams would hold a graceful shutdown forever; give it a moment, then force it.
    stop: () =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, 500);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

// ------------------------------------------------------------------------------------------------
// A generic client from the .proto files

const protoRoot = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', 'proto');

export const genericPackageDefinition = protoLoader.loadSync(['atoll/v1/kv.proto', 'atoll/v1/cluster.proto'], {
  includeDirs: [protoRoot],
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
});

type GrpcConstructor = new (address: string, credentials: grpc.ChannelCredentials) => grpc.Client;

function serviceConstructor(name: string): GrpcConstructor {
  const loaded = grpc.loadPackageDefinition(genericPackageDefinition) as unknown as { atoll: { v1: Record<string, GrpcConstructor> } };
  return loaded.atoll.v1[name]!;
}

export interface GenericError {
  readonly code: number;
  readonly details: string;
  readonly metadata: grpc.Metadata;
}

/** A promise-returning view of a plain grpc-js client's unary methods. */
export interface GenericClient {
  readonly raw: grpc.Client & Record<string, unknown>;
  call<T = Record<string, unknown>>(method: string, request: object, options?: grpc.CallOptions): Promise<T>;
  close(): void;
}

export function genericClient(service: 'KV' | 'Cluster', address: string): GenericClient {
  const Constructor = serviceConstructor(service);
  const raw = new Constructor(address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, unknown>;
  return {
    raw,
    call: (method, request, options = {}) =>
      new Promise((resolve, reject) => {
        const invoke = raw[method] as (
          request: object,
          metadata: grpc.Metadata,
          options: grpc.CallOptions,
          callback: (error: grpc.ServiceError | null, response: unknown) => void,
        ) => void;
        invoke.call(raw, request, new grpc.Metadata(), options, (error, response) => (error ? reject(error) : resolve(response as never)));
      }),
    close: () => raw.close(),
  };
}

export function deadlineIn(ms: number): Date {
  return new Date(Date.now() + ms);
}
