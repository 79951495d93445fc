/**
 * AtollClient: typed promise methods over Atoll's gRPC API, with client-side routing, pipelining
 * and safe retries.
 *
 *   const client = new AtollClient({ endpoints: ['127.0.0.1:7001', '127.0.0.1:7002'] });
 *   await client.put('sessions/abc', 'payload', { ttlMs: 60_000 });
 *   const session = await client.get('sessions/abc');
 *   if (session.found) console.log(session.text());
 *   client.close();
 *
 * Routing: the client loads ClusterInfo from any endpoint, computes a key's partition with the
 * documented bucket hash (src/keys), and sends the request straight to that partition's leader.
 * When it knows no leader it sends to any node, which forwards. NOT_LEADER answers carry a hint
 * that the client follows at once; other failures trigger a (rate-limited) map refresh.
 *
 * Pipelining: each node gets one channel and one KV.Stream that multiplexes every concurrent
 * request to that node; when the stream is full or failing, requests use unary calls.
 *
 * Retries (see retry-policy.ts): reads are retried on any "try again" failure; writes only when
 * they certainly did not take effect. Retries use jittered exponential back-off and stop at the
 * call's deadline. A write that timed out fails with DEADLINE_EXCEEDED and `indeterminate: true`;
 * it is never retried silently.
 *
 * Every method takes `{ timeoutMs?, deadline?, signal? }`. Operating failures reject with
 * AtollClientError; an aborted signal rejects with the signal's reason.
 */
import { AtollError } from '../errors.js';
import { prefixBucket } from '../keys/prefix-bucket.js';
import { limits } from '../limits.js';
import { bucketOf } from '../keys/bucket.js';
import type { BackupPageRequest, BackupPageResponse, ClusterInfoResponse, CommitRequest, MoveReplicaResponse, Consistency, GetByPrefixRequest, Isolation, LeaseRequest, LeaseResponse, PutRequest, WatchEvent, WatchRequest } from '../api/node-api.js';
import { Lease } from './lease.js';
import { acquireLock, type HeldLock, type LockOptions } from './lock.js';
import { paramsFromJson, parseScript, scriptRoutingTarget } from '../script/index.js';
import type { TxnRecord } from '../txn/txn-view.js';
import { isWriteKind, type KvKind, type KvOperation, type KvResultOf, type KvTypes } from '../wire/kv-operation.js';
import { deadlineMsOf, sleep, throwIfAborted, type CallOptions } from './call-options.js';
import { afterUnknownSend, AtollClientError, clientErrorOf } from './client-error.js';
import {
  checkConsistency,
  checkDelta,
  checkKey,
  checkLimit,
  checkNodeId,
  checkPrefix,
  checkRevision,
  checkTtlMs,
  largestWireValueBytes,
  valueBytes,
  type ValueInput,
} from './client-input.js';
import { ClusterMap } from './cluster-map.js';
import { NodeConnection } from './node-connection.js';
import {
  getResultOf,
  keyEntryOf,
  type DeleteResult,
  type ExistsResult,
  type ExtendResult,
  type GetResult,
  type IncrementResult,
  type KeyEntry,
  type PrefixPage,
  type PutResult,
} from './results.js';
import { newRequestId } from './request-id.js';
import { backoffDelayMs, endsWatch, retryActionOf } from './retry-policy.js';
import { Transaction, type TransactionTransport } from './transaction.js';
import { checkTlsClientOptions, type TlsClientOptions } from '../wire/tls-credentials.js';
import { ShardedCounter, type ShardedCounterOptions } from './sharded-counter.js';
import type { ChangeMemberRequest, ChangeMemberResponse, RebalanceRequest, RebalanceResponse } from '../api/node-api.js';
import type { MergePartitionResult, SplitPartitionResult } from '../api/node-api.js';

/** The subset of a logger the client uses; a pino logger fits. */
export interface ClientLogger {
  debug(object: object, message?: string): void;
  warn(object: object, message?: string): void;
}

export interface AtollClientOptions {
  /** host:port of one or more nodes; any node can answer ClusterInfo and any request. */
  readonly endpoints: readonly string[];
  /** The timeout of a call that passes neither timeoutMs nor deadline (default 10 s). */
  readonly defaultTimeoutMs?: number;
  readonly logger?: ClientLogger;
  /** Multiplex requests over one KV.Stream per node (default true); false: unary calls only. */
  readonly pipelining?: boolean;
  /** At most this many attempts per call, retries included (default 30; the deadline usually ends it first). */
  readonly maxAttempts?: number;
  /**
   * Refuse larger values locally with VALUE_TOO_LARGE. Defaults to the largest value that fits in
   * one message (about 3.9 MiB); set it to the cluster's configured limit (1 MiB unless the nodes
   * were started with --max-value-bytes) to fail fast without a round trip.
   */
  readonly maxValueBytes?: number;
  /** Reach the nodes over TLS: the CA to trust, a client certificate if they require one (docs/security.md). */
  readonly tls?: TlsClientOptions;
  /**
   * The bearer token of a cluster with authentication (docs/security.md); it decides the tenant
   * every key belongs to and what the client may do.
   */
  readonly token?: string;
}

export interface ReadOptions extends CallOptions {
  /** 'linearizable' (default) or 'stale' (any replica's local state; may miss recent writes). */
  readonly consistency?: Consistency;
}

export interface GetOptions extends ReadOptions {
  /** Read the key as it was at this past revision (while retained). */
  readonly revision?: number;
}

/**
 * Options of every write. `requestId` makes a write idempotent: the cluster remembers the result
 * of each id for a while (per partition), so retrying a write that timed out with the same id can
 * never apply it twice; the retry returns the first attempt's result. Make ids with
 * newRequestId() (timestamped, docs/api.md): a retry that comes after the partition forgot the
 * result then fails with REQUEST_ID_EXPIRED instead of applying again. (A plain text id is
 * accepted too, but after it is forgotten a retry applies again.)
 */
export interface WriteCallOptions extends CallOptions {
  readonly requestId?: string;
}

export interface PutOptions extends WriteCallOptions {
  /** Expire the key this many ms after the write. Without it (or keepTtl) the key never expires. */
  readonly ttlMs?: number;
  /** Keep the key's current expiry (Redis KEEPTTL). */
  readonly keepTtl?: boolean;
  /** Write only if the key is absent. */
  readonly ifAbsent?: boolean;
  /** Write only if the key is present. */
  readonly ifPresent?: boolean;
  /** Write only if the key's modRevision equals this (0: only if absent). Compare-and-swap. */
  readonly ifModRevision?: number;
  /** Write only if the key currently holds exactly this value. */
  readonly ifValue?: ValueInput;
  /** Report the version this write replaced in `previous`. */
  readonly returnPrevious?: boolean;
  /**
   * A fenced write: the caller's fencing token (a held lock's fencingToken). Fails with FENCED,
   * changing nothing, when a higher token already wrote the live key (a newer lock holder).
   */
  readonly ifFence?: number;
  /**
   * Attach the key to a lease (client.lease()): it is deleted when the lease is revoked or lost.
   * A lease id string ("<partition>.<n>", from the Lease RPC or `atoll lease grant`) also works.
   */
  readonly lease?: Lease | string;
}

export interface RegisterOptions extends CallOptions {
  /** The registration's lease TTL (default 10 s): the entry vanishes this long after the process dies. */
  readonly ttlMs?: number;
}

export interface DeleteOptions extends WriteCallOptions {
  readonly ifModRevision?: number;
  readonly ifValue?: ValueInput;
}

export interface IncrementOptions extends WriteCallOptions {
  /** Give the counter a new expiry; without it the key keeps its current one. */
  readonly ttlMs?: number;
}

export interface PrefixOptions extends ReadOptions {
  readonly revision?: number;
  /** Keys per page (default 100, at most 1000). */
  readonly limit?: number;
  /** The previous page's nextPageToken. */
  readonly pageToken?: string;
}

export interface ScanOptions extends ReadOptions {
  readonly revision?: number;
  /** Keys fetched per round trip (default 100, at most 1000). */
  readonly pageSize?: number;
}

export type ClusterInfo = ClusterInfoResponse;

export interface WatchOptions {
  /** Report the changes after this revision (resume: the last revision you saw). Default: from now. */
  readonly fromRevision?: number;
  /** Watch exactly the key given, not every key starting with it. */
  readonly exactKey?: boolean;
  /** Leave values out of put events. */
  readonly keysOnly?: boolean;
  /** Also yield { type: 'progress', revision } items: the watch has seen every change up to revision. */
  readonly progress?: boolean;
  /** Ends the watch (the iterator returns). */
  readonly signal?: AbortSignal;
  /**
   * Served by any replica, not only the leader, from its own applied history: the same changes in
   * the same order, each once, but they may arrive later than at the leader. After a disconnect it
   * resumes at another replica after the last revision it saw.
   */
  readonly stale?: boolean;
  /**
   * Test only (the chaos suite's negative control): after a resume, drop the first change, as a
   * broken resume would. Never set it in real code.
   */
  readonly testSkipOneEventOnResume?: boolean;
}

/** A change (put or delete: reason 'deleted' or 'expired'), or with `progress`, a position. */
export type WatchItem = WatchEvent | { readonly type: 'progress'; readonly revision: number };

/** Errors after which a watch cannot continue: the request itself is wrong or not allowed. */

export interface BeginTransactionOptions extends CallOptions {
  /** 'snapshot' (default): first committer wins on the keys written. 'serializable': also on keys and prefixes read. */
  readonly isolation?: Isolation;
}

export interface TransactionOptions extends BeginTransactionOptions {
  /** How many times to run the callback again after a conflict (default 10). */
  readonly retries?: number;
}

export interface TransactionOutcome<T> {
  /** What the callback returned (from the run that committed, or that rolled back). */
  readonly value: T;
  /** False when the callback called tx.rollback(). */
  readonly committed: boolean;
  /** The commit's revision (the snapshot revision when nothing was written). */
  readonly revision: number;
  /** Runs of the callback: 1 + conflicts retried. */
  readonly attempts: number;
}

export interface ScriptOptions extends WriteCallOptions {
  /** Values for @name placeholders: JSON-serialisable (bigints travel as integers). */
  readonly params?: Readonly<Record<string, unknown>>;
  readonly isolation?: Isolation;
  /** The bucket whose partition runs the script; default: the first key the script names. */
  readonly bucket?: string;
}

export interface ScriptResult {
  /** The script's return value, parsed from JSON (null when it returned nothing). */
  readonly value: unknown;
  /** False when the script rolled back. */
  readonly committed: boolean;
  readonly revision: number;
  /** Evaluations at the leader (it re-runs a script that lost a conflict). */
  readonly attempts: number;
}

/** The whole of client.transaction(), retries included, gets this long unless told otherwise. */
const defaultTransactionTimeoutMs = 30_000;
const defaultTransactionRetries = 10;

/** JSON text of a script parameter; bigints become JSON integers. */
function paramJson(name: string, value: unknown): string {
  const text = JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? `@@bigint:${item.toString()}` : item));
  if (text === undefined) throw new AtollError('INVALID_ARGUMENT', `script parameter ${name} is not JSON-serialisable`);
  return text.replace(/"@@bigint:(-?\d+)"/g, '$1');
}

/** Don't ask for a new cluster map more often than this, however many requests fail at once. */
const minRefreshIntervalMs = 200;
/** While requests flow, the routing map is reloaded in the background when older than this. */
const mapMaxAgeMs = 5_000;
/** One ClusterInfo attempt while refreshing the map waits at most this long. */
const refreshTimeoutMs = 2000;
/** A node that did not answer at all is avoided for this long. */
const unreachablePenaltyMs = 1000;
/** The deadline is the real bound on retries; this only stops a pathological loop early. */
const defaultMaxAttempts = 30;

/** Picks a partition for a request from the map; undefined: any node will do. */
type Route = (map: ClusterMap) => number | undefined;

export class AtollClient {
  private readonly endpoints: readonly string[];
  private readonly defaultTimeoutMs: number;
  private readonly logger: ClientLogger | undefined;
  private readonly pipelining: boolean;
  private readonly maxAttempts: number;
  private readonly maxValueBytes: number;
  private readonly tls: TlsClientOptions | undefined;
  private readonly token: string | undefined;
  private readonly connections = new Map<string, NodeConnection>();
  /**
   * Where requests (and the token) may go: the configured endpoints and the addresses their
   * ClusterInfo advertises. Never an address seen only in a leader hint or an error.
   */
  private readonly clusterAddresses = new Set<string>();
  private readonly unreachableUntilMs = new Map<string, number>();
  private map: ClusterMap | undefined;
  private refreshing: Promise<void> | undefined;
  private lastRefreshMs = -Infinity;
  private rotation = 0;
  private closed = false;
  /** Leases made by lease() and register(): their keepalives stop when the client closes. */
  private readonly leases = new Set<Lease>();

  constructor(options: AtollClientOptions) {
    const endpoints = options.endpoints.map((endpoint) => endpoint.trim()).filter((endpoint) => endpoint !== '');
    if (endpoints.length === 0) throw new AtollError('INVALID_ARGUMENT', 'AtollClient needs at least one endpoint (host:port)');
    this.endpoints = Object.freeze([...new Set(endpoints)]);
    for (const endpoint of this.endpoints) this.clusterAddresses.add(endpoint);
    this.defaultTimeoutMs = options.defaultTimeoutMs ?? limits.defaultCallTimeoutMs;
    if (!Number.isFinite(this.defaultTimeoutMs) || this.defaultTimeoutMs <= 0) {
      throw new AtollError('INVALID_ARGUMENT', 'defaultTimeoutMs must be a positive number of milliseconds');
    }
    this.logger = options.logger;
    this.pipelining = options.pipelining ?? true;
    this.maxAttempts = options.maxAttempts ?? defaultMaxAttempts;
    if (!Number.isSafeInteger(this.maxAttempts) || this.maxAttempts < 1) throw new AtollError('INVALID_ARGUMENT', 'maxAttempts must be a positive integer');
    this.maxValueBytes = Math.min(options.maxValueBytes ?? largestWireValueBytes, largestWireValueBytes);
    if (!Number.isSafeInteger(this.maxValueBytes) || this.maxValueBytes < 0) throw new AtollError('INVALID_ARGUMENT', 'maxValueBytes must be a non-negative integer');
    this.tls = options.tls === undefined ? undefined : checkTlsClientOptions(options.tls);
    if (options.token !== undefined && (typeof options.token !== 'string' || !/^\S+$/.test(options.token))) {
      throw new AtollError('INVALID_ARGUMENT', 'token must be a non-empty string without spaces');
    }
    this.token = options.token;
  }

  // -----------------------------------------------------------------------------------------------
  // Public API: check and normalise, then run.

  /** Reads a key. A missing key is `{ found: false }`, never an error. */
  async get(key: string, options: GetOptions = {}): Promise<GetResult> {
    const request = checked(() => ({
      key: checkKey(key),
      ...(options.revision !== undefined && options.revision !== 0 && { revision: checkRevision(options.revision, 'revision') }),
      ...consistencyOf(options),
    }));
    return getResultOf(await this.runKey('get', request, options));
  }

  /** Writes a key, optionally with a TTL and a condition (then check `applied`). */
  async put(key: string, value: ValueInput, options: PutOptions = {}): Promise<PutResult> {
    const request = checked((): PutRequest => ({
      key: checkKey(key),
      value: valueBytes(value, 'value', this.maxValueBytes),
      ...(options.ttlMs !== undefined && { ttlMs: checkTtlMs(options.ttlMs) }),
      ...(options.keepTtl === true && { keepTtl: true }),
      ...(options.ifAbsent === true && { ifAbsent: true }),
      ...(options.ifPresent === true && { ifPresent: true }),
      ...(options.ifModRevision !== undefined && { ifModRevision: checkRevision(options.ifModRevision, 'ifModRevision') }),
      ...(options.ifValue !== undefined && { ifValue: valueBytes(options.ifValue, 'ifValue', this.maxValueBytes) }),
      ...(options.returnPrevious === true && { returnPrevious: true }),
      ...(options.ifFence !== undefined && { ifFence: options.ifFence }),
      ...(options.requestId !== undefined && { requestId: options.requestId }),
    }));
    const lease = options.lease === undefined ? undefined : typeof options.lease === 'string' ? options.lease : await options.lease.idFor(request.key);
    const response = await this.runKey('put', lease === undefined ? request : { ...request, lease }, options);
    const result = { applied: response.applied, revision: response.revision };
    return response.previous === undefined ? result : { ...result, previous: keyEntryOf(response.previous) };
  }

  /** Deletes a key; `deleted` is false when it was absent or a condition did not hold. */
  async delete(key: string, options: DeleteOptions = {}): Promise<DeleteResult> {
    const request = checked(() => ({
      key: checkKey(key),
      ...(options.ifModRevision !== undefined && { ifModRevision: checkRevision(options.ifModRevision, 'ifModRevision') }),
      ...(options.ifValue !== undefined && { ifValue: valueBytes(options.ifValue, 'ifValue', this.maxValueBytes) }),
      ...(options.requestId !== undefined && { requestId: options.requestId }),
    }));
    return this.runKey('delete', request, options);
  }

  /** Adds `delta` (default 1) to a 64-bit counter atomically; an absent key counts as 0. */
  async increment(key: string, delta: number | bigint = 1, options: IncrementOptions = {}): Promise<IncrementResult> {
    const request = checked(() => ({
      key: checkKey(key),
      delta: checkDelta(delta),
      ...(options.ttlMs !== undefined && { ttlMs: checkTtlMs(options.ttlMs) }),
      ...(options.requestId !== undefined && { requestId: options.requestId }),
    }));
    return this.runKey('increment', request, options);
  }

  async exists(key: string, options: ReadOptions = {}): Promise<ExistsResult> {
    const request = checked(() => ({ key: checkKey(key), ...consistencyOf(options) }));
    return this.runKey('exists', request, options);
  }

  /**
   * A lease of `ttlMs`: keys put with `{ lease }` are deleted together when it is revoked or lost.
   * It keeps itself alive in the background (every ttl/3) and reports loss through onLost
   * (src/client/lease.ts). Server leases are granted lazily, one per bucket it is used under.
   */
  async lease(ttlMs: number): Promise<Lease> {
    const checkedTtl = checked(() => checkTtlMs(ttlMs));
    const lease = new Lease({ call: (request, options) => this.leaseCall(request, options) }, checkedTtl);
    this.leases.add(lease);
    return lease;
  }

  /**
   * Service registration in one line: puts `value` under `key` with a lease of its own, kept alive
   * until the returned lease is revoked or this process dies (then the key vanishes within ttlMs).
   */
  async register(key: string, value: ValueInput, options: RegisterOptions = {}): Promise<Lease> {
    const { ttlMs, ...callOptions } = options;
    const lease = await this.lease(ttlMs ?? 10_000);
    try {
      // The lease alone ends the entry: the key itself gets no TTL.
      await this.put(key, value, { ...callOptions, lease });
    } catch (error) {
      await lease.revoke().catch(() => undefined);
      throw error;
    }
    return lease;
  }

  /**
   * Takes the lock `name` (src/client/lock.ts): resolves when it is held, with its fencingToken
   * (pass it as ifFence to the writes the lock guards), `lost` and `unlock()`. Waiters are served
   * in arrival order; a dead holder's lock passes on within ttlMs (default 10 s).
   */
  lock(name: string, options: LockOptions = {}): Promise<HeldLock> {
    return acquireLock(this, name, options);
  }

  /** One lease call (KV.Lease): a grant goes to its key's partition, the others to the id's. */
  leaseCall(request: LeaseRequest, options: CallOptions = {}): Promise<LeaseResponse> {
    const idPartition = request.lease === undefined ? undefined : Number(/^(\d{1,10})\./.exec(request.lease)?.[1] ?? Number.NaN);
    const key = request.key ?? '';
    const route: Route = (map) => (request.action === 'grant' ? map.partitionOfKey(key) : Number.isSafeInteger(idPartition) ? idPartition : undefined);
    return this.run({ kind: 'lease', request }, route, options);
  }

  /** Sets a present key to expire `ttlMs` from now; `extended` is false when it is absent. */
  async extend(key: string, ttlMs: number, options: WriteCallOptions = {}): Promise<ExtendResult> {
    const request = checked(() => ({ key: checkKey(key), ttlMs: checkTtlMs(ttlMs), ...(options.requestId !== undefined && { requestId: options.requestId }) }));
    return this.runKey('extend', request, options);
  }

  /**
   * One page of the keys under a prefix inside one bucket (`services` or `services/au`). Pass
   * `nextPageToken` back as `pageToken` for the next page; pages continue at the first page's
   * revision.
   */
  async getByPrefix(prefix: string, options: PrefixOptions = {}): Promise<PrefixPage> {
    const { request, bucket } = checked(() => {
      const scope = checkPrefix(prefix);
      const built: GetByPrefixRequest = {
        prefix: scope.prefix,
        ...(options.revision !== undefined && options.revision !== 0 && { revision: checkRevision(options.revision, 'revision') }),
        ...(options.limit !== undefined && { limit: checkLimit(options.limit) }),
        ...(options.pageToken !== undefined && options.pageToken !== '' && { pageToken: options.pageToken }),
        ...consistencyOf(options),
      };
      return { request: built, bucket: scope.bucket };
    });
    const response = await this.run({ kind: 'getByPrefix', request }, (map) => map.partitionOfBucket(bucket), options);
    return { items: response.items.map(keyEntryOf), revision: response.revision, nextPageToken: response.nextPageToken };
  }

  /**
   * Every key under a prefix, page by page, at one revision (the first page's). `timeoutMs`
   * applies to each page's request; `deadline` and `signal` bound the whole scan.
   */
  async *scanPrefix(prefix: string, options: ScanOptions = {}): AsyncGenerator<KeyEntry, void, undefined> {
    const { pageSize, ...rest } = options;
    let pageToken = '';
    do {
      const page = await this.getByPrefix(prefix, { ...rest, ...(pageSize !== undefined && { limit: pageSize }), pageToken });
      yield* page.items;
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
  }

  /**
   * Every change to the keys under `prefix` (a bucket, `services`, or a prefix inside one, or with
   * exactKey one key), after `fromRevision`, in revision order, each exactly once, until `signal`
   * aborts or the loop breaks. Follows the partition's leader: after a disconnect, a leader
   * change or an overflow it resumes after the last revision it saw, without gaps or duplicates.
   * Fails (throws) only when the watch cannot continue: a bad request, no permission, a start
   * revision below the compaction floor (COMPACTED), a node's watcher limit (endsWatch).
   */
  async *watch(prefix: string, options: WatchOptions = {}): AsyncGenerator<WatchItem, void, undefined> {
    const { target, bucket } = checked(() => {
      if (options.exactKey === true) return { target: { key: checkKey(prefix) }, bucket: bucketOf(prefix) };
      const scope = checkPrefix(prefix);
      return { target: { prefix: scope.prefix }, bucket: scope.bucket };
    });
    let after = options.fromRevision === undefined ? undefined : checked(() => checkRevision(options.fromRevision, 'fromRevision'));
    const route: Route = (map) => map.partitionOfBucket(bucket);
    const signal = options.signal;
    let hinted: string | undefined;
    let failures = 0;
    let skipNext = false;
    while (!this.closed && signal?.aborted !== true) {
      const address = hinted ?? (options.stale === true ? await this.anyReplicaAddress() : await this.addressFor(route, Date.now() + this.defaultTimeoutMs));
      hinted = undefined;
      const request: WatchRequest = {
        ...target,
        ...(after !== undefined && { startRevision: after }),
        keysOnly: options.keysOnly === true,
        progress: true,
        ...(options.stale === true && { stale: true }),
      };
      try {
        for await (const message of this.connectionTo(address).watch(request, signal)) {
          failures = 0;
          if (after !== undefined && message.revision < after) throw new AtollError('INTERNAL', `watch went back from revision ${after} to ${message.revision}`);
          if (!message.progress && skipNext) {
            skipNext = false;
          } else if (!message.progress) {
            for (const event of message.events) yield event;
          } else if (options.progress === true) {
            yield { type: 'progress', revision: message.revision };
          }
          after = message.revision;
        }
      } catch (error) {
        if (isAborted(signal)) return;
        if (!(error instanceof AtollError) || endsWatch(error)) throw error instanceof AtollError ? clientErrorOf(error, false) : error;
        const leaderHint = error.code === 'NOT_LEADER' || error.code === 'NO_LEADER' ? retryActionOf(error, false).leaderHint : undefined;
        hinted = this.learnFromFailure(route, address, leaderHint, error.details?.['fromTransport'] === true);
        this.logger?.debug({ address, code: error.code, after }, 'atoll watch interrupted; resuming');
        if (options.testSkipOneEventOnResume === true) skipNext = true;
        failures++;
      }
      await sleep(hinted !== undefined && failures <= 1 ? 0 : backoffDelayMs(failures), signal).catch(() => undefined);
    }
  }

  /**
   * Starts a snapshot transaction over the partition of `bucketOrKey` (a bucket name or any key in
   * it). See Transaction; or use transaction(), which commits and retries conflicts for you.
   */
  async beginTransaction(bucketOrKey: string, options: BeginTransactionOptions = {}): Promise<Transaction> {
    const request = checked(() => ({
      key: checkKey(bucketOrKey),
      ...(options.isolation !== undefined && { isolation: checkIsolation(options.isolation) }),
    }));
    const begun = await this.runKey('beginTransaction', request, options);
    const partitionCount = this.map?.partitionCount;
    if (partitionCount === undefined) throw clientErrorOf(new AtollError('UNAVAILABLE', 'no cluster map yet'), false);
    const hash = this.map?.hash;
    const { timeoutMs, deadline, signal } = options;
    const callOptions: CallOptions = { ...(timeoutMs !== undefined && { timeoutMs }), ...(deadline !== undefined && { deadline }), ...(signal !== undefined && { signal }) };
    return checked(() => new Transaction(this.transactionTransport(), begun, partitionCount, callOptions, this.maxValueBytes, hash));
  }

  /**
   * Runs `body` in a transaction on `bucket`'s partition and commits it; on TXN_CONFLICT runs it
   * again at a new snapshot (up to `retries` times, with jittered back-off). The body may run more
   * than once, so keep side effects other than the transaction's own reads and writes out of it.
   * Only TXN_CONFLICT runs it again: REQUEST_ID_EXPIRED (a resent commit whose first send may have
   * applied) and every other failure end the call, so a commit never applies twice.
   * If the body throws, nothing is written and the error propagates; if it calls tx.rollback(),
   * nothing is written and the outcome says committed: false. `timeoutMs` / `deadline` bound the
   * whole (default 30 s).
   */
  async transaction<T>(bucket: string, body: (tx: Transaction) => Promise<T>, options: TransactionOptions = {}): Promise<TransactionOutcome<T>> {
    const retries = options.retries ?? defaultTransactionRetries;
    if (!Number.isSafeInteger(retries) || retries < 0) throw clientErrorOf(new AtollError('INVALID_ARGUMENT', 'retries must be a non-negative integer'), false);
    const deadlineMs = checked(() => deadlineMsOf(options, defaultTransactionTimeoutMs));
    const { isolation, signal } = options;
    const callOptions = { deadline: deadlineMs, ...(signal !== undefined && { signal }), ...(isolation !== undefined && { isolation }) };
    for (let attempt = 1; ; attempt++) {
      const tx = await this.beginTransaction(bucket, callOptions);
      let value: T;
      try {
        value = await body(tx);
      } catch (error) {
        tx.rollback();
        throw error;
      }
      if (tx.state === 'rolled back') return { value, committed: false, revision: tx.snapshotRevision, attempts: attempt };
      try {
        const { revision } = await tx.commit(callOptions);
        return { value, committed: true, revision, attempts: attempt };
      } catch (error) {
        if (!isAtollClientErrorCode(error, 'TXN_CONFLICT') || attempt > retries) throw error;
        const delayMs = backoffDelayMs(attempt);
        if (Date.now() + delayMs >= deadlineMs) throw error;
        this.logger?.debug({ bucket, attempt }, 'atoll transaction conflicted; running it again');
        await sleep(delayMs, signal);
      }
    }
  }

  /**
   * Runs a script transaction (docs/script-language.md) at its partition's leader, atomically.
   * It is sent with a request id (default: newRequestId()) and resent with the same id when the
   * outcome of a send is unknown, so it commits at most once.
   */
  async executeScript(script: string, options: ScriptOptions = {}): Promise<ScriptResult> {
    const { request, bucket } = checked(() => {
      if (typeof script !== 'string' || script.trim() === '') throw new AtollError('INVALID_ARGUMENT', 'script must be a non-empty string');
      const params: Record<string, string> = {};
      for (const [name, value] of Object.entries(options.params ?? {})) params[name] = paramJson(name, value);
      const routeBucket = options.bucket !== undefined ? bucketOf(checkKey(options.bucket)) : scriptBucketOf(script, params);
      return {
        request: {
          script,
          params,
          ...(options.isolation !== undefined && { isolation: checkIsolation(options.isolation) }),
          ...(options.bucket !== undefined && { bucket: options.bucket }),
          requestId: options.requestId ?? newRequestId(),
        },
        bucket: routeBucket,
      };
    });
    const route: Route = (map) => (bucket === undefined ? undefined : map.partitionOfBucket(bucket));
    const deadlineMs = checked(() => deadlineMsOf(options, this.defaultTimeoutMs));
    let earlierUnknown = false;
    for (let resend = 0; ; resend++) {
      try {
        const response = await this.run({ kind: 'executeScript', request }, route, { ...options, deadline: deadlineMs });
        return { value: JSON.parse(response.resultJson) as unknown, committed: response.committed, revision: response.revision, attempts: response.attempts };
      } catch (error) {
        const unknown = error instanceof AtollClientError && error.indeterminate && error.code !== 'DEADLINE_EXCEEDED';
        if (!unknown || resend >= 5 || Date.now() >= deadlineMs) throw afterUnknownSend(error, earlierUnknown);
        earlierUnknown = true;
        await sleep(backoffDelayMs(resend), options.signal);
      }
    }
  }

  private transactionTransport(): TransactionTransport {
    const route = (partition: number): Route => () => partition;
    return {
      txnGet: async (partition, key, transaction, options) => {
        const response = await this.run({ kind: 'get', request: { key, transaction } }, route(partition), options);
        if (!response.found) return undefined;
        const { value, createRevision, modRevision, version, expiresAtMs } = response;
        return { key, value, createRevision, modRevision, version, expiresAtMs } satisfies TxnRecord;
      },
      txnPrefixPage: async (partition, prefix, transaction, pageToken, options) => {
        const request: GetByPrefixRequest = { prefix, transaction, limit: limits.maxPageSize, ...(pageToken !== '' && { pageToken }) };
        const response = await this.run({ kind: 'getByPrefix', request }, route(partition), options);
        return { items: [...response.items], nextPageToken: response.nextPageToken };
      },
      commit: (partition: number, request: CommitRequest, options: CallOptions) => this.run({ kind: 'commit', request }, route(partition), options),
    };
  }

  /**
   * A counter spread over `shards` keys in as many buckets, for counters too hot for one key:
   * exactly-once increments to one shard, reads that sum every shard (sharded-counter.ts).
   */
  shardedCounter(name: string, options: ShardedCounterOptions): ShardedCounter {
    return new ShardedCounter(this, name, options, this.defaultTimeoutMs);
  }

  /**
   * Calls the Auth service (tokens, quotas, usage; proto/atoll/v1/auth.proto) on any node, with
   * the request and response as JSON-shaped proto messages (64-bit fields as decimal strings).
   * The CLI's `atoll auth` commands are built on it.
   */
  async authCall(method: 'WhoAmI' | 'CreateToken' | 'ListTokens' | 'RevokeToken' | 'SetQuota' | 'GetUsage', request: object = {}, options: CallOptions = {}): Promise<Record<string, unknown>> {
    return (await this.withRetries({ write: method === 'CreateToken' || method === 'RevokeToken' || method === 'SetQuota', route: () => undefined, options }, (connection, deadlineMs, signal) =>
      connection.auth(method, request, deadlineMs, signal),
    )) as Record<string, unknown>;
  }

  /** The cluster as one node sees it: nodes, partitions, leaders. Also refreshes the routing map. */
  async clusterInfo(options: CallOptions = {}): Promise<ClusterInfo> {
    const info = await this.withRetries(
      { write: false, route: () => undefined, options },
      (connection, deadlineMs, signal) => connection.clusterInfo(deadlineMs, signal),
    );
    const map = new ClusterMap(info);
    if (map.usable) {
      // As a refresh does: members that joined since are the cluster's addresses too (bounded: one per node).
      for (const nodeAddress of map.addresses()) this.clusterAddresses.add(nodeAddress);
      this.map = map;
    }
    return info;
  }

  /** Asks a partition's leader to hand leadership to `targetNode` (sent to the current leader). */
  async transferLeader(partition: number, targetNode: number, options: CallOptions = {}): Promise<void> {
    const request = checked(() => ({ partition: checkNodeId(partition, 'partition'), targetNode: checkNodeId(targetNode, 'targetNode') }));
    await this.withRetries({ write: true, route: () => request.partition, options }, (connection, deadlineMs, signal) =>
      connection.transferLeader(request, deadlineMs, signal),
    );
  }

  /**
   * Moves one replica of `partition` from node `fromNode` to node `toNode` (sent to the leader;
   * cluster admin). Resolves with the partition's voters once the move finished. Idempotent: after
   * a failure (a deadline, a crash), calling it again finishes the move.
   */
  async moveReplica(partition: number, fromNode: number, toNode: number, options: CallOptions = {}): Promise<MoveReplicaResponse> {
    const request = checked(() => ({ partition: checkNodeId(partition, 'partition'), fromNode: checkNodeId(fromNode, 'fromNode'), toNode: checkNodeId(toNode, 'toNode') }));
    return this.withRetries({ write: true, route: () => request.partition, options }, (connection, deadlineMs, signal) =>
      connection.moveReplica(request, deadlineMs, signal),
    );
  }

  /**
   * Splits a partition's hash range in two (cluster admin; `atoll cluster split`): sent to the
   * partition's leader. Not retried after it was sent (a second split would split again).
   */
  async splitPartition(partition: number, options: CallOptions = {}): Promise<SplitPartitionResult> {
    const checkedPartition = checkedPartitionId(partition);
    return this.withRetries({ write: true, route: () => checkedPartition, options }, (connection, deadlineMs, signal) => connection.splitPartition(checkedPartition, deadlineMs, signal));
  }

  /**
   * Joins a partition with its right neighbour (cluster admin; `atoll cluster merge`): sent to the
   * partition's leader, which must also lead the neighbour (else MERGE_REFUSED 'leaders-differ'
   * with details.rightPartition: transfer that one's leadership and call again). Not retried after
   * it was sent (a second merge would merge the next neighbour); a merge a deadline cut off after
   * the freeze continues when called again.
   */
  async mergePartition(partition: number, options: CallOptions = {}): Promise<MergePartitionResult> {
    const checkedPartition = checkedPartitionId(partition);
    return this.withRetries({ write: true, route: () => checkedPartition, options }, (connection, deadlineMs, signal) => connection.mergePartition(checkedPartition, deadlineMs, signal));
  }

  /**
   * Changes the cluster's member table (cluster admin; `atoll cluster add-node`, `remove-node`):
   * any node runs it. Every action is idempotent, so a retry after an unknown outcome is safe.
   */
  async changeMember(request: ChangeMemberRequest, options: CallOptions = {}): Promise<ChangeMemberResponse> {
    return this.withRetries({ write: false, route: () => undefined, options }, (connection, deadlineMs, signal) => connection.changeMember(request, deadlineMs, signal));
  }

  /**
   * Pauses or resumes the rebalancer (a replicated flag), or reports it: state, moves assigned
   * (cluster admin; `atoll cluster rebalance`). Any node answers; pause and resume are idempotent.
   */
  async rebalance(request: RebalanceRequest, options: CallOptions = {}): Promise<RebalanceResponse> {
    return this.withRetries({ write: false, route: () => undefined, options }, (connection, deadlineMs, signal) => connection.rebalance(request, deadlineMs, signal));
  }

  /**
   * One page of a partition's live keys at one revision, read at its leader (for `atoll backup`):
   * revision 0 and no page token on the first call, then the first page's revision and each page's
   * nextPageToken. Needs a tenant admin token (its tenant's keys) or the cluster admin token.
   */
  async backupPage(request: BackupPageRequest, options: CallOptions = {}): Promise<BackupPageResponse> {
    const partition = checked(() => checkNodeId(request.partition, 'partition'));
    return this.withRetries({ write: false, route: () => partition, options }, (connection, deadlineMs, signal) =>
      connection.backupPage(request, deadlineMs, signal),
    );
  }

  /** Closes every connection; outstanding calls fail with UNAVAILABLE. The client is unusable after. */
  close(): void {
    this.closed = true;
    for (const lease of this.leases) lease.close();
    this.leases.clear();
    for (const connection of this.connections.values()) connection.close();
    this.connections.clear();
  }

  // -----------------------------------------------------------------------------------------------
  // Routing and retries

  private runKey<K extends Exclude<KvKind, 'getByPrefix'>>(
    kind: K,
    request: KvTypes[K]['request'] & { key: string },
    options: CallOptions,
  ): Promise<KvTypes[K]['response']> {
    return this.run({ kind, request } as Extract<KvOperation, { kind: K }>, (map) => map.partitionOfKey(request.key), options);
  }

  private async run<K extends KvKind>(operation: Extract<KvOperation, { kind: K }>, route: Route, options: CallOptions): Promise<KvTypes[K]['response']> {
    const result = await this.withRetries({ write: isWriteKind(operation.kind), route, options }, (connection, deadlineMs, signal) =>
      connection.run(operation, deadlineMs, signal),
    );
    return (result as KvResultOf<K>).response;
  }

  private async withRetries<T>(
    call: { readonly write: boolean; readonly route: Route; readonly options: CallOptions },
    attempt: (connection: NodeConnection, deadlineMs: number, signal: AbortSignal | undefined) => Promise<T>,
  ): Promise<T> {
    if (this.closed) throw clientErrorOf(new AtollError('UNAVAILABLE', 'the client is closed'), false);
    const deadlineMs = checked(() => deadlineMsOf(call.options, this.defaultTimeoutMs));
    const signal = call.options.signal;
    let hintedAddress: string | undefined;
    let lastError: AtollError | undefined;
    let attempts = 0;
    for (let attemptIndex = 0; attemptIndex < this.maxAttempts; attemptIndex++) {
      throwIfAborted(signal);
      const followingHint = hintedAddress !== undefined;
      const address = hintedAddress ?? (await this.addressFor(call.route, deadlineMs));
      hintedAddress = undefined;
      // Sending with no time left would fail anyway, and would make a write look indeterminate.
      if (Date.now() >= deadlineMs) break;
      attempts++;
      try {
        return await attempt(this.connectionTo(address), deadlineMs, signal);
      } catch (error) {
        if (signal?.aborted === true) throw signal.reason;
        if (!(error instanceof AtollError)) throw error;
        lastError = error;
        const action = retryActionOf(error, call.write);
        if (!action.retry || this.closed) throw clientErrorOf(error, call.write);
        this.logger?.debug({ address, code: error.code, attempt: attemptIndex }, 'atoll request failed; retrying');
        hintedAddress = this.learnFromFailure(call.route, address, action.leaderHint, action.nodeUnreachable);
        // Following a fresh hint costs nothing; a second hint in a row might be a loop, so back off.
        const delayMs = hintedAddress !== undefined && !followingHint ? 0 : backoffDelayMs(attemptIndex);
        if (Date.now() + delayMs >= deadlineMs) break;
        await sleep(delayMs, signal);
      }
    }
    throw this.gaveUp(lastError, call.write, attempts);
  }

  private gaveUp(lastError: AtollError | undefined, write: boolean, attempts: number): AtollError {
    if (lastError === undefined) return clientErrorOf(new AtollError('DEADLINE_EXCEEDED', 'the deadline passed before the request could be sent'), false);
    const message = `${lastError.message} (gave up after ${attempts} attempt${attempts === 1 ? '' : 's'})`;
    return clientErrorOf(new AtollError(lastError.code, message, lastError.details), write);
  }

  /** Updates the routing state after a retryable failure; returns a leader address to try next. */
  private learnFromFailure(route: Route, address: string, hint: { nodeId: number; address: string } | undefined, unreachable: boolean): string | undefined {
    const partition = this.map === undefined ? undefined : route(this.map);
    if (unreachable) this.unreachableUntilMs.set(address, Date.now() + unreachablePenaltyMs);
    if (this.map !== undefined && partition !== undefined) {
      if (hint !== undefined) this.map.learnLeader(partition, hint);
      else if (this.map.leaderAddressOf(partition) === address) this.map.forgetLeader(partition);
    }
    this.requestRefresh();
    // Follow a hint only to the address the cluster itself advertises for that node.
    const hinted = hint === undefined ? undefined : (this.map?.addressOf(hint.nodeId) ?? (this.clusterAddresses.has(hint.address) ? hint.address : undefined));
    return hinted !== undefined && hinted !== address && this.clusterAddresses.has(hinted) ? hinted : undefined;
  }

  /** The partition leader's address when known and reachable, else any node (which forwards). */
  private async addressFor(route: Route, deadlineMs: number): Promise<string> {
    if (this.map === undefined) await this.untilDeadline(this.requestRefresh(), deadlineMs);
    // A node that is not the leader forwards instead of refusing, so a moved leadership never
    // shows up as an error: without a refresh now and then every request to that partition would
    // pay a forward (right after a long write load the leader balancer moves leaderships back,
    // and a client that loaded its map before then forwarded half its requests).
    else if (Date.now() - this.lastRefreshMs > mapMaxAgeMs) void this.requestRefresh();
    const map = this.map;
    const partition = map === undefined ? undefined : route(map);
    if (map !== undefined && partition !== undefined) {
      const leader = map.leaderAddressOf(partition);
      if (leader !== undefined && !this.isUnreachable(leader)) return leader;
    }
    return this.anyAddress();
  }

  /** For stale watches: any reachable node in turn (one without a replica answers NOT_LEADER with the leader as hint). */
  private async anyReplicaAddress(): Promise<string> {
    if (this.map === undefined) await this.untilDeadline(this.requestRefresh(), Date.now() + this.defaultTimeoutMs).catch(() => undefined);
    return this.anyAddress();
  }

  private anyAddress(): string {
    const known = [...new Set([...(this.map?.addresses() ?? []), ...this.endpoints])];
    const reachable = known.filter((address) => !this.isUnreachable(address));
    const candidates = reachable.length > 0 ? reachable : known;
    return candidates[this.rotation++ % candidates.length]!;
  }

  private isUnreachable(address: string): boolean {
    return (this.unreachableUntilMs.get(address) ?? 0) > Date.now();
  }

  private connectionTo(address: string): NodeConnection {
    // A late retry or refresh must not reopen a channel that close() would never close again.
    if (this.closed) throw new AtollError('UNAVAILABLE', 'the client is closed');
    // The token goes only to the cluster's own addresses (see clusterAddresses).
    if (!this.clusterAddresses.has(address)) throw new AtollError('UNAVAILABLE', `${address} is not an address of this cluster`);
    let connection = this.connections.get(address);
    if (connection === undefined) {
      connection = new NodeConnection(address, {
        pipelining: this.pipelining,
        maxStreamInFlight: limits.maxStreamRequestsInFlight,
        ...(this.tls !== undefined && { tls: this.tls }),
        ...(this.token !== undefined && { token: this.token }),
      });
      this.connections.set(address, connection);
    }
    return connection;
  }

  /** Starts a map refresh unless one runs or one finished moments ago; resolves when it ends. */
  private requestRefresh(): Promise<void> {
    if (this.refreshing !== undefined) return this.refreshing;
    if (Date.now() - this.lastRefreshMs < minRefreshIntervalMs || this.closed) return Promise.resolve();
    this.lastRefreshMs = Date.now();
    this.refreshing = this.loadMap().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async loadMap(): Promise<void> {
    const candidates = [...new Set([...(this.map?.addresses() ?? []), ...this.endpoints])];
    candidates.sort((a, b) => Number(this.isUnreachable(a)) - Number(this.isUnreachable(b)));
    for (const address of candidates) {
      if (this.closed) return;
      try {
        const map = new ClusterMap(await this.connectionTo(address).clusterInfo(Date.now() + refreshTimeoutMs, undefined));
        if (!map.usable) continue;
        // Bounded: a cluster advertises one address per node.
        for (const nodeAddress of map.addresses()) this.clusterAddresses.add(nodeAddress);
        this.map = map;
        return;
      } catch (error) {
        this.logger?.debug({ address, err: error }, 'atoll cluster map refresh failed on one node');
        if (error instanceof AtollError && error.details?.['fromTransport'] === true) {
          this.unreachableUntilMs.set(address, Date.now() + unreachablePenaltyMs);
        }
      }
    }
    this.logger?.warn({ endpoints: candidates }, 'atoll could not load the cluster map from any node');
  }

  /** Waits for `promise`, but no later than the deadline (the refresh goes on in the background). */
  private untilDeadline(promise: Promise<void>, deadlineMs: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, deadlineMs - Date.now()));
      timer.unref();
      void promise.finally(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

/** Runs client-side checks, turning their AtollErrors into AtollClientErrors. */
/** Read through a call so TypeScript does not narrow `aborted` across awaits. */
function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function checked<T>(build: () => T): T {
  try {
    return build();
  } catch (error) {
    if (error instanceof AtollError) throw clientErrorOf(error, false);
    throw error;
  }
}

function checkIsolation(isolation: unknown): Isolation {
  if (isolation === 'snapshot' || isolation === 'serializable') return isolation;
  throw new AtollError('INVALID_ARGUMENT', `isolation must be 'snapshot' or 'serializable', got ${String(isolation)}`);
}

function isAtollClientErrorCode(error: unknown, code: AtollError['code']): boolean {
  return error instanceof AtollClientError && error.code === code;
}

/** The bucket a script runs in, from its first literal key (parsing also reports syntax errors early). */
function scriptBucketOf(script: string, params: Record<string, string>): string | undefined {
  const target = scriptRoutingTarget(parseScript(script), paramsFromJson(params));
  if (target === undefined) return undefined;
  return 'key' in target ? bucketOf(target.key) : prefixBucket(target.prefix).bucket;
}

function consistencyOf(options: ReadOptions): { consistency?: Consistency } {
  const consistency = checkConsistency(options.consistency);
  return consistency === undefined ? {} : { consistency };
}

/** A partition id argument of the admin calls, checked before anything is sent. */
function checkedPartitionId(partition: number): number {
  return checked(() => {
    if (!Number.isSafeInteger(partition) || partition < 0 || partition > 0xffff_fffe) throw new AtollError('INVALID_ARGUMENT', 'partition must be a partition id');
    return partition;
  });
}
