/**
 * The many-tenant sweep of `npm run bench:etcd -- --tenants 1,8,64` (scripts/bench-vs-etcd.sh):
 * the same put workload through etcd's client, spread over N keyspaces, against Atoll's etcd port
 * (N tenants, each its own etcd keyspace: one bucket, so one partition of its own or shared by
 * hash) and against etcd (N key prefixes of its one keyspace: etcd has no tenants, so its figure
 * stays flat by design). The `atoll bench --json` reports of every round are merged per tenant
 * count and system, like the side-by-side comparison's (compare.ts), and shown as aggregate puts/s
 * with p50 and p99, the ratio to the smallest count, and Atoll's over etcd's.
 */
import type { BenchJson } from './bench-report.js';
import { msPerOpText } from './bench-report.js';
import { mergeRuns, ratioText, type MergedRun } from './compare.js';
import { countsText, grouped, markdownTable, milliseconds, textTable, type Cell } from './text-table.js';

/** Table order: Atoll through etcd's client, then etcd. */
export const sweepSystems = ['atoll-etcd', 'etcd'] as const;

export interface TenantSweep {
  /** Tenant counts, ascending. */
  readonly tenants: readonly number[];
  readonly workload: string;
  readonly concurrency: number;
  merged(system: string, tenants: number): MergedRun | undefined;
}

/** Groups every run of every report by its tenant count (settings.tenants, 1 when unset) and system. */
export function sweepOf(reports: readonly BenchJson[]): TenantSweep {
  const groups = new Map<string, { system: string; runs: BenchJson['runs'][number][] }>();
  const counts = new Set<number>();
  let workload = '';
  let concurrency = 0;
  for (const report of reports) {
    const tenants = report.settings.tenants ?? 1;
    counts.add(tenants);
    for (const run of report.runs) {
      workload ||= run.workload;
      concurrency ||= run.concurrency;
      const key = `${report.system}\u0000${tenants}`;
      const group = groups.get(key) ?? { system: report.system, runs: [] };
      group.runs.push(run);
      groups.set(key, group);
    }
  }
  const merged = new Map<string, MergedRun>();
  for (const [key, group] of groups) merged.set(key, mergeRuns(group.system, group.runs));
  return {
    tenants: [...counts].sort((a, b) => a - b),
    workload,
    concurrency,
    merged: (system, tenants) => merged.get(`${system}\u0000${tenants}`),
  };
}

/** This system's ops/s at N over its ops/s at the smallest count measured ("n/a" when missing). */
function vsFirst(sweep: TenantSweep, system: string, run: MergedRun): string {
  const first = sweep.tenants.map((tenants) => sweep.merged(system, tenants)).find((candidate) => candidate !== undefined);
  return ratioText(run.opsPerSecond, first?.opsPerSecond ?? 0);
}

const header = ['tenants', 'system', 'ops/s', 'vs first', 'p50 ms', 'p99 ms', 'server ms/op', 'load', 'rounds', 'errors'];

function rows(sweep: TenantSweep): Cell[][] {
  const lines: Cell[][] = [];
  for (const tenants of sweep.tenants) {
    for (const system of sweepSystems) {
      const run = sweep.merged(system, tenants);
      if (run === undefined) continue;
      lines.push([tenants, system, grouped(run.opsPerSecond), vsFirst(sweep, system, run), milliseconds(run.latency.p50Ms), milliseconds(run.latency.p99Ms), msPerOpText(run.serverCpuMsPerOp), run.loadAverage1m.toFixed(2), run.rounds, countsText(run.errorsByCode)]);
    }
    const atoll = sweep.merged('atoll-etcd', tenants);
    const etcd = sweep.merged('etcd', tenants);
    if (atoll !== undefined && etcd !== undefined) {
      lines.push([tenants, 'atoll-etcd/etcd', ratioText(atoll.opsPerSecond, etcd.opsPerSecond), '', ratioText(atoll.latency.p50Ms, etcd.latency.p50Ms), ratioText(atoll.latency.p99Ms, etcd.latency.p99Ms), '', '', '', '']);
    }
  }
  return lines;
}

/** The sweep as one table: text for the terminal, Markdown for docs/performance.md. */
export function sweepTable(sweep: TenantSweep, format: 'text' | 'markdown' = 'text'): string[] {
  return format === 'text' ? textTable(header, rows(sweep)) : markdownTable(header, rows(sweep));
}

/** One line per tenant count and system: `tenants put c=64 tenants=8 atoll-etcd ops/s=1480 p50=38.1 p99=120 vs-1=1.35`. */
export function sweepLines(sweep: TenantSweep): string[] {
  const lines: string[] = [];
  const first = sweep.tenants[0] ?? 1;
  for (const tenants of sweep.tenants) {
    for (const system of sweepSystems) {
      const run = sweep.merged(system, tenants);
      if (run === undefined) continue;
      const latency = `p50=${milliseconds(run.latency.p50Ms)} p99=${milliseconds(run.latency.p99Ms)}`;
      lines.push(`tenants ${sweep.workload} c=${sweep.concurrency} tenants=${tenants} ${system} ops/s=${Math.round(run.opsPerSecond)} ${latency} vs-${first}=${vsFirst(sweep, system, run)}`);
    }
  }
  return lines;
}
