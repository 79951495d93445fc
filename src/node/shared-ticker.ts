/**
 * One periodic timer for all of a node's periodic work (issue 18, idle cost): the Raft tick, the
 * lease round, maintenance, the replica-move sweeps and the member-table refresh each asked the
 * node's timers for an interval of their own, and each interval woke an idle process on its own
 * phase. A SharedTicker is a NodeTimers whose `every` puts every interval that is a whole multiple
 * of `baseMs` (the Raft tick) on ONE underlying interval: a job of k base periods runs on every
 * k-th firing, in registration order, in the same wake. Other intervals, `after` and `soon` go to
 * the underlying timers unchanged. A server's node runs on one (src/peer/grpc-node.ts); the
 * whole-node simulator keeps its own timers, whose jobs already fire at the same virtual instants.
 *
 * Invariants (test/node/shared-ticker.test.ts):
 * - The underlying interval is armed exactly while at least one coalesced job is registered.
 * - A job with period k runs once per k firings of the underlying interval (its first run after k
 *   firings, so at most one base period early), never after its handle is cancelled, and a job
 *   that throws neither stops the other jobs of that firing nor its own later runs: the first
 *   error is rethrown once every job of the firing ran, as a timer callback's error would be.
 */
import assert from 'node:assert/strict';
import type { NodeTimers, TimerHandle } from './ports.js';

interface Job {
  readonly periodFirings: number;
  readonly run: () => void;
  /** Firings since this job last ran (or was registered). */
  count: number;
}

export class SharedTicker implements NodeTimers {
  private readonly jobs = new Set<Job>();
  private base: TimerHandle | undefined;
  /** Firings of the underlying interval so far (tests and diagnostics). */
  firings = 0;

  constructor(
    private readonly timers: NodeTimers,
    private readonly baseMs: number,
  ) {
    assert(Number.isFinite(baseMs) && baseMs > 0, 'the shared period must be a positive number of ms');
  }

  every(intervalMs: number, run: () => void): TimerHandle {
    const periodFirings = intervalMs / this.baseMs;
    // Not a whole multiple of the tick: its own interval, as before.
    if (!Number.isInteger(periodFirings) || periodFirings < 1) return this.timers.every(intervalMs, run);
    const job: Job = { periodFirings, run, count: 0 };
    this.jobs.add(job);
    this.base ??= this.timers.every(this.baseMs, () => this.fire());
    return {
      cancel: () => {
        if (!this.jobs.delete(job) || this.jobs.size > 0) return;
        this.base?.cancel();
        this.base = undefined;
      },
    };
  }

  after(delayMs: number, run: () => void): TimerHandle {
    return this.timers.after(delayMs, run);
  }

  soon(run: () => void): void {
    this.timers.soon(run);
  }

  /** Jobs on the shared interval (tests). */
  get jobCount(): number {
    return this.jobs.size;
  }

  /** Whether the underlying interval is armed: exactly when a job is registered. */
  get armed(): boolean {
    assert.equal(this.base !== undefined, this.jobs.size > 0, 'the shared interval runs exactly while jobs are registered');
    return this.base !== undefined;
  }

  private fire(): void {
    this.firings++;
    let failure: { error: unknown } | undefined;
    // A snapshot: a job may cancel itself or register another while it runs.
    for (const job of [...this.jobs]) {
      if (!this.jobs.has(job) || ++job.count < job.periodFirings) continue;
      job.count = 0;
      try {
        job.run();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure !== undefined) throw failure.error;
  }
}
