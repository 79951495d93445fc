/**
 * Scripts share the node's event loop (issue 33, finding 2). A script may use its whole time
 * budget (maxScriptMs), but never in one piece: the evaluator asks `due()` before every step and
 * between the pieces of a long operation (src/script/pacing.ts), and when scripts have held the
 * loop for TURN_MS since it last turned, it awaits `pause()`. Paused scripts go on in a later turn
 * of the loop (after its I/O: Raft messages, client requests, timers), one after the other, the
 * one that has used the least time first: the next goes on when the one before pauses or ends, if
 * the turn is not used up; the rest wait for the next turn. So between two turns of the loop
 * scripts run for about TURN_MS plus one step, however many run. A turn whose hold was used up is
 * followed by a rest of REST_PER_HOLD times the hold before the next one starts (a timer, then the
 * turn): while scripts run back to back they have at most a quarter of the loop.
 *
 * What counts as a turn: `nextTurn` (setImmediate) runs after the loop's I/O. A hold starts the
 * first time a script asks `due()` after the last marker, and a marker queued then ends it at the
 * next check phase; the resumed batch starts a hold of its own. In the simulator the clock stands
 * still within an event, so no script is ever due and nothing is paused: its schedule is unchanged.
 *
 * Admission, before a script runs: at most maxScriptsPerNode scripts run at a node, and at most
 * maxScriptsPerTenant of one tenant; more wait in one line, in order of arrival (a script whose
 * tenant is at its bound lets later ones of other tenants pass), at most
 * maxPendingRequestsPerPartition of one tenant (else RESOURCE_EXHAUSTED, reason
 * script-concurrency) and maxPendingRequestsPerNode in all (else OVERLOADED, which clients retry).
 * A tenant's budget of script time, scriptCpuBurstMs that refills at scriptCpuMsPerSecond, must not
 * be spent when a script arrives or leaves the line (else QUOTA_EXCEEDED, reason script-cpu: a rate
 * quota like the request rate's). All three travel as gRPC RESOURCE_EXHAUSTED, the reason as
 * `atoll-reason` on unary calls (KV.Stream answers carry the code and message only). A script's
 * time is what it held the loop: from each resume to its next pause or its end, the reads it
 * awaited in between included. A running script is never cut off by the budget, it only goes into
 * debt: a tenant can run at most maxScriptsPerTenant scripts of maxScriptMs before the debt stops
 * it, and then the refill rate is its share of the loop. A script waiting in line costs no time,
 * only its place (its request is held by the server anyway).
 *
 * A slot holds nothing the Raft loop waits for: only its place in these counts.
 */
import { AtollError } from '../../errors.js';
import type { Limits } from '../../limits.js';
import type { ScriptTurns } from '../../script/index.js';

/** Scripts together hold the loop at most this long between two of its turns (plus one step). */
export const TURN_MS = 5;
/**
 * Scripts that have used up a hold get the loop back only after the rest of the node had this many
 * times the hold's length (a duty cycle: scripts take at most a quarter of the loop's time while
 * they run back to back, and every request waits at most one hold per turn of the loop). Found by
 * the hostile load run: resuming on the very next turn let five long scripts take the loop of their
 * node 5 ms of every turn, which is nearly all of it when the turns are short, and an ordinary
 * tenant's requests at that node, each a few turns, waited 60 ms at the median.
 */
export const REST_PER_HOLD = 3;
/** Tenants remembered with a budget not yet refilled; idle full ones are forgotten past this. */
const maxRememberedTenants = 1_000;

interface TenantScripts {
  running: number;
  /** Its scripts waiting in line for a slot. */
  waiting: number;
  /** Script time left, in ms: may go below zero (debt). */
  budgetMs: number;
  /** When budgetMs was last refilled (monotonic). */
  atMs: number;
}

interface Waiter {
  readonly slot: ScriptSlot;
  readonly seq: number;
  /** Lets the script go on; `first`: it is the first of a turn, which always goes on. */
  readonly resume: (first: boolean) => void;
}

/** A script waiting in line for a slot. */
interface Arrival {
  readonly tenant: TenantScripts;
  readonly admit: (slot: ScriptSlot) => void;
  readonly refuse: (error: AtollError) => void;
}

export interface ScriptSchedulerOptions {
  readonly limits: Pick<
    Limits,
    'maxScriptsPerNode' | 'maxScriptsPerTenant' | 'scriptCpuMsPerSecond' | 'scriptCpuBurstMs' | 'maxPendingRequestsPerPartition' | 'maxPendingRequestsPerNode'
  >;
  /** Monotonic milliseconds (the node's clock port). */
  readonly nowMs: () => number;
  /** Runs `run` on a later turn of the event loop, after its I/O (default setImmediate). */
  readonly nextTurn?: (run: () => void) => void;
  /** Default TURN_MS. */
  readonly turnMs?: number;
  /** Runs `run` after `ms` (default setTimeout): the rest after a used-up hold (REST_PER_HOLD). */
  readonly after?: (ms: number, run: () => void) => void;
  /** Default REST_PER_HOLD; 0 resumes on the next turn. */
  readonly restPerHold?: number;
}

export class ScriptScheduler {
  private running = 0;
  private readonly tenants = new Map<string, TenantScripts>();
  /** Scripts waiting for a slot, in order of arrival. */
  private readonly line: Arrival[] = [];
  private readonly waiting: Waiter[] = [];
  /** The paused scripts this turn goes on with, in order; `running` is the one going on now. */
  private turn: Waiter[] = [];
  private runningSlot: ScriptSlot | undefined;
  private waitSeq = 0;
  private turnQueued = false;
  /** Whether a hold is open: scripts have run since the last marker. */
  private holding = false;
  private holdStartMs = 0;
  private readonly nextTurn: (run: () => void) => void;
  private readonly turnMs: number;
  private readonly after: (ms: number, run: () => void) => void;
  private readonly restPerHold: number;

  constructor(private readonly options: ScriptSchedulerOptions) {
    this.nextTurn = options.nextTurn ?? setImmediate;
    this.turnMs = options.turnMs ?? TURN_MS;
    this.after = options.after ?? ((ms, run) => void setTimeout(run, ms));
    this.restPerHold = options.restPerHold ?? REST_PER_HOLD;
  }

  /** Scripts running at this node now. */
  get runningScripts(): number {
    return this.running;
  }

  /** @internal The scheduler's clock (monotonic ms). */
  nowMs(): number {
    return this.options.nowMs();
  }

  /** Scripts waiting in line for a slot at this node now. */
  get waitingScripts(): number {
    return this.line.length;
  }

  /**
   * A slot for one script of `tenant` (released when it ends): at once, or when one is free for
   * it; the refusal when the line is full or the tenant's script time is spent.
   */
  admit(tenant: string): Promise<ScriptSlot> {
    const { limits } = this.options;
    const scripts = this.tenantScripts(tenant);
    const spent = this.spent(scripts);
    if (spent !== undefined) return Promise.reject(spent);
    if (this.fits(scripts) && !this.line.some((arrival) => arrival.tenant === scripts)) return Promise.resolve(this.open(scripts));
    if (scripts.waiting >= limits.maxPendingRequestsPerPartition) {
      return Promise.reject(
        new AtollError('RESOURCE_EXHAUSTED', `the tenant runs ${scripts.running} scripts at this node and ${scripts.waiting} wait, its maximum: retry later`, {
          reason: 'script-concurrency',
          maxScriptsPerTenant: limits.maxScriptsPerTenant,
        }),
      );
    }
    if (this.line.length >= limits.maxPendingRequestsPerNode) {
      return Promise.reject(
        new AtollError('OVERLOADED', `${this.running} scripts run at this node and ${this.line.length} wait, its maximum: retry later`, {
          maxScriptsPerNode: limits.maxScriptsPerNode,
        }),
      );
    }
    scripts.waiting++;
    return new Promise((admit, refuse) => this.line.push({ tenant: scripts, admit, refuse }));
  }

  /** Whether a script of `scripts`' tenant may run now. */
  private fits(scripts: TenantScripts): boolean {
    return this.running < this.options.limits.maxScriptsPerNode && scripts.running < this.options.limits.maxScriptsPerTenant;
  }

  private open(scripts: TenantScripts): ScriptSlot {
    this.running++;
    scripts.running++;
    return new ScriptSlot(this, scripts);
  }

  /** The refusal when the tenant's script time is spent (refilled up to now first). */
  private spent(scripts: TenantScripts): AtollError | undefined {
    const { scriptCpuMsPerSecond, scriptCpuBurstMs } = this.options.limits;
    this.refill(scripts);
    if (scripts.budgetMs > 0) return undefined;
    const retryAfterMs = Math.ceil((-scripts.budgetMs * 1000) / scriptCpuMsPerSecond) + 1;
    return new AtollError(
      'QUOTA_EXCEEDED',
      `the tenant used its script time at this node (${scriptCpuMsPerSecond} ms per second, ${scriptCpuBurstMs} ms at once): retry in ${retryAfterMs} ms`,
      { reason: 'script-cpu', retryAfterMs, scriptCpuMsPerSecond },
    );
  }

  /** A slot was freed: the first scripts in line that may run now go on, in order. */
  private admitWaiting(): void {
    for (let index = 0; index < this.line.length && this.running < this.options.limits.maxScriptsPerNode; ) {
      const arrival = this.line[index]!;
      if (!this.fits(arrival.tenant)) {
        index++;
        continue;
      }
      this.line.splice(index, 1);
      arrival.tenant.waiting--;
      const spent = this.spent(arrival.tenant);
      if (spent !== undefined) arrival.refuse(spent);
      else arrival.admit(this.open(arrival.tenant));
    }
  }

  /** Whether scripts have held the loop for a turn; the first ask after the loop turned opens a hold. */
  due(): boolean {
    const nowMs = this.options.nowMs();
    if (!this.holding) {
      this.openHold(nowMs);
      return false;
    }
    return nowMs - this.holdStartMs >= this.turnMs;
  }

  /** @internal Resolves on a later turn of the loop, when `slot` is let go on (true: as the first of its turn). */
  waitTurn(slot: ScriptSlot): Promise<boolean> {
    return new Promise((resume) => {
      this.waiting.push({ slot, seq: this.waitSeq++, resume });
      this.queueTurn();
      this.stopped(slot);
    });
  }

  /** @internal `slot` paused or ended: the next script of this turn goes on, if the turn is not used up. */
  stopped(slot: ScriptSlot): void {
    if (this.runningSlot !== slot) return;
    this.runningSlot = undefined;
    this.goOn();
  }

  private goOn(first = false): void {
    if (this.turn.length === 0) return;
    if (!first && this.due()) {
      // The rest wait for the next turn, ahead of the ones that paused since.
      this.waiting.unshift(...this.turn.splice(0));
      this.queueTurn();
      return;
    }
    const next = this.turn.shift()!;
    this.runningSlot = next.slot;
    next.resume(first);
  }

  /** @internal */
  charge(scripts: TenantScripts, ms: number): void {
    scripts.budgetMs -= ms;
  }

  /** @internal */
  release(scripts: TenantScripts): void {
    this.running--;
    scripts.running--;
    this.admitWaiting();
  }

  private openHold(nowMs: number): void {
    this.holdStartMs = nowMs;
    if (this.holding) return;
    this.holding = true;
    this.nextTurn(() => {
      this.holding = false;
    });
  }

  /** Queued when scripts paused because their hold was used up: the next turn comes after the rest (REST_PER_HOLD). */
  private queueTurn(): void {
    if (this.turnQueued) return;
    this.turnQueued = true;
    const heldMs = this.holding ? this.options.nowMs() - this.holdStartMs : 0;
    const restMs = Math.ceil(heldMs * this.restPerHold);
    if (restMs > 0) this.after(restMs, () => this.nextTurn(() => this.startTurn()));
    else this.nextTurn(() => this.startTurn());
  }

  /** The loop turned: a new hold, and the paused scripts go on one after the other, the one that used least time first. */
  private startTurn(): void {
    this.turnQueued = false;
    this.openHold(this.options.nowMs());
    this.turn.push(...this.waiting.splice(0));
    this.turn.sort((a, b) => a.slot.usedMs - b.slot.usedMs || a.seq - b.seq);
    // One that went on in an earlier turn and has not paused since (it awaits a read) is not waited for.
    this.runningSlot = undefined;
    // The first always goes on, so every turn moves some script forward.
    this.goOn(true);
  }

  private tenantScripts(tenant: string): TenantScripts {
    const { scriptCpuBurstMs } = this.options.limits;
    const nowMs = this.options.nowMs();
    if (this.tenants.size > maxRememberedTenants) {
      for (const [name, scripts] of this.tenants) {
        this.refill(scripts);
        if (scripts.running === 0 && scripts.waiting === 0 && scripts.budgetMs >= scriptCpuBurstMs) this.tenants.delete(name);
      }
    }
    let scripts = this.tenants.get(tenant);
    if (scripts === undefined) {
      scripts = { running: 0, waiting: 0, budgetMs: scriptCpuBurstMs, atMs: nowMs };
      this.tenants.set(tenant, scripts);
    }
    return scripts;
  }

  /** Adds what the tenant's budget earned since it was last refilled, up to the full budget. */
  private refill(scripts: TenantScripts): void {
    const { scriptCpuMsPerSecond, scriptCpuBurstMs } = this.options.limits;
    const nowMs = this.options.nowMs();
    scripts.budgetMs = Math.min(scriptCpuBurstMs, scripts.budgetMs + ((nowMs - scripts.atMs) * scriptCpuMsPerSecond) / 1000);
    scripts.atMs = nowMs;
  }
}

/** One admitted script: its turns, and the time it used (charged to its tenant). */
export class ScriptSlot implements ScriptTurns {
  /** The script's time so far: from each resume to its next pause or end. */
  usedMs = 0;
  pausedMs = 0;
  private resumedAtMs: number | undefined;
  private released = false;

  constructor(
    private readonly scheduler: ScriptScheduler,
    private readonly scripts: TenantScripts,
  ) {}

  /** Runs one evaluation of the script in this slot: its time is counted from now to its end, pauses left out. */
  async run<T>(work: () => Promise<T>): Promise<T> {
    this.resumedAtMs = this.scheduler.nowMs();
    try {
      return await work();
    } finally {
      this.stopClock();
      this.scheduler.stopped(this);
    }
  }

  due(): boolean {
    return this.scheduler.due();
  }

  /** Pauses when the turn is up (a pace between pieces of work outside the evaluator: parameters, merges). */
  readonly pace = (): Promise<void> | undefined => (this.due() ? this.pause() : undefined);

  async pause(): Promise<void> {
    this.stopClock();
    const pausedAtMs = this.scheduler.nowMs();
    // Let go on in a turn that other scripts used up meanwhile: wait for the next one.
    while (!(await this.scheduler.waitTurn(this)) && this.scheduler.due());
    const nowMs = this.scheduler.nowMs();
    this.pausedMs += nowMs - pausedAtMs;
    this.resumedAtMs = nowMs;
  }

  /** Ends the script: its place in the counts is free again (once). */
  release(): void {
    if (this.released) return;
    this.released = true;
    this.stopClock();
    this.scheduler.stopped(this);
    this.scheduler.release(this.scripts);
  }

  private stopClock(): void {
    if (this.resumedAtMs === undefined) return;
    const ms = this.scheduler.nowMs() - this.resumedAtMs;
    this.resumedAtMs = undefined;
    this.usedMs += ms;
    this.scheduler.charge(this.scripts, ms);
  }
}
