/**
 * What the simulated lease and lock clients share (lease-workload.ts, lock-workload.ts): N client
 * loops started at once, each with its own random stream and process number, that run until the
 * faults stop; the simulator's clock; a node drawn at random per call; and calls timed on that clock.
 */
import type { Rng } from '../../raft/rng.js';
import type { Scheduler } from './scheduler.js';
import type { SimCluster } from './sim-cluster.js';
import type { Trace } from './trace.js';
import type { CallOutcome, Workload } from './workload.js';

export interface Interval {
  readonly invokeMs: number;
  readonly completeMs: number;
}

/** One call and what came of it: ok, certainly not applied (fail), or unknown. */
export interface CallRecord extends Interval {
  readonly outcome: 'ok' | 'fail' | 'unknown';
  readonly error?: string;
}

/** Runs a call and records its interval on the simulator's clock and its outcome (ok, fail, unknown). */
export async function timedCall<T>(now: () => number, run: () => Promise<CallOutcome<T>>): Promise<{ outcome: CallOutcome<T>; record: CallRecord }> {
  const invokeMs = now();
  const outcome = await run();
  const completeMs = now();
  const record: CallRecord = outcome.ok ? { invokeMs, completeMs, outcome: 'ok' } : { invokeMs, completeMs, outcome: outcome.definite ? 'fail' : 'unknown', error: outcome.error };
  return { outcome, record };
}

export interface SimClientsOptions {
  readonly clients: number;
  /** First process number of these clients (after the main workload's). */
  readonly firstProcess: number;
}

export abstract class SimClients<O extends SimClientsOptions> {
  /** When the client loops stop starting new work (the end of the faults). */
  protected stopAtMs = 0;

  constructor(
    protected readonly scheduler: Scheduler,
    protected readonly cluster: SimCluster,
    protected readonly workload: Workload,
    protected readonly trace: Trace,
    protected readonly options: O,
  ) {}

  /** Runs every client loop until `untilMs`; resolves when all have ended. */
  protected runClients(rng: Rng, untilMs: number): Promise<void> {
    this.stopAtMs = untilMs;
    const clients: Array<Promise<void>> = [];
    for (let i = 0; i < this.options.clients; i++) clients.push(this.client(this.options.firstProcess + i, rng.fork()));
    return Promise.all(clients).then(() => undefined);
  }

  /** One client's loop, as process `process`. */
  protected abstract client(process: number, rng: Rng): Promise<void>;

  protected get now(): number {
    return this.scheduler.now;
  }

  protected pickNode(rng: Rng): number {
    return rng.pick(this.cluster.nodeIds);
  }

  protected timed<T>(run: () => Promise<CallOutcome<T>>): Promise<{ outcome: CallOutcome<T>; record: CallRecord }> {
    return timedCall(() => this.now, run);
  }
}
