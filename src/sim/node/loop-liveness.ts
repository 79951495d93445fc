/**
 * Event-loop liveness (issue 32): a simulated node must never run a task that does not yield.
 *
 * Why a probe: the scheduler (scheduler.ts) runs one event, then lets its promise continuations
 * settle (setImmediate) before the next. A task that loops without ever awaiting a timer, whether
 * synchronously or through a chain of already-resolved promises, never lets settle() return: the
 * whole run hangs, and no checker ever runs. Such a loop cannot be interrupted from outside, only
 * from a call it makes on each turn. So the probe counts the calls of the loops' known turns per
 * scheduler event (the event being run is `scheduler.executed`): a watcher's turn reads its hub
 * (WatchHub.since) or its store's history (MvccStore.changesSince). Past STEP_BUDGET turns in one
 * event, the call throws a LoopLivenessError, which ends the loop (the watch fails with it, the
 * simulated client attributes it to its watch and node) and the seed fails
 * loop-liveness/task-yields naming the task.
 *
 * The wrappers are installed on the classes' prototypes once, and do nothing but call through
 * unless a run made its probe active (runNodeSeed, for the length of the run; runs in one process
 * are sequential). The simulator stays pure: no timers, no I/O of its own.
 */
import { MvccStore } from '../../mvcc/index.js';
import { WatchHub } from '../../watch/watch-hub.js';
import type { CheckFailure } from './node-checkers.js';
import type { Scheduler } from './scheduler.js';

/**
 * Turns of the probed loops allowed in ONE scheduler event, all watchers of all nodes together.
 * Safe: a watcher that is not spinning reads its hub or the store at most once per revision its
 * partition applies (then it sends and waits for the next publish or timer), plus once per wake;
 * a seed runs at most a handful of watchers, and one event applies at most one Raft batch per
 * node (hundreds of entries at the very most). So honest watchers stay orders of magnitude below
 * 20,000 turns per event, while a spinning one reaches it in milliseconds of real time.
 */
export const STEP_BUDGET = 20_000;

export class LoopLivenessError extends Error {
  private where: string | undefined;

  constructor(
    readonly task: string,
    readonly atMs: number,
    readonly event: number,
  ) {
    super(`a task ran ${STEP_BUDGET} turns of ${task} in one event (event ${event}, at ${atMs.toFixed(0)} ms) without yielding to the event loop`);
  }

  /** Who ran it, when the caller knows (the watch client: its watch and node). */
  attribute(where: string): void {
    this.where ??= where;
  }

  get description(): string {
    return `${this.where ?? 'an unattributed task'}: ${this.message}`;
  }
}

export function isLoopLivenessError(error: unknown): error is LoopLivenessError {
  return error instanceof LoopLivenessError;
}

export class LoopProbe {
  private event = -1;
  private turns = 0;
  /** One per event that ran out of its budget. */
  readonly errors: LoopLivenessError[] = [];

  constructor(private readonly scheduler: Scheduler) {}

  /** One turn of `task`; throws past the budget (and on every later turn of that event). */
  turn(task: () => string): void {
    if (this.scheduler.executed !== this.event) {
      this.event = this.scheduler.executed;
      this.turns = 0;
    }
    if (++this.turns <= STEP_BUDGET) return;
    const error = new LoopLivenessError(task(), this.scheduler.now, this.event);
    if (this.turns === STEP_BUDGET + 1) this.errors.push(error);
    throw this.errors[this.errors.length - 1] ?? error;
  }

  failures(): CheckFailure[] {
    return this.errors.slice(0, 3).map((error) => ({ checker: 'loop-liveness' as const, invariant: 'task-yields', message: error.description }));
  }
}

let active: LoopProbe | undefined;
let installed = false;

/** Makes `probe` the one the wrappers report to until the returned function is called. */
export function activateProbe(probe: LoopProbe): () => void {
  install();
  active = probe;
  return () => {
    if (active === probe) active = undefined;
  };
}

function install(): void {
  if (installed) return;
  installed = true;
  const since = WatchHub.prototype.since;
  WatchHub.prototype.since = function (this: WatchHub, after: number) {
    active?.turn(() => `a watcher's loop (WatchHub.since(${after}) with the hub at floor ${this.floor}, top ${this.top})`);
    return since.call(this, after);
  };
  const changesSince = MvccStore.prototype.changesSince;
  MvccStore.prototype.changesSince = function (this: MvccStore, ...args: Parameters<MvccStore['changesSince']>) {
    active?.turn(() => `a watcher's loop (MvccStore.changesSince(after ${args[1]}) with the store at revision ${this.revision})`);
    return changesSince.apply(this, args);
  };
}
