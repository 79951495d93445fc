/**
 * Script transactions at the partition's leader: begin a snapshot (a linearizable read of the
 * revision), evaluate the script against it through a TxnView over the local MVCC store, and
 * commit its writes as one transaction entry, exactly like an interactive transaction.
 *
 * A script is a pure function of its snapshot, its parameters and the snapshot clock, so when the
 * commit loses a conflict the leader simply runs it again at a newer snapshot (up to
 * maxScriptAttempts, within the caller's deadline). Re-runs of one partition take turns (a
 * per-partition lock held from begin to applied commit), so scripts that keep colliding make
 * progress: a re-run can then only lose to writes that were not themselves re-runs. That keeps exactly-once with a request id:
 * a conflicted entry records nothing under the id (mvcc-store.ts), the committed one records the
 * script's return value as the entry's note, and a retry of the request gets that note back. A
 * script with a request id that rolls back or writes nothing proposes a no-write entry whose note
 * records its outcome (encodeScriptOutcomeNote), so a resend answers the same even after the data
 * changed; without an id such a script makes no log entry.
 *
 * Turns (issue 33, finding 2): with the node's ScriptScheduler a script is admitted first (per
 * node and per tenant bounds on running scripts, with a line to wait in, and the tenant's budget
 * of script time), and evaluates in turns of
 * the event loop (script-scheduler.ts), its prefix reads pausing between pages too. Meanwhile
 * Raft applies entries: the script's reads stay at its snapshot revision, which it pins against
 * compaction from its begin to its commit (snapshot-pins.ts); a compaction proposed before the pin
 * that passes it anyway fails the attempt with COMPACTED before anything was written, and the
 * script runs again at a newer snapshot like after a conflict.
 */
import { AtollError } from '../../errors.js';
import { bucketOf } from '../../keys/bucket.js';
import type { BucketHashName } from '../../keys/bucket-hash.js';
import { prefixBucket } from '../../keys/prefix-bucket.js';
import type { Limits } from '../../limits.js';
import type { ApplyResult, Command, MvccStore } from '../../mvcc/index.js';
import { paramsFromJson, paramsFromJsonInTurns, parseScript, runScript, scriptRoutingTarget, type Script, type ScriptParams, type ScriptTurns } from '../../script/index.js';
import { tenantTag, validateUserKey, validateUserText } from '../../keys/tenant-keys.js';
import { TxnScope } from '../../txn/txn-scope.js';
import { TxnView, type SnapshotReader, type TxnRecord } from '../../txn/txn-view.js';
import type { BeginTransactionResponse, ExecuteScriptRequest, ExecuteScriptResponse } from '../../api/node-api.js';
import { getResponseOf, keyRecordOf } from './records.js';
import type { ScriptScheduler, ScriptSlot } from './script-scheduler.js';
import { pinSnapshot } from './snapshot-pins.js';

/**
 * A script's prefix read in turns reads pages of about this many characters of keys (at least
 * scriptPageMinKeys keys, at most maxPageSize), sized by the keys of the page before: a page of
 * 1,000 keys of 4 KiB takes about 130 ms to read from the in-memory engine, one of 16 about 2 ms.
 */
const scriptPageKeyChars = 64 * 1024;
const scriptPageMinKeys = 16;

/** How many times the leader evaluates a script that keeps losing conflicts. */
export const maxScriptAttempts = 10;

/** One chain per partition store: re-runs after a conflict go one at a time. */
const retryTurns = new WeakMap<MvccStore, Promise<unknown>>();
/** Re-runs waiting in each partition's chain. Invariant: at most maxPendingRequestsPerPartition. */
const waitingTurns = new WeakMap<MvccStore, number>();

/**
 * Runs `work` after every earlier re-run of the same partition has finished. The chain is bounded
 * like the partition's other waiting requests: past the bound, OVERLOADED (nothing was written).
 */
function inTurn<T>(mvcc: MvccStore, limits: Limits, work: () => Promise<T>): Promise<T> {
  const waiting = waitingTurns.get(mvcc) ?? 0;
  if (waiting >= limits.maxPendingRequestsPerPartition) {
    return Promise.reject(
      new AtollError('OVERLOADED', `${waiting} scripts wait to re-run after a conflict on this partition, its maximum: retry later`, {
        maxPendingRequestsPerPartition: limits.maxPendingRequestsPerPartition,
      }),
    );
  }
  waitingTurns.set(mvcc, waiting + 1);
  const previous = retryTurns.get(mvcc) ?? Promise.resolve();
  const run = previous.then(work, work).finally(() => waitingTurns.set(mvcc, (waitingTurns.get(mvcc) ?? 1) - 1));
  retryTurns.set(mvcc, run.catch(() => undefined));
  return run;
}

/** Scripts parsed, by request: the router, the executor and the runner of one node parse each once. */
const parsedScripts = new WeakMap<ExecuteScriptRequest, Script>();

/** The request's script, parsed (SCRIPT_PARSE_ERROR, SCRIPT_LIMIT); a 64 KiB script takes up to about 10 ms. */
function parsedScript(request: ExecuteScriptRequest, limits: Limits): Script {
  let script = parsedScripts.get(request);
  if (script === undefined) {
    script = parseScript(request.script, limits);
    parsedScripts.set(request, script);
  }
  return script;
}

/**
 * The bucket whose partition runs the script: the request's `bucket`, or the first key or prefix
 * the script names literally (or through a bound parameter). It is a user bucket, mapped into the
 * caller's tenant by the caller of this function, so U+0000 in it is refused (INVALID_KEY).
 */
export function scriptBucket(request: ExecuteScriptRequest, limits: Limits): string {
  if (request.bucket !== undefined && request.bucket !== '') {
    validateUserText(request.bucket, 'a script\'s bucket');
    return bucketOf(request.bucket);
  }
  const script = parsedScript(request, limits);
  // Only the parameters used as a key or prefix: the others (up to a message of lists) are
  // imported where the script runs, in turns of the loop.
  const keyParams = new Set(script.keyOperands.flatMap((operand) => (operand.expression.kind === 'param' ? [operand.expression.name] : [])));
  const params = Object.fromEntries(Object.entries(request.params ?? {}).filter(([name]) => keyParams.has(name)));
  const target = scriptRoutingTarget(script, paramsFromJson(params, limits));
  if (target === undefined) {
    throw new AtollError(
      'INVALID_ARGUMENT',
      'the script names no key or prefix literally, so its partition is unknown: set the request\'s bucket (atoll txn --bucket)',
    );
  }
  const text = 'key' in target ? target.key : target.prefix;
  validateUserText(text, 'the key or prefix a script is routed by');
  return 'key' in target ? bucketOf(target.key) : prefixBucket(target.prefix).bucket;
}

/**
 * Snapshot reads of one tenant's keys from the leader's own store, at the transaction's revision
 * and clock. With `turns`, a prefix read lets the loop turn between its pages when the turn is up.
 */
export function storeSnapshotReader(mvcc: MvccStore, snapshotRevision: number, nowMs: number, limits: Limits, tenant: string, turns?: ScriptTurns): SnapshotReader {
  const tag = tenantTag(tenant);
  return {
    async get(key) {
      const { found, revision: _revision, ...record } = getResponseOf(await mvcc.get(tag + key, { revision: snapshotRevision, nowMs }));
      return found ? { key, ...record } : undefined;
    },
    async getByPrefix(userPrefix, maxKeys) {
      const keyPrefix = tag + userPrefix;
      const records: TxnRecord[] = [];
      let after: string | undefined;
      let limit = turns === undefined ? limits.maxPageSize : scriptPageMinKeys;
      for (;;) {
        const page = await mvcc.getByPrefix(keyPrefix, { revision: snapshotRevision, nowMs, limit, ...(after !== undefined && { after }) });
        let keyChars = 0;
        for (const item of page.items) {
          records.push({ ...keyRecordOf(item), key: item.key.slice(tag.length) });
          keyChars += item.key.length;
        }
        if (turns !== undefined && page.items.length > 0) {
          limit = Math.min(limits.maxPageSize, Math.max(scriptPageMinKeys, Math.floor((scriptPageKeyChars * page.items.length) / keyChars)));
        }
        if (records.length > maxKeys) {
          throw new AtollError('RESOURCE_EXHAUSTED', `a prefix read in a transaction returns at most ${maxKeys} keys`, { keyPrefix, maxKeys });
        }
        if (!page.more || page.continueAfter === undefined) return records;
        after = page.continueAfter;
        if (turns?.due() === true) await turns.pause();
      }
    },
  };
}

export interface ScriptRunContext {
  readonly request: ExecuteScriptRequest;
  readonly limits: Limits;
  readonly partitionCount: number;
  /** The cluster's bucket hash (default: a new cluster's). */
  readonly bucketHash?: BucketHashName;
  /** The caller's tenant: the script names user keys, the store holds (tenant, key). */
  readonly tenant: string;
  /** Begins a transaction on this leader (a read barrier, then the revision). */
  readonly begin: () => Promise<BeginTransactionResponse>;
  readonly mvcc: MvccStore;
  readonly propose: (command: Command, requestId: string | undefined) => Promise<ApplyResult>;
  readonly deadlineMs: number;
  /** The node's wall clock (ports.ts NodeClock.wallMs): the script's time limit and its deadline (default Date.now). */
  readonly wallMs?: () => number;
  /** The node's scheduler of scripts: admission and turns. Without it the script runs in one piece. */
  readonly scheduler?: ScriptScheduler;
}

const textEncoder = new TextEncoder();
const textDecoder = new TextDecoder();

/**
 * The script's result as JSON text, which runScript built within the script's time limit and
 * checked against a lower bound of its size (a code unit per byte); this checks the exact UTF-8
 * size (characters outside ASCII take more). A writing script's result is bounded further
 * (maxTxnNoteBytes).
 */
function boundedResultJson(resultJson: string, limits: Limits): string {
  const resultBytes = Buffer.byteLength(resultJson, 'utf8');
  if (resultBytes > limits.maxScriptResultBytes) {
    throw new AtollError('SCRIPT_LIMIT', `a script returns at most ${limits.maxScriptResultBytes} bytes of JSON`, {
      resultBytes,
      maxResultBytes: limits.maxScriptResultBytes,
    });
  }
  return resultJson;
}

/** What a script's note records: its result JSON, whether it committed, and the revision it answers at. */
export interface ScriptOutcome {
  readonly resultJson: string;
  readonly committed: boolean;
  readonly revision: number;
}

/** First byte of an outcome note; plain result JSON (a committed writing script's note) never starts with it. */
const outcomeNoteMarker = 0;
/** Marker, flags (1 committed), revision uint64 BE, result JSON. */
const outcomeNoteHeaderBytes = 10;

/** The note of a script that rolled back or wrote nothing. */
export function encodeScriptOutcomeNote(outcome: ScriptOutcome): Uint8Array {
  const json = textEncoder.encode(outcome.resultJson);
  const note = new Uint8Array(outcomeNoteHeaderBytes + json.length);
  const view = new DataView(note.buffer);
  view.setUint8(0, outcomeNoteMarker);
  view.setUint8(1, outcome.committed ? 1 : 0);
  view.setBigUint64(2, BigInt(outcome.revision));
  note.set(json, outcomeNoteHeaderBytes);
  return note;
}

/**
 * Reads a script's note back. Plain result JSON (every note before outcome notes, and every
 * writing script's) means committed at the entry's revision `entryRevision`.
 */
export function decodeScriptOutcomeNote(note: Uint8Array, entryRevision: number): ScriptOutcome {
  if (note.length === 0 || note[0] !== outcomeNoteMarker) {
    return { resultJson: textDecoder.decode(note), committed: true, revision: entryRevision };
  }
  if (note.length < outcomeNoteHeaderBytes) throw new AtollError('INTERNAL', 'a script outcome note is truncated', { noteBytes: note.length });
  const view = new DataView(note.buffer, note.byteOffset, note.byteLength);
  return {
    committed: (view.getUint8(1) & 1) !== 0,
    revision: Number(view.getBigUint64(2)),
    resultJson: textDecoder.decode(note.subarray(outcomeNoteHeaderBytes)),
  };
}

export async function runScriptAtLeader(context: ScriptRunContext): Promise<ExecuteScriptResponse> {
  const { request, limits } = context;
  const script = parsedScript(request, limits);
  // Admitted once for all its attempts, perhaps after waiting in line; refused before anything is read.
  const slot = context.scheduler === undefined ? undefined : await context.scheduler.admit(context.tenant);
  try {
    const wallMs = context.wallMs ?? Date.now;
    if (wallMs() > context.deadlineMs) throw new AtollError('DEADLINE_EXCEEDED', "the call's deadline passed while the script waited for its turn to run");
    // Parameters can be a message of lists: imported in turns like the script's own work.
    const params =
      slot === undefined
        ? paramsFromJson(request.params ?? {}, limits)
        : await slot.run(() => paramsFromJsonInTurns(request.params ?? {}, limits, slot.pace));
    const first = await attemptScript(context, script, params, 1, slot);
    if (first !== 'conflict') return first;
    for (let attempt = 2; ; attempt++) {
      const result = await inTurn(context.mvcc, context.limits, () => attemptScript(context, script, params, attempt, slot));
      if (result !== 'conflict') return result;
    }
  } finally {
    slot?.release();
  }
}

/** One evaluation and commit: the response, or 'conflict' when it lost and may run again. */
async function attemptScript(
  context: ScriptRunContext,
  script: Script,
  params: ScriptParams,
  attempt: number,
  slot: ScriptSlot | undefined,
): Promise<ExecuteScriptResponse | 'conflict'> {
  const begun = await context.begin();
  const scope = TxnScope.fromText(begun.transaction, context.partitionCount, context.bucketHash);
  const unpin = pinSnapshot(context.mvcc, scope.handle.snapshotRevision);
  const wallMs = context.wallMs ?? Date.now;
  try {
    return await evaluateAndCommit(context, script, params, attempt, slot, scope);
  } catch (error) {
    // Nothing was written: the commit lost a conflict, or the attempt lost its snapshot to a
    // compaction proposed before its pin (while it read, or when its commit applied).
    const again =
      error instanceof AtollError && (error.code === 'TXN_CONFLICT' || error.code === 'COMPACTED') && attempt < maxScriptAttempts && wallMs() < context.deadlineMs - 50;
    if (!again) throw error;
    return 'conflict';
  } finally {
    unpin();
  }
}

/** The evaluation at the attempt's snapshot and its commit. */
async function evaluateAndCommit(
  context: ScriptRunContext,
  script: Script,
  params: ScriptParams,
  attempt: number,
  slot: ScriptSlot | undefined,
  scope: TxnScope,
): Promise<ExecuteScriptResponse> {
  const { request, limits, tenant } = context;
  const tag = tenantTag(tenant);
  const { snapshotRevision, startedAtMs } = scope.handle;
  const view = new TxnView({
    reader: storeSnapshotReader(context.mvcc, snapshotRevision, startedAtMs, limits, tenant, slot),
    nowMs: startedAtMs,
    limits,
    // Every key and prefix the script uses, literal or computed, is a user key of the caller's
    // tenant: checked like a KV call's (no U+0000 anywhere) before anything is read or buffered.
    checkKey: (key) => {
      validateUserKey(key);
      scope.checkKey(tag + key);
    },
    checkPrefix: (bucket, prefix) => {
      validateUserText(prefix, 'a prefix');
      scope.checkBucket(tag + bucket, `prefix ${JSON.stringify(prefix)}`);
    },
    ...(slot !== undefined && { pace: slot.pace }),
  });
  const wallMs = context.wallMs ?? Date.now;
  const options = { params, view, limits, clock: wallMs, deadlineMs: context.deadlineMs };
  const outcome = slot === undefined ? await runScript(script, options) : await slot.run(() => runScript(script, { ...options, turns: slot }));
  const resultJson = boundedResultJson(outcome.resultJson, limits);
  // A lease a write attaches must be of the script's partition (LEASE_WRONG_PARTITION otherwise).
  const writes = outcome.committed ? view.writes((lease) => scope.localLease(lease)) : [];
  if (writes.length === 0 && request.requestId === undefined) {
    // Nothing to write and no id to record under: the snapshot itself is the consistent answer.
    return { resultJson, committed: outcome.committed, revision: snapshotRevision, attempts: attempt };
  }
  // With writes the note is the plain result JSON (committed); a script that rolled back or wrote
  // nothing records its outcome in a no-write entry so a resend with the id answers the same.
  const note =
    writes.length > 0 ? textEncoder.encode(resultJson) : encodeScriptOutcomeNote({ resultJson, committed: outcome.committed, revision: snapshotRevision });
  if (note.length > limits.maxTxnNoteBytes) {
    throw new AtollError('SCRIPT_LIMIT', `a script that writes or has a request id returns at most ${limits.maxTxnNoteBytes} bytes of JSON`, {
      resultBytes: note.length,
      maxResultBytes: limits.maxTxnNoteBytes,
    });
  }
  const tagged = writes.map((write) => ({ ...write, key: tag + write.key }));
  // A no-write entry reads nothing back: its answer is its snapshot's, which no later write can
  // invalidate, so it carries no read set and cannot conflict.
  const command =
    tagged.length > 0
      ? scope.command(tagged, view.readKeys.map((key) => tag + key), view.readPrefixes.map((prefix) => tag + prefix), note)
      : scope.command([], [], [], note);
  const result = await context.propose(command, request.requestId);
  // A retried request answered from the dedup record carries the first run's outcome.
  const recorded = decodeScriptOutcomeNote(result.note ?? note, result.revision);
  return { resultJson: recorded.resultJson, committed: recorded.committed, revision: recorded.revision, attempts: attempt };
}
