/**
 * Watchers share the node's event loop (issue 33): reads of retained history take turns, and the
 * messages of a batch are sent in bounded slices.
 *
 * Found by the hostile load run: 200 watches from revision 0 opened at once, each reading 4 MiB of
 * history (LevelDB's iterator, then one gRPC message per revision, serialised as it is written).
 * Every admitted watcher read and sent at once, so for about a second the loop of each leader had
 * a queue of read callbacks and serialisations ahead of every other request, and an ordinary
 * tenant's p99 went to 860 ms with watches as the only attack.
 *
 * HistoryReadLine. At most `concurrent` reads of history (changesSince) run at a node at once; a
 * watcher that wants one waits in line for its turn, without holding anything the loop waits for.
 * Tenants take turns: the line serves the tenant that waited longest for its next read, one read
 * each, so one tenant's hundred watchers delay another tenant's watcher by at most `concurrent`
 * reads, not by a hundred. A turn covers the read only, not the sending of what was read: a
 * watcher whose client does not read its stream waits for it without a turn.
 * Invariants:
 * - 0 <= running <= concurrent, and a watcher waits only while running == concurrent or its
 *   tenant is in debt: a freed turn goes to the next waiter with allowance in the same step, a
 *   timer is armed while turns are free and every waiting tenant is in debt, and a waiter that is
 *   aborted leaves the line.
 * - `waiting` holds a non-empty queue per tenant with waiters, in the order the tenants are next
 *   served (a tenant served goes to the back when it still has waiters).
 *
 * A tenant's reads are also paced in bytes (a token bucket per tenant at the node: bytesPerSecond,
 * burstBytes, read after the read as debt): a tenant whose reads outran its rate waits for its
 * next turn until the debt is paid, while other tenants' reads go on. The work of reading history
 * (LevelDB's iterator, a copy per value, the collector) grows with the bytes, so this bounds the
 * share of the loop one tenant's catch-ups take, however many watches it opens.
 *
 * SendPacer. The watchers of a node together send for at most PACE_MS between two turns of the
 * event loop (plus one message): a watcher asks `due()` after each message of a batch and awaits
 * `pause()` when it is due; paused watchers go on in the loop's next turn, after its I/O (Raft
 * messages, client requests, timers). The hold starts at the first `due()` after the last marker
 * and a marker queued then ends it at the next turn, as with scripts (script-scheduler.ts). In the
 * simulator the clock stands still within an event, so nothing is ever due.
 */
import assert from 'node:assert/strict';
import type { CallSignal } from '../api/call-signal.js';

/** Watchers together send for at most this long between two turns of the loop (plus one message). */
export const PACE_MS = 2;

interface Waiter {
  readonly grant: (release: ((bytesRead: number) => void) | undefined) => void;
  readonly signal: CallSignal;
  readonly onAbort: () => void;
}

/** A tenant's allowance of history bytes at this node: a token bucket that may go into debt. */
interface Allowance {
  bytes: number;
  atMs: number;
}

export interface HistoryReadLineOptions {
  /** Reads that run at once. */
  readonly concurrent: number;
  /** A tenant's history bytes a second at this node, and its burst. */
  readonly bytesPerSecond: number;
  readonly burstBytes: number;
  /** Monotonic milliseconds (the node's clock port). */
  readonly nowMs: () => number;
  /** Runs `run` after `ms` (the node's timers port). */
  readonly after: (ms: number, run: () => void) => { cancel(): void };
}

/** Allowances remembered; full ones are forgotten past this (a full allowance is the default). */
const maxRememberedTenants = 1_000;

export class HistoryReadLine {
  private running = 0;
  private readonly waiting = new Map<string, Waiter[]>();
  private readonly allowances = new Map<string, Allowance>();
  private wake: { cancel(): void } | undefined;

  constructor(private readonly options: HistoryReadLineOptions) {
    assert(Number.isSafeInteger(options.concurrent) && options.concurrent >= 1, 'concurrent history reads must be a positive integer');
    assert(options.bytesPerSecond > 0 && options.burstBytes > 0, 'the history byte rate and burst must be positive');
  }

  /** Reads running now (tests, metrics). */
  get reading(): number {
    return this.running;
  }

  /** Watchers waiting for a turn (tests, metrics). */
  get queued(): number {
    let count = 0;
    for (const queue of this.waiting.values()) count += queue.length;
    return count;
  }

  /**
   * A turn for one read of `tenant`'s watcher: resolves with its release (call it once with the
   * bytes the read returned, whatever its outcome), or undefined when `signal` aborted first.
   */
  turn(tenant: string, signal: CallSignal): Promise<((bytesRead: number) => void) | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    if (this.running < this.options.concurrent && !this.waiting.has(tenant) && this.allowed(tenant)) return Promise.resolve(this.open(tenant));
    return new Promise((grant) => {
      const onAbort = (): void => {
        const queue = this.waiting.get(tenant);
        const index = queue?.indexOf(waiter) ?? -1;
        if (queue === undefined || index < 0) return;
        queue.splice(index, 1);
        if (queue.length === 0) this.waiting.delete(tenant);
        grant(undefined);
      };
      const waiter: Waiter = { grant, signal, onAbort };
      signal.addEventListener('abort', onAbort, { once: true });
      const queue = this.waiting.get(tenant);
      if (queue === undefined) this.waiting.set(tenant, [waiter]);
      else queue.push(waiter);
      this.next();
    });
  }

  /** Refills `tenant`'s allowance to now; true when it has some left (a read may start). */
  private allowed(tenant: string): boolean {
    const allowance = this.allowances.get(tenant);
    if (allowance === undefined) return true;
    const nowMs = this.options.nowMs();
    allowance.bytes = Math.min(this.options.burstBytes, allowance.bytes + ((nowMs - allowance.atMs) * this.options.bytesPerSecond) / 1000);
    allowance.atMs = nowMs;
    if (allowance.bytes >= this.options.burstBytes && this.allowances.size > maxRememberedTenants) this.allowances.delete(tenant);
    return allowance.bytes > 0;
  }

  private open(tenant: string): (bytesRead: number) => void {
    this.running++;
    let released = false;
    return (bytesRead) => {
      if (released) return;
      released = true;
      assert(this.running > 0, 'a release matches a turn');
      this.running--;
      this.allowed(tenant);
      const allowance = this.allowances.get(tenant) ?? { bytes: this.options.burstBytes, atMs: this.options.nowMs() };
      allowance.bytes -= bytesRead;
      this.allowances.set(tenant, allowance);
      this.next();
    };
  }

  /**
   * Turns are free or allowances grew: the tenants first in line that have allowance left get
   * them, each going to the back if it waits for more; when every waiting tenant is in debt, a
   * timer wakes the line once the first of them is out of it.
   */
  private next(): void {
    this.wake?.cancel();
    this.wake = undefined;
    let soonestMs = Infinity;
    for (const [tenant, queue] of [...this.waiting]) {
      if (this.running >= this.options.concurrent) return;
      if (!this.allowed(tenant)) {
        const debt = -(this.allowances.get(tenant)?.bytes ?? 0);
        soonestMs = Math.min(soonestMs, ((debt + 1) * 1000) / this.options.bytesPerSecond);
        continue;
      }
      const waiter = queue.shift()!;
      this.waiting.delete(tenant);
      if (queue.length > 0) this.waiting.set(tenant, queue);
      waiter.signal.removeEventListener('abort', waiter.onAbort);
      waiter.grant(this.open(tenant));
    }
    if (soonestMs < Infinity && this.running < this.options.concurrent) this.wake = this.options.after(Math.max(1, Math.ceil(soonestMs)), () => this.next());
  }
}

export class SendPacer {
  private holding = false;
  private holdStartMs = 0;
  private paused: Array<() => void> = [];
  private resumeQueued = false;

  constructor(
    private readonly nowMs: () => number,
    /** Runs `run` on the loop's next turn, after its I/O (the node's timers.soon). */
    private readonly nextTurn: (run: () => void) => void,
    private readonly paceMs: number = PACE_MS,
  ) {}

  /** Whether the watchers have sent for paceMs since the loop last turned: the caller should pause. */
  due(): boolean {
    const now = this.nowMs();
    if (!this.holding) {
      this.holding = true;
      this.holdStartMs = now;
      // The marker ends the hold once the loop turned.
      this.nextTurn(() => (this.holding = false));
      return false;
    }
    return now - this.holdStartMs >= this.paceMs;
  }

  /** Resolves on a later turn of the loop, after its I/O. */
  pause(): Promise<void> {
    return new Promise((resume) => {
      this.paused.push(resume);
      if (this.resumeQueued) return;
      this.resumeQueued = true;
      this.nextTurn(() => {
        this.resumeQueued = false;
        const resumed = this.paused;
        this.paused = [];
        for (const go of resumed) go();
      });
    });
  }
}
