/**
 * etcd's Txn (and every etcd write that must read first) on Atoll's snapshot transactions.
 *
 * One attempt: BeginTransaction on the keyspace's bucket (SERIALIZABLE) gives a snapshot; the
 * compares are evaluated at the snapshot, then the chosen branch's operations run in order
 * against the snapshot with the attempt's own writes laid over it (so a Range after a Put in
 * the same Txn sees the Put, as in etcd); finally the writes commit in one log entry, so at
 * one revision, together with the keys and key prefixes the attempt read, which Atoll
 * validates: if anything read changed after the snapshot the commit fails with TXN_CONFLICT and
 * the whole Txn runs again from a new snapshot. So the compares held, and the reads were exact,
 * at the commit's revision: the Txn is atomic and serializable, as etcd's is. A Txn that
 * writes nothing returns at its snapshot revision without a commit.
 *
 * Keys a Txn writes get revisions only at commit: their KeyValues carry a PendingRevision that
 * is filled in before the responses are built.
 */
import { AtollError, isAtollError } from '../errors.js';
import { limits } from '../limits.js';
import type { CallContext, NodeApi, TxnWrite } from '../api/node-api.js';
import { etcdErrors } from './etcd-errors.js';
import { checkRangeRequest, revisionOf, shapeRange, type EtcdKv, type PendingRevision, type RangeOutcome } from './etcd-kv.js';
import { etcdLimits } from './etcd-limits.js';
import type { Compare, DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from './etcd-messages.js';
import { int64Of } from './etcd-messages.js';
import { compareBytes, encodeKey, etcdBucket, etcdKeyPrefix, keyInterval, type KeyInterval } from './key-codec.js';
import { checkNotCompacted, readInterval } from './keyspace-reads.js';
import { atollLeaseIdOf, encodeStoredValue } from './stored-value.js';

/** What one operation answered, before the commit revision is known. */
export type OpOutcome =
  | { readonly kind: 'range'; readonly range: RangeOutcome }
  | { readonly kind: 'put'; readonly prev?: EtcdKv }
  | { readonly kind: 'delete'; readonly deleted: number; readonly prevKvs?: readonly EtcdKv[] }
  | { readonly kind: 'txn'; readonly succeeded: boolean; readonly responses: readonly OpOutcome[] };

/** A finished attempt: its outcome and the revision it committed (or read) at. */
export interface Committed<T> {
  readonly outcome: T;
  readonly revision: number;
}

/** The Atoll lease of an etcd lease id; lease not found for an id no Atoll lease can have. */
export function atollLeaseOf(lease: bigint): string {
  const atoll = atollLeaseIdOf(lease);
  if (atoll === undefined) throw etcdErrors.leaseNotFound();
  return atoll;
}

export function bytesOfInt64(text: string | undefined): bigint {
  try {
    return BigInt(text ?? '0');
  } catch {
    throw etcdErrors.invalid('an int64 field is not an integer');
  }
}

/** One attempt's snapshot, its own writes over it, and what it read. */
export class TxnAttempt {
  private readonly overlay = new Map<string, EtcdKv | null>();
  private readonly writes = new Map<string, TxnWrite>();
  private readonly readKeys = new Set<string>();
  private readonly readPrefixes = new Set<string>();
  readonly pending: PendingRevision = { value: 0 };

  constructor(
    private readonly api: NodeApi,
    private readonly context: CallContext,
    readonly transaction: string,
    readonly snapshotRevision: number,
  ) {}

  private noteRead(interval: KeyInterval): void {
    if (interval.single !== undefined) this.readKeys.add(interval.scanPrefix);
    else this.readPrefixes.add(interval.scanPrefix);
  }

  /** The interval at the snapshot, without this attempt's writes (what compares see). */
  async readSnapshot(interval: KeyInterval): Promise<EtcdKv[]> {
    this.noteRead(interval);
    return (await readInterval(this.api, interval, { transaction: this.transaction }, this.context)).kvs;
  }

  /** The interval as this attempt sees it: the snapshot with its own writes over it, in key order. */
  async read(interval: KeyInterval): Promise<EtcdKv[]> {
    const byKey = new Map<string, EtcdKv>();
    for (const kv of await this.readSnapshot(interval)) byKey.set(encodeKey(kv.key), kv);
    for (const [key, kv] of this.overlay) {
      if (kv === null) byKey.delete(key);
      else if (interval.contains(kv.key)) byKey.set(key, kv);
    }
    return [...byKey.values()].sort((a, b) => compareBytes(a.key, b.key));
  }

  put(kv: EtcdKv): void {
    const key = encodeKey(kv.key);
    this.overlay.set(key, kv);
    const value = encodeStoredValue(kv.value, kv.lease);
    this.writes.set(key, { key, value, ...(kv.lease !== 0n && { lease: atollLeaseOf(kv.lease) }) });
  }

  delete(keyBytes: Uint8Array): void {
    const key = encodeKey(keyBytes);
    this.overlay.set(key, null);
    this.writes.set(key, { key, delete: true });
  }

  /** Records a read of a key of the keyspace's metadata (keyspace-reads.ts), validated at commit. */
  noteReadKey(key: string): void {
    this.readKeys.add(key);
  }

  /** Writes a key of the keyspace's metadata (not an etcd key: it never shows in etcd's reads). */
  writeMeta(key: string, value: Uint8Array): void {
    this.writes.set(key, { key, value });
  }

  get writeCount(): number {
    return this.writes.size;
  }

  /** Commits the writes with the read set; the revision (the snapshot's when nothing was written). */
  async commit(): Promise<number> {
    if (this.writes.size === 0) return this.snapshotRevision;
    const prefixes = [...this.readPrefixes];
    const keys = [...this.readKeys];
    // Too many distinct reads for one commit: validate the whole keyspace instead (stricter, still exact).
    const wide = prefixes.length > limits.maxTxnReadPrefixes || keys.length > limits.maxTxnReadKeys;
    const { revision } = await this.api.commit(
      {
        transaction: this.transaction,
        writes: [...this.writes.values()],
        readKeys: wide ? [] : keys,
        readPrefixes: wide ? [etcdKeyPrefix] : prefixes,
      },
      this.context,
    );
    this.pending.value = revision;
    return revision;
  }
}

/**
 * Runs `body` in a fresh attempt until it commits without conflict, at most
 * etcdLimits.maxTxnAttempts times (then the last TXN_CONFLICT goes to the client, ABORTED).
 */
export async function runTxn<T>(api: NodeApi, context: CallContext, body: (attempt: TxnAttempt) => Promise<T>): Promise<Committed<T>> {
  for (let attempt = 1; ; attempt++) {
    const begun = await api.beginTransaction({ key: etcdBucket, isolation: 'serializable' }, context);
    const current = new TxnAttempt(api, context, begun.transaction, begun.snapshotRevision);
    try {
      const outcome = await body(current);
      const revision = await current.commit();
      return { outcome, revision };
    } catch (error) {
      if (!isAtollError(error) || error.code !== 'TXN_CONFLICT' || attempt >= etcdLimits.maxTxnAttempts) throw error;
    }
  }
}

// ------------------------------------------------------------------ operations

function compareInt(actual: number, target: number): number {
  return Math.sign(actual - target);
}

function holds(compare: Compare, kv: EtcdKv | undefined): boolean {
  let order: number;
  switch (compare.target) {
    case 'VERSION':
    case 0:
      order = compareInt(kv?.version ?? 0, int64Of(compare.version));
      break;
    case 'CREATE':
    case 1:
      order = compareInt(kv === undefined ? 0 : revisionOf(kv.createRevision), int64Of(compare.create_revision));
      break;
    case 'MOD':
    case 2:
      order = compareInt(kv === undefined ? 0 : revisionOf(kv.modRevision), int64Of(compare.mod_revision));
      break;
    case 'VALUE':
    case 3:
      // etcd: a value compare on a missing key always fails.
      if (kv === undefined) return false;
      order = Math.sign(compareBytes(kv.value, compare.value ?? new Uint8Array(0)));
      break;
    case 'LEASE':
    case 4: {
      const actual = kv?.lease ?? 0n;
      const target = bytesOfInt64(compare.lease);
      order = actual === target ? 0 : actual > target ? 1 : -1;
      break;
    }
    default:
      throw etcdErrors.invalid('unknown compare target');
  }
  switch (compare.result) {
    case 'EQUAL':
    case 0:
      return order === 0;
    case 'GREATER':
    case 1:
      return order > 0;
    case 'LESS':
    case 2:
      return order < 0;
    case 'NOT_EQUAL':
    case 3:
      return order !== 0;
    default:
      throw etcdErrors.invalid('unknown compare result');
  }
}

/** etcd's compare over a key or an interval: every key must satisfy it; none present counts as one zero key. */
async function evaluate(attempt: TxnAttempt, compare: Compare): Promise<boolean> {
  if (compare.key.length === 0) throw etcdErrors.emptyKey();
  const kvs = await attempt.readSnapshot(keyInterval(compare.key, compare.range_end));
  if (kvs.length === 0) return holds(compare, undefined);
  return kvs.every((kv) => holds(compare, kv));
}

export async function runRange(api: NodeApi, attempt: TxnAttempt, request: RangeRequest, context: CallContext): Promise<RangeOutcome> {
  checkRangeRequest(request);
  const interval = keyInterval(request.key, request.range_end);
  const revision = int64Of(request.revision);
  if (revision > 0) {
    // A read at a past revision inside a Txn: history does not change, so no read set to validate.
    await checkNotCompacted(api, revision, context);
    return shapeRange(request, (await readInterval(api, interval, { revision }, context)).kvs);
  }
  return shapeRange(request, await attempt.read(interval));
}

export async function runPut(attempt: TxnAttempt, request: PutRequest): Promise<OpOutcome & { kind: 'put' }> {
  if (request.key.length === 0) throw etcdErrors.emptyKey();
  const lease = bytesOfInt64(request.lease);
  if (request.ignore_value && request.value.length > 0) throw etcdErrors.valueProvided();
  if (request.ignore_lease && lease !== 0n) throw etcdErrors.leaseProvided();
  const [prev] = await attempt.read(keyInterval(request.key, new Uint8Array(0)));
  if ((request.ignore_value || request.ignore_lease) && prev === undefined) throw etcdErrors.keyNotFound();
  attempt.put({
    key: request.key,
    createRevision: prev?.createRevision ?? attempt.pending,
    modRevision: attempt.pending,
    version: (prev?.version ?? 0) + 1,
    value: request.ignore_value ? prev!.value : request.value,
    lease: request.ignore_lease ? prev!.lease : lease,
  });
  return { kind: 'put', ...(request.prev_kv && prev !== undefined && { prev }) };
}

export async function runDelete(attempt: TxnAttempt, request: DeleteRangeRequest): Promise<OpOutcome & { kind: 'delete' }> {
  if (request.key.length === 0) throw etcdErrors.emptyKey();
  const kvs = await attempt.read(keyInterval(request.key, request.range_end));
  for (const kv of kvs) attempt.delete(kv.key);
  return { kind: 'delete', deleted: kvs.length, ...(request.prev_kv && { prevKvs: kvs }) };
}

/** etcd refuses a Txn that writes one key twice, or puts a key that one of its deletes covers. */
export function checkTxnShape(request: TxnRequest, depth = 0): void {
  if (depth > 16) throw etcdErrors.invalid('transactions nest at most 16 deep');
  if (request.compare.length > etcdLimits.maxTxnOps || request.success.length > etcdLimits.maxTxnOps || request.failure.length > etcdLimits.maxTxnOps) {
    throw etcdErrors.tooManyOps();
  }
  for (const branch of [request.success, request.failure]) checkBranch(branch, depth);
}

interface BranchWrites {
  readonly puts: Set<string>;
  readonly deletes: KeyInterval[];
}

function checkBranch(ops: readonly RequestOp[], depth: number): BranchWrites {
  const puts = new Set<string>();
  const deletes: KeyInterval[] = [];
  const putBytes: Uint8Array[] = [];
  const addPut = (key: Uint8Array): void => {
    const encoded = encodeKey(key);
    if (puts.has(encoded)) throw etcdErrors.duplicateKey();
    puts.add(encoded);
    putBytes.push(key);
  };
  for (const op of ops) {
    if (op.request_put) addPut(op.request_put.key);
    else if (op.request_delete_range) deletes.push(keyInterval(op.request_delete_range.key, op.request_delete_range.range_end));
    else if (op.request_txn) {
      checkTxnShape(op.request_txn, depth + 1);
      // Either nested branch may run: each one's writes must not clash with this branch's.
      const nested = [checkBranch(op.request_txn.success, depth + 1), checkBranch(op.request_txn.failure, depth + 1)];
      const nestedPuts = new Set<string>();
      for (const branch of nested) {
        for (const key of branch.puts) if (puts.has(key)) throw etcdErrors.duplicateKey();
        for (const key of branch.puts) nestedPuts.add(key);
        deletes.push(...branch.deletes);
      }
      for (const key of nestedPuts) puts.add(key);
    } else if (!op.request_range) throw etcdErrors.invalid('a RequestOp must hold one request');
  }
  for (const key of putBytes) if (deletes.some((interval) => interval.contains(key))) throw etcdErrors.duplicateKey();
  return { puts, deletes };
}

/** A Txn inside the attempt: compares at the snapshot, then the chosen branch in order. */
export async function runTxnOps(api: NodeApi, attempt: TxnAttempt, request: TxnRequest, context: CallContext): Promise<OpOutcome & { kind: 'txn' }> {
  let succeeded = true;
  for (const compare of request.compare) {
    if (!(await evaluate(attempt, compare))) {
      succeeded = false;
      break;
    }
  }
  const responses: OpOutcome[] = [];
  for (const op of succeeded ? request.success : request.failure) {
    if (op.request_range) responses.push({ kind: 'range', range: await runRange(api, attempt, op.request_range, context) });
    else if (op.request_put) responses.push(await runPut(attempt, op.request_put));
    else if (op.request_delete_range) responses.push(await runDelete(attempt, op.request_delete_range));
    else if (op.request_txn) responses.push(await runTxnOps(api, attempt, op.request_txn, context));
    else throw new AtollError('INVALID_ARGUMENT', 'a RequestOp must hold one request');
  }
  return { kind: 'txn', succeeded, responses };
}
