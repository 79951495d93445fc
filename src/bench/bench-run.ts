/**
 * One benchmark: preload the keys the workloads read, then for each workload and each concurrency
 * a warm-up (not recorded) and a measured run, with live progress throughout. Latencies of
 * successful operations go into an HdrHistogram; failures are counted by error code.
 */
import { cpus, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { Rng } from '../raft/rng.js';
import { errorCodeOf, type BenchTarget } from './bench-target.js';
import { LatencyHistogram, type LatencySummary } from './latency-histogram.js';
import { runLoadLoop, type OperationOutcome } from './load-loop.js';
import { CpuMeter } from './process-cpu.js';
import type { ProgressDisplay } from './progress.js';
import { countsText } from './text-table.js';
import { benchKeys, benchValue, operationOf, preloadKeysOf, type WorkloadName, type WorkloadSettings } from './workloads.js';

export interface BenchSettings extends WorkloadSettings {
  readonly workloads: readonly WorkloadName[];
  readonly concurrencies: readonly number[];
  /** Each measured run lasts this long, or (when set instead) performs this many operations. */
  readonly durationMs?: number;
  readonly operations?: number;
  readonly warmupMs: number;
  readonly preload: boolean;
  readonly seed: number;
  /** Processes (the servers) whose CPU use each run reports. */
  readonly samplePids: readonly number[];
  /** Keyspaces the workers are spread over (--tenants; the target's lanes), when more than one client. */
  readonly tenants?: number;
}

export interface RunResult {
  readonly workload: WorkloadName;
  readonly concurrency: number;
  /** Successful operations in the measured run. */
  readonly operations: number;
  readonly errors: number;
  readonly errorsByCode: Readonly<Record<string, number>>;
  readonly elapsedSeconds: number;
  readonly opsPerSecond: number;
  readonly latency: LatencySummary;
  /** This (client) process's CPU use, percent of one core. */
  readonly clientCpuPercent: number;
  /** CPU use of each sampled process by pid, percent of one core. */
  readonly serverCpuPercent: Readonly<Record<string, number>>;
  /** The machine's 1-minute load average when the run ended (other work on it shows here). */
  readonly loadAverage1m: number;
  readonly histogram: LatencyHistogram;
}

export interface PreloadResult {
  readonly keys: number;
  readonly seconds: number;
  /** Writes that failed on the first pass and succeeded on a retry. */
  readonly retriedWrites: number;
}

export interface BenchReport {
  readonly system: string;
  readonly endpoints: readonly string[];
  readonly settings: BenchSettings;
  readonly machine: { readonly cpus: number; readonly cpuModel: string; readonly node: string };
  readonly preload: PreloadResult | undefined;
  readonly runs: readonly RunResult[];
}

/** In-flight writes while preloading, whatever the measured concurrency. */
const preloadConcurrency = 128;
/** Passes over the preload writes that failed, before the benchmark gives up. */
const preloadRetryPasses = 3;

/** Thrown when the keys could not be written before measuring; carries the first failure's code. */
export class PreloadError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

class Tally {
  readonly histogram = new LatencyHistogram();
  readonly errorsByCode: Record<string, number> = {};
  errors = 0;

  add(outcome: OperationOutcome): void {
    if (outcome.error === undefined) {
      this.histogram.recordUs(outcome.latencyUs);
      return;
    }
    this.errors++;
    const code = errorCodeOf(outcome.error);
    this.errorsByCode[code] = (this.errorsByCode[code] ?? 0) + 1;
  }

  counts(): { done: number; errors: number } {
    return { done: this.histogram.count, errors: this.errors };
  }
}

export class BenchRun {
  private readonly rng: Rng;
  private readonly value: Buffer;
  /** What the workers drive: the target's lanes (one per tenant), or the target itself. */
  private readonly lanes: readonly BenchTarget[];
  /** The name the results go under (--label; default the system). */
  private readonly name: string;

  constructor(
    target: BenchTarget,
    private readonly settings: BenchSettings,
    private readonly progress: ProgressDisplay,
    name?: string,
  ) {
    this.rng = new Rng(settings.seed);
    this.value = benchValue(settings.valueSize, this.rng);
    this.lanes = target.lanes !== undefined && target.lanes.length > 0 ? target.lanes : [target];
    this.name = name ?? target.system;
  }

  async run(endpoints: readonly string[]): Promise<BenchReport> {
    const preload = this.settings.preload ? await this.preload() : undefined;
    const runs: RunResult[] = [];
    for (const workload of this.settings.workloads) {
      for (const concurrency of this.settings.concurrencies) runs.push(await this.runOne(workload, concurrency));
    }
    const cpuList = cpus();
    return {
      system: this.name,
      endpoints,
      settings: this.settings,
      machine: { cpus: cpuList.length, cpuModel: cpuList[0]?.model ?? 'unknown', node: process.version },
      preload,
      runs,
    };
  }

  /** Writes every key the chosen workloads read, `preloadConcurrency` at a time. */
  private async preload(): Promise<PreloadResult | undefined> {
    let main = 0;
    let prefix = 0;
    for (const workload of this.settings.workloads) {
      const needs = preloadKeysOf(workload, this.settings);
      main = Math.max(main, needs.main);
      prefix = Math.max(prefix, needs.prefix);
    }
    const perLane = main + prefix;
    if (perLane === 0) return undefined;
    // Every lane (tenant) gets every key: index i is key i mod perLane of lane floor(i / perLane).
    const total = perLane * this.lanes.length;
    const keyAt = (index: number): string => (index < main ? benchKeys.main(index) : benchKeys.prefixKey(index - main));
    const putAt = (index: number): Promise<void> => (this.lanes[Math.floor(index / perLane)] as BenchTarget).put(keyAt(index % perLane), this.value);
    const startMs = performance.now();
    // A preload is set-up, not a measurement: a write that failed (a deadline during a stall) is
    // written again, up to `preloadRetryPasses` more times, and the failures are reported.
    let pending = Array.from({ length: total }, (_, index) => index);
    const firstPass = new Tally();
    let tally = firstPass;
    for (let pass = 0; pass <= preloadRetryPasses && pending.length > 0; pass++) {
      const batch = pending;
      const failed: number[] = [];
      tally = pass === 0 ? firstPass : new Tally();
      const passTally = tally;
      let next = 0;
      const label = pass === 0 ? `${this.name} preload` : `${this.name} preload retry ${pass}`;
      const stop = this.progress.track({ label, total: batch.length, unit: 'keys' }, () => passTally.counts());
      try {
        await runLoadLoop(
          { concurrency: Math.min(preloadConcurrency, batch.length), maxOperations: batch.length },
          () => () => {
            const index = batch[next++] as number;
            return putAt(index).catch((error: unknown) => {
              failed.push(index);
              throw error;
            });
          },
          (outcome) => passTally.add(outcome),
        );
      } finally {
        stop();
      }
      pending = failed;
    }
    const seconds = (performance.now() - startMs) / 1000;
    if (pending.length > 0) {
      const [firstCode = 'UNKNOWN'] = Object.keys(tally.errorsByCode);
      throw new PreloadError(firstCode, `preload: ${pending.length} of ${total} writes still failed after ${preloadRetryPasses} retries (${countsText(tally.errorsByCode)})`);
    }
    const retried = firstPass.errors > 0 ? `; ${firstPass.errors} writes failed once and were written again (${countsText(firstPass.errorsByCode)})` : '';
    this.progress.note(`${this.name} preload: ${total.toLocaleString('en-US')} keys of ${this.settings.valueSize} bytes in ${seconds.toFixed(1)} s${retried}`);
    return { keys: total, seconds, retriedWrites: firstPass.errors };
  }

  private async runOne(workload: WorkloadName, concurrency: number): Promise<RunResult> {
    const label = `${this.name} ${workload} c=${concurrency}`;
    const workers = Array.from({ length: concurrency }, () => this.rng.fork());
    const laneOf = (worker: number): BenchTarget => this.lanes[worker % this.lanes.length] as BenchTarget;
    const operationFor = (worker: number) => operationOf(workload, laneOf(worker), this.settings, workers[worker] as Rng, this.value);

    if (this.settings.warmupMs > 0) {
      const warmup = new Tally();
      const stop = this.progress.track({ label: `${label} warm-up`, durationMs: this.settings.warmupMs, unit: 'ops' }, () => warmup.counts());
      try {
        await runLoadLoop({ concurrency, untilMs: performance.now() + this.settings.warmupMs }, operationFor, (outcome) => warmup.add(outcome));
      } finally {
        stop();
      }
    }

    const tally = new Tally();
    const meter = new CpuMeter(this.settings.samplePids);
    const { durationMs, operations } = this.settings;
    const stop = this.progress.track(
      { label: `${label} measure`, ...(durationMs !== undefined && { durationMs }), ...(operations !== undefined && { total: operations }), unit: 'ops' },
      () => tally.counts(),
    );
    const startMs = performance.now();
    meter.start();
    try {
      await runLoadLoop(
        { concurrency, ...(durationMs !== undefined && { untilMs: startMs + durationMs }), ...(operations !== undefined && { maxOperations: operations }) },
        operationFor,
        (outcome) => tally.add(outcome),
      );
    } finally {
      stop();
    }
    const elapsedSeconds = (performance.now() - startMs) / 1000;
    const cpu = meter.stop();
    const result: RunResult = {
      workload,
      concurrency,
      operations: tally.histogram.count,
      errors: tally.errors,
      errorsByCode: tally.errorsByCode,
      elapsedSeconds,
      opsPerSecond: tally.histogram.count / elapsedSeconds,
      latency: tally.histogram.summary(),
      clientCpuPercent: cpu.ownPercent,
      serverCpuPercent: cpu.processes,
      loadAverage1m: loadavg()[0] ?? 0,
      histogram: tally.histogram,
    };
    this.progress.note(runLine(this.name, result));
    return result;
  }
}

/** One line per finished run: "atoll put c=64: 2,512 ops/s, p50 20.1 ms, p99 41.0 ms, 0 errors". */
export function runLine(system: string, run: RunResult): string {
  const errors = run.errors === 0 ? '0 errors' : `${run.errors} errors (${countsText(run.errorsByCode)})`;
  const opsPerSecond = Math.round(run.opsPerSecond).toLocaleString('en-US');
  return `${system} ${run.workload} c=${run.concurrency}: ${opsPerSecond} ops/s, p50 ${run.latency.p50Ms.toFixed(2)} ms, p99 ${run.latency.p99Ms.toFixed(2)} ms, ${errors}`;
}
