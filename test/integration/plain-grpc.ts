/** A gRPC client for atoll.v1.KV that knows only the .proto files, as a non-TypeScript user would. */
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

const root = resolve(import.meta.dirname, '../..');

type Callback = (error: grpc.ServiceError | null, response: Record<string, unknown>) => void;
export type GenericKv = Record<string, (request: object, options: grpc.CallOptions, callback: Callback) => void> & grpc.Client;

export function genericKvClient(address: string): GenericKv {
  const definition = protoLoader.loadSync(['atoll/v1/kv.proto'], { includeDirs: [join(root, 'proto')], longs: String, defaults: true, oneofs: true });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as { atoll: { v1: { KV: new (a: string, c: grpc.ChannelCredentials) => GenericKv } } };
  return new pkg.atoll.v1.KV(address, grpc.credentials.createInsecure());
}

/** One unary call with a 5 s deadline. */
export function call(client: GenericKv, method: string, request: object): Promise<Record<string, unknown>> {
  return new Promise((resolveCall, reject) => {
    client[method]?.call(client, request, { deadline: Date.now() + 5_000 }, (error, response) => (error ? reject(error) : resolveCall(response)));
  });
}
