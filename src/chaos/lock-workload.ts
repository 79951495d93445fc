/**
 * Lock workers in the fault suite (issue 21): a few workers take one lock (client.lock) over and
 * over through leader kills, pauses and partitions. Each holder writes the guarded key with its
 * fencing token (ifFence) a few times, then checks that its lock key is still there (its lease
 * lived through the section) and unlocks. Some holders abandon their lease instead (stop keeping
 * it alive without unlocking, as a stalled process would): the lock passes on within the TTL, and
 * such a holder writes once more after that with its old token, which the store must refuse
 * (FENCED) once a newer holder wrote. The lock checker (checkers/lock-history.ts) then judges the
 * grants, the accepted writes and the critical sections.
 *
 * The negative control `lock-skips-waiting` runs the workers with the client's test-only
 * testGrantWithoutWaiting (a lock that grants without waiting for its predecessor): holders whose
 * leases lived overlap, which the check must report.
 *
 * Bounds: each worker stops starting rounds at `untilMs` and runs at most 10,000 rounds; every
 * call has a timeout and every lock wait a deadline, so `finish` returns within about a lock TTL
 * and two timeouts of `untilMs`.
 */
import { performance } from 'node:perf_hooks';
import { AtollClient, type HeldLock } from '../client/index.js';
import { AtollError } from '../errors.js';
import { Rng } from '../raft/rng.js';
import { checkLockHistory, type AcceptedFencedWrite, type LockGrant, type LockVerdict } from './checkers/lock-history.js';

/** The client-side planted defect this module implements (not passed to the servers). */
export const LOCK_SKIP_BUG = 'lock-skips-waiting';

const LOCK_NAME = 'chaos';
const GUARDED_KEY = 'guarded/x';
const LOCK_TTL_MS = 4_000;
const OP_TIMEOUT_MS = 3_000;
const WRITES_PER_HOLD = 3;
const ABANDON_CHANCE = 0.15;
const MAX_ROUNDS = 10_000;
const LIVED_CHECK_ATTEMPTS = 4;

export interface LockWorkloadOptions {
  readonly endpoints: readonly string[];
  readonly workers: number;
  readonly seed: number;
  /** Workers start no round after this (performance.now() time). */
  readonly untilMs: number;
  readonly grantWithoutWaiting: boolean;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function codeOf(error: unknown): string | undefined {
  return error instanceof AtollError || (typeof error === 'object' && error !== null && 'code' in error) ? String((error as { code: unknown }).code) : undefined;
}

export class LockWorkload {
  private readonly client: AtollClient;
  private readonly stop = new AbortController();
  private readonly grants: LockGrant[] = [];
  private readonly accepted: AcceptedFencedWrite[] = [];
  private fenced = 0;
  private staleAccepted = 0;
  private unknownWrites = 0;
  private lockFailures = 0;
  /** Failed lock calls by error code (diagnostics for the run's output). */
  private readonly lockFailureCodes = new Map<string, number>();
  private readonly done: Promise<void>;

  private constructor(private readonly options: LockWorkloadOptions) {
    this.client = new AtollClient({ endpoints: [...options.endpoints], defaultTimeoutMs: 4_000 });
    this.done = Promise.all(Array.from({ length: options.workers }, (_, index) => this.runWorker(`w${index}`, new Rng(options.seed * 7 + index)))).then(() => undefined);
  }

  static start(options: LockWorkloadOptions): LockWorkload {
    return new LockWorkload(options);
  }

  /** Stops the workers without a verdict (a run that failed before its end). */
  close(): void {
    this.stop.abort();
    this.client.close();
  }

  /** Waits for the workers to end their rounds and judges what they saw. */
  async finish(): Promise<{ verdict: LockVerdict; lines: string[] }> {
    await this.done;
    this.client.close();
    const verdict = checkLockHistory({ grants: this.grants, accepted: this.accepted, fencedWrites: this.fenced });
    const { summary } = verdict;
    const lines = [
      `lock: ${summary.grants} grants (${summary.lived} lived, ${summary.lost} lost, ${summary.unchecked} unchecked), ${summary.acceptedWrites} fenced writes accepted, ${summary.fencedWrites} refused as FENCED, ${this.staleAccepted} stale writes accepted (no newer holder had written), ${this.unknownWrites} unknown, ${this.lockFailures} failed lock calls (${[...this.lockFailureCodes].map(([code, count]) => `${code} ${count}`).join(', ')})`,
    ];
    return { verdict, lines };
  }

  private async runWorker(worker: string, rng: Rng): Promise<void> {
    for (let round = 0; round < MAX_ROUNDS && performance.now() < this.options.untilMs && !this.stop.signal.aborted; round++) {
      let held: HeldLock;
      try {
        // A wait may not outlast the run by more than a TTL.
        const waitMs = Math.ceil(Math.max(1_000, this.options.untilMs - performance.now() + LOCK_TTL_MS));
        held = await this.client.lock(LOCK_NAME, {
          ttlMs: LOCK_TTL_MS,
          signal: AbortSignal.any([this.stop.signal, AbortSignal.timeout(waitMs)]),
          ...(this.options.grantWithoutWaiting && { testGrantWithoutWaiting: true }),
        });
      } catch (error) {
        this.lockFailures++;
        const code = codeOf(error) ?? String(error).slice(0, 80);
        this.lockFailureCodes.set(code, (this.lockFailureCodes.get(code) ?? 0) + 1);
        await sleep(50 + rng.int(100));
        continue;
      }
      const startMs = performance.now();
      const abandon = rng.chance(ABANDON_CHANCE);
      // Abandoning: no more keepalives and no unlock; the lease ends within the TTL.
      if (abandon) held.lease.close();
      for (let write = 0; write < (abandon ? 1 : WRITES_PER_HOLD); write++) await this.fencedWrite(worker, held.fencingToken, `${worker}:${held.fencingToken}:${write}`);
      if (abandon) {
        // Long enough for the lock to pass on and a newer holder to write: this write is stale.
        await sleep(LOCK_TTL_MS * 1.5);
        const acceptedBefore = this.accepted.length;
        await this.fencedWrite(worker, held.fencingToken, `${worker}:${held.fencingToken}:stale`);
        if (this.accepted.length > acceptedBefore) this.staleAccepted++;
      }
      const endMs = performance.now();
      // Present now means present throughout the section: a lock key never comes back. So a later
      // attempt (after a fault) answers the same question.
      let lived: boolean | undefined;
      for (let attempt = 0; attempt < LIVED_CHECK_ATTEMPTS && lived === undefined; attempt++) {
        try {
          lived = (await this.client.get(held.key, { timeoutMs: OP_TIMEOUT_MS })).found;
        } catch {
          await sleep(100);
        }
      }
      this.grants.push({ worker, token: held.fencingToken, grantRevision: held.grantRevision, startMs, endMs, lived });
      if (!abandon) {
        // An unlock that fails still stops the keepalives, so the lock passes on within the TTL.
        await held.unlock().catch(() => held.lease.close());
      }
      await sleep(rng.int(30));
    }
  }

  private async fencedWrite(worker: string, token: number, value: string): Promise<void> {
    try {
      const result = await this.client.put(GUARDED_KEY, value, { ifFence: token, timeoutMs: OP_TIMEOUT_MS });
      if (result.applied) this.accepted.push({ worker, token, revision: result.revision });
    } catch (error) {
      if (codeOf(error) === 'FENCED') this.fenced++;
      else this.unknownWrites++;
    }
  }
}
