/**
 * etcd's service definitions (proto/etcd/), loaded once with @grpc/proto-loader: field names as in
 * the .proto (etcd's snake_case and its few camelCase names), int64 as decimal strings, bytes as
 * Buffers, enums by name (the shapes in etcd-messages.ts).
 */
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { join } from 'node:path';
import { protoRoot } from '../wire/protos.js';

export const etcdProtoRoot = join(protoRoot, 'etcd');

const definition = protoLoader.loadSync(['etcdserverpb/rpc.proto', 'v3lockpb/v3lock.proto', 'v3electionpb/v3election.proto'], {
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [etcdProtoRoot],
});

function service(name: string): grpc.ServiceDefinition {
  const found = definition[name];
  if (found === undefined || 'format' in found) throw new Error(`proto/etcd defines no service ${name}`);
  return found as unknown as grpc.ServiceDefinition;
}

export const etcdServices = {
  kv: service('etcdserverpb.KV'),
  watch: service('etcdserverpb.Watch'),
  lease: service('etcdserverpb.Lease'),
  cluster: service('etcdserverpb.Cluster'),
  maintenance: service('etcdserverpb.Maintenance'),
  auth: service('etcdserverpb.Auth'),
  lock: service('v3lockpb.Lock'),
  election: service('v3electionpb.Election'),
} as const;

/** The package definition, for clients in tests and tools (grpc.loadPackageDefinition). */
export const etcdPackageDefinition: protoLoader.PackageDefinition = definition;
