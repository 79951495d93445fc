/**
 * The in-process API of one Atoll node: what the gRPC layer calls after decoding a request, and what
 * a forwarded request runs on the partition's leader. Transport-neutral: no protobuf types here.
 *
 * Every call takes a CallContext with an absolute deadline and an AbortSignal. Operating errors are
 * thrown as AtollError (src/errors.ts) with a stable code; NOT_LEADER / NO_LEADER carry
 * `details.leaderHint` = { nodeId, address } when a leader is known.
 */

export type Consistency = 'linearizable' | 'stale';

export interface CallContext {
  /** Absolute deadline, Unix epoch milliseconds. */
  readonly deadlineMs: number;
  readonly signal?: AbortSignal;
  /** How many nodes already forwarded this request (bounded by MAX_FORWARD_HOPS in atoll-node.ts). */
  readonly hops?: number;
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
}

export interface ExistsResponse {
  readonly exists: boolean;
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
}

export interface GetByPrefixResponse {
  readonly items: readonly KeyRecord[];
  readonly revision: number;
  /** Empty when there are no more pages. */
  readonly nextPageToken: string;
}

export interface NodeInfo {
  readonly id: number;
  /** Client-facing gRPC address, host:port. */
  readonly address: string;
  /** Whether this node currently hears from that node (always true for itself). */
  readonly reachable: boolean;
}

export interface PartitionInfo {
  readonly id: number;
  /** Hash range [start, end) of the bucket hash space this partition owns. */
  readonly rangeStart: number;
  readonly rangeEnd: number;
  readonly replicas: readonly number[];
  /** 0 when no leader is known. */
  readonly leader: number;
  readonly term: number;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  readonly revision: number;
}

export interface ClusterInfoResponse {
  /** The node that answered. */
  readonly nodeId: number;
  readonly partitionCount: number;
  readonly replicationFactor: number;
  /** Name of the bucket hash (documented in src/keys): "fnv1a32". */
  readonly hashFunction: string;
  readonly nodes: readonly NodeInfo[];
  readonly partitions: readonly PartitionInfo[];
}

export interface TransferLeaderRequest {
  readonly partition: number;
  readonly targetNode: number;
}

/** What a node offers the client-facing services (KV and Cluster). */
export interface NodeApi {
  get(request: GetRequest, context: CallContext): Promise<GetResponse>;
  put(request: PutRequest, context: CallContext): Promise<PutResponse>;
  delete(request: DeleteRequest, context: CallContext): Promise<DeleteResponse>;
  increment(request: IncrementRequest, context: CallContext): Promise<IncrementResponse>;
  exists(request: ExistsRequest, context: CallContext): Promise<ExistsResponse>;
  extend(request: ExtendRequest, context: CallContext): Promise<ExtendResponse>;
  getByPrefix(request: GetByPrefixRequest, context: CallContext): Promise<GetByPrefixResponse>;
  clusterInfo(context: CallContext): Promise<ClusterInfoResponse>;
  transferLeader(request: TransferLeaderRequest, context: CallContext): Promise<void>;
}
