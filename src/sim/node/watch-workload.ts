/**
 * The simulated watch clients (issue 32): a few watches per seed, each on one register key or one
 * register bucket, linearizable or stale, from a revision or from now, through any node's
 * NodeApi.watch with a WatchSink, as the gRPC service calls it. Like the real client
 * (src/client/atoll-client.ts watch()) a watch always asks for progress messages and, after every
 * error (NOT_LEADER/NO_LEADER with or without a hint, PARTITION_MOVED after a split or a merge,
 * its node crashing, a replica move, WATCH_OVERFLOW from a sink that stops draining, or the client
 * its node dying), resumes after the last revision it received, event or progress, at the
 * hinted leader or another node. Final codes (COMPACTED, FUTURE_REVISION, ...) end it.
 *
 * Bounded: WATCHES_PER_SEED watches, MAX_ATTEMPTS attempts each; finish() (after the final reads)
 * waits, bounded, until every open watch has received the current revision of its partition, then
 * cancels them all, so no watch runs into the final checks. Everything each watch received is in
 * its WatchRecord for the watch checker (watch-checker.ts).
 *
 * Its randomness is its own stream (seeded from the seed): the other streams' draws stay as they were.
 */
import { isAtollError } from '../../errors.js';
import type { CallContext, WatchMessage, WatchRequest, WatchSink } from '../../api/node-api.js';
import { Rng } from '../../raft/rng.js';
import { isLoopLivenessError } from './loop-liveness.js';
import type { Scheduler } from './scheduler.js';
import type { SimCluster } from './sim-cluster.js';
import type { Trace } from './trace.js';
import type { WorkloadKeys } from './workload.js';

/** Watches per seed (a scenario may pin another count; 0 turns them off). */
export const WATCHES_PER_SEED = 4;
/** Attempts (the first and every resume) of one watch. */
const MAX_ATTEMPTS = 80;
/** The client checks its node this often (a connection drops when its node dies). */
const NODE_CHECK_MS = 250;
/** How long finish() waits for a watch to receive its partition's current revision. */
const CATCH_UP_BOUND_MS = 8_000;

/** Codes after which the watch cannot continue (the client's finalWatchCodes). */
const finalCodes = new Set(['INVALID_ARGUMENT', 'INVALID_KEY', 'KEY_TOO_LARGE', 'PREFIX_SPANS_BUCKETS', 'COMPACTED', 'FUTURE_REVISION', 'UNAUTHENTICATED', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED']);

const decoder = new TextDecoder();

export type WatchTargetSpec = { readonly key: string } | { readonly prefix: string };

export interface ReceivedEvent {
  readonly type: 'put' | 'delete';
  readonly key: string;
  readonly revision: number;
  /** The put's value; null for a delete. */
  readonly value: string | null;
}

export interface ReceivedMessage {
  readonly revision: number;
  readonly progress: boolean;
  readonly events: readonly ReceivedEvent[];
  readonly attempt: number;
  readonly node: number;
  readonly atMs: number;
}

export interface WatchRecord {
  readonly id: string;
  readonly target: WatchTargetSpec;
  readonly stale: boolean;
  /** The requested start (from a revision), or undefined (from now: the first message names it). */
  readonly requestedStart: number | undefined;
  /** The revision after which the watch reports: requested, or the first message's. */
  startRevision: number | undefined;
  /** The last revision received (event or progress): where the next attempt resumes. */
  lastRevision: number | undefined;
  readonly messages: ReceivedMessage[];
  attempts: number;
  /** Why each attempt ended: `CODE@n<node>` (the node it ran on). */
  readonly endings: string[];
  /** Why the watch stopped: 'finished' (finish() cancelled it), or a final code, 'attempts', 'loop-liveness'. */
  ended: string | undefined;
  /** Set by finish(): the partition revision it had to reach, and whether it did. */
  finalRevision: number | undefined;
  caughtUp: boolean | undefined;
}

/** An acknowledged write of a register key with the revision its answer gave. */
export interface AckedWrite {
  readonly key: string;
  /** The value written; null for a delete. */
  readonly value: string | null;
  readonly revision: number;
}

export function targetDescription(target: WatchTargetSpec): string {
  return 'key' in target ? `key ${target.key}` : `prefix ${target.prefix}`;
}

export class WatchWorkload {
  readonly records: WatchRecord[] = [];
  /** Acknowledged register writes (put, cas, delete) with their revisions (workload.ts reports them). */
  readonly acked: AckedWrite[] = [];
  private stopped = false;
  private readonly running: Array<Promise<void>> = [];
  private readonly stoppers = new Set<() => void>();
  private readonly rng: Rng;

  constructor(
    private readonly scheduler: Scheduler,
    private readonly cluster: SimCluster,
    private readonly trace: Trace,
    private readonly keys: WorkloadKeys,
    seed: number,
    private readonly count: number,
  ) {
    this.rng = new Rng(seed * 4_099 + 31);
  }

  /** Starts the watches at times drawn in [0, startBeforeMs). */
  start(startBeforeMs: number): void {
    for (let i = 0; i < this.count; i++) {
      const rng = new Rng(this.rng.nextUint32());
      const target: WatchTargetSpec = rng.chance(0.5) ? { key: rng.pick(this.keys.registers) } : { prefix: rng.pick(this.keys.registerBuckets) };
      const stale = rng.chance(0.4);
      const fromRevision = rng.chance(0.5);
      const atMs = 200 + rng.int(Math.max(1, startBeforeMs - 200));
      const record: WatchRecord = {
        id: `w${i + 1}`,
        target,
        stale,
        requestedStart: undefined,
        startRevision: undefined,
        lastRevision: undefined,
        messages: [],
        attempts: 0,
        endings: [],
        ended: undefined,
        finalRevision: undefined,
        caughtUp: undefined,
      };
      this.running.push(this.sleep(atMs).then(() => this.runWatch(record, rng, fromRevision)));
    }
  }

  /** A write of a register key was acknowledged at `revision` (workload.ts's hook). */
  writeAcked(key: string, value: string | null, revision: number): void {
    this.acked.push({ key, value, revision });
  }

  /**
   * Once the writes settled: waits (bounded) until every open watch received the current revision
   * of its partition (a linearizable read's), then ends every watch.
   */
  async finish(): Promise<void> {
    const giveUpAt = this.scheduler.now + CATCH_UP_BOUND_MS;
    for (const record of this.records) {
      if (record.ended !== undefined) continue;
      let revision: number | undefined;
      for (let turn = 0; revision === undefined && this.scheduler.now < giveUpAt; turn++) {
        revision = await this.currentRevision(record.target, this.cluster.nodeIds[turn % this.cluster.nodeIds.length] as number);
        if (revision === undefined) await this.sleep(100);
      }
      if (revision === undefined) continue;
      record.finalRevision = revision;
      while (record.ended === undefined && (record.lastRevision ?? -1) < revision && this.scheduler.now < giveUpAt) await this.sleep(50);
      record.caughtUp = (record.lastRevision ?? -1) >= revision;
    }
    this.stopped = true;
    for (const stop of [...this.stoppers]) stop();
    await Promise.all(this.running);
    for (const record of this.records) {
      const events = record.messages.reduce((sum, message) => sum + message.events.length, 0);
      const codes = new Map<string, number>();
      for (const ending of record.endings) {
        const code = ending.split('@')[0] as string;
        codes.set(code, (codes.get(code) ?? 0) + 1);
      }
      this.trace.add(
        `watch ${record.id} done: ${targetDescription(record.target)}${record.stale ? ' stale' : ''}, (${record.startRevision ?? '-'}, ${record.lastRevision ?? '-'}], ` +
          `${record.messages.length} messages, ${events} events, ${record.attempts} attempts [${[...codes].map(([code, n]) => `${code}x${n}`).join(' ')}], ended ${record.ended}, caught up ${record.caughtUp ?? '-'}`,
      );
    }
  }

  private sleep(ms: number): Promise<void> {
    return new Promise<void>((resolve) => this.scheduler.after(ms, resolve));
  }

  private async currentRevision(target: WatchTargetSpec, node: number): Promise<number | undefined> {
    const api = this.cluster.apiOf(node);
    const host = this.cluster.hostOf(node);
    if (api === undefined || host === undefined) return undefined;
    const context: CallContext = { deadlineMs: host.clock.wallMs() + 2_000 };
    const read = 'key' in target ? api.get({ key: target.key }, context) : api.getByPrefix({ prefix: target.prefix, limit: 1 }, context);
    const timeout = this.sleep(3_000).then(() => undefined);
    return Promise.race([read.then((answer) => (host.alive ? answer.revision : undefined), () => undefined), timeout]);
  }

  private async runWatch(record: WatchRecord, rng: Rng, fromRevision: boolean): Promise<void> {
    if (this.stopped) return;
    const nodes = (): readonly number[] => this.cluster.nodeIds;
    let requestedStart: number | undefined;
    if (fromRevision) {
      // From a revision a little in the past: one the partition had (a read's), minus a few.
      const now = await this.currentRevision(record.target, rng.pick(nodes()));
      if (now !== undefined) requestedStart = Math.max(0, now - rng.int(12));
    }
    Object.assign(record, { requestedStart });
    record.startRevision = requestedStart;
    record.lastRevision = requestedStart;
    this.records.push(record);
    this.trace.add(`watch ${record.id}: ${targetDescription(record.target)}${record.stale ? ' stale' : ''} from ${requestedStart ?? 'now'}`);
    let hinted: number | undefined;
    let failures = 0;
    while (!this.stopped && record.attempts < MAX_ATTEMPTS) {
      const node = hinted ?? rng.pick(nodes());
      hinted = undefined;
      record.attempts++;
      const ending = await this.attempt(record, node, rng);
      record.endings.push(`${ending.code}@n${node}`);
      this.trace.add(`watch ${record.id} attempt ${record.attempts} at n${node} ended ${ending.code}, resumes after ${record.lastRevision ?? 'now'}`);
      if (this.stopped) break;
      if (ending.code === 'LOOP_LIVENESS') {
        record.ended = 'loop-liveness';
        return;
      }
      if (finalCodes.has(ending.code)) {
        record.ended = ending.code;
        this.trace.add(`watch ${record.id}: ended by ${ending.code} (${ending.message})`);
        return;
      }
      hinted = ending.hint;
      failures = ending.delivered ? 1 : failures + 1;
      await this.sleep(hinted !== undefined && failures <= 1 ? rng.int(10) : Math.min(1_000, 50 * failures) + rng.int(100));
    }
    record.ended ??= this.stopped ? 'finished' : 'attempts';
  }

  /** One watch call through `node` until it fails, the client gives up on it, or finish() stops it. */
  private attempt(record: WatchRecord, node: number, rng: Rng): Promise<{ code: string; message: string; hint?: number; delivered: boolean }> {
    const api = this.cluster.apiOf(node);
    const host = this.cluster.hostOf(node);
    if (api === undefined || host === undefined) return Promise.resolve({ code: 'UNAVAILABLE', message: `node ${node} is down`, delivered: false });
    const attempt = record.attempts;
    const request: WatchRequest = {
      ...record.target,
      ...(record.lastRevision !== undefined && { startRevision: record.lastRevision }),
      progress: true,
      ...(record.stale && { stale: true }),
    };
    const controller = new AbortController();
    // A slow reader (one attempt in six): after a few messages its buffer is "full" and it does not
    // drain, so the node cancels the watch with WATCH_OVERFLOW after watchStallMs.
    const stallAfter = rng.chance(1 / 6) ? 1 + rng.int(4) : Infinity;
    let written = 0;
    let delivered = false;
    const sink: WatchSink = {
      write: (message: WatchMessage): boolean => {
        if (!host.alive || controller.signal.aborted) return true;
        this.receive(record, message, attempt, node);
        delivered = true;
        written++;
        return written < stallAfter;
      },
      drained: (ms: number): Promise<boolean> => new Promise<boolean>((resolve) => this.scheduler.after(ms, () => resolve(false))),
    };
    return new Promise((resolve) => {
      let done = false;
      const timers: Array<{ cancel(): void }> = [];
      const finish = (code: string, message: string, hint?: number): void => {
        if (done) return;
        done = true;
        for (const timer of timers) timer.cancel();
        this.stoppers.delete(stop);
        controller.abort();
        resolve({ code, message, ...(hint !== undefined && { hint }), delivered });
      };
      const stop = (): void => finish('CANCELLED', 'finished');
      this.stoppers.add(stop);
      // The client notices its node's death (the connection drops). Like the real client it never
      // ends an attempt on its own: a watch stuck on a replica that is no longer fed stays stuck
      // (catches-up fails), as a real client's would.
      const check = (): void => {
        if (!host.alive || this.cluster.hostOf(node) !== host) return finish('UNAVAILABLE', `node ${node} went away`);
        timers.push(this.scheduler.after(NODE_CHECK_MS, check));
      };
      timers.push(this.scheduler.after(NODE_CHECK_MS, check));
      let call: Promise<void>;
      try {
        call = api.watch(request, { deadlineMs: host.clock.wallMs() + 3_600_000, signal: controller.signal }, sink);
      } catch (error) {
        call = Promise.reject(error);
      }
      call.then(
        () => finish('ENDED', 'the watch call returned'),
        (error: unknown) => {
          if (isLoopLivenessError(error)) {
            error.attribute(`watch ${record.id} (${targetDescription(record.target)}${record.stale ? ', stale' : ''}) at node ${node}`);
            return finish('LOOP_LIVENESS', error.message);
          }
          if (!host.alive) return finish('UNAVAILABLE', `node ${node} died`);
          if (!isAtollError(error)) return finish('INTERNAL', String(error));
          const hint = (error.details?.['leaderHint'] as { nodeId?: number } | undefined)?.nodeId;
          finish(error.code, error.message, hint);
        },
      );
    });
  }

  private receive(record: WatchRecord, message: WatchMessage, attempt: number, node: number): void {
    const events = message.events.map((event) => ({
      type: event.type,
      key: event.key,
      revision: event.revision,
      value: event.type === 'put' ? decoder.decode(event.value) : null,
    }));
    record.messages.push({ revision: message.revision, progress: message.progress, events, attempt, node, atMs: this.scheduler.now });
    record.startRevision ??= message.revision;
    record.lastRevision = message.revision;
  }
}
