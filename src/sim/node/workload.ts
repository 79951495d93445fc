/**
 * The simulated clients: bounded loops of requests through ANY node's NodeApi methods, each with
 * a CallContext deadline on that node's clock, recorded in the history. Registers take puts
 * (some with a TTL far beyond the run), conditional puts, deletes, linearizable gets, prefix
 * reads, transaction commits and scripts; counters take increments with request ids, resent with
 * the same id while the outcome is unknown (and sometimes once more after an answer, which must
 * answer the same); claims are SERIALIZABLE transactions that take a slot only if the slot's
 * prefix is empty. Stale gets, short-TTL writes and transaction reads are exercised, not checked.
 */
import { AtollError, isAtollError } from '../../errors.js';
import type { CallContext } from '../../api/node-api.js';
import type { AtollNode } from '../../node/atoll-node.js';
import { prefixBucket } from '../../keys/prefix-bucket.js';
import { Rng } from '../../raft/rng.js';
import type { HistoryRecorder } from './history-recorder.js';
import type { Scheduler } from './scheduler.js';
import type { SimCluster } from './sim-cluster.js';
import type { Trace } from './trace.js';
import type { TxnRecord } from './isolation-checker.js';
import { runRandomTransaction, type TxnApi } from './txn-workload.js';
import { ISOLATION_BUCKETS, isolationTxnScope, type TxnTimes } from './txn-span.js';

export interface WorkloadKeys {
  /** Register buckets, each with registerKeysPerBucket keys `<bucket>/k<i>`. */
  readonly registerBuckets: readonly string[];
  readonly registers: readonly string[];
  readonly counters: readonly string[];
  /** Keys written with short TTLs (expiry exercised, not checked against a clock). */
  readonly ttlKeys: readonly string[];
  /** The bucket of the claim transactions: `claim/r<round>/p<process>`. */
  readonly claimBucket: string;
  /**
   * Buckets only the isolation transactions write (runRandomTransaction), each with
   * isolationKeysPerBucket keys `<bucket>/k<i>`: their TxnRecords are the complete history of
   * these keys, which is what the isolation checker needs.
   */
  readonly isolationBuckets: readonly string[];
  readonly isolationKeysPerBucket: number;
  /** Every bucket the workload touches (the state digests read these). */
  readonly buckets: readonly string[];
}

export function workloadKeys(registerBuckets: number, keysPerBucket: number, counters: number, isolationBuckets: readonly string[] = ISOLATION_BUCKETS, isolationKeysPerBucket = 3): WorkloadKeys {
  const buckets = Array.from({ length: registerBuckets }, (_, i) => `r${i}`);
  const isolation = [...isolationBuckets];
  const registers = buckets.flatMap((bucket) => Array.from({ length: keysPerBucket }, (_, i) => `${bucket}/k${i}`));
  const counterKeys = Array.from({ length: counters }, (_, i) => `c${i}/n`);
  const ttlKeys = ['t0/a', 't0/b'];
  return {
    registerBuckets: buckets,
    registers,
    counters: counterKeys,
    ttlKeys,
    claimBucket: 'claim',
    isolationBuckets: isolation,
    isolationKeysPerBucket,
    buckets: [...buckets, ...counterKeys.map((key) => key.split('/')[0] as string), 't0', 'claim', ...isolation],
  };
}

export type CallOutcome<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly definite: boolean; readonly error: string };

/** Relative weights of the operations a client picks. */
export interface OperationMix {
  readonly put: number;
  readonly cas: number;
  readonly del: number;
  readonly read: number;
  readonly staleRead: number;
  readonly prefixRead: number;
  readonly increment: number;
  readonly counterRead: number;
  readonly ttlPut: number;
  readonly txn: number;
  readonly claim: number;
  readonly script: number;
  /** A random transaction (txn-workload.ts) on the isolation buckets, judged by the isolation checker. */
  readonly isolationTxn: number;
}

export interface WorkloadOptions {
  readonly clients: number;
  readonly mix: OperationMix;
  /** Pause between a client's operations, ms of virtual time. */
  readonly thinkMs: readonly [number, number];
  readonly timeoutMs: number;
  /** Resend an increment that answered, with the same id, with this probability. */
  readonly resendAnsweredRate: number;
  readonly maxOpsPerClient: number;
}

/** Codes that prove a request did not take effect (besides the not-applied mark). */
const definiteCodes = new Set(['TXN_CONFLICT', 'INVALID_ARGUMENT', 'INVALID_KEY', 'WRONG_PARTITION']);

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export class Workload {
  /** Increments whose resend (same id, after an answer) answered differently: exactly-once broken. */
  readonly resendMismatches: string[] = [];
  /** Claims acknowledged as committed, per round prefix. */
  readonly claimsCommitted = new Map<string, number[]>();
  readonly claimRounds = new Set<string>();
  /**
   * Every isolation transaction's and claim's record, in the order they finished. Invariant: only
   * these transactions write the isolation buckets and the claim bucket, so this is the complete
   * history of those keys (isolation transactions whose begin failed are in it too, as aborted
   * with partition -1; claims that wrote nothing and read no whole prefix are left out).
   */
  readonly txnRecords: TxnRecord[] = [];
  /** When each isolation transaction began and finished (txn-realtime-checker.ts). */
  readonly txnTimes = new Map<string, TxnTimes>();
  private valueCounter = 0;
  private requestCounter = 0;
  private claimCounter = 0;
  private stopAtMs = 0;
  opsDone = 0;
  /** Told of every acknowledged register put, conditional put and delete, with its revision (the watch checker's hook). */
  onWriteAcked: (key: string, value: string | null, revision: number) => void = () => undefined;
  private readonly lastSeen = new Map<string, string | null>();

  constructor(
    private readonly scheduler: Scheduler,
    private readonly cluster: SimCluster,
    private readonly history: HistoryRecorder,
    private readonly trace: Trace,
    readonly keys: WorkloadKeys,
    private readonly options: WorkloadOptions,
  ) {}

  /** Starts the clients; they stop invoking at `untilMs` (virtual time). Resolves when all are done. */
  run(rng: Rng, untilMs: number): Promise<void> {
    this.stopAtMs = untilMs;
    const clients: Array<Promise<void>> = [];
    for (let process = 1; process <= this.options.clients; process++) clients.push(this.client(process, new Rng(rng.nextUint32())));
    return Promise.all(clients).then(() => undefined);
  }

  sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => this.scheduler.after(ms, resolve));
  }

  /** One call through `node`: its answer, or why not (definite: it certainly did not take effect). */
  async call<T>(node: number, fn: (api: AtollNode, context: CallContext) => Promise<T>, timeoutMs = this.options.timeoutMs): Promise<CallOutcome<T>> {
    const api = this.cluster.apiOf(node);
    const host = this.cluster.hostOf(node);
    if (api === undefined || host === undefined) return { ok: false, definite: true, error: 'connection refused' };
    const context: CallContext = { deadlineMs: host.clock.wallMs() + timeoutMs };
    return new Promise<CallOutcome<T>>((resolve) => {
      let done = false;
      const finish = (outcome: CallOutcome<T>): void => {
        if (done) return;
        done = true;
        timer.cancel();
        resolve(outcome);
      };
      // The client gives up a little after the deadline (a node that died never answers).
      const timer = this.scheduler.after(timeoutMs + 1_000, () => finish({ ok: false, definite: false, error: 'no answer' }));
      let call: Promise<T>;
      try {
        call = fn(api, context);
      } catch (error) {
        call = Promise.reject(error);
      }
      call.then(
        (value) => finish(host.alive ? { ok: true, value } : { ok: false, definite: false, error: 'the node died before answering' }),
        (error: unknown) => {
          if (!host.alive) return finish({ ok: false, definite: false, error: 'the node died before answering' });
          const definite = isAtollError(error) && (error.details?.['neverSent'] === true || definiteCodes.has(error.code));
          finish({ ok: false, definite, error: isAtollError(error) ? `${error.code}: ${error.message}` : String(error) });
        },
      );
    });
  }

  /**
   * One call through `node` for code that wants the node's own error: resolves with its answer,
   * rejects with the error it threw (an AtollError keeps its code and its not-applied mark), or
   * with a plain Error when the node died or never answered (so the outcome counts as unknown).
   */
  private rawCall<T>(node: number, fn: (api: AtollNode, context: CallContext) => Promise<T>): Promise<T> {
    const api = this.cluster.apiOf(node);
    const host = this.cluster.hostOf(node);
    // A node that is down refuses the connection: nothing was sent.
    if (api === undefined || host === undefined) return Promise.reject(new AtollError('UNAVAILABLE', `node ${node} refused the connection`, { neverSent: true }));
    const timeoutMs = this.options.timeoutMs;
    const context: CallContext = { deadlineMs: host.clock.wallMs() + timeoutMs };
    return new Promise<T>((resolve, reject) => {
      let done = false;
      const settle = (finish: () => void): void => {
        if (done) return;
        done = true;
        timer.cancel();
        finish();
      };
      const timer = this.scheduler.after(timeoutMs + 1_000, () => settle(() => reject(new Error(`node ${node} did not answer`))));
      let call: Promise<T>;
      try {
        call = fn(api, context);
      } catch (error) {
        call = Promise.reject(error);
      }
      call.then(
        (value) => settle(() => (host.alive ? resolve(value) : reject(new Error(`node ${node} died before answering`)))),
        (error: unknown) => settle(() => reject(host.alive ? error : new Error(`node ${node} died before answering`))),
      );
    });
  }

  /** A TxnApi whose every call goes through a node drawn from `rng` (a handle is good on any node). */
  private txnApiOver(rng: Rng): TxnApi {
    return {
      beginTransaction: (request) => this.rawCall(this.pickNode(rng), (api, context) => api.beginTransaction(request, context)),
      get: (request) => this.rawCall(this.pickNode(rng), (api, context) => api.get(request, context)),
      getByPrefix: (request) => this.rawCall(this.pickNode(rng), (api, context) => api.getByPrefix(request, context)),
      commit: (request) => this.rawCall(this.pickNode(rng), (api, context) => api.commit(request, context)),
    };
  }

  private pickNode(rng: Rng): number {
    return rng.pick(this.cluster.nodeIds);
  }

  private nextValue(prefix: string): string {
    return `${prefix}${++this.valueCounter}`;
  }

  private async client(process: number, rng: Rng): Promise<void> {
    const mix = Object.entries(this.options.mix) as Array<[keyof OperationMix, number]>;
    const total = mix.reduce((sum, [, weight]) => sum + weight, 0);
    for (let ops = 0; ops < this.options.maxOpsPerClient && this.scheduler.now < this.stopAtMs; ops++) {
      let roll = rng.float() * total;
      let kind: keyof OperationMix = 'read';
      for (const [name, weight] of mix) {
        if (roll < weight) {
          kind = name;
          break;
        }
        roll -= weight;
      }
      await this.operation(kind, process, rng);
      this.opsDone++;
      const [low, high] = this.options.thinkMs;
      await this.sleep(low + rng.float() * (high - low));
    }
  }

  private async operation(kind: keyof OperationMix, process: number, rng: Rng): Promise<void> {
    const node = this.pickNode(rng);
    switch (kind) {
      case 'put':
      case 'ttlPut':
        return this.put(process, rng, node, kind === 'ttlPut');
      case 'cas':
        return this.cas(process, rng, node);
      case 'del':
        return this.del(process, rng, node);
      case 'read':
        await this.read(process, rng.pick(this.keys.registers), node);
        return;
      case 'staleRead': {
        await this.call(node, (api, context) => api.get({ key: rng.pick(this.keys.registers), consistency: 'stale' }, context));
        return;
      }
      case 'prefixRead':
        await this.prefixRead(rng.pick(this.keys.registerBuckets), node);
        return;
      case 'increment':
        return this.increment(process, rng, node);
      case 'counterRead':
        await this.counterRead(process, rng.pick(this.keys.counters), node);
        return;
      case 'txn':
        return this.transaction(rng, node);
      case 'claim':
        return this.claim(process, rng, node);
      case 'script':
        return this.script(process, rng, node);
      case 'isolationTxn':
        return this.isolationTransaction(rng);
    }
  }

  private async put(process: number, rng: Rng, node: number, shortTtl: boolean): Promise<void> {
    if (shortTtl) {
      // Expiry decided in apply: exercised (and in the digests), not checked against a clock.
      const key = rng.pick(this.keys.ttlKeys);
      await this.call(node, (api, context) => api.put({ key, value: encoder.encode(this.nextValue('e')), ttlMs: 500 + rng.int(3_000) }, context));
      return;
    }
    const key = rng.pick(this.keys.registers);
    const value = this.nextValue('v');
    // A TTL far beyond the run: the TTL path runs, and no clock ever decides visibility.
    const ttlMs = rng.chance(0.2) ? 3_600_000 : undefined;
    const returnPrevious = rng.chance(0.2);
    const op = this.history.invoke(process, 'write', key, value);
    const outcome = await this.call(node, (api, context) =>
      api.put({ key, value: encoder.encode(value), ...(ttlMs !== undefined && { ttlMs }), ...(returnPrevious && { returnPrevious }) }, context),
    );
    this.finishWrite(op, outcome);
    if (outcome.ok) this.onWriteAcked(key, value, outcome.value.revision);
  }

  private finishWrite(op: number, outcome: CallOutcome<unknown>): void {
    if (outcome.ok) this.history.complete(op, 'ok');
    else this.history.complete(op, outcome.definite ? 'fail' : 'info', undefined, outcome.error);
  }

  private async cas(process: number, rng: Rng, node: number): Promise<void> {
    const key = rng.pick(this.keys.registers);
    const expected = this.lastSeen.get(key) ?? null;
    const next = this.nextValue('v');
    const op = this.history.invoke(process, 'cas', key, { expected, next });
    const outcome = await this.call(node, (api, context) =>
      api.put({ key, value: encoder.encode(next), ...(expected === null ? { ifAbsent: true } : { ifValue: encoder.encode(expected) }) }, context),
    );
    if (outcome.ok && outcome.value.applied) this.onWriteAcked(key, next, outcome.value.revision);
    if (outcome.ok) this.history.complete(op, 'ok', outcome.value.applied);
    else this.history.complete(op, outcome.definite ? 'fail' : 'info', undefined, outcome.error);
  }

  private async del(process: number, rng: Rng, node: number): Promise<void> {
    const key = rng.pick(this.keys.registers);
    const op = this.history.invoke(process, 'write', key, null);
    const outcome = await this.call(node, (api, context) => api.delete({ key }, context));
    this.finishWrite(op, outcome);
    if (outcome.ok && outcome.value.deleted) this.onWriteAcked(key, null, outcome.value.revision);
  }

  /** A linearizable get of a register; `marks` collects its op id (the final reads). */
  async read(process: number, key: string, node: number, marks?: Set<number>): Promise<boolean> {
    const op = this.history.invoke(process, 'read', key);
    marks?.add(op);
    const outcome = await this.call(node, (api, context) => api.get({ key }, context));
    if (!outcome.ok) {
      this.history.complete(op, 'fail', undefined, outcome.error);
      return false;
    }
    const value = outcome.value.found ? decoder.decode(outcome.value.value) : null;
    this.lastSeen.set(key, value);
    this.history.complete(op, 'ok', value);
    return true;
  }

  /** A linearizable prefix read, recorded as a read of every register key of the bucket. */
  async prefixRead(bucket: string, node: number): Promise<boolean> {
    const keys = this.keys.registers.filter((key) => key.startsWith(`${bucket}/`));
    const ops = keys.map((key) => ({ key, op: this.history.invoke(this.history.syntheticProcess(), 'read', key) }));
    const outcome = await this.call(node, (api, context) => api.getByPrefix({ prefix: bucket, limit: 100 }, context));
    for (const { key, op } of ops) {
      if (!outcome.ok || outcome.value.nextPageToken !== '') {
        this.history.complete(op, 'fail', undefined, outcome.ok ? 'more than one page' : outcome.error);
        continue;
      }
      const item = outcome.value.items.find((record) => record.key === key);
      this.history.complete(op, 'ok', item === undefined ? null : decoder.decode(item.value));
    }
    return outcome.ok;
  }

  private async increment(process: number, rng: Rng, node: number): Promise<void> {
    const key = rng.pick(this.keys.counters);
    const delta = 1 + rng.int(5);
    const requestId = `inc-${process}-${++this.requestCounter}`;
    const op = this.history.invoke(process, 'increment', key, delta);
    let answer: number | undefined;
    let unknown = false;
    // Resent with the same id while the outcome is unknown (bounded); a definite failure after an
    // unknown one leaves it unknown (the first may still apply).
    for (let attempt = 0; attempt < 4 && answer === undefined; attempt++) {
      const target = attempt === 0 ? node : this.pickNode(rng);
      const outcome = await this.call(target, (api, context) => api.increment({ key, delta: BigInt(delta), requestId }, context));
      if (outcome.ok) answer = Number(outcome.value.value);
      else if (!outcome.definite) unknown = true;
      else if (!unknown) break;
      if (answer === undefined) await this.sleep(50 + rng.int(200));
    }
    if (answer === undefined) {
      this.history.complete(op, unknown ? 'info' : 'fail', undefined, 'no attempt answered');
      return;
    }
    this.history.complete(op, 'ok', answer);
    if (rng.chance(this.options.resendAnsweredRate)) {
      // A resend of an answered request must answer the same and change nothing.
      await this.sleep(rng.int(3_000));
      const again = await this.call(this.pickNode(rng), (api, context) => api.increment({ key, delta: BigInt(delta), requestId }, context));
      if (again.ok && Number(again.value.value) !== answer) {
        this.resendMismatches.push(`${requestId} on ${key}: first answered ${answer}, the resend ${again.value.value}`);
        this.trace.add(`client ${process}: resend of ${requestId} answered ${again.value.value}, first ${answer}`);
      }
    }
  }

  async counterRead(process: number, key: string, node: number): Promise<boolean> {
    const op = this.history.invoke(process, 'read', key);
    const outcome = await this.call(node, (api, context) => api.get({ key }, context));
    if (!outcome.ok) {
      this.history.complete(op, 'fail', undefined, outcome.error);
      return false;
    }
    this.history.complete(op, 'ok', outcome.value.found ? Number(decoder.decode(outcome.value.value)) : null);
    return true;
  }

  /**
   * An interactive transaction on one register bucket: begin, read one or two keys with the
   * handle, commit one or two writes. Its writes are recorded per key over the commit's interval
   * (the linearizability checker judges them with the plain writes). The isolation checker judges
   * the random transactions of isolationTransaction instead, on buckets of their own.
   */
  private async transaction(rng: Rng, node: number): Promise<void> {
    const bucket = rng.pick(this.keys.registerBuckets);
    const keys = this.keys.registers.filter((key) => key.startsWith(`${bucket}/`));
    const isolation = rng.chance(0.5) ? 'serializable' : 'snapshot';
    const begun = await this.call(node, (api, context) => api.beginTransaction({ key: bucket, isolation }, context));
    if (!begun.ok) return;
    const handle = begun.value.transaction;
    const readKeys = [rng.pick(keys)];
    for (const key of readKeys) {
      const read = await this.call(rng.chance(0.5) ? node : this.pickNode(rng), (api, context) => api.get({ key, transaction: handle }, context));
      if (!read.ok) return;
    }
    const writeKeys = [...new Set([rng.pick(keys), rng.pick(keys)])];
    const writes = writeKeys.map((key) => ({ key, value: this.nextValue('t') }));
    const ops = writes.map(({ key, value }) => this.history.invoke(this.history.syntheticProcess(), 'write', key, value));
    const outcome = await this.call(node, (api, context) =>
      api.commit({ transaction: handle, writes: writes.map(({ key, value }) => ({ key, value: encoder.encode(value) })), readKeys, readPrefixes: [] }, context),
    );
    for (const op of ops) this.finishWrite(op, outcome);
  }

  /**
   * A random transaction (txn-workload.ts) on one isolation bucket (one partition, as a
   * transaction must be), SNAPSHOT or SERIALIZABLE, each of its calls through a random node; its
   * record goes to txnRecords for the isolation checker. It classifies its own outcome: aborted
   * when the commit certainly did not apply, unknown when its answer was lost.
   */
  async isolationTransaction(rng: Rng): Promise<void> {
    // Which buckets it covers, and whether it pauses so a split or merge lands inside it (txn-span.ts).
    const { keys, prefixes, pause } = isolationTxnScope(rng, this.keys.isolationBuckets, this.keys.isolationKeysPerBucket, (ms) => this.sleep(ms));
    const isolation = rng.chance(0.5) ? 'SERIALIZABLE' : 'SNAPSHOT';
    const beginInvokeMs = this.scheduler.now;
    const record = await runRandomTransaction(this.txnApiOver(new Rng(rng.nextUint32())), rng, {
      keys,
      prefixes,
      ...(pause !== undefined && { pause }),
      isolation,
      // Unused: rawCall builds each call's context (its deadline) on the node it goes to.
      context: () => ({ deadlineMs: 0 }),
      maxReads: 2,
      maxWrites: 2,
    });
    this.txnRecords.push(record);
    this.txnTimes.set(record.id, { beginInvokeMs, completeMs: this.scheduler.now });
    if (record.outcome !== 'committed') this.trace.add(`txn ${record.id} (${isolation}) ${record.outcome}: ${record.note ?? ''}`);
  }

  /**
   * A claim: a SERIALIZABLE transaction that reads the round's prefix and, if it is empty, takes
   * the round by writing its own key under it. At most one claim per round may commit. The claim
   * bucket is written only by claims, so each claim that read its round's whole prefix is also a
   * TxnRecord for the isolation checker (two claims of one round committing is a G2 phantom).
   */
  private async claim(process: number, rng: Rng, node: number): Promise<void> {
    const round = `${this.keys.claimBucket}/r${Math.floor(this.scheduler.now / 1_500)}/`;
    this.claimRounds.add(round);
    const id = `claim-${process}-${++this.claimCounter}`;
    const begun = await this.call(node, (api, context) => api.beginTransaction({ key: this.keys.claimBucket, isolation: 'serializable' }, context));
    if (!begun.ok) return;
    const handle = begun.value.transaction;
    const seen = await this.call(node, (api, context) => api.getByPrefix({ prefix: round, transaction: handle, limit: 10 }, context));
    // Not recorded unless the read saw the whole prefix (a partial one would claim false absences).
    if (!seen.ok || seen.value.nextPageToken !== '') return;
    const started = {
      id,
      isolation: 'SERIALIZABLE' as const,
      partition: begun.value.partition,
      snapshotRevision: begun.value.snapshotRevision,
      reads: [],
      prefixReads: [{ prefix: prefixBucket(round).keyPrefix, items: seen.value.items.map((item) => ({ key: item.key, modRevision: item.modRevision, value: decoder.decode(item.value) })) }],
    };
    if (seen.value.items.length > 0) {
      // Read-only: it commits nothing and is serialized at its snapshot.
      this.txnRecords.push({ ...started, outcome: 'committed', writes: [] });
      return;
    }
    // Two claimers reading the empty prefix at once is the race the read-prefix check must win.
    await this.sleep(rng.int(30));
    const key = `${round}p${process}`;
    // The value is the claim's id, so a later read names its writer.
    const outcome = await this.call(rng.chance(0.5) ? node : this.pickNode(rng), (api, context) =>
      api.commit({ transaction: handle, writes: [{ key, value: encoder.encode(id) }], readKeys: [], readPrefixes: [round] }, context),
    );
    const writes = [{ key, value: id }];
    if (outcome.ok) {
      this.txnRecords.push({ ...started, outcome: 'committed', writes, commitRevision: outcome.value.revision });
      const list = this.claimsCommitted.get(round) ?? [];
      list.push(process);
      this.claimsCommitted.set(round, list);
    } else {
      this.txnRecords.push({ ...started, outcome: outcome.definite ? 'aborted' : 'unknown', writes, note: `commit failed: ${outcome.error}` });
    }
  }

  /** A script that reads a register and writes a new value to it: a write over its call's interval. */
  private async script(process: number, rng: Rng, node: number): Promise<void> {
    const key = rng.pick(this.keys.registers);
    const value = this.nextValue('s');
    const op = this.history.invoke(process, 'write', key, value);
    const outcome = await this.call(node, (api, context) =>
      api.executeScript({ script: 'let old = get @k\nset @k @v\nreturn old', params: { k: JSON.stringify(key), v: JSON.stringify(value) } }, context),
    );
    if (outcome.ok && !outcome.value.committed) this.history.complete(op, 'fail', undefined, 'rolled back');
    else this.finishWrite(op, outcome);
  }
}
