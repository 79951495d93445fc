/**
 * Conversions of the Cluster service's messages (ClusterInfo, TransferLeader, BackupPage) between
 * atoll.v1 messages (wire-types.ts) and src/api/node-api.ts, in both directions; convert.ts's rules
 * (checked at the edge, 64-bit fields as decimal text) hold here too. Kept apart from convert.ts,
 * which converts the KV, transaction, script and lease messages.
 */
import { AtollError } from '../errors.js';
import type { KeyLoad } from '../hotkeys/index.js';
import type { BackupItem, BackupPageRequest, BackupPageResponse, ClusterInfoRequest, ClusterInfoResponse, NodeInfo, PartitionInfo, TransferLeaderRequest } from '../api/node-api.js';
import { formatWireInt64, parseWireCount, parseWireInt64, parseWireUint32 } from './wire-numbers.js';
import type {
  BackupItemMessage,
  BackupPageRequestMessage,
  BackupPageResponseMessage,
  ClusterInfoRequestMessage,
  ClusterInfoResponseMessage,
  KeyLoadMessage,
  NodeInfoMessage,
  PartitionInfoMessage,
  TransferLeaderRequestMessage,
} from './wire-types.js';
import { decodeBoolean, decodeBytes, decodeCount, decodeKey, decodeMessage, decodeRepeated, decodeText } from './wire-fields.js';

// -------------------------------------------------------------------------------------------------
// Cluster

/** At most this many ids in ClusterInfoRequest.partitions (a node asks about its own replicas). */
const MAX_CLUSTER_INFO_PARTITIONS = 65_536;

export function decodeClusterInfoRequest(value: unknown): ClusterInfoRequest {
  const message = decodeMessage<ClusterInfoRequestMessage>(value, 'ClusterInfoRequest');
  const partitions = decodeRepeated(message.partitions, 'partitions', (item) => parseWireUint32(item, 'partitions'));
  if (partitions.length > MAX_CLUSTER_INFO_PARTITIONS) throw new AtollError('INVALID_ARGUMENT', `partitions lists ${partitions.length} ids; at most ${MAX_CLUSTER_INFO_PARTITIONS}`, { field: 'partitions' });
  return partitions.length > 0 ? { partitions } : {};
}

export function encodeClusterInfoResponse(response: ClusterInfoResponse): ClusterInfoResponseMessage {
  return {
    nodeId: response.nodeId,
    partitionCount: response.partitionCount,
    replicationFactor: response.replicationFactor,
    hashFunction: response.hashFunction,
    clusterId: response.clusterId ?? '',
    nodes: response.nodes.map(encodeNodeInfo),
    memberTableVersion: String(response.memberTableVersion ?? 0),
    partitions: response.partitions.map(encodePartitionInfo),
    mergedStarts: (response.mergedStarts ?? []).map(({ start, into }) => ({ start, into })),
    callerTenant: response.callerTenant ?? '', // routing a tenant's buckets (docs/api.md)
  };
}

function encodePartitionInfo(partition: PartitionInfo): PartitionInfoMessage {
  return {
    id: partition.id,
    rangeStart: formatWireInt64(partition.rangeStart),
    rangeEnd: formatWireInt64(partition.rangeEnd),
    replicas: [...partition.replicas],
    learners: [...(partition.learners ?? [])],
    learnersReported: partition.learners !== undefined,
    leader: partition.leader,
    term: formatWireInt64(partition.term),
    commitIndex: formatWireInt64(partition.commitIndex),
    appliedIndex: formatWireInt64(partition.appliedIndex),
    revision: formatWireInt64(partition.revision),
    requestsPerSecond: partition.requestsPerSecond ?? 0,
    topKeys: (partition.topKeys ?? []).map((load) => ({
      key: load.key,
      requestsPerSecond: load.requestsPerSecond,
      errorPerSecond: load.errorPerSecond,
      truncated: load.truncated,
    })),
  };
}

export function decodeClusterInfoResponse(value: unknown): ClusterInfoResponse {
  const message = decodeMessage<ClusterInfoResponseMessage>(value, 'ClusterInfoResponse');
  return {
    nodeId: parseWireUint32(message.nodeId ?? 0, 'node_id'),
    partitionCount: parseWireUint32(message.partitionCount ?? 0, 'partition_count'),
    replicationFactor: parseWireUint32(message.replicationFactor ?? 0, 'replication_factor'),
    hashFunction: decodeText(message.hashFunction, 'hash_function'),
    ...(decodeText(message.clusterId, 'cluster_id') !== '' && { clusterId: decodeText(message.clusterId, 'cluster_id') }),
    ...(decodeCount(message.memberTableVersion, 'member_table_version') > 0 && { memberTableVersion: decodeCount(message.memberTableVersion, 'member_table_version') }),
    nodes: decodeRepeated(message.nodes, 'nodes', decodeNodeInfo),
    partitions: decodeRepeated(message.partitions, 'partitions', decodePartitionInfo),
    ...(message.mergedStarts !== undefined && message.mergedStarts !== null && message.mergedStarts.length > 0 && { mergedStarts: decodeRepeated(message.mergedStarts, 'merged_starts', decodeMergedStart) }),
    ...(decodeText(message.callerTenant, 'caller_tenant') !== '' && { callerTenant: decodeText(message.callerTenant, 'caller_tenant') }), // each absent when none, and from older servers
  };
}

export function encodeNodeInfo(node: NodeInfo): NodeInfoMessage {
  return { id: node.id, address: node.address, reachable: node.reachable, adminAddress: node.adminAddress ?? '', state: node.state ?? '', zone: node.zone ?? '', peerAddress: node.peerAddress ?? '' };
}

export function decodeNodeInfo(value: unknown): NodeInfo {
  const message = decodeMessage<NodeInfoMessage>(value, 'NodeInfo');
  const node: NodeInfo = {
    id: parseWireUint32(message.id ?? 0, 'id'),
    address: decodeText(message.address, 'address'),
    reachable: decodeBoolean(message.reachable, 'reachable'),
  };
  // Empty (or absent, from an older node) means unknown: the field is left out.
  const adminAddress = message.adminAddress === undefined || message.adminAddress === null ? '' : decodeText(message.adminAddress, 'admin_address');
  const optional = (field: unknown, name: string): string => (field === undefined || field === null ? '' : decodeText(field, name));
  const state = optional(message.state, 'state');
  const zone = optional(message.zone, 'zone');
  const peerAddress = optional(message.peerAddress, 'peer_address');
  return {
    ...node,
    ...(adminAddress !== '' && { adminAddress }),
    ...(state !== '' && { state }),
    ...(zone !== '' && { zone }),
    ...(peerAddress !== '' && { peerAddress }),
  };
}

function decodeMergedStart(value: unknown): { start: number; into: number } {
  const message = decodeMessage<{ start?: unknown; into?: unknown }>(value, 'MergedStart');
  return { start: parseWireUint32(message.start ?? 0, 'start'), into: parseWireUint32(message.into ?? 0, 'into') };
}

function decodePartitionInfo(value: unknown): PartitionInfo {
  const message = decodeMessage<PartitionInfoMessage>(value, 'PartitionInfo');
  return {
    id: parseWireUint32(message.id ?? 0, 'id'),
    rangeStart: decodeCount(message.rangeStart, 'range_start'),
    rangeEnd: decodeCount(message.rangeEnd, 'range_end'),
    replicas: decodeRepeated(message.replicas, 'replicas', (item) => parseWireUint32(item, 'replicas')),
    ...(message.learnersReported === true && { learners: decodeRepeated(message.learners, 'learners', (item) => parseWireUint32(item, 'learners')) }),
    leader: parseWireUint32(message.leader ?? 0, 'leader'),
    term: decodeCount(message.term, 'term'),
    commitIndex: decodeCount(message.commitIndex, 'commit_index'),
    appliedIndex: decodeCount(message.appliedIndex, 'applied_index'),
    revision: decodeCount(message.revision, 'revision'),
    requestsPerSecond: decodeRate(message.requestsPerSecond, 'requests_per_second'),
    topKeys: decodeRepeated(message.topKeys, 'top_keys', decodeKeyLoad),
  };
}

/** A rate: a finite, non-negative double (absent: 0). */
function decodeRate(value: unknown, field: string): number {
  if (value === undefined || value === null) return 0;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw new AtollError('INVALID_ARGUMENT', `${field} must be a finite, non-negative number`, { field });
  }
  return value;
}

function decodeKeyLoad(value: unknown): KeyLoad {
  const message = decodeMessage<KeyLoadMessage>(value, 'KeyLoad');
  return {
    key: decodeText(message.key, 'key'),
    requestsPerSecond: decodeRate(message.requestsPerSecond, 'requests_per_second'),
    errorPerSecond: decodeRate(message.errorPerSecond, 'error_per_second'),
    truncated: decodeBoolean(message.truncated, 'truncated'),
  };
}

export function encodeTransferLeaderRequest(request: TransferLeaderRequest): TransferLeaderRequestMessage {
  return { partition: request.partition, targetNode: request.targetNode };
}

export function decodeTransferLeaderRequest(value: unknown): TransferLeaderRequest {
  const message = decodeMessage<TransferLeaderRequestMessage>(value, 'TransferLeaderRequest');
  const targetNode = parseWireUint32(message.targetNode ?? 0, 'target_node');
  if (targetNode === 0) throw new AtollError('INVALID_ARGUMENT', 'transfer leader needs target_node: the id of a replica');
  return { partition: parseWireUint32(message.partition ?? 0, 'partition'), targetNode };
}

// -------------------------------------------------------------------------------------------------
// Backups (Cluster.BackupPage)

export function encodeBackupPageRequest(request: BackupPageRequest): BackupPageRequestMessage {
  return { partition: request.partition, revision: formatWireInt64(request.revision), pageToken: request.pageToken, limit: request.limit };
}

export function decodeBackupPageRequest(value: unknown): BackupPageRequest {
  const message = decodeMessage<BackupPageRequestMessage>(value, 'BackupPageRequest');
  return {
    partition: parseWireUint32(message.partition ?? 0, 'partition'),
    revision: decodeCount(message.revision, 'revision'),
    pageToken: decodeText(message.pageToken, 'page_token'),
    limit: parseWireUint32(message.limit ?? 0, 'limit'),
  };
}

export function encodeBackupPageResponse(response: BackupPageResponse): BackupPageResponseMessage {
  return {
    revision: formatWireInt64(response.revision),
    items: response.items.map((item) => ({
      tenant: item.tenant,
      key: item.key,
      value: item.value,
      expiresAtMs: formatWireInt64(item.expiresAtMs),
      modRevision: formatWireInt64(item.modRevision),
    })),
    nextPageToken: response.nextPageToken,
  };
}

export function decodeBackupPageResponse(value: unknown): BackupPageResponse {
  const message = decodeMessage<BackupPageResponseMessage>(value, 'BackupPageResponse');
  return {
    revision: decodeCount(message.revision, 'revision'),
    items: decodeRepeated(message.items, 'items', (raw): BackupItem => {
      const item = decodeMessage<BackupItemMessage>(raw, 'BackupItem');
      return {
        tenant: decodeText(item.tenant, 'tenant'),
        key: decodeKey(item.key, true),
        value: decodeBytes(item.value, 'value'),
        expiresAtMs: decodeCount(item.expiresAtMs, 'expires_at_ms'),
        modRevision: decodeCount(item.modRevision, 'mod_revision'),
      };
    }),
    nextPageToken: decodeText(message.nextPageToken, 'next_page_token'),
  };
}
