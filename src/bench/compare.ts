/**
 * The side-by-side comparison's arithmetic and tables: the per-run JSON files of `atoll bench
 * --json` for two or three systems (several rounds each, A B A B) merged per workload, concurrency
 * and system, shown with the ratio of each over etcd. Rounds are merged exactly: operations and seconds are
 * summed (so ops/s is over the whole measured time) and the latency histograms are added.
 */
import type { BenchJson, RunJson } from './bench-report.js';
import { latencyCells, latencyColumns, msPerOpText, serverCpuMsPerOp, settingsText } from './bench-report.js';
import { LatencyHistogram, type LatencySummary } from './latency-histogram.js';
import type { LatencyPanel } from './latency-svg.js';
import { countsText, grouped, markdownTable, textTable, type Cell } from './text-table.js';
import { workloadNames } from './workloads.js';

/**
 * The systems of the comparison, in table order: Atoll through its own client, Atoll through etcd's
 * client at its etcd port (`atoll bench --system etcd --label atoll-etcd`), etcd. Each row's ratio
 * is over etcd.
 */
export const comparedSystems = ['atoll', 'atoll-etcd', 'etcd'] as const;
/** The systems measured against etcd, each with a ratio row and a ratio line. */
const ratioSystems = comparedSystems.filter((system) => system !== 'etcd');

/** All rounds of one system at one workload and concurrency. */
export interface MergedRun {
  readonly system: string;
  readonly workload: string;
  readonly concurrency: number;
  readonly rounds: number;
  readonly operations: number;
  readonly elapsedSeconds: number;
  readonly opsPerSecond: number;
  readonly latency: LatencySummary;
  readonly histogram: LatencyHistogram;
  readonly errorsByCode: Readonly<Record<string, number>>;
  /** Means over the rounds, weighted by their measured time. */
  readonly clientCpuPercent: number;
  /** Sum over the sampled server processes (percent of one core); undefined when none were sampled. */
  readonly serverCpuPercent: number | undefined;
  /** Milliseconds of server CPU per operation over the merged rounds; undefined when none were sampled. */
  readonly serverCpuMsPerOp: number | undefined;
  readonly loadAverage1m: number;
}

export interface Comparison {
  /** Workloads in `atoll bench`'s order, each with its concurrencies in ascending order. */
  readonly workloads: ReadonlyArray<{ readonly workload: string; readonly concurrencies: readonly number[] }>;
  merged(system: string, workload: string, concurrency: number): MergedRun | undefined;
  readonly settings: string;
}

/** Merges rounds of one system's run: operations and seconds summed, histograms added, CPU weighted by time. */
export function mergeRuns(system: string, runs: readonly RunJson[]): MergedRun {
  const histogram = new LatencyHistogram();
  const errorsByCode: Record<string, number> = {};
  let operations = 0;
  let elapsedSeconds = 0;
  let clientCpu = 0;
  let serverCpu = 0;
  let serverSampled = false;
  let load = 0;
  for (const run of runs) {
    histogram.add(LatencyHistogram.fromBase64(run.histogram));
    for (const [code, count] of Object.entries(run.errorsByCode)) errorsByCode[code] = (errorsByCode[code] ?? 0) + count;
    operations += run.operations;
    elapsedSeconds += run.elapsedSeconds;
    clientCpu += run.clientCpuPercent * run.elapsedSeconds;
    const servers = Object.values(run.serverCpuPercent);
    if (servers.length > 0) serverSampled = true;
    serverCpu += servers.reduce((sum, value) => sum + value, 0) * run.elapsedSeconds;
    load += run.loadAverage1m;
  }
  const first = runs[0] as RunJson;
  const seconds = Math.max(elapsedSeconds, 1e-9);
  return {
    system,
    workload: first.workload,
    concurrency: first.concurrency,
    rounds: runs.length,
    operations,
    elapsedSeconds,
    opsPerSecond: operations / seconds,
    latency: histogram.summary(),
    histogram,
    errorsByCode,
    clientCpuPercent: clientCpu / seconds,
    serverCpuPercent: serverSampled ? serverCpu / seconds : undefined,
    serverCpuMsPerOp: serverCpuMsPerOp(serverSampled ? serverCpu / seconds : undefined, operations / seconds),
    loadAverage1m: load / runs.length,
  };
}

/** Workloads are shown in the order `atoll bench` defines them (put, get, stale-get, ...). */
function workloadRank(workload: string): number {
  const rank = (workloadNames as readonly string[]).indexOf(workload);
  return rank === -1 ? workloadNames.length : rank;
}

/** Groups every run of every report by system, workload and concurrency, and merges each group. */
export function compareReports(reports: readonly BenchJson[]): Comparison {
  const groups = new Map<string, { system: string; runs: RunJson[] }>();
  const order = new Map<string, Set<number>>();
  for (const report of reports) {
    for (const run of report.runs) {
      const key = `${report.system}\u0000${run.workload}\u0000${run.concurrency}`;
      const group = groups.get(key) ?? { system: report.system, runs: [] };
      group.runs.push(run);
      groups.set(key, group);
      const concurrencies = order.get(run.workload) ?? new Set<number>();
      concurrencies.add(run.concurrency);
      order.set(run.workload, concurrencies);
    }
  }
  const merged = new Map<string, MergedRun>();
  for (const [key, group] of groups) merged.set(key, mergeRuns(group.system, group.runs));
  const first = reports[0];
  return {
    workloads: [...order]
      .sort(([a], [b]) => workloadRank(a) - workloadRank(b))
      .map(([workload, concurrencies]) => ({ workload, concurrencies: [...concurrencies].sort((x, y) => x - y) })),
    merged: (system, workload, concurrency) => merged.get(`${system}\u0000${workload}\u0000${concurrency}`),
    settings: first === undefined ? '' : settingsText(first.settings),
  };
}

/** atoll / etcd, two decimals; "n/a" when either side has nothing to divide. */
export function ratioText(atoll: number, etcd: number): string {
  if (!(etcd > 0) || !Number.isFinite(atoll)) return 'n/a';
  return (atoll / etcd).toFixed(2);
}

const header = ['conc', 'system', 'ops/s', ...latencyColumns, 'client cpu%', 'server cpu%', 'server ms/op', 'load', 'errors'];

function systemRow(run: MergedRun): Cell[] {
  return [
    run.concurrency,
    run.system,
    grouped(run.opsPerSecond),
    ...latencyCells(run.latency),
    String(Math.round(run.clientCpuPercent)),
    run.serverCpuPercent === undefined ? '' : String(Math.round(run.serverCpuPercent)),
    msPerOpText(run.serverCpuMsPerOp),
    run.loadAverage1m.toFixed(2),
    countsText(run.errorsByCode),
  ];
}

function ratioRow(atoll: MergedRun, etcd: MergedRun): Cell[] {
  const a = atoll.latency;
  const e = etcd.latency;
  const latencies = [ratioText(a.p50Ms, e.p50Ms), ratioText(a.p90Ms, e.p90Ms), ratioText(a.p99Ms, e.p99Ms), ratioText(a.p999Ms, e.p999Ms), ratioText(a.maxMs, e.maxMs)];
  return [atoll.concurrency, `${atoll.system}/etcd`, ratioText(atoll.opsPerSecond, etcd.opsPerSecond), ...latencies, '', '', msPerOpRatio(atoll, etcd), '', ''];
}

/** Atoll's server CPU per operation over etcd's ("" unless both were sampled). */
function msPerOpRatio(atoll: MergedRun, etcd: MergedRun): string {
  if (atoll.serverCpuMsPerOp === undefined || etcd.serverCpuMsPerOp === undefined) return '';
  return ratioText(atoll.serverCpuMsPerOp, etcd.serverCpuMsPerOp);
}

/** Rows of one workload: each concurrency's systems, then each one's ratio over etcd. */
function workloadRows(comparison: Comparison, workload: string, concurrencies: readonly number[]): Cell[][] {
  const rows: Cell[][] = [];
  for (const concurrency of concurrencies) {
    for (const system of comparedSystems) {
      const run = comparison.merged(system, workload, concurrency);
      if (run !== undefined) rows.push(systemRow(run));
    }
    const etcd = comparison.merged('etcd', workload, concurrency);
    for (const system of ratioSystems) {
      const run = comparison.merged(system, workload, concurrency);
      if (run !== undefined && etcd !== undefined) rows.push(ratioRow(run, etcd));
    }
  }
  return rows;
}

/** One table per workload: text for the terminal, Markdown for docs/performance.md. */
export function comparisonTables(comparison: Comparison, format: 'text' | 'markdown' = 'text'): string[] {
  const lines: string[] = [];
  for (const { workload, concurrencies } of comparison.workloads) {
    const rows = workloadRows(comparison, workload, concurrencies);
    lines.push(format === 'text' ? `== ${workload} ==` : `#### ${workload}`, '');
    lines.push(...(format === 'text' ? textTable(header, rows) : markdownTable(header, rows)), '');
  }
  return lines;
}

function hasRuns(comparison: Comparison, system: string): boolean {
  return comparison.workloads.some(({ workload, concurrencies }) => concurrencies.some((concurrency) => comparison.merged(system, workload, concurrency) !== undefined));
}

/**
 * Exactly one line per workload and concurrency, `ratio put c=64 atoll/etcd=2.31` (ops/s), and when
 * Atoll was also measured through etcd's client, one more: `ratio put c=64 atoll-etcd/etcd=0.60`.
 */
export function ratioLines(comparison: Comparison): string[] {
  const lines: string[] = [];
  const measured = ratioSystems.filter((system) => system === 'atoll' || hasRuns(comparison, system));
  for (const { workload, concurrencies } of comparison.workloads) {
    for (const concurrency of concurrencies) {
      const etcd = comparison.merged('etcd', workload, concurrency);
      for (const system of measured) {
        const run = comparison.merged(system, workload, concurrency);
        lines.push(`ratio ${workload} c=${concurrency} ${system}/etcd=${ratioText(run?.opsPerSecond ?? 0, etcd?.opsPerSecond ?? 0)}`);
      }
    }
  }
  return lines;
}

/** A panel per workload: Atoll solid, etcd's client (against etcd or Atoll's etcd port) dashed, one colour per concurrency. */
export function comparisonPanels(comparison: Comparison): LatencyPanel[] {
  return comparison.workloads.map(({ workload, concurrencies }) => ({
    title: workload,
    series: concurrencies.flatMap((concurrency, colorIndex) =>
      comparedSystems.flatMap((system) => {
        const run = comparison.merged(system, workload, concurrency);
        if (run === undefined) return [];
        return [{ label: `${system} c=${concurrency}: ${grouped(run.opsPerSecond)} ops/s`, points: run.histogram.distribution(), dashed: system !== 'atoll', colorIndex }];
      }),
    ),
  }));
}
