/**
 * The KV executor: runs one operation on a local replica of its partition. It turns operations
 * into MVCC commands and proposes them, serves reads (behind a ReadIndex barrier when
 * linearizable), begins and commits transactions, and runs scripts. It knows nothing of ticks,
 * sends or routing: the router hands it a replica, and the driver's loop runs what it queues.
 */
import assert from 'node:assert/strict';
import { AtollError } from '../../errors.js';
import { LoadTracker, loadKeyOf } from '../../hotkeys/index.js';
import { bucketOf } from '../../keys/bucket.js';
import { defaultBucketHash, type BucketHashName } from '../../keys/bucket-hash.js';
import { prefixBucket } from '../../keys/prefix-bucket.js';
import { defaultTenant, systemTenant, toInternalKey } from '../../keys/tenant-keys.js';
import { defaultLimits, type Limits } from '../../limits.js';
import { validateCommand, validateRequestId, type ApplyResult, type Command, type KeyVersion, type WriteOp } from '../../mvcc/index.js';
import { isCheckedOperation, type CheckedOperation } from '../../api/checked-operation.js';
import type { TxnHandleKeys } from '../../txn/txn-handle.js';
import { keyInHashRange } from '../../mvcc/split-plan.js';
import { TxnScope } from '../../txn/txn-scope.js';
import type { Admission } from './admission.js';
import { RequestDeadlines, waitEndedBy } from './request-deadline.js';
import { hasDeadlineSignal } from '../../api/deadline-signal.js';
import type * as api from '../../api/node-api.js';
import type { NodeTestBugs } from '../node-config.js';
import type { NodeAccess } from './node-access.js';
import type { LeaseKeeper } from './lease-keeper.js';
import type { KvOperation, KvResult } from '../../api/operations.js';
import { encodeCommandEntry, type PartitionReplica } from '../replica/partition-replica.js';
import type { NodeClock, NodeTimers } from '../ports.js';
import type { RaftDriver } from '../replica/raft-driver.js';
import { getResponseOf, keyRecordOf } from './records.js';
import { runScriptAtLeader, scriptBucket } from './script-runner.js';
import type { ScriptScheduler } from './script-scheduler.js';
import { commandGrows, decodePageToken, encodePageToken, operationMayGrow, writeOpOfPut } from './kv-commands.js';
import type { CallSignal } from '../../api/call-signal.js';

/** A backup page's keys and values stay under this many bytes (unless one key alone is larger). */
const backupPageBytes = 1024 * 1024;
/** Keys read from the store at a time while filling a backup page. */
const backupSubPageKeys = 32;
/** Store reads per backup page, so a page of deleted or filtered keys still ends. */
const backupSubPagesPerPage = 64;

export interface KvExecutorOptions {
  readonly partitions: number;
  /** The cluster's bucket hash (its descriptor; default: a new cluster's). */
  readonly bucketHash?: BucketHashName;
  readonly limits: Limits;
  readonly testBugs: NodeTestBugs | undefined;
  readonly driver: RaftDriver<PartitionReplica>;
  readonly access: NodeAccess;
  readonly admission: Admission;
  readonly load: LoadTracker;
  readonly txnKeys: TxnHandleKeys;
  readonly clock: NodeClock;
  readonly timers: NodeTimers;
  readonly leases: LeaseKeeper;
  /** Scripts' admission and turns of the event loop (script-scheduler.ts); without it a script runs in one piece. */
  readonly scripts?: ScriptScheduler;
}

export class KvExecutor {
  /** The request deadlines of this node (request-deadline.ts): the router registers each request's once. */
  readonly deadlines: RequestDeadlines;

  constructor(private readonly options: KvExecutorOptions) {
    this.deadlines = new RequestDeadlines(options.clock, options.timers, options.limits);
  }

  /** A caller's transaction handle, verified: signed by this cluster and begun by `tenant`. */
  txnScope(transaction: string, tenant: string | undefined): TxnScope {
    return TxnScope.fromVerified(transaction, this.options.partitions, this.options.txnKeys, tenant ?? defaultTenant, this.options.bucketHash);
  }

  /**
   * Runs `operation` on `replica` (the leader's, or any replica's for the reads that allow it).
   * `startedMs`: when the router began to run it here (the clock's monotonic ms), which the load
   * tracker records, so the request reads the clock once for its metrics and its load.
   */
  async execute(replica: PartitionReplica, operation: KvOperation, context: api.CallContext, startedMs = this.options.clock.monotonicMs()): Promise<KvResult> {
    const { limits, access } = this.options;
    const tenant = context.tenant ?? defaultTenant;
    // A script's bucket is the caller's user bucket (its keys are mapped where it runs): counted
    // under the caller's tenant, like every other request's key.
    const scriptBucketKey = operation.kind === 'executeScript' ? toInternalKey(tenant, scriptBucket(operation.request, limits)) : undefined;
    // Every request this node serves for the partition: all of them at its leader, local reads at a replica.
    this.options.load.record(replica.id, scriptBucketKey ?? loadKeyOf(operation.request), startedMs);
    await access.chargeRequest(replica.id, tenant, () => operationMayGrow(operation));
    // A grant adds a lease: the tenant's lease quota and its storage quota apply (node/service/auth.ts).
    if (operation.kind === 'lease' && operation.request.action === 'grant') await access.checkLeaseQuota(tenant);
    // Validated once where it entered the cluster: its keys and its command are not checked again.
    const checked = isCheckedOperation(operation);
    switch (operation.kind) {
      case 'get': {
        const request = operation.request;
        if (request.transaction !== undefined) return { kind: 'get', response: await this.txnGet(replica, request, context, checked) };
        if (request.consistency !== 'stale') await this.readBarrier(replica, context);
        const result = await replica.mvcc.get(request.key, { nowMs: this.nowAt(replica), ...(request.revision ? { revision: request.revision } : {}), ...(checked && { keyChecked: true }) });
        return { kind: 'get', response: getResponseOf(result) };
      }
      case 'exists': {
        const request = operation.request;
        if (request.transaction !== undefined) {
          const found = await this.txnGet(replica, { key: request.key, transaction: request.transaction }, context, checked);
          return { kind: 'exists', response: { exists: found.found, revision: found.revision } };
        }
        if (request.consistency !== 'stale') await this.readBarrier(replica, context);
        const result = await replica.mvcc.get(request.key, { nowMs: this.nowAt(replica), ...(checked && { keyChecked: true }) });
        return { kind: 'exists', response: { exists: result.found, revision: result.revision } };
      }
      case 'getByPrefix':
        return { kind: 'getByPrefix', response: await this.prefixPage(replica, operation.request, context) };
      case 'put': {
        const r = operation.request;
        // A checked put's write was built where it was validated; a lease is parsed here, where the partition is known.
        const write = checked && r.lease === undefined ? (operation as CheckedOperation).write : undefined;
        const result = await this.propose(replica, write ?? writeOpOfPut(r, replica.id, this.options.partitions), context, r.requestId, checked);
        const previous = result.writes[0]?.previous;
        return { kind: 'put', response: { applied: result.applied, revision: result.revision, ...(previous ? { previous: keyRecordOf(previous) } : {}) } };
      }
      case 'delete': {
        const r = operation.request;
        const op: WriteOp = {
          type: 'delete',
          key: r.key,
          ...(r.ifModRevision !== undefined ? { ifModRevision: r.ifModRevision } : {}),
          ...(r.ifValue !== undefined ? { ifValue: r.ifValue } : {}),
        };
        const result = await this.propose(replica, op, context, r.requestId, checked);
        return { kind: 'delete', response: { deleted: result.applied && (result.writes[0]?.deleted ?? false), revision: result.revision } };
      }
      case 'increment': {
        const r = operation.request;
        const result = await this.propose(replica, { type: 'increment', key: r.key, delta: r.delta, ...(r.ttlMs ? { ttlMs: r.ttlMs } : {}) }, context, r.requestId, checked);
        return { kind: 'increment', response: { value: result.writes[0]?.counter ?? 0n, revision: result.revision } };
      }
      case 'extend': {
        const r = operation.request;
        const result = await this.propose(replica, { type: 'extend', key: r.key, ttlMs: r.ttlMs }, context, r.requestId, checked);
        const write = result.writes[0];
        return {
          kind: 'extend',
          response: { extended: write?.conditionHeld ?? false, expiresAtMs: write?.current?.expiresAtMs ?? 0, revision: result.revision },
        };
      }
      case 'beginTransaction':
        return { kind: 'beginTransaction', response: await this.beginAt(replica, operation.request, context) };
      case 'lease': {
        const tools = { propose: (command: Command) => this.propose(replica, command, context), readBarrier: () => this.readBarrier(replica, context) };
        return { kind: 'lease', response: await this.options.leases.serve(replica, operation.request, context, tools) };
      }
      case 'commit': {
        const r = operation.request;
        const scope = this.txnScope(r.transaction, tenant);
        scope.checkAlive(this.nowAt(replica), limits);
        let command = scope.commandOf(r, checked);
        this.checkTxnHere(replica, scope, [...command.writes.map((write) => write.key), ...command.readKeys], command.readPrefixes);
        if (this.options.testBugs?.tornTransactions === true && command.writes.length > 1) {
          await this.propose(replica, { ...command, writes: command.writes.slice(0, 1) }, context, undefined, checked);
          command = { ...command, writes: command.writes.slice(1) };
        }
        const result = await this.propose(replica, command, context, r.requestId, checked);
        return { kind: 'commit', response: { revision: result.revision } };
      }
      case 'executeScript':
        return {
          kind: 'executeScript',
          response: await runScriptAtLeader({
            request: operation.request,
            limits,
            partitionCount: this.options.partitions,
            ...(this.options.bucketHash !== undefined && { bucketHash: this.options.bucketHash }),
            tenant,
            begin: () =>
              this.beginAt(replica, { key: scriptBucketKey as string, isolation: operation.request.isolation ?? 'snapshot' }, context),
            mvcc: replica.mvcc,
            // A script's writes are known only once it ran: one that adds data meets the storage quota here.
            propose: async (command, requestId) => {
              if (commandGrows(command)) await access.checkStorageQuota(tenant);
              return this.propose(replica, command, context, requestId);
            },
            deadlineMs: context.deadlineMs,
            wallMs: () => this.options.clock.wallMs(),
            ...(this.options.scripts !== undefined && { scheduler: this.options.scripts }),
          }),
        };
    }
  }

  /** Starts a transaction: a linearizable read of the partition's revision, taken as the snapshot. */
  private async beginAt(replica: PartitionReplica, request: api.BeginTransactionRequest, context: api.CallContext): Promise<api.BeginTransactionResponse> {
    await this.readBarrier(replica, context);
    const isolation = request.isolation ?? 'snapshot';
    const bucket = bucketOf(request.key);
    // The snapshot clock: taken after the barrier, on the partition clock's rule (see nowAt).
    const startedAtMs = this.nowAt(replica);
    const tenant = context.tenant ?? defaultTenant;
    // The range the partition owns now is the transaction's scope (issue 32; TxnScope.checkBucket).
    const range = this.options.testBugs?.txnScopeByInitialTable === true ? undefined : replica.mvcc.hashRange;
    const handle = {
      partition: replica.id,
      partitionCount: this.options.partitions,
      tenant,
      bucket,
      snapshotRevision: replica.mvcc.revision,
      isolation,
      startedAtMs,
      ...(range !== undefined && { range: { start: range.start, end: range.end } }),
    };
    return {
      transaction: this.options.txnKeys.encode(handle),
      partition: replica.id,
      bucket,
      snapshotRevision: handle.snapshotRevision,
      isolation,
      expiresAtMs: startedAtMs + this.options.limits.maxTxnDurationMs,
    };
  }

  /**
   * The time this node reads and proposes at for a partition: max(its wall clock, the partition's
   * replicated clock). A node whose clock is behind the partition's (a new leader skewed back, a
   * follower serving a stale read) still sees every key as expired that the partition has seen
   * expire as of its last applied entry; apply takes the same max, so no write undoes it either.
   */
  private nowAt(replica: PartitionReplica): number {
    return Math.max(this.options.clock.wallMs(), replica.mvcc.appliedTimeMs);
  }

  /** Waits until the replica has applied `revision` (a leader that just took over may be behind). */
  private async ensureRevision(replica: PartitionReplica, revision: number, context: api.CallContext): Promise<void> {
    if (replica.mvcc.revision >= revision) return;
    await this.readBarrier(replica, context);
    if (replica.mvcc.revision < revision) {
      throw new AtollError('FUTURE_REVISION', `partition ${replica.id} has not reached revision ${revision}`, { revision });
    }
  }

  /**
   * A get inside a transaction: at its snapshot revision and clock, confined to its partition. The
   * key is validated here unless `keyChecked` (a checked operation's), and not again by the read.
   */
  private async txnGet(replica: PartitionReplica, request: api.GetRequest, context: api.CallContext, keyChecked: boolean): Promise<api.GetResponse> {
    const { handle } = this.txnRead(request.transaction!, context.tenant, request.revision, (scope) => {
      if (keyChecked) scope.checkKeyInScope(request.key);
      else scope.checkKey(request.key);
      this.checkTxnHere(replica, scope, [request.key], []);
    });
    await this.ensureRevision(replica, handle.snapshotRevision, context);
    return getResponseOf(await replica.mvcc.get(request.key, { nowMs: handle.startedAtMs, revision: handle.snapshotRevision, keyChecked: true }));
  }

  /**
   * A transaction runs at its own partition only (issue 32): the router sends its reads and its
   * commit there by the handle, so another partition serving one is refused; and a key its
   * partition held at begin that a later split moved away can no longer be read or written at its
   * snapshot here, so the transaction must run again (TXN_CONFLICT, reason range-changed).
   */
  private checkTxnHere(replica: PartitionReplica, scope: TxnScope, keys: readonly string[], keyPrefixes: readonly string[]): void {
    if (this.options.testBugs?.txnScopeByInitialTable === true) return;
    const { handle } = scope;
    if (replica.id !== handle.partition) {
      throw new AtollError('OUTSIDE_TRANSACTION', `partition ${replica.id} cannot serve a transaction of partition ${handle.partition}`, {
        partition: replica.id,
        transactionPartition: handle.partition,
      });
    }
    const range = replica.mvcc.hashRange;
    if (range === undefined) return;
    const hash = this.options.bucketHash ?? defaultBucketHash;
    // A prefix lies in one bucket (prefixBucket), whose own name routes like any key of it.
    const moved = [...keys, ...keyPrefixes.map((keyPrefix) => bucketOf(keyPrefix))].find((key) => !keyInHashRange(key, range, hash));
    if (moved === undefined) return;
    throw new AtollError('TXN_CONFLICT', `partition ${replica.id} was split after the transaction began and no longer holds ${JSON.stringify(moved)}: run the transaction again`, {
      reason: 'range-changed',
      transactionPartition: handle.partition,
    });
  }

  private txnRead(transaction: string, tenant: string | undefined, revision: number | undefined, check: (scope: TxnScope) => void): TxnScope {
    const scope = this.txnScope(transaction, tenant);
    if (revision !== undefined && revision !== scope.handle.snapshotRevision) {
      throw new AtollError('INVALID_ARGUMENT', 'a read inside a transaction is at its snapshot revision: leave revision unset', {
        revision,
        snapshotRevision: scope.handle.snapshotRevision,
      });
    }
    check(scope);
    return scope;
  }

  private async prefixPage(replica: PartitionReplica, request: api.GetByPrefixRequest, context: api.CallContext): Promise<api.GetByPrefixResponse> {
    const scope = prefixBucket(request.prefix);
    const token = request.pageToken ? decodePageToken(request.pageToken, scope.keyPrefix) : undefined;
    const txn =
      request.transaction === undefined
        ? undefined
        : this.txnRead(request.transaction, context.tenant, token?.revision ?? request.revision, (s) => {
            s.checkPrefix(request.prefix);
            this.checkTxnHere(replica, s, [], [scope.keyPrefix]);
          }).handle;
    if (txn !== undefined) await this.ensureRevision(replica, txn.snapshotRevision, context);
    else if (!token && request.consistency !== 'stale') await this.readBarrier(replica, context);
    // A transaction's snapshot revision is a real revision even when it is 0 (begun before the
    // partition's first write); for other reads 0 means "none given" (the wire's default).
    const revision = txn !== undefined ? txn.snapshotRevision : token?.revision || request.revision || undefined;
    const limit = Math.min(request.limit && request.limit > 0 ? request.limit : defaultLimits.defaultPageSize, defaultLimits.maxPageSize);
    const page = await replica.mvcc.getByPrefix(scope.keyPrefix, {
      nowMs: txn?.startedAtMs ?? this.nowAt(replica),
      limit,
      ...(revision !== undefined ? { revision } : {}),
      ...(token ? { after: token.after } : {}),
    });
    return {
      items: page.items.map(keyRecordOf),
      revision: page.revision,
      nextPageToken: page.more && page.continueAfter !== undefined ? encodePageToken(page.revision, page.continueAfter) : '',
    };
  }

  /**
   * One page of a backup (Cluster.BackupPage) on this node's replica, which the caller checked
   * leads: the live keys under `scanPrefix` ("" for every tenant, a tenant tag for one) at one
   * revision. The first page (revision 0) reads after a ReadIndex barrier, so its revision covers
   * every write acknowledged before the call; later pages read at that revision (a leader that is
   * behind catches up first; a revision below the compaction floor fails COMPACTED). Keys that
   * `include` refuses (the system tenant's) are skipped but still advance the page.
   * Bounded: at most `limit` keys and about backupPageBytes of keys and values (a single larger
   * key still makes a page); the store is read in sub-pages of backupSubPageKeys, at most
   * backupSubPagesPerPage of them, so a page of deleted or filtered keys ends too.
   */
  async backupPage(
    replica: PartitionReplica,
    request: { revision: number; after: string | undefined; limit: number },
    scanPrefix: string,
    include: (internalKey: string) => boolean,
    context: api.CallContext,
  ): Promise<{ revision: number; items: KeyVersion[]; continueAfter: string | undefined }> {
    if (request.revision === 0) await this.readBarrier(replica, context);
    else await this.ensureRevision(replica, request.revision, context);
    const revision = request.revision === 0 ? replica.mvcc.revision : request.revision;
    const nowMs = this.nowAt(replica);
    const items: KeyVersion[] = [];
    let bytes = 0;
    let after = request.after;
    for (let step = 0; step < backupSubPagesPerPage; step++) {
      const page = await replica.mvcc.scanPartition(scanPrefix, {
        revision,
        nowMs,
        limit: Math.min(backupSubPageKeys, request.limit - items.length),
        ...(after !== undefined && { after }),
      });
      for (const item of page.items) {
        if (include(item.key)) {
          // An upper bound of its encoded size: UTF-8 takes at most 3 bytes per UTF-16 unit.
          const size = item.key.length * 3 + item.value.length + 64;
          // Invariant: a page's items stay under backupPageBytes, or it holds one item alone (which
          // fits a message: maxMessageBytes holds a maximal key and value).
          if (items.length > 0 && bytes + size > backupPageBytes) return { revision, items, continueAfter: after };
          items.push(item);
          bytes += size;
        }
        after = item.key;
      }
      if (!page.more) return { revision, items, continueAfter: undefined };
      after = page.continueAfter ?? after;
      if (items.length >= request.limit || this.options.clock.wallMs() >= context.deadlineMs) break;
    }
    // Invariant: more keys may follow, so the page ends with where to continue.
    assert(after !== undefined, 'a partial backup page knows where it stopped');
    return { revision, items, continueAfter: after };
  }

  /** Linearizable reads: at once under the lease when applied, else through the loop (read-barrier.ts). Watches start after one (watch-service.ts). */
  readBarrier(replica: PartitionReplica, context: api.CallContext): Promise<void> {
    if (this.options.testBugs?.readsWithoutQuorum || replica.reads.leaseReadReady()) return Promise.resolve();
    return this.inLoop<void>(replica, context, this.options.clock.wallMs(), (resolve, reject) => {
      if (replica.raw.role !== 'leader') {
        reject(replica.notLeaderError());
        return;
      }
      replica.enqueueRead({ resolve, reject });
    });
  }

  /**
   * Runs `task` in the driver's loop for a request on `replica` and waits until it settles: admitted
   * under the partition's and the node's bounds first (admission.ts: OVERLOADED at once past them;
   * the node's own calls, system tenant, are not counted), and given up when the request's deadline
   * signal aborts (request-deadline.ts). The router hands on a context whose signal aborts at its
   * deadline; another (a watch's barrier) has its deadline registered for this wait alone. `task`
   * is not started at all once the deadline has passed (`wallMs`: the clock now) or the signal
   * aborted: a started request's promise must always have a listener, or its later rejection
   * would be unhandled.
   */
  private inLoop<T>(replica: PartitionReplica, context: api.CallContext, wallMs: number, task: (resolve: (value: T) => void, reject: (error: unknown) => void) => void): Promise<T> {
    let release: (() => void) | undefined;
    let armed: ReturnType<RequestDeadlines['arm']> | undefined;
    let signal: CallSignal;
    try {
      if (context.tenant !== systemTenant) release = this.options.admission.admitRequest(replica.id);
      if (context.deadlineMs <= wallMs) throw new AtollError('DEADLINE_EXCEEDED', 'deadline passed before the request started');
      armed = hasDeadlineSignal(context) ? undefined : this.deadlines.arm(context);
      signal = (armed?.context ?? context).signal as CallSignal;
      if (signal.aborted) throw waitEndedBy(signal.reason);
    } catch (error) {
      armed?.dispose();
      release?.();
      return Promise.reject(error);
    }
    const waited = new Promise<T>((resolve, reject) => {
      const abort = (): void => reject(waitEndedBy(signal.reason));
      const ended = (): void => {
        signal.removeEventListener('abort', abort);
        armed?.dispose();
      };
      signal.addEventListener('abort', abort, { once: true });
      // The task's outcome settles the wait (no change once the signal ended it) and frees the deadline's listener and registration.
      this.options.driver.enqueue(() => task((value) => (ended(), resolve(value)), (error) => (ended(), reject(error))));
    });
    return release === undefined ? waited : waited.finally(release);
  }

  /**
   * Proposes `command` and waits for its result. Nothing invalid reaches the log: a command built
   * from a checked operation (`checked`) passed the same rules where the request entered the cluster
   * (src/tenancy/check-operation.ts); any other is validated here. The entry is written in one pass
   * (encodeCommandEntry): a put's value is copied once, into it.
   */
  private propose(replica: PartitionReplica, command: Command, context: api.CallContext, requestId?: string, checked = false): Promise<ApplyResult> {
    if (!checked) {
      if (requestId !== undefined) validateRequestId(requestId);
      validateCommand(command, this.options.limits);
    }
    // nowAt, inline, with the clock read once: the wait's deadline check takes the same reading.
    const wallMs = this.options.clock.wallMs();
    const payload = encodeCommandEntry(Math.max(wallMs, replica.mvcc.appliedTimeMs), command, requestId);
    return this.inLoop<ApplyResult>(replica, context, wallMs, (resolve, reject) => {
      try {
        replica.propose(payload, { resolve, reject }, this.options.testBugs?.ackBeforeCommit === true);
      } catch (error) {
        reject(replica.notLeaderError(error));
      }
    }).then(
      (result) => {
        if (result.error) throw result.error;
        return result;
      },
      (error: unknown) => {
        throw notAppliedIfRefused(error);
      },
    );
  }
}

/**
 * A proposal that fails with NOT_LEADER / NO_LEADER was certainly not applied: either raft refused
 * it (this node is not the leader, or leadership is being transferred), or another entry took its
 * log index (partition-replica.ts applyEntry). A deposed leader keeps its waiters until the index
 * applies, so a proposal whose fate is open ends only in DEADLINE_EXCEEDED, never here. The mark
 * (`neverSent`, sent as `atoll-not-applied`) lets the routing node forward the write again.
 */
function notAppliedIfRefused(error: unknown): unknown {
  if (!(error instanceof AtollError) || (error.code !== 'NOT_LEADER' && error.code !== 'NO_LEADER')) return error;
  if (error.details?.['neverSent'] === true) return error;
  return new AtollError(error.code, error.message, { ...error.details, neverSent: true });
}
