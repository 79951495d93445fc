/**
 * The in-process API of one Atoll node: what the gRPC layer calls after decoding a request, and what
 * a forwarded request runs on the partition's leader. Transport-neutral: no protobuf types here.
 *
 * Every call takes a CallContext with an absolute deadline and an AbortSignal. Operating errors are
 * thrown as AtollError (src/errors.ts) with a stable code; NOT_LEADER / NO_LEADER carry
 * `details.leaderHint` = { nodeId, address } when a leader is known.
 */
import type { KeyLoad } from '../hotkeys/index.js';
import type { WatchSink } from '../watch/watcher.js';
import type { TenantGrant } from './tenant-grant.js';
import type { CallSignal } from './call-signal.js';

export type { WatchEvent, WatchMessage, WatchSink } from '../watch/watcher.js';

export type Consistency = 'linearizable' | 'stale';

export interface CallContext {
  /** Absolute deadline, Unix epoch milliseconds. */
  readonly deadlineMs: number;
  readonly signal?: CallSignal;
  /** How many nodes already forwarded this request (bounded by MAX_FORWARD_HOPS in src/node/service/router.ts). */
  readonly hops?: number;
  /** The caller's `authorization` metadata (a bearer token), when it sent one. */
  readonly authorization?: string;
  /** The caller's tenant, once a node authenticated it (forwarded requests carry it). */
  readonly tenant?: string;
  /** The caller's connection (remote address:port), for the failed-authentication limit. */
  readonly connection?: string;
  /**
   * A call without a token acts as this grant's tenant, if this node issued it (an in-process
   * listener's default tenant, `--etcd-tenant`; tenant-grant.ts). Never set from the wire.
   */
  readonly tenantGrant?: TenantGrant;
}

export interface KeyRecord {
  readonly key: string;
  readonly value: Uint8Array;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  /** 0 when the key never expires. */
  readonly expiresAtMs: number;
}

export interface GetRequest {
  readonly key: string;
  /** Read at a past revision (0 or absent: latest). */
  readonly revision?: number;
  readonly consistency?: Consistency;
  /** Read inside this transaction (its handle): at its snapshot; revision and consistency must be unset. */
  readonly transaction?: string;
}

export interface GetResponse {
  readonly found: boolean;
  /** Empty when not found; a stored empty value is found=true with an empty value. */
  readonly value: Uint8Array;
  readonly createRevision: number;
  readonly modRevision: number;
  readonly version: number;
  readonly expiresAtMs: number;
  /** The partition revision the read was served at. */
  readonly revision: number;
}

export interface PutRequest {
  readonly key: string;
  readonly value: Uint8Array;
  readonly ttlMs?: number;
  readonly keepTtl?: boolean;
  readonly ifAbsent?: boolean;
  readonly ifPresent?: boolean;
  readonly ifModRevision?: number;
  readonly ifValue?: Uint8Array;
  readonly returnPrevious?: boolean;
  /** Idempotency key: a retry with the same id returns the first attempt's result (exactly-once). */
  readonly requestId?: string;
  /** Attach the key to this lease ("<partition>.<n>", from a lease grant). */
  readonly lease?: string;
  /** A fenced write: refused with FENCED when a higher fencing token wrote the live key (mvcc/fence.ts). */
  readonly ifFence?: number;
}

export interface PutResponse {
  /** False when a condition failed: nothing changed, `revision` is the partition's current one. */
  readonly applied: boolean;
  readonly revision: number;
  /** With returnPrevious: the live version replaced (undefined when the key was absent). */
  readonly previous?: KeyRecord;
}

export interface DeleteRequest {
  readonly key: string;
  readonly ifModRevision?: number;
  readonly ifValue?: Uint8Array;
  /** Idempotency key: a retry with the same id returns the first attempt's result (exactly-once). */
  readonly requestId?: string;
}

export interface DeleteResponse {
  readonly deleted: boolean;
  readonly revision: number;
}

export interface IncrementRequest {
  readonly key: string;
  readonly delta: bigint;
  readonly ttlMs?: number;
  /** Idempotency key: a retry with the same id returns the first attempt's result (exactly-once). */
  readonly requestId?: string;
}

export interface IncrementResponse {
  readonly value: bigint;
  readonly revision: number;
}

export interface ExistsRequest {
  readonly key: string;
  readonly consistency?: Consistency;
  /** Read inside this transaction (its handle): at its snapshot; revision and consistency must be unset. */
  readonly transaction?: string;
}

export interface ExistsResponse {
  readonly exists: boolean;
  readonly revision: number;
}

export type LeaseAction = 'grant' | 'keepAlive' | 'revoke' | 'info';

/** A lease call (KV.Lease): one of four actions on a lease of one partition. */
export interface LeaseRequest {
  readonly action: LeaseAction;
  /** grant: a key or bucket naming the lease's partition. */
  readonly key?: string;
  /** grant: the TTL in milliseconds. */
  readonly ttlMs?: number;
  /** keepAlive, revoke, info: the lease id, "<partition>.<n>". */
  readonly lease?: string;
}

export interface LeaseResponse {
  readonly lease: string;
  readonly ttlMs: number;
  /** grant, keepAlive, info: milliseconds until the leader ends the lease unless kept alive. */
  readonly ttlLeftMs: number;
  /** info: the attached keys (internal form inside the node; the caller's own outside). */
  readonly keys: string[];
  /** revoke: the revision of the deletes. */
  readonly revision: number;
}

export interface ExtendRequest {
  readonly key: string;
  readonly ttlMs: number;
  /** Idempotency key: a retry with the same id returns the first attempt's result (exactly-once). */
  readonly requestId?: string;
}

export interface ExtendResponse {
  /** False when the key is absent (nothing to extend). */
  readonly extended: boolean;
  readonly expiresAtMs: number;
  readonly revision: number;
}

export interface GetByPrefixRequest {
  /** A bucket name (`services` = every key starting `services/`) or a prefix containing `/`. */
  readonly prefix: string;
  readonly revision?: number;
  readonly limit?: number;
  /** Opaque token from the previous page; pages continue at the same revision. */
  readonly pageToken?: string;
  readonly consistency?: Consistency;
  /** Read inside this transaction (its handle): at its snapshot; revision and consistency must be unset. */
  readonly transaction?: string;
}

export interface GetByPrefixResponse {
  readonly items: readonly KeyRecord[];
  readonly revision: number;
  /** Empty when there are no more pages. */
  readonly nextPageToken: string;
}

/** See proto Isolation: SNAPSHOT checks the write set at commit, SERIALIZABLE also the read set. */
export type Isolation = 'snapshot' | 'serializable';

export interface BeginTransactionRequest {
  /** A bucket name or any key in the bucket. */
  readonly key: string;
  readonly isolation?: Isolation;
}

export interface BeginTransactionResponse {
  /** The opaque handle (src/txn/txn-handle.ts): pass it to reads and to commit. */
  readonly transaction: string;
  readonly partition: number;
  readonly bucket: string;
  readonly snapshotRevision: number;
  readonly isolation: Isolation;
  readonly expiresAtMs: number;
}

/** One unconditional write of a transaction: a put, or a delete when `delete` is set. */
export interface TxnWrite {
  readonly key: string;
  readonly delete?: boolean;
  readonly value?: Uint8Array;
  readonly ttlMs?: number;
  readonly keepTtl?: boolean;
  /** Attach the put key to this lease ("<partition>.<n>") of the transaction's partition. */
  readonly lease?: string;
  /** A fenced put (PutRequest.ifFence). */
  readonly ifFence?: number;
}

export interface CommitRequest {
  readonly transaction: string;
  readonly writes: readonly TxnWrite[];
  readonly readKeys: readonly string[];
  readonly readPrefixes: readonly string[];
  /** Idempotency key: a retry with the same id returns the first attempt's result (exactly-once). */
  readonly requestId?: string;
}

export interface CommitResponse {
  readonly revision: number;
}

export interface ExecuteScriptRequest {
  readonly script: string;
  /** @name parameters, each value as JSON text. */
  readonly params?: Readonly<Record<string, string>>;
  readonly isolation?: Isolation;
  /** The bucket (or a key in it) to run in; absent: the first key the script names. */
  readonly bucket?: string;
  /** Idempotency key: a retry with the same id returns the first committed result. */
  readonly requestId?: string;
}

export interface ExecuteScriptResponse {
  /** The return value as JSON text. */
  readonly resultJson: string;
  /** False when the script rolled back (nothing written). */
  readonly committed: boolean;
  readonly revision: number;
  /** Evaluations at the leader (a script that lost a conflict runs again at a newer snapshot). */
  readonly attempts: number;
}

export interface NodeInfo {
  readonly id: number;
  /** Client-facing gRPC address, host:port. */
  readonly address: string;
  /** Whether this node currently hears from that node (always true for itself). */
  readonly reachable: boolean;
  /** The node's admin HTTP address (metrics, /livez, /readyz), host:port; '' or absent when unknown. */
  readonly adminAddress?: string;
  /** Its state in the member table ('joining' | 'active' | 'leaving'); absent from older servers. */
  readonly state?: string;
  /** Its --zone label; absent when none. */
  readonly zone?: string;
  /** Its peer port, host:port; absent when not known. */
  readonly peerAddress?: string;
}

export interface PartitionInfo {
  readonly id: number;
  /** Hash range [start, end) of the bucket hash space this partition owns. */
  readonly rangeStart: number;
  readonly rangeEnd: number;
  readonly replicas: readonly number[];
  /**
   * The learners of the configuration the answering node applied (none where it hosts no replica);
   * undefined from a server that does not report them.
   */
  readonly learners?: readonly number[];
  /** 0 when no leader is known. */
  readonly leader: number;
  readonly term: number;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  readonly revision: number;
  /**
   * Requests per second the answering node served for the partition (all of them at the leader;
   * stale and transaction reads it answered locally at a replica), decayed with a 5 s half-life.
   * Sum over nodes for the partition's load. Absent from nodes that do not report load.
   */
  readonly requestsPerSecond?: number;
  /** Its hottest keys among those requests, hottest first, approximate (src/hotkeys): at most 8. */
  readonly topKeys?: readonly KeyLoad[];
}

/** ClusterInfo's request: without `partitions` (or with an empty list) every partition is listed. */
export interface ClusterInfoRequest {
  /** Only these partitions (src/node/cluster/stray-check.ts asks its peers about a few); unknown ids are left out. */
  readonly partitions?: readonly number[];
}

export interface ClusterInfoResponse {
  /** The node that answered. */
  readonly nodeId: number;
  readonly partitionCount: number;
  readonly replicationFactor: number;
  /** Name of the bucket hash (src/keys/bucket-hash.ts): "murmur3_32" for new clusters, "fnv1a32" for older ones. */
  readonly hashFunction: string;
  /** The cluster's id (src/node/cluster/cluster-descriptor.ts); '' from servers that have none. */
  readonly clusterId?: string;
  /** The member table version the answering node follows (0 or absent: the founding members). */
  readonly memberTableVersion?: number;
  readonly nodes: readonly NodeInfo[];
  readonly partitions: readonly PartitionInfo[];
  /**
   * Range starts merged away (their partitions joined their left neighbour, into), as far as the
   * answering node knows: never a partition again (src/node/cluster/range-routing.ts). Absent from older servers.
   */
  readonly mergedStarts?: ReadonlyArray<{ readonly start: number; readonly into: number }>;
  /**
   * The caller's tenant when its token names one other than the default tenant: clients route a
   * key by (tenant, bucket), as the node stores it (src/keys/tenant-keys.ts). Absent otherwise.
   */
  readonly callerTenant?: string;
}

export interface TransferLeaderRequest {
  readonly partition: number;
  readonly targetNode: number;
}

/** Moves one replica of a partition from one node to another (Cluster.MoveReplica). */
export interface MoveReplicaRequest {
  readonly partition: number;
  readonly fromNode: number;
  readonly toNode: number;
}

/** One change of the member table (Cluster.ChangeMember; src/node/cluster/membership-admin.ts). */
export interface ChangeMemberRequest {
  readonly action: 'add' | 'activate' | 'leave' | 'remove';
  readonly id: number;
  /** add: the node's client address, host:port. */
  readonly address?: string;
  /** add: its peer port (default: the client port + 100). */
  readonly peerAddress?: string;
  readonly zone?: string;
}

export interface ChangeMemberResponse {
  readonly version: number;
  /** Every member that is not removed. */
  readonly members: readonly NodeInfo[];
}

/** Cluster.Rebalance: pause or resume the rebalancer (a replicated flag), or report it (cluster admin). */
export interface RebalanceRequest {
  readonly action: 'pause' | 'resume' | 'status';
}

export interface RebalanceResponse {
  /** 'paused', 'running' (moves assigned) or 'idle'. */
  readonly state: string;
  readonly paused: boolean;
  /** The rebalance record's version. */
  readonly version: number;
  /** The replica moves assigned and not yet seen finished. */
  readonly moves: ReadonlyArray<{ readonly partition: number; readonly fromNode: number; readonly toNode: number }>;
  /** The leader planned for each partition that has one (frozen while paused). */
  readonly plannedLeaders: ReadonlyArray<{ readonly partition: number; readonly node: number }>;
}

export interface MoveReplicaResponse {
  /** The partition's voters once the move finished. */
  readonly voters: readonly number[];
}

/** Cluster.SplitPartition's result (src/node/cluster/split-admin.ts runs the split). */
export interface SplitPartitionResult {
  readonly partition: number;
  readonly newPartition: number;
  /** The source keeps [start, mid); the new partition owns [mid, end). */
  readonly start: number;
  readonly mid: number;
  readonly end: number;
}

/** Cluster.MergePartition's result (src/node/cluster/merge-admin.ts runs the merge). */
export interface MergePartitionResult {
  /** The partition that remains (L); it owns [start, end). */
  readonly partition: number;
  /** The partition merged away (R); its id is never used again. */
  readonly mergedPartition: number;
  readonly start: number;
  readonly end: number;
}

/** One leader change a node saw, for the status page and Peer.NodeStatus (src/node/service/leader-changes.ts keeps them). */
export interface LeaderChange {
  readonly partition: number;
  /** The last leader this node knew for the partition before the change (0: none yet). */
  readonly from: number;
  readonly to: number;
  readonly term: number;
  /** Wall-clock Unix epoch milliseconds when this node saw it. */
  readonly atMs: number;
}

/** One page of a partition's live keys at one revision, for backups (Cluster.BackupPage). */
export interface BackupPageRequest {
  readonly partition: number;
  /** 0 on the first page (read after a ReadIndex barrier); then the first page's revision. */
  readonly revision: number;
  /** "" on the first page; then the previous page's nextPageToken. */
  readonly pageToken: string;
  /** 0: the default page size. */
  readonly limit: number;
}

export interface BackupItem {
  readonly tenant: string;
  /** The key as its tenant sees it. */
  readonly key: string;
  readonly value: Uint8Array;
  /** 0 when the key never expires. */
  readonly expiresAtMs: number;
  readonly modRevision: number;
}

export interface BackupPageResponse {
  readonly revision: number;
  readonly items: readonly BackupItem[];
  /** "" when the partition has no more keys. */
  readonly nextPageToken: string;
}

export interface WatchRequest {
  /** Exactly one of key and prefix (a bucket name or a prefix inside one bucket). */
  readonly key?: string;
  readonly prefix?: string;
  /** Report changes after this revision; absent: after the current one. */
  readonly startRevision?: number;
  readonly keysOnly?: boolean;
  /** Send progress messages on an idle watch. */
  readonly progress?: boolean;
  /** Served by any replica from its own applied history (may lag the leader); see docs/api.md. */
  readonly stale?: boolean;
}

/** What a node offers the client-facing services (KV and Cluster). */
export interface NodeApi {
  get(request: GetRequest, context: CallContext): Promise<GetResponse>;
  put(request: PutRequest, context: CallContext): Promise<PutResponse>;
  delete(request: DeleteRequest, context: CallContext): Promise<DeleteResponse>;
  increment(request: IncrementRequest, context: CallContext): Promise<IncrementResponse>;
  exists(request: ExistsRequest, context: CallContext): Promise<ExistsResponse>;
  extend(request: ExtendRequest, context: CallContext): Promise<ExtendResponse>;
  /** A lease call (KV.Lease). Optional: a node without it (a test fake) refuses the RPC with INVALID_ARGUMENT. */
  lease?(request: LeaseRequest, context: CallContext): Promise<LeaseResponse>;
  getByPrefix(request: GetByPrefixRequest, context: CallContext): Promise<GetByPrefixResponse>;
  beginTransaction(request: BeginTransactionRequest, context: CallContext): Promise<BeginTransactionResponse>;
  commit(request: CommitRequest, context: CallContext): Promise<CommitResponse>;
  executeScript(request: ExecuteScriptRequest, context: CallContext): Promise<ExecuteScriptResponse>;
  /** Writes the watch's messages to `sink` until context.signal aborts (resolves) or the watch fails (rejects). */
  watch(request: WatchRequest, context: CallContext, sink: WatchSink): Promise<void>;
  clusterInfo(context: CallContext, request?: ClusterInfoRequest): Promise<ClusterInfoResponse>;
  transferLeader(request: TransferLeaderRequest, context: CallContext): Promise<void>;
  /** One page of a backup (Cluster.BackupPage). Optional: a node without it (a test fake) refuses the RPC with INVALID_ARGUMENT. */
  backupPage?(request: BackupPageRequest, context: CallContext): Promise<BackupPageResponse>;
  /** Moves a replica (Cluster.MoveReplica). Optional: a node without it refuses the RPC with INVALID_ARGUMENT. */
  moveReplica?(request: MoveReplicaRequest, context: CallContext): Promise<MoveReplicaResponse>;
  /** Changes the member table (cluster admin). */
  changeMember?(request: ChangeMemberRequest, context: CallContext): Promise<ChangeMemberResponse>;
  /** Pauses, resumes or reports the rebalancer (Cluster.Rebalance; cluster admin). */
  rebalance?(request: RebalanceRequest, context: CallContext): Promise<RebalanceResponse>;
}
