/**
 * How a benchmark's results are shown: the final table for people, JSON for machines (and for the
 * etcd comparison, which merges the rounds' histograms from it).
 */
import type { BenchReport, RunResult } from './bench-run.js';
import type { DistributionPoint, LatencySummary } from './latency-histogram.js';
import { countsText, grouped, milliseconds, textTable } from './text-table.js';

/** The JSON form of one run: percentiles in ms, and `histogram` as HdrHistogram's compressed base64 of microseconds. */
export interface RunJson extends Omit<RunResult, 'latency' | 'histogram'> {
  readonly latencyMs: LatencySummary;
  readonly distribution: readonly DistributionPoint[];
  readonly histogram: string;
  /** Milliseconds of the sampled server processes' CPU per successful operation; null when none was sampled. */
  readonly serverCpuMsPerOp: number | null;
}

export interface BenchJson {
  readonly system: string;
  readonly endpoints: readonly string[];
  readonly settings: BenchReport['settings'];
  readonly machine: BenchReport['machine'];
  readonly preload: BenchReport['preload'] | null;
  readonly runs: readonly RunJson[];
}

function round(value: number, digits = 3): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function runJson(run: RunResult): RunJson {
  const latencyMs = Object.fromEntries(Object.entries(run.latency).map(([name, value]) => [name, round(value)])) as unknown as LatencySummary;
  return {
    workload: run.workload,
    concurrency: run.concurrency,
    operations: run.operations,
    errors: run.errors,
    errorsByCode: run.errorsByCode,
    elapsedSeconds: round(run.elapsedSeconds),
    opsPerSecond: round(run.opsPerSecond, 1),
    latencyMs,
    clientCpuPercent: run.clientCpuPercent,
    serverCpuPercent: run.serverCpuPercent,
    loadAverage1m: round(run.loadAverage1m, 2),
    distribution: run.histogram.distribution().map((point) => ({ percentile: round(point.percentile, 5), latencyMs: round(point.latencyMs) })),
    histogram: run.histogram.toBase64(),
    serverCpuMsPerOp: serverCpuMsPerOp(totalCpuPercent(run.serverCpuPercent), run.opsPerSecond) ?? null,
  };
}

export function benchJson(report: BenchReport): BenchJson {
  return {
    system: report.system,
    endpoints: report.endpoints,
    settings: report.settings,
    machine: report.machine,
    preload: report.preload ?? null,
    runs: report.runs.map(runJson),
  };
}

/** Sum of the sampled processes' CPU, percent of one core ("" when none was sampled). */
export function serverCpuText(serverCpuPercent: Readonly<Record<string, number>>): string {
  const total = totalCpuPercent(serverCpuPercent);
  return total === undefined ? '' : String(Math.round(total));
}

/** Sum of the sampled processes' CPU in percent of one core; undefined when none was sampled. */
export function totalCpuPercent(serverCpuPercent: Readonly<Record<string, number>>): number | undefined {
  const values = Object.values(serverCpuPercent);
  return values.length === 0 ? undefined : values.reduce((sum, value) => sum + value, 0);
}

/**
 * Server CPU per operation in milliseconds: `cpuPercent` of one core over a second is
 * cpuPercent * 10 ms, shared by `opsPerSecond` operations. Undefined when nothing was sampled or
 * nothing succeeded (no operation to divide by).
 */
export function serverCpuMsPerOp(cpuPercent: number | undefined, opsPerSecond: number): number | undefined {
  if (cpuPercent === undefined || !(opsPerSecond > 0)) return undefined;
  return round((cpuPercent * 10) / opsPerSecond, 4);
}

/** Two significant digits, like 1.4, 3.0, 0.52 or 0.061; whole numbers from 10 ("" when unknown). */
export function msPerOpText(msPerOp: number | undefined): string {
  if (msPerOp === undefined) return '';
  return msPerOp >= 9.95 ? String(Math.round(msPerOp)) : msPerOp.toPrecision(2);
}

export const latencyColumns = ['p50 ms', 'p90 ms', 'p99 ms', 'p99.9 ms', 'max ms'] as const;

export function latencyCells(latency: LatencySummary): string[] {
  return [latency.p50Ms, latency.p90Ms, latency.p99Ms, latency.p999Ms, latency.maxMs].map(milliseconds);
}

/** What was measured, for the line above a table: "128-byte values, 10,000 keys, ...". */
export function settingsText(settings: BenchReport['settings']): string {
  const length = settings.operations !== undefined ? `${grouped(settings.operations)} ops per run` : `${(settings.durationMs ?? 0) / 1000} s per run`;
  const readRatio = settings.workloads.includes('mixed') ? `, mixed reads ${settings.readRatio * 100}%` : '';
  const tenants = settings.tenants !== undefined ? `, ${grouped(settings.tenants)} tenant${settings.tenants === 1 ? '' : 's'}` : '';
  return `${settings.valueSize}-byte values, ${grouped(settings.keys)} keys${tenants}, ${length} after ${settings.warmupMs / 1000} s warm-up${readRatio}`;
}

/** The final table: one row per workload and concurrency, errors by code in the last column. */
export function benchTable(report: BenchReport): string[] {
  const sampled = report.settings.samplePids.length > 0;
  const header = ['workload', 'conc', 'ops/s', ...latencyColumns, 'client cpu%', ...(sampled ? ['server cpu%', 'server ms/op'] : []), 'load', 'errors'];
  const rows = report.runs.map((run) => [
    run.workload,
    run.concurrency,
    grouped(run.opsPerSecond),
    ...latencyCells(run.latency),
    String(Math.round(run.clientCpuPercent)),
    ...(sampled ? [serverCpuText(run.serverCpuPercent), msPerOpText(serverCpuMsPerOp(totalCpuPercent(run.serverCpuPercent), run.opsPerSecond))] : []),
    run.loadAverage1m.toFixed(2),
    countsText(run.errorsByCode),
  ]);
  return [`${report.system} at ${report.endpoints.join(',')}: ${settingsText(report.settings)}`, ...textTable(header, rows)];
}
