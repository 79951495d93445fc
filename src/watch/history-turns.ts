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
 * - 0 <= running <= concurrent, and a watcher waits only while running == concurrent: a freed
 *   turn goes to the next waiter in the same step, and a waiter that is aborted leaves the line.
 * - `waiting` holds a non-empty queue per tenant with waiters, in the order the tenants are next
 *   served (a tenant served goes to the back when it still has waiters).
 *
 * SendPacer. The watchers of a node together send for at most PACE_MS between two turns of the
 * event loop (plus one message): a watcher asks `due()` after each message of a batch and awaits
 * `pause()` when it is due; paused watchers go on in the loop's next turn, after its I/O (Raft
 * messages, client requests, timers). The hold starts at the first `due()` after the last marker
 * and a marker queued then ends it at the next turn, as with scripts (script-scheduler.ts). In the
 * simulator the clock stands still within an event, so nothing is ever due.
 */
import assert from 'node:assert/strict';

/** Watchers together send for at most this long between two turns of the loop (plus one message). */
export const PACE_MS = 2;

interface Waiter {
  readonly grant: (release: (() => void) | undefined) => void;
  readonly signal: AbortSignal;
  readonly onAbort: () => void;
}

export class HistoryReadLine {
  private running = 0;
  private readonly waiting = new Map<string, Waiter[]>();

  constructor(private readonly concurrent: number) {
    assert(Number.isSafeInteger(concurrent) && concurrent >= 1, 'concurrent history reads must be a positive integer');
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
   * A turn for one read of `tenant`'s watcher: resolves with its release (call it once the read
   * ended, whatever its outcome), or undefined when `signal` aborted first.
   */
  turn(tenant: string, signal: AbortSignal): Promise<(() => void) | undefined> {
    if (signal.aborted) return Promise.resolve(undefined);
    if (this.running < this.concurrent) return Promise.resolve(this.open());
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
    });
  }

  private open(): () => void {
    this.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      assert(this.running > 0, 'a release matches a turn');
      this.running--;
      this.next();
    };
  }

  /** A turn is free: the tenant first in line gets it, and goes to the back if it waits for more. */
  private next(): void {
    const first = this.waiting.entries().next();
    if (first.done === true) return;
    const [tenant, queue] = first.value;
    const waiter = queue.shift()!;
    this.waiting.delete(tenant);
    if (queue.length > 0) this.waiting.set(tenant, queue);
    waiter.signal.removeEventListener('abort', waiter.onAbort);
    waiter.grant(this.open());
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
