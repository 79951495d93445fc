/**
 * etcd's Cluster, Maintenance and Auth services, as far as etcdctl's `member list`, `endpoint
 * status`, `endpoint health` and clients' authentication need them.
 *
 * Mapping (docs/etcd-api.md): an etcd member is an Atoll node, its member id the node id; the
 * cluster id is taken from Atoll's cluster id. etcd has one Raft group, Atoll one per partition:
 * Status reports the group of the caller's keyspace (its leader, term, commit and applied index).
 */
import { createHash } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { isAtollError } from '../errors.js';
import type { CallContext, NodeApi, NodeInfo } from '../api/node-api.js';
import { EtcdError, etcdErrors } from './etcd-errors.js';
import type { HeaderOf } from './etcd-keyspace.js';
import { etcdUnary } from './etcd-call.js';
import { hashKeyspace } from './etcd-hash.js';
import { etcdBucket } from './key-codec.js';

export interface EtcdNodeIdentity {
  /** This node's etcd member id (its Atoll node id), decimal. */
  readonly memberId: string;
  /** The etcd cluster id, decimal uint64. */
  readonly clusterId: string;
  readonly nodeId: number;
  /** Where this node's etcd listener is reached, host:port. */
  readonly etcdAddress: string;
  /** Other nodes' etcd port is their client port plus this (the listener's port minus the client port)... */
  readonly etcdPortOffset: number;
  /** ...unless their etcd addresses are given (--etcd-addresses). */
  readonly addresses?: ReadonlyMap<number, string>;
}

/** The version Status reports: the etcd API level Atoll's etcd port follows. */
export const etcdApiVersion = '3.5.0';

/** A 64-bit etcd cluster id from Atoll's cluster id text (decimal, never 0). */
export function etcdClusterIdOf(atollClusterId: string): string {
  const digest = createHash('sha256').update(`atoll-etcd:${atollClusterId}`).digest();
  const id = digest.readBigUInt64BE(0);
  return (id === 0n ? 1n : id).toString();
}

function etcdAddressOf(node: NodeInfo, identity: EtcdNodeIdentity): string {
  const given = identity.addresses?.get(node.id);
  if (given !== undefined) return given;
  if (node.id === identity.nodeId) return identity.etcdAddress;
  const match = /^(.*):(\d+)$/.exec(node.address);
  if (match === null) return node.address;
  return `${match[1]}:${Number(match[2]) + identity.etcdPortOffset}`;
}

function memberOf(node: NodeInfo, identity: EtcdNodeIdentity): object {
  return {
    ID: String(node.id),
    name: `atoll-${node.id}`,
    peerURLs: node.peerAddress ? [`http://${node.peerAddress}`] : [],
    clientURLs: [`http://${etcdAddressOf(node, identity)}`],
    isLearner: false,
  };
}

/** Whether the cluster requires tokens: a call without one is refused. */
async function authEnabled(api: NodeApi, context: CallContext): Promise<boolean> {
  try {
    await api.exists({ key: etcdBucket, consistency: 'stale' }, { deadlineMs: context.deadlineMs, ...(context.signal !== undefined && { signal: context.signal }) });
    return false;
  } catch (error) {
    if (isAtollError(error) && error.code === 'UNAUTHENTICATED') return true;
    throw error;
  }
}

const authNotEnabled = (): EtcdError => new EtcdError(grpc.status.FAILED_PRECONDITION, 'etcdserver: authentication is not enabled');

/**
 * `api` serves the caller's keyspace (with the listener's default tenant, if any); `nodeApi` is the
 * node's own, asked whether a token-less call is refused (AuthStatus, Authenticate).
 */
export function clusterHandlers(api: NodeApi, nodeApi: NodeApi, logger: Logger, headerOf: HeaderOf, identity: EtcdNodeIdentity) {
  const unsupported = (what: string) => etcdUnary(logger, what, () => Promise.reject(etcdErrors.unsupported(what)));
  return {
    cluster: {
      MemberList: etcdUnary(logger, 'MemberList', async (_request: unknown, context) => {
        const info = await api.clusterInfo(context, { partitions: [] });
        const members = info.nodes.filter((node) => node.state !== 'leaving').map((node) => memberOf(node, identity));
        return { header: headerOf(0), members };
      }),
      MemberAdd: unsupported('MemberAdd (use `atoll cluster add-node`)'),
      MemberRemove: unsupported('MemberRemove (use `atoll cluster remove-node`)'),
      MemberUpdate: unsupported('MemberUpdate'),
      MemberPromote: unsupported('MemberPromote'),
    },
    maintenance: {
      Status: etcdUnary(logger, 'Status', async (_request: unknown, context) => {
        // The keyspace's partition: where a transaction on its bucket runs.
        const begun = await api.beginTransaction({ key: etcdBucket }, context);
        const info = await api.clusterInfo(context, { partitions: [begun.partition] });
        const partition = info.partitions.find((candidate) => candidate.id === begun.partition);
        return {
          header: headerOf(begun.snapshotRevision),
          version: etcdApiVersion,
          dbSize: 0,
          leader: String(partition?.leader ?? 0),
          raftIndex: partition?.commitIndex ?? 0,
          raftTerm: partition?.term ?? 0,
          raftAppliedIndex: partition?.appliedIndex ?? 0,
          errors: [],
          dbSizeInUse: 0,
          isLearner: false,
        };
      }),
      // Atoll raises no etcd alarms: quotas answer per request (docs/etcd-api.md).
      Alarm: etcdUnary(logger, 'Alarm', (request: { action?: string }) => {
        if (request.action !== undefined && request.action !== 'GET') return Promise.reject(etcdErrors.unsupported('activating or deactivating alarms'));
        return Promise.resolve({ header: headerOf(0), alarms: [] });
      }),
      Defragment: unsupported('Defragment'),
      // A hash of the keyspace from this node's replica (etcd-hash.ts); Hash is HashKV at the current revision.
      Hash: etcdUnary(logger, 'Hash', async (_request: unknown, context) => {
        const hashed = await hashKeyspace(api, '0', context);
        return { header: headerOf(hashed.current), hash: hashed.hash };
      }),
      HashKV: etcdUnary(logger, 'HashKV', async (request: { revision: string }, context) => {
        const hashed = await hashKeyspace(api, request.revision, context);
        return { header: headerOf(hashed.current), hash: hashed.hash, compact_revision: hashed.compactRevision, hash_revision: hashed.revision };
      }),
      Snapshot: (call: grpc.ServerWritableStream<unknown, object>) => call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: etcdErrors.unsupported('Snapshot (use `atoll backup`)').message }),
      MoveLeader: unsupported('MoveLeader (use `atoll cluster transfer`)'),
    },
    auth: {
      /** The password is an Atoll token (the user name is not checked); the token is the etcd token. */
      Authenticate: etcdUnary(logger, 'Authenticate', async (request: { name: string; password: string }, context) => {
        if (!(await authEnabled(nodeApi, context))) throw authNotEnabled();
        try {
          await nodeApi.exists({ key: etcdBucket, consistency: 'stale' }, { ...context, authorization: `Bearer ${request.password}` });
        } catch (error) {
          if (isAtollError(error) && (error.code === 'UNAUTHENTICATED' || error.code === 'PERMISSION_DENIED')) throw etcdErrors.authFailed();
          throw error;
        }
        return { header: headerOf(0), token: request.password };
      }),
      AuthStatus: etcdUnary(logger, 'AuthStatus', async (_request: unknown, context) => ({ header: headerOf(0), enabled: await authEnabled(nodeApi, context), authRevision: 0 })),
      AuthEnable: unsupported('AuthEnable (authentication is Atoll\'s: --admin-token-file)'),
      AuthDisable: unsupported('AuthDisable'),
    },
  };
}
