/**
 * The report of a hostile load run (hostile-load.ts): what the ordinary tenant saw, what every
 * node showed, what the hostile patterns did, and the goal of issue 33 checked against it: the
 * ordinary tenant sees no errors, its p99 is under 100 ms, no node goes over 1 GB of resident
 * memory, no node's event loop stalls over 50 ms. The report is JSON (`HostileLoadReport`) and a
 * readable table (`reportText`).
 */
import { idlePatterns, patternNames, type AttackStats, type Outcomes, type PatternName } from './hostile-attacks.js';
import { cpuPercentOf, lagHistogramIntervalMs, longestStallMs, peakRssOf, type NodeObservation } from './node-sampler.js';
import { countsText, grouped, milliseconds, textTable } from './text-table.js';

/** The goal's bounds. */
export const hostileLoadGoal = Object.freeze({
  ordinaryErrors: 0,
  p99Ms: 100,
  /** 1 GB (10^9 bytes). */
  rssBytes: 1_000_000_000,
  stallMs: 50,
});

export interface OrdinaryTenantReport {
  readonly tenant: string;
  /** The rate asked for (operations a second) and the rate achieved (answered operations a second). */
  readonly targetRate: number;
  readonly achievedRate: number;
  /** Operations started (puts and gets), and those that failed, by code. */
  readonly operations: number;
  readonly puts: number;
  readonly gets: number;
  readonly errors: number;
  readonly errorsByCode: Outcomes;
  /** The first message of each error code. */
  readonly firstErrorByCode?: Readonly<Record<string, string>>;
  /** Latency of every operation, failed ones included, in ms. */
  readonly latencyMs: { readonly p50: number; readonly p90: number; readonly p99: number; readonly max: number; readonly mean: number };
}

export interface NodeReport {
  readonly id: number;
  readonly pid: number | undefined;
  /** The largest resident memory seen (/proc VmRSS or the admin port's process_resident_memory_bytes). */
  readonly peakRssBytes: number;
  readonly peakRssMb: number;
  /** The longest event-loop stall: the larger of the lag gauge and the lag histogram's maximum less its sampling interval. */
  readonly longestStallMs: number;
  readonly lagGaugeMaxMs: number;
  /** nodejs_eventloop_lag_max_seconds as reported (ms): the time between two runs of the histogram's timer, its sampling interval included. */
  readonly lagHistogramMaxMs: number;
  readonly lagHistogramIntervalMs: number;
  readonly rssSamples: number;
  readonly metricsSamples: number;
  readonly metricsFailures: Outcomes;
  readonly livezMaxMs: number;
  readonly livezProbes: number;
  readonly livezFailures: Outcomes;
  readonly peakWatchBytes: number;
  /** Its average CPU use over the run, in percent of one core (undefined: /proc not readable). */
  readonly cpuPercent: number | undefined;
  /** Elections this node's replicas started while the run went on (undefined: never scraped). */
  readonly elections: number | undefined;
  /** The node exited during the run (it was not stopped). */
  readonly exited: boolean;
}

export interface GoalCheck {
  readonly name: string;
  readonly limit: string;
  readonly measured: string;
  readonly pass: boolean;
}

export interface HostileLoadReport {
  readonly startedAt: string;
  readonly durationMs: number;
  readonly config: Record<string, unknown>;
  readonly machine: { readonly cpus: number; readonly loadAverageStart: readonly number[]; readonly loadAverageEnd: readonly number[] };
  readonly ordinary: OrdinaryTenantReport;
  readonly nodes: readonly NodeReport[];
  /** The hostile patterns run (all of them unless the run was told otherwise), and what they did. */
  readonly patterns: readonly PatternName[];
  readonly attacks: AttackStats;
  /** The measuring thread's own longest event-loop delay (ms): large, and latencies above include it. */
  readonly generatorStallMs: number;
  /** The CPU the run's own process used (the ordinary tenant, the measuring and the attacking thread), in percent of one core. */
  readonly generatorCpuPercent: number;
  /** Lines nodes logged about bugs they survived (an unhandled rejection). */
  readonly nodeBugReports: readonly string[];
  readonly goal: { readonly met: boolean; readonly checks: readonly GoalCheck[] };
}

export function nodeReportOf(node: NodeObservation, exited: boolean): NodeReport {
  const peak = peakRssOf(node);
  return {
    id: node.id,
    pid: node.pid,
    peakRssBytes: peak,
    peakRssMb: Math.round(peak / 1024 / 1024),
    longestStallMs: round(longestStallMs(node)),
    lagGaugeMaxMs: round(node.lagGaugeMaxMs),
    lagHistogramMaxMs: round(node.lagHistogramMaxMs),
    lagHistogramIntervalMs,
    rssSamples: node.rssSamples,
    metricsSamples: node.metricsSamples,
    metricsFailures: node.metricsFailures,
    livezMaxMs: round(node.livezMaxMs),
    livezProbes: node.livezProbes,
    livezFailures: node.livezFailures,
    peakWatchBytes: node.peakWatchBytes,
    cpuPercent: cpuPercentOf(node),
    elections: node.electionsFirst === undefined || node.electionsLast === undefined ? undefined : node.electionsLast - node.electionsFirst,
    exited,
  };
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** The goal's checks, and two that make a run count at all: every node was sampled and stayed up, every hostile pattern ran. */
export function goalChecks(ordinary: OrdinaryTenantReport, nodes: readonly NodeReport[], attacks: AttackStats, patterns: readonly PatternName[]): GoalCheck[] {
  const worst = <T>(pick: (node: NodeReport) => T, compare: (a: T, b: T) => number): NodeReport | undefined => [...nodes].sort((a, b) => compare(pick(b), pick(a)))[0];
  const rssNode = worst((node) => node.peakRssBytes, (a, b) => a - b);
  const stallNode = worst((node) => node.longestStallMs, (a, b) => a - b);
  const idle = idlePatterns(attacks, patterns);
  const unsampled = nodes.filter((node) => node.metricsSamples === 0 || node.exited).map((node) => node.id);
  return [
    { name: 'the ordinary tenant sees no errors', limit: String(hostileLoadGoal.ordinaryErrors), measured: `${ordinary.errors} of ${grouped(ordinary.operations)}`, pass: ordinary.operations > 0 && ordinary.errors <= hostileLoadGoal.ordinaryErrors },
    { name: 'its p99 latency', limit: `< ${hostileLoadGoal.p99Ms} ms`, measured: `${milliseconds(ordinary.latencyMs.p99)} ms`, pass: ordinary.operations > 0 && ordinary.latencyMs.p99 < hostileLoadGoal.p99Ms },
    { name: 'every node\'s peak RSS', limit: '< 1 GB', measured: rssNode === undefined ? '-' : `${rssNode.peakRssMb} MiB (node ${rssNode.id})`, pass: nodes.length > 0 && nodes.every((node) => node.peakRssBytes < hostileLoadGoal.rssBytes) },
    { name: 'every node\'s longest event-loop stall', limit: `< ${hostileLoadGoal.stallMs} ms`, measured: stallNode === undefined ? '-' : `${milliseconds(stallNode.longestStallMs)} ms (node ${stallNode.id})`, pass: nodes.length > 0 && nodes.every((node) => node.longestStallMs < hostileLoadGoal.stallMs) },
    { name: 'every node sampled and up throughout', limit: 'all', measured: unsampled.length === 0 ? 'all' : `not: node ${unsampled.join(', ')}`, pass: nodes.length > 0 && unsampled.length === 0 },
    {
      name: 'every hostile pattern ran',
      limit: `all ${patternNames.length}`,
      measured: idle.length > 0 ? `idle: ${idle.join(', ')}` : `${patterns.length}${patterns.length < patternNames.length ? ` (not run: ${patternNames.filter((name) => !patterns.includes(name)).join(', ')})` : ''}`,
      pass: idle.length === 0 && patternNames.every((name) => patterns.includes(name)),
    },
  ];
}

const mib = (bytes: number): string => (bytes / 1024 / 1024).toFixed(0);

function outcomesText(outcomes: Outcomes): string {
  return countsText(Object.fromEntries(Object.entries(outcomes).sort(([, a], [, b]) => b - a)));
}

/** The report as readable text: the ordinary tenant, the nodes, the attacks, the goal. */
export function reportText(report: HostileLoadReport): string {
  const { ordinary, attacks } = report;
  const lines: string[] = [];
  lines.push(`hostile load run: ${(report.durationMs / 1000).toFixed(1)} s, 3 nodes with authentication, started ${report.startedAt}; ${report.machine.cpus} CPUs, load average ${report.machine.loadAverageStart.map((v) => v.toFixed(2)).join(' ')} at the start`);
  lines.push('');
  lines.push(`ordinary tenant "${ordinary.tenant}" (${ordinary.targetRate} ops/s asked, ${ordinary.achievedRate.toFixed(1)} answered a second):`);
  lines.push(
    ...textTable(
      ['operations', 'puts', 'gets', 'errors', 'p50 ms', 'p90 ms', 'p99 ms', 'max ms'],
      [[grouped(ordinary.operations), grouped(ordinary.puts), grouped(ordinary.gets), grouped(ordinary.errors), milliseconds(ordinary.latencyMs.p50), milliseconds(ordinary.latencyMs.p90), milliseconds(ordinary.latencyMs.p99), milliseconds(ordinary.latencyMs.max)]],
    ).map((line) => `  ${line}`),
  );
  if (ordinary.errors > 0) lines.push(`  errors by code: ${outcomesText(ordinary.errorsByCode)}`);
  for (const [code, message] of Object.entries(ordinary.firstErrorByCode ?? {})) lines.push(`    first ${code}: ${message}`);
  lines.push('');
  lines.push('nodes:');
  lines.push(
    ...textTable(
      ['node', 'peak RSS MiB', 'longest stall ms', 'lag gauge ms', 'lag hist max ms*', '/livez max ms', 'CPU %', 'watch MiB', 'elections', 'samples', 'failed scrapes'],
      report.nodes.map((node) => [
        `${node.id}${node.exited ? ' (exited)' : ''}`,
        node.peakRssMb,
        milliseconds(node.longestStallMs),
        milliseconds(node.lagGaugeMaxMs),
        milliseconds(node.lagHistogramMaxMs),
        `${milliseconds(node.livezMaxMs)}${Object.keys(node.livezFailures).length > 0 ? ` (${outcomesText(node.livezFailures)})` : ''}`,
        node.cpuPercent ?? '-',
        mib(node.peakWatchBytes),
        node.elections ?? '-',
        node.metricsSamples,
        outcomesText(node.metricsFailures),
      ]),
    ).map((line) => `  ${line}`),
  );
  lines.push(`  * nodejs_eventloop_lag_max_seconds as reported: the time between two runs of the histogram's timer, its ${lagHistogramIntervalMs} ms interval included; the stall is that less ${lagHistogramIntervalMs} ms (how late the timer ran), or the lag gauge`);
  lines.push('');
  lines.push('hostile patterns (what each did; how the nodes answered):');
  const patterns: Array<[PatternName, string, string, Outcomes]> = [
    ['watches', 'zero-window watches', `${grouped(attacks.watches.opened)} watches on ${attacks.watches.connectionsOpened} connections`, attacks.watches.outcomes],
    ['scripts', 'hostile scripts', `${grouped(attacks.scripts.started)} started`, attacks.scripts.outcomes],
    ['admin', 'admin partial headers', `${grouped(attacks.admin.opened)} connections`, attacks.admin.outcomes],
    ['leases', 'lease grants, one bucket', `${grouped(attacks.leases.attempted)} grants`, attacks.leases.outcomes],
    ['tokenGuesses', 'token guesses', `${grouped(attacks.tokenGuesses.sent)} calls on ${attacks.tokenGuesses.connections} connections`, attacks.tokenGuesses.outcomes],
    ['stream', 'never-read KV.Stream', `${grouped(attacks.stream.framesWritten)} requests on ${attacks.stream.streamsOpened} streams`, attacks.stream.outcomes],
  ];
  const width = Math.max(...patterns.map(([, title]) => title.length));
  for (const [name, title, did, outcomes] of patterns) {
    const what = !report.patterns.includes(name) ? 'not run' : `${did}; ${Object.keys(outcomes).length === 0 ? 'no answer yet' : outcomesText(outcomes)}`;
    lines.push(`  ${`${title}:`.padEnd(width + 1)}  ${what}`);
  }
  const nice = report.config.attackerNice === null ? "at the run's own nice value" : `at nice ${report.config.attackerNice}`;
  lines.push(`  (this process, attackers included (their thread ${nice}), used ${report.generatorCpuPercent}% of a core; its measuring thread's longest stall: ${milliseconds(report.generatorStallMs)} ms)`);
  for (const bug of report.nodeBugReports) lines.push(`  node bug report: ${bug.slice(0, 200)}`);
  lines.push('');
  lines.push('goal:');
  lines.push(...textTable(['check', 'limit', 'measured', 'result'], report.goal.checks.map((check) => [check.name, check.limit, check.measured, check.pass ? 'pass' : 'FAIL'])).map((line) => `  ${line}`));
  lines.push('');
  lines.push(report.goal.met ? 'result: the goal is met' : 'result: the goal is NOT met');
  return lines.join('\n');
}
