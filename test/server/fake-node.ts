/**
 * A NodeApi for the gRPC layer's tests: one MvccStore over a MemoryEngine, wall-clock time, no
 * Raft and no partitions (every key lives in the one store). Tests steer it through `before`, a
 * hook that runs first in every call and may throw (NOT_LEADER, a plain Error) or hang, and they
 * read `calls` to see what reached the node.
 */
import { AtollError } from '../../src/errors.js';
import { partitionTable } from '../../src/keys/partition-table.js';
import { prefixBucket } from '../../src/keys/prefix-bucket.js';
import { bucketOf } from '../../src/keys/bucket.js';
import { isBucketHashName } from '../../src/keys/bucket-hash.js';
import { partitionOfBucket } from '../../src/keys/partition-table.js';
import { defaultLimits } from '../../src/limits.js';
import type { ApplyResult, Command, KeyVersion, WriteResult } from '../../src/mvcc/commands.js';
import { getResponseOf } from '../../src/node/service/records.js';
import { runScriptAtLeader, scriptBucket } from '../../src/node/service/script-runner.js';
import { encodeTxnHandle } from '../../src/txn/txn-handle.js';
import { TxnScope } from '../../src/txn/txn-scope.js';
import { MvccStore } from '../../src/mvcc/mvcc-store.js';
import type {
  BeginTransactionRequest,
  BeginTransactionResponse,
  CallContext,
  CommitRequest,
  CommitResponse,
  ExecuteScriptRequest,
  ExecuteScriptResponse,
  ClusterInfoResponse,
  DeleteRequest,
  DeleteResponse,
  ExistsRequest,
  ExistsResponse,
  ExtendRequest,
  ExtendResponse,
  GetByPrefixRequest,
  GetByPrefixResponse,
  GetRequest,
  GetResponse,
  IncrementRequest,
  IncrementResponse,
  KeyRecord,
  NodeApi,
  NodeInfo,
  PutRequest,
  PutResponse,
  TransferLeaderRequest,
  MoveReplicaRequest,
  MoveReplicaResponse,
} from '../../src/api/node-api.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { WatchHub } from '../../src/watch/watch-hub.js';
import { runWatcher, type WatchSink } from '../../src/watch/watcher.js';
import type { WatchRequest } from '../../src/api/node-api.js';

export type FakeMethod = keyof NodeApi;

export interface FakeCall {
  readonly method: FakeMethod;
  readonly request: unknown;
  readonly context: CallContext;
}

export interface FakeNodeOptions {
  readonly nodeId?: number;
  readonly partitionCount?: number;
  /** The store's dedup window (MvccStoreOptions.dedupWindow), to test what follows an eviction. */
  readonly dedupWindow?: number;
}

function keyRecordOf(version: KeyVersion): KeyRecord {
  return { ...version, expiresAtMs: version.expiresAtMs ?? 0 };
}

/** Resolves never; rejects with the signal's reason once the call is cancelled or times out. */
export function hangUntilAborted(context: CallContext): Promise<never> {
  return new Promise((_resolve, reject) => {
    const signal = context.signal;
    if (signal === undefined) return;
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
}

export class FakeNode implements NodeApi {
  readonly nodeId: number;
  readonly partitionCount: number;
  /** Set once a server is listening (test/server/harness.ts). */
  address = '';
  /** The leader ClusterInfo reports for every partition (0: none). */
  leaderId: number;
  /** When set, the leader ClusterInfo reports for each partition instead of leaderId. */
  leaderOf: ((partition: number) => number) | undefined;
  /** The bucket hash ClusterInfo names (any text, to test unknown names); a known one also routes beginTransaction. */
  hashFunction = 'murmur3_32';
  /** The tenant ClusterInfo reports as the caller's (callerTenant); none when undefined. */
  callerTenant: string | undefined;
  /** The membership ClusterInfo reports; defaults to this node alone. */
  nodes: NodeInfo[] | undefined;
  /** Runs first in every call: throw to fail the call, await to delay or hang it. */
  before: ((method: FakeMethod, request: unknown, context: CallContext) => void | Promise<void>) | undefined;
  readonly calls: FakeCall[] = [];

  private index = 0;
  /** Applies are serialised: MvccStore asserts that they never overlap. */
  private applyChain: Promise<unknown> = Promise.resolve();

  private constructor(
    private readonly store: MvccStore,
    options: FakeNodeOptions,
  ) {
    this.nodeId = options.nodeId ?? 1;
    this.partitionCount = options.partitionCount ?? 4;
    this.leaderId = this.nodeId;
  }

  static async create(options: FakeNodeOptions = {}): Promise<FakeNode> {
    const store = await MvccStore.open({
      engine: new MemoryEngine(),
      prefix: partitionKeyPrefix('mvcc', 0),
      ...(options.dedupWindow !== undefined && { dedupWindow: options.dedupWindow }),
    });
    return new FakeNode(store, options);
  }

  callsOf(method: FakeMethod): FakeCall[] {
    return this.calls.filter((call) => call.method === method);
  }

  private async enter(method: FakeMethod, request: unknown, context: CallContext): Promise<void> {
    this.calls.push({ method, request, context });
    await this.before?.(method, request, context);
  }

  private async apply(command: Command): Promise<{ revision: number; applied: boolean; write: WriteResult | undefined }> {
    const result = await this.applyEntry(command);
    return { revision: result.revision, applied: result.applied, write: result.writes[0] };
  }

  private async applyEntry(command: Command, requestId?: string): Promise<ApplyResult> {
    const run = this.applyChain.then(() => this.store.apply(command, { index: ++this.index, nowMs: Date.now(), ...(requestId !== undefined && { requestId }) }));
    this.applyChain = run.catch(() => undefined);
    const result = await run;
    if (result.error !== undefined) throw result.error;
    return result;
  }

  async get(request: GetRequest, context: CallContext): Promise<GetResponse> {
    await this.enter('get', request, context);
    return getResponseOf(await this.store.get(request.key, { nowMs: Date.now(), ...(request.revision !== undefined && { revision: request.revision }) }));
  }

  async put(request: PutRequest, context: CallContext): Promise<PutResponse> {
    await this.enter('put', request, context);
    const { lease: _lease, ...plain } = request;
    const { revision, applied, write } = await this.apply({ type: 'put', ...plain });
    const previous = write?.previous;
    return previous === undefined || previous === null ? { applied, revision } : { applied, revision, previous: keyRecordOf(previous) };
  }

  async delete(request: DeleteRequest, context: CallContext): Promise<DeleteResponse> {
    await this.enter('delete', request, context);
    const { revision, applied, write } = await this.apply({ type: 'delete', ...request });
    return { deleted: applied && write?.deleted === true, revision };
  }

  async increment(request: IncrementRequest, context: CallContext): Promise<IncrementResponse> {
    await this.enter('increment', request, context);
    const { revision, write } = await this.apply({ type: 'increment', ...request });
    return { value: write?.counter ?? 0n, revision };
  }

  async exists(request: ExistsRequest, context: CallContext): Promise<ExistsResponse> {
    await this.enter('exists', request, context);
    const result = await this.store.get(request.key, { nowMs: Date.now() });
    return { exists: result.found, revision: result.revision };
  }

  async extend(request: ExtendRequest, context: CallContext): Promise<ExtendResponse> {
    await this.enter('extend', request, context);
    const { revision, write } = await this.apply({ type: 'extend', ...request });
    const extended = write?.conditionHeld === true;
    return { extended, expiresAtMs: extended ? (write?.current?.expiresAtMs ?? 0) : 0, revision };
  }

  async getByPrefix(request: GetByPrefixRequest, context: CallContext): Promise<GetByPrefixResponse> {
    await this.enter('getByPrefix', request, context);
    const { keyPrefix } = prefixBucket(request.prefix);
    const token = request.pageToken === undefined ? undefined : (JSON.parse(Buffer.from(request.pageToken, 'base64url').toString()) as { after: string; revision: number });
    const revision = token?.revision ?? request.revision;
    const page = await this.store.getByPrefix(keyPrefix, {
      nowMs: Date.now(),
      ...(revision !== undefined && { revision }),
      ...(request.limit !== undefined && { limit: request.limit }),
      ...(token !== undefined && { after: token.after }),
    });
    const nextPageToken = page.more ? Buffer.from(JSON.stringify({ after: page.continueAfter, revision: page.revision })).toString('base64url') : '';
    return { items: page.items.map(keyRecordOf), revision: page.revision, nextPageToken };
  }

  async beginTransaction(request: BeginTransactionRequest, context: CallContext): Promise<BeginTransactionResponse> {
    await this.enter('beginTransaction', request, context);
    const bucket = bucketOf(request.key);
    const partition = partitionOfBucket(bucket, this.partitionCount, isBucketHashName(this.hashFunction) ? this.hashFunction : undefined);
    const isolation = request.isolation ?? 'snapshot';
    const startedAtMs = Date.now();
    const snapshotRevision = this.store.revision;
    const transaction = encodeTxnHandle({ partition, partitionCount: this.partitionCount, tenant: 'default', bucket, snapshotRevision, isolation, startedAtMs });
    return { transaction, partition, bucket, snapshotRevision, isolation, expiresAtMs: startedAtMs + defaultLimits.maxTxnDurationMs };
  }

  async commit(request: CommitRequest, context: CallContext): Promise<CommitResponse> {
    await this.enter('commit', request, context);
    const scope = TxnScope.fromText(request.transaction, this.partitionCount, isBucketHashName(this.hashFunction) ? this.hashFunction : undefined);
    scope.checkAlive(Date.now());
    return { revision: (await this.applyEntry(scope.commandOf(request), request.requestId)).revision };
  }

  private watchHub: WatchHub | undefined;

  /** One partition, no leadership: the watcher of src/watch over the fake's store. */
  async watch(request: WatchRequest, context: CallContext, sink: WatchSink): Promise<void> {
    if (this.watchHub === undefined) {
      const hub = new WatchHub(this.store.revision, { maxChanges: 1000, maxBytes: 1 << 24 });
      this.store.setCommitListener((revision, changes) => hub.publish(revision, changes));
      this.watchHub = hub;
    }
    const target = request.key !== undefined ? { key: request.key } : { keyPrefix: prefixBucket(request.prefix ?? '').keyPrefix };
    await runWatcher(
      { hub: this.watchHub, revision: () => this.store.revision, changesSince: (t, after, bounds) => this.store.changesSince(t, after, bounds), checkLeader: () => undefined },
      sink,
      {
        target,
        startRevision: request.startRevision ?? this.store.revision,
        ...(request.keysOnly === true && { keysOnly: true }),
        ...(request.progress === true && { progress: true }),
        progressIntervalMs: 50,
        stallMs: 1000,
        readBounds: { maxChanges: 100, maxBytes: 1 << 22 },
        userKey: (key) => key,
        monotonicMs: () => performance.now(),
        after: (ms, run) => {
          const timer = setTimeout(run, ms);
          return { cancel: () => clearTimeout(timer) };
        },
        signal: context.signal ?? new AbortController().signal,
      },
    );
  }

  async executeScript(request: ExecuteScriptRequest, context: CallContext): Promise<ExecuteScriptResponse> {
    await this.enter('executeScript', request, context);
    const key = scriptBucket(request, defaultLimits);
    return runScriptAtLeader({
      request,
      limits: defaultLimits,
      partitionCount: this.partitionCount,
      tenant: 'default',
      begin: () => this.beginTransaction({ key, isolation: request.isolation ?? 'snapshot' }, context),
      mvcc: this.store,
      propose: (command, requestId) => this.applyEntry(command, requestId),
      deadlineMs: context.deadlineMs,
    });
  }

  async clusterInfo(context: CallContext): Promise<ClusterInfoResponse> {
    await this.enter('clusterInfo', undefined, context);
    const nodes = this.nodes ?? [{ id: this.nodeId, address: this.address, reachable: true }];
    return {
      nodeId: this.nodeId,
      partitionCount: this.partitionCount,
      replicationFactor: nodes.length,
      hashFunction: this.hashFunction,
      ...(this.callerTenant !== undefined && { callerTenant: this.callerTenant }),
      nodes,
      partitions: partitionTable(this.partitionCount).map((range) => ({
        id: range.id,
        rangeStart: range.start,
        rangeEnd: range.end,
        replicas: nodes.map((node) => node.id),
        leader: this.leaderOf?.(range.id) ?? this.leaderId,
        term: 3,
        commitIndex: this.index,
        appliedIndex: this.index,
        revision: this.store.revision,
      })),
    };
  }

  async moveReplica(request: MoveReplicaRequest, context: CallContext): Promise<MoveReplicaResponse> {
    await this.enter('moveReplica', request, context);
    if (request.partition >= this.partitionCount) throw new AtollError('INVALID_ARGUMENT', `no partition ${request.partition}`);
    if (request.toNode === this.nodeId) throw new AtollError('MOVE_REFUSED', `node ${request.toNode} already holds a replica`, { reason: 'already-replica' });
    return { voters: [request.toNode] };
  }

  async transferLeader(request: TransferLeaderRequest, context: CallContext): Promise<void> {
    await this.enter('transferLeader', request, context);
    if (request.partition >= this.partitionCount) {
      throw new AtollError('INVALID_ARGUMENT', `no partition ${request.partition}`);
    }
    this.leaderId = request.targetNode;
  }
}
