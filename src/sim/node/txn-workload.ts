/**
 * The transaction workload: runs one random interactive transaction against a node's API and
 * records everything it saw and did as a TxnRecord for the isolation checker
 * (isolation-checker.ts). A transaction begins on a random key, reads a few keys and perhaps a
 * prefix at its snapshot, buffers a few writes whose values are its own id (so any later read
 * names its writer), and commits them with its read set. It never retries: a failure is recorded
 * as aborted when the commit certainly did not apply, else as unknown.
 */
import { AtollError } from '../../errors.js';
import { prefixBucket } from '../../keys/prefix-bucket.js';
import type * as api from '../../api/node-api.js';
import type { Rng } from '../../raft/rng.js';
import type { TxnIsolation, TxnPrefixRead, TxnRead, TxnRecord, TxnWriteRecord } from './isolation-checker.js';

/** The four NodeApi methods an interactive transaction needs. */
export interface TxnApi {
  beginTransaction(request: api.BeginTransactionRequest, context: api.CallContext): Promise<api.BeginTransactionResponse>;
  get(request: api.GetRequest, context: api.CallContext): Promise<api.GetResponse>;
  getByPrefix(request: api.GetByPrefixRequest, context: api.CallContext): Promise<api.GetByPrefixResponse>;
  commit(request: api.CommitRequest, context: api.CallContext): Promise<api.CommitResponse>;
}

export interface RandomTransactionOptions {
  /** Keys the transaction may read and write; all in one partition (one bucket is simplest). */
  readonly keys: readonly string[];
  /** Prefixes it may read (API form: a bucket name, or text containing `/`), in the same partition. */
  readonly prefixes: readonly string[];
  readonly isolation: TxnIsolation;
  /** A fresh call context (deadline, signal) for each call. */
  readonly context: () => api.CallContext;
  /** Most keys read (default 3) and written (default 3). */
  readonly maxReads?: number;
  readonly maxWrites?: number;
  /** Chance of a prefix read (default 0.3), of a write being a delete (default 0.1). */
  readonly prefixReadChance?: number;
  readonly deleteChance?: number;
  /** Pages one prefix read may take (default 8) of `pageLimit` keys (default 100). */
  readonly maxPages?: number;
  readonly pageLimit?: number;
  /** A long transaction: awaited after the begin and before the commit (txn-span.ts). */
  readonly pause?: (stage: 'begun' | 'commit') => Promise<void>;
}

/**
 * Errors after which a commit certainly did not apply: a lost conflict, a refusal before the
 * proposal (a bad or expired handle, bad input), or a refusal the node marked as never sent
 * (`atoll-not-applied`). Anything else (a deadline, a lost connection) leaves the outcome unknown.
 */
const definitelyNotApplied: ReadonlySet<string> = new Set(['TXN_CONFLICT', 'TXN_EXPIRED', 'INVALID_TRANSACTION', 'OUTSIDE_TRANSACTION', 'INVALID_ARGUMENT']);

export function commitCertainlyFailed(error: unknown): boolean {
  if (!(error instanceof AtollError)) return false;
  return definitelyNotApplied.has(error.code) || error.details?.['neverSent'] === true;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export async function runRandomTransaction(txnApi: TxnApi, rng: Rng, opts: RandomTransactionOptions): Promise<TxnRecord> {
  if (opts.keys.length === 0) throw new AtollError('INVALID_ARGUMENT', 'a random transaction needs at least one key');
  const id = `txn-${rng.nextUint32().toString(36)}-${rng.nextUint32().toString(36)}`;
  const plan = planOf(rng, opts);
  const reads: TxnRead[] = [];
  const prefixReads: TxnPrefixRead[] = [];
  const base = { id, isolation: opts.isolation, reads, prefixReads };
  let begun: api.BeginTransactionResponse;
  try {
    begun = await txnApi.beginTransaction({ key: plan.beginKey, isolation: opts.isolation === 'SERIALIZABLE' ? 'serializable' : 'snapshot' }, opts.context());
  } catch (error) {
    // Nothing began, nothing was written: partition -1 says so.
    return { ...base, outcome: 'aborted', partition: -1, snapshotRevision: 0, writes: [], note: `begin failed: ${describe(error)}` };
  }
  const started = { ...base, partition: begun.partition, snapshotRevision: begun.snapshotRevision };
  await opts.pause?.('begun');
  try {
    for (const key of plan.readKeys) reads.push(readOf(key, await txnApi.get({ key, transaction: begun.transaction }, opts.context())));
    if (plan.prefix !== undefined) prefixReads.push(await readPrefix(txnApi, begun.transaction, plan.prefix, opts));
  } catch (error) {
    // Abandoned before the commit was sent: its writes never reached a node.
    return { ...started, outcome: 'aborted', writes: [], note: `read failed: ${describe(error)}` };
  }
  const writes = writesOf(plan, id, reads, prefixReads);
  const finals = finalWrites(writes);
  if (finals.length === 0) return { ...started, outcome: 'committed', writes };
  await opts.pause?.('commit');
  try {
    const committed = await txnApi.commit(
      {
        transaction: begun.transaction,
        writes: finals.map((write) => (write.delete === true ? { key: write.key, delete: true } : { key: write.key, value: encoder.encode(write.value) })),
        readKeys: plan.readKeys,
        readPrefixes: plan.prefix === undefined ? [] : [plan.prefix],
        requestId: id,
      },
      opts.context(),
    );
    return { ...started, outcome: 'committed', writes, commitRevision: committed.revision };
  } catch (error) {
    return { ...started, outcome: commitCertainlyFailed(error) ? 'aborted' : 'unknown', writes, note: `commit failed: ${describe(error)}` };
  }
}

/** What a transaction will do, drawn before it begins so the draw does not depend on timing. */
interface Plan {
  readonly beginKey: string;
  readonly readKeys: string[];
  readonly prefix: string | undefined;
  readonly writes: ReadonlyArray<{ readonly key: string; readonly intermediate: boolean; readonly deleteIfPresent: boolean }>;
}

function planOf(rng: Rng, opts: RandomTransactionOptions): Plan {
  const maxReads = opts.maxReads ?? 3;
  const maxWrites = opts.maxWrites ?? 3;
  const readKeys = pickDistinct(rng, opts.keys, rng.int(maxReads + 1));
  const prefix = opts.prefixes.length > 0 && rng.chance(opts.prefixReadChance ?? 0.3) ? rng.pick(opts.prefixes) : undefined;
  const writes = pickDistinct(rng, opts.keys, rng.int(maxWrites + 1)).map((key) => ({
    key,
    intermediate: rng.chance(0.1),
    deleteIfPresent: rng.chance(opts.deleteChance ?? 0.1),
  }));
  return { beginKey: rng.pick(opts.keys), readKeys, prefix, writes };
}

/**
 * The writes in the order made: an earlier write of a key is intermediate and never sent (the
 * client buffers one per key). A delete is made only of a key the transaction saw present: Atoll
 * stores no version for a delete of an absent key, so such a delete would name no version.
 */
function writesOf(plan: Plan, id: string, reads: readonly TxnRead[], prefixReads: readonly TxnPrefixRead[]): TxnWriteRecord[] {
  const present = new Set([...reads.filter((read) => read.modRevision !== undefined).map((read) => read.key), ...prefixReads.flatMap((read) => read.items.map((item) => item.key))]);
  const writes: TxnWriteRecord[] = [];
  for (const write of plan.writes) {
    if (write.intermediate) writes.push({ key: write.key, value: `${id}~first` });
    writes.push(write.deleteIfPresent && present.has(write.key) ? { key: write.key, delete: true } : { key: write.key, value: id });
  }
  return writes;
}

async function readPrefix(txnApi: TxnApi, transaction: string, prefix: string, opts: RandomTransactionOptions): Promise<TxnPrefixRead> {
  const items: Array<TxnPrefixRead['items'][number]> = [];
  const maxPages = opts.maxPages ?? 8;
  let pageToken = '';
  for (let page = 0; page < maxPages; page++) {
    const response = await txnApi.getByPrefix({ prefix, transaction, limit: opts.pageLimit ?? 100, ...(pageToken !== '' ? { pageToken } : {}) }, opts.context());
    for (const item of response.items) items.push({ key: item.key, modRevision: item.modRevision, value: decoder.decode(item.value) });
    pageToken = response.nextPageToken;
    if (pageToken === '') return { prefix: prefixBucket(prefix).keyPrefix, items };
  }
  throw new AtollError('RESOURCE_EXHAUSTED', `prefix ${prefix} has more than ${maxPages} pages`);
}

function readOf(key: string, response: api.GetResponse): TxnRead {
  return response.found ? { key, modRevision: response.modRevision, value: decoder.decode(response.value) } : { key };
}

function finalWrites(writes: readonly TxnWriteRecord[]): TxnWriteRecord[] {
  const last = new Map<string, TxnWriteRecord>();
  for (const write of writes) last.set(write.key, write);
  return [...last.values()];
}

function pickDistinct(rng: Rng, items: readonly string[], count: number): string[] {
  const pool = [...items];
  const picked: string[] = [];
  while (picked.length < count && pool.length > 0) picked.push(pool.splice(rng.int(pool.length), 1)[0]!);
  return picked;
}

function describe(error: unknown): string {
  if (error instanceof AtollError) return `${error.code}${error.details?.['neverSent'] === true ? ' (not applied)' : ''}: ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
