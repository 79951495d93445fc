/**
 * How a new node started with `--join HOST:PORT[,...]` learns the cluster it joins: it asks a
 * member's peer port (with the cluster peer secret, no cluster id yet) for ClusterInfo, and builds
 * its configuration from the answer: partition count, replication factor, bucket hash, cluster id
 * and members. Nothing is recorded in the cluster here: `atoll cluster add-node` does that
 * (membership-admin.ts), and the node opens no replica until replicas are moved onto it.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { AtollError } from '../errors.js';
import { isBucketHashName } from '../keys/bucket-hash.js';
import type { ClusterInfoResponse } from '../api/node-api.js';
import { peerSecretMetadataKey } from '../node/peers/peer-secret.js';
import { memberStates, type MemberState } from '../node/cluster/membership-table.js';
import type { JoinedCluster } from '../node/node-config.js';
import { decodeClusterInfoResponse } from '../wire/cluster-convert.js';
import { packageDefinition } from '../wire/protos.js';

type ClusterClient = grpc.Client & {
  clusterInfo(request: unknown, metadata: grpc.Metadata, options: grpc.CallOptions, callback: grpc.requestCallback<unknown>): grpc.ClientUnaryCall;
};
const ClusterClientConstructor = (
  grpc.loadPackageDefinition(packageDefinition) as unknown as { atoll: { v1: { Cluster: new (address: string, credentials: grpc.ChannelCredentials) => ClusterClient } } }
).atoll.v1.Cluster;

const ATTEMPT_TIMEOUT_MS = 2_000;
const RETRY_MS = 1_000;

function askOnce(address: string, secret: string, credentials: grpc.ChannelCredentials): Promise<ClusterInfoResponse> {
  const client = new ClusterClientConstructor(address, credentials);
  const metadata = new grpc.Metadata();
  metadata.set(peerSecretMetadataKey, secret);
  return new Promise<ClusterInfoResponse>((resolve, reject) => {
    client.clusterInfo({}, metadata, { deadline: Date.now() + ATTEMPT_TIMEOUT_MS }, (error, response) => {
      client.close();
      if (error) reject(error);
      else {
        try {
          resolve(decodeClusterInfoResponse(response));
        } catch (decodeError) {
          reject(decodeError);
        }
      }
    });
  });
}

/**
 * ClusterInfo from the first of `addresses` (members' peer ports) that answers, trying them in
 * turn until `timeoutMs` passed (members may still be starting). UNAVAILABLE when none answered.
 */
export async function fetchClusterToJoin(options: {
  addresses: readonly string[];
  peerSecret: string;
  credentials?: grpc.ChannelCredentials;
  timeoutMs: number;
  logger: Logger;
}): Promise<ClusterInfoResponse> {
  const credentials = options.credentials ?? grpc.credentials.createInsecure();
  const deadline = Date.now() + options.timeoutMs;
  let last: unknown;
  // Bounded by the deadline: each round tries every address once, then waits RETRY_MS.
  while (Date.now() < deadline) {
    for (const address of options.addresses) {
      try {
        const info = await askOnce(address, options.peerSecret, credentials);
        if (info.clusterId === undefined || info.clusterId === '') throw new AtollError('INVALID_ARGUMENT', `${address} runs a version of Atoll without cluster ids: it cannot be joined`);
        return info;
      } catch (error) {
        if (error instanceof AtollError) throw error;
        last = error;
        options.logger.info({ address, err: error instanceof Error ? error.message : String(error) }, 'asking a member for the cluster to join failed; trying again');
      }
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
  throw new AtollError('UNAVAILABLE', `--join: no member answered at ${options.addresses.join(', ')} (${last instanceof Error ? last.message : String(last)})`);
}

/** What a joining node records about the cluster it joins (cluster-descriptor.ts), from a member's ClusterInfo. */
export function joinedClusterOf(info: ClusterInfoResponse, self: { id: number; clientAddress: string; peerAddress: string; zone: string }): JoinedCluster {
  if (!isBucketHashName(info.hashFunction)) throw new AtollError('INVALID_ARGUMENT', `the cluster routes by ${info.hashFunction}, which this version does not know`);
  // Listed already: a restart of a node that joined (its data directory has the descriptor), or a
  // node that lost its disk and must not come back under its old id (settleClusterDescriptor refuses that).
  const listedAs = info.nodes.find((node) => node.id === self.id)?.state;
  const members = info.nodes
    .filter((node) => node.id !== self.id)
    .map((node) => ({ id: node.id, clientAddress: node.address, peerAddress: node.peerAddress ?? '', state: (memberStates as readonly string[]).includes(node.state ?? '') ? (node.state as MemberState) : 'active', zone: node.zone ?? '' }));
  members.push({ ...self, state: 'joining' });
  members.sort((a, b) => a.id - b.id);
  return {
    clusterId: info.clusterId as string,
    hashFunction: info.hashFunction,
    partitions: info.partitionCount,
    replicationFactor: info.replicationFactor,
    members,
    ...(listedAs !== undefined && { listedAs }),
  };
}
