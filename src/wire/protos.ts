/**
 * Loads Atoll's .proto files at run time with @grpc/proto-loader (no generated runtime code; the
 * TypeScript types are generated from the same files, see wire-types.ts), so the
 * files in `proto/` are the single source of the wire format. This module and its neighbours are
 * the only place protobuf shapes appear; the rest of the code speaks src/api/node-api.ts types.
 *
 * Decoding options, relied on by convert.ts: field names in lowerCamelCase, 64-bit integers as
 * decimal strings (exact, unlike doubles), enums as their names, defaults filled in for scalar
 * fields (an unset proto3 `optional` field stays undefined), the chosen oneof case named by a
 * virtual property (`request: 'get'`), and bytes as Buffers.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { checkedDeserializer, messagePlansOf, type MessagePlan } from './wire-utf8.js';

/** Proto paths relative to the proto root, as `import` statements inside them name each other. */
export const protoFileNames = ['atoll/v1/kv.proto', 'atoll/v1/cluster.proto', 'atoll/v1/auth.proto'] as const;

/**
 * Walks up from this module until it finds the package root (the directory holding `proto/`).
 * The module runs both as `src/wire/protos.ts` under vitest and as `dist/src/wire/protos.js`
 * after a build, at different depths, so a fixed relative path would be wrong in one of them.
 */
function findProtoRoot(): string {
  let directory = dirname(fileURLToPath(import.meta.url));
  // A bound on the walk: the package root is a few levels up, never more than the path depth.
  for (let depth = 0; depth < 32; depth++) {
    const candidate = join(directory, 'proto');
    if (existsSync(join(candidate, protoFileNames[0]))) return candidate;
    const parent = dirname(directory);
    if (parent === directory) break;
    directory = parent;
  }
  throw new Error(`cannot find proto/${protoFileNames[0]} above ${fileURLToPath(import.meta.url)}`);
}

/** The directory holding `atoll/v1/*.proto`. */
export const protoRoot: string = findProtoRoot();

/** Absolute paths of the loaded .proto files (server reflection and tools use them). */
export const protoFilePaths: readonly string[] = protoFileNames.map((name) => join(protoRoot, name));

export const protoLoaderOptions: protoLoader.Options = Object.freeze({
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [protoRoot],
});

/** Every message and service of package atoll.v1, as proto-loader describes them. */
export const packageDefinition: protoLoader.PackageDefinition = protoLoader.loadSync([...protoFileNames], protoLoaderOptions);

/** How to walk each request message's wire bytes for the UTF-8 check (wire-utf8.ts). */
export const messagePlans: ReadonlyMap<string, MessagePlan> = messagePlansOf(packageDefinition);

/**
 * A service as the server registers it: every method's request deserializer checks the wire bytes
 * (string fields valid UTF-8, the message well-formed) before protobufjs decodes them, and never
 * throws (wire-utf8.ts). The package definition itself is left as proto-loader made it.
 */
function serviceDefinition(name: string): ServiceDefinition {
  const definition = packageDefinition[`atoll.v1.${name}`];
  if (definition === undefined || !('Get' in definition || 'ClusterInfo' in definition || 'Raft' in definition || 'WhoAmI' in definition)) {
    throw new Error(`atoll.v1.${name} is not a service in ${protoFilePaths.join(', ')}`);
  }
  const checked: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const [methodName, method] of Object.entries(definition as unknown as Record<string, protoLoader.MethodDefinition<unknown, unknown>>)) {
    const requestTypeName = `atoll.v1.${(method.requestType.type as { name: string }).name}`;
    const plan = messagePlans.get(requestTypeName);
    if (plan === undefined) throw new Error(`atoll.v1.${name}.${methodName}: no wire plan for ${requestTypeName}`);
    checked[methodName] = { ...method, requestDeserialize: checkedDeserializer(plan, method.requestDeserialize) };
  }
  return checked;
}

/**
 * The service with `methodName`'s answers written as they are when a handler gives bytes: it
 * serializes them itself (Peer.ForwardStream joins replies serialized one by one, each checked
 * against the message bound that would otherwise end the whole stream; forward-stream-codec.ts).
 */
function withSerializedResponses(definition: ServiceDefinition, methodName: string): ServiceDefinition {
  const method = definition[methodName];
  if (method === undefined) throw new Error(`no method ${methodName} to pass serialized answers through`);
  const serialize = method.responseSerialize;
  return { ...definition, [methodName]: { ...method, responseSerialize: (value: unknown) => (Buffer.isBuffer(value) ? value : serialize(value)) } };
}

export const kvServiceDefinition: ServiceDefinition = serviceDefinition('KV');
export const clusterServiceDefinition: ServiceDefinition = serviceDefinition('Cluster');
export const peerServiceDefinition: ServiceDefinition = withSerializedResponses(serviceDefinition('Peer'), 'ForwardStream');
export const authServiceDefinition: ServiceDefinition = serviceDefinition('Auth');

/** Fully qualified service names, as health checks and reflection list them. */
export const serviceNames = Object.freeze({
  kv: 'atoll.v1.KV',
  cluster: 'atoll.v1.Cluster',
  peer: 'atoll.v1.Peer',
  auth: 'atoll.v1.Auth',
});
