/**
 * `atoll bench`: throughput and latency percentiles of workloads against a running cluster, with
 * live progress, a final table (or --json) and optionally an SVG of the latency distributions.
 * `--system etcd` runs the very same workloads against etcd (scripts/bench-vs-etcd.sh does), or,
 * with Atoll's etcd port as --endpoints, against Atoll through etcd's API with the same client code
 * (`--label atoll-etcd` names those results). `--tenants N` spreads the workers over N clients,
 * one keyspace each (tenant-lanes.ts).
 *
 * Exit codes follow the CLI's: 0 measured (errors, if any, are in the table by code); 2 the bench
 * could not run (bad options, the preload failed) or some run had no successful operation.
 */
import { writeFileSync } from 'node:fs';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { AtollClient, type AtollClientOptions } from '../client/index.js';
import { AtollError } from '../errors.js';
import { AtollTarget } from './atoll-target.js';
import { BenchRun, PreloadError, type BenchReport, type BenchSettings } from './bench-run.js';
import { benchJson, benchTable } from './bench-report.js';
import { benchSystems, errorCodeOf, type BenchSystem, type BenchTarget } from './bench-target.js';
import { EtcdTarget } from './etcd-target.js';
import { latencySvg, type LatencyPanel } from './latency-svg.js';
import { ProgressDisplay } from './progress.js';
import { checkTenants, readPasswords, TenantLanes, tenantPrefix } from './tenant-lanes.js';
import { grouped } from './text-table.js';
import { parseWorkloads, workloadNames } from './workloads.js';

const benchExitCodes = Object.freeze({ ok: 0, error: 2 });
const defaultEtcdEndpoints = '127.0.0.1:2379';
/** Each operation's timeout unless --timeout says otherwise. */
const defaultOperationTimeoutMs = 5_000;

export interface BenchCommandContext {
  stdout(text: string): void;
  stderr(text: string): void;
  readonly env: Readonly<Record<string, string | undefined>>;
  setExitCode(code: number): void;
  /** Atoll endpoints when neither --endpoints nor $ATOLL_ENDPOINTS names any. */
  readonly defaultEndpoints: string;
  readonly createClient?: (options: AtollClientOptions) => AtollClient;
  /** Whether progress goes to a terminal (redrawn in place); default: whether stderr is one. */
  readonly progressTty?: boolean;
}

interface BenchOptions {
  workloads: string;
  concurrency: number[];
  keys: number;
  valueSize: number;
  duration?: number;
  ops?: number;
  warmup: number;
  readRatio: number;
  preload: boolean;
  out?: string;
  system: BenchSystem;
  samplePids?: number[];
  seed: number;
  sharded?: number;
  tenants?: number;
  label?: string;
  etcdUser: string;
  etcdPasswordFile?: string;
}

function parseInteger(name: string, minimum: number) {
  return (text: string): number => {
    const value = Number(text);
    if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < minimum) throw new InvalidArgumentError(`${name} must be an integer >= ${minimum}`);
    return value;
  };
}

function parseIntegerList(name: string, minimum: number) {
  const one = parseInteger(name, minimum);
  return (text: string): number[] => [...new Set(text.split(',').map((part) => one(part.trim())))];
}

function parseLabel(text: string): string {
  if (!/^[a-z0-9][a-z0-9-]{0,31}$/.test(text)) throw new InvalidArgumentError('--label must be lower-case letters, digits and dashes (at most 32)');
  return text;
}

function parseNumber(name: string, minimum: number, maximum = Infinity) {
  return (text: string): number => {
    const value = Number(text);
    if (text.trim() === '' || !Number.isFinite(value) || value < minimum || value > maximum) throw new InvalidArgumentError(`${name} must be a number in [${minimum}, ${maximum}]`);
    return value;
  };
}

function settingsOf(options: BenchOptions): BenchSettings {
  if (options.duration !== undefined && options.ops !== undefined) throw new AtollError('INVALID_ARGUMENT', 'give --duration or --ops, not both');
  if (options.tenants !== undefined) {
    if (options.system !== 'etcd') throw new AtollError('INVALID_ARGUMENT', '--tenants applies to --system etcd (one etcd client per tenant)');
    checkTenants(options.tenants, options.concurrency);
  }
  if (options.etcdPasswordFile !== undefined && options.system !== 'etcd') throw new AtollError('INVALID_ARGUMENT', '--etcd-password-file applies to --system etcd');
  return {
    workloads: parseWorkloads(options.workloads),
    concurrencies: options.concurrency,
    keys: options.keys,
    valueSize: options.valueSize,
    readRatio: options.readRatio,
    ...(options.ops !== undefined ? { operations: options.ops } : { durationMs: Math.round((options.duration ?? 10) * 1000) }),
    warmupMs: Math.round(options.warmup * 1000),
    preload: options.preload,
    seed: options.seed,
    samplePids: options.samplePids ?? [],
    ...(options.tenants !== undefined && { tenants: options.tenants }),
  };
}

/** One panel per workload, one line per concurrency. */
export function benchPanels(report: Pick<BenchReport, 'runs'>): LatencyPanel[] {
  const workloads = [...new Set(report.runs.map((run) => run.workload))];
  return workloads.map((workload) => ({
    title: workload,
    series: report.runs
      .filter((run) => run.workload === workload)
      .map((run) => ({ label: `c=${run.concurrency}: ${grouped(run.opsPerSecond)} ops/s`, points: run.histogram.distribution() })),
  }));
}

/**
 * etcd's clients: one, or with --tenants one per tenant (tenant-lanes.ts), each authenticated with
 * its line of --etcd-password-file when given.
 */
async function etcdTargetOf(options: BenchOptions, endpoints: string[], timeoutMs: number): Promise<BenchTarget> {
  if (options.sharded !== undefined) throw new AtollError('INVALID_ARGUMENT', '--sharded applies to Atoll only (client.shardedCounter)');
  const tenants = options.tenants ?? 1;
  const passwords = options.etcdPasswordFile === undefined ? undefined : readPasswords(options.etcdPasswordFile, tenants);
  const clients: BenchTarget[] = [];
  try {
    for (let index = 0; index < tenants; index++) {
      const password = passwords?.[index];
      clients.push(await EtcdTarget.connect(endpoints, timeoutMs, password === undefined ? undefined : { username: options.etcdUser, password }));
    }
  } catch (error) {
    for (const client of clients) client.close();
    throw error;
  }
  return options.tenants === undefined ? (clients[0] as BenchTarget) : new TenantLanes(clients);
}

async function targetOf(options: BenchOptions, endpoints: string[], timeoutMs: number, context: BenchCommandContext): Promise<BenchTarget> {
  if (options.system === 'etcd') return etcdTargetOf(options, endpoints, timeoutMs);
  const clientOptions: AtollClientOptions = { endpoints, defaultTimeoutMs: timeoutMs };
  return new AtollTarget(context.createClient?.(clientOptions) ?? new AtollClient(clientOptions), timeoutMs, options.sharded);
}

async function runBench(options: BenchOptions, globals: { endpoints?: string; json?: boolean; timeout?: number }, context: BenchCommandContext): Promise<number> {
  const settings = settingsOf(options);
  const fallback = options.system === 'etcd' ? defaultEtcdEndpoints : (context.env['ATOLL_ENDPOINTS'] ?? context.defaultEndpoints);
  const endpoints = (globals.endpoints ?? fallback).split(',').map((endpoint) => endpoint.trim()).filter((endpoint) => endpoint !== '');
  const progress = new ProgressDisplay((text) => context.stderr(text), context.progressTty ?? process.stderr.isTTY === true);
  const target = await targetOf(options, endpoints, globals.timeout ?? defaultOperationTimeoutMs, context);
  let report: BenchReport;
  try {
    report = await new BenchRun(target, settings, progress, options.label).run(endpoints);
  } finally {
    target.close();
  }
  if (globals.json === true) context.stdout(`${JSON.stringify(benchJson(report))}\n`);
  else for (const line of benchTable(report)) context.stdout(`${line}\n`);
  if (options.out !== undefined) {
    writeFileSync(options.out, latencySvg(`${report.system}: latency by percentile`, benchPanels(report)));
    progress.note(`latency distributions written to ${options.out}`);
  }
  const failed = report.runs.filter((run) => run.operations === 0);
  for (const run of failed) {
    const [code = 'UNKNOWN'] = Object.entries(run.errorsByCode).sort((a, b) => b[1] - a[1])[0] ?? [];
    context.stderr(`error ${code}: ${run.workload} c=${run.concurrency}: no operation succeeded (${run.errors} errors)\n`);
  }
  return failed.length === 0 ? benchExitCodes.ok : benchExitCodes.error;
}

/** Adds `bench` to the `atoll` program (run.ts calls this once). */
export function addBenchCommand(program: Command, context: BenchCommandContext): void {
  program
    .command('bench')
    .description('measure ops/s and latency percentiles of workloads against a cluster (docs/performance.md)')
    .option('-w, --workloads <list>', `comma-separated, from ${workloadNames.join(',')}`, workloadNames.join(','))
    .option('-c, --concurrency <list>', 'requests in flight; a comma-separated list runs each', parseIntegerList('--concurrency', 1), [16])
    .option('--keys <n>', 'keys preloaded and read or written at random', parseInteger('--keys', 1), 10_000)
    .option('--value-size <bytes>', 'bytes per value written', parseInteger('--value-size', 0), 128)
    .option('--duration <s>', 'seconds each measured run lasts (default 10)', parseNumber('--duration', 0.1))
    .option('--ops <n>', 'operations each measured run performs, instead of a duration', parseInteger('--ops', 1))
    .option('--warmup <s>', 'seconds of unrecorded load before each measured run', parseNumber('--warmup', 0), 2)
    .option('--read-ratio <r>', 'share of reads in the mixed workload', parseNumber('--read-ratio', 0, 1), 0.5)
    .option('--no-preload', 'do not write the keys first (they were written by an earlier run)')
    .option('--out <file.svg>', 'also draw each workload’s latency distribution into this SVG file')
    .addOption(new Option('--system <name>', 'what to measure (etcd needs the etcd3 package)').choices([...benchSystems]).default('atoll'))
    .option('--sample-pids <list>', 'report the CPU use of these server processes (Linux)', parseIntegerList('--sample-pids', 1))
    .option('--seed <n>', 'seed of the key choice', parseInteger('--seed', 0), 1)
    .option('--sharded <n>', 'incr: spread the hot counter over N shard keys with client.shardedCounter (compare with and without)', parseInteger('--sharded', 1))
    .option('--label <name>', 'the name the results go under (default: the --system; atoll-etcd for etcd\'s client against Atoll\'s etcd port)', parseLabel)
    .option('--tenants <n>', `etcd: spread the workers over N keyspaces, one client each, keys under ${tenantPrefix(0).replace('0', '<i>')} (against Atoll's etcd port with --etcd-password-file, N tenants)`, parseInteger('--tenants', 1))
    .option('--etcd-user <name>', 'etcd: the user name to authenticate with (Atoll\'s etcd port ignores it)', 'bench')
    .option('--etcd-password-file <file>', 'etcd: authenticate with the password on line i for tenant i (on Atoll\'s etcd port, an Atoll token)')
    .action(async (options: BenchOptions, command: Command) => {
      const globals = command.optsWithGlobals<{ endpoints?: string; json?: boolean; timeout?: number }>();
      try {
        context.setExitCode(await runBench(options, globals, context));
      } catch (error) {
        const code = error instanceof PreloadError ? error.code : errorCodeOf(error);
        context.stderr(`error ${code}: ${error instanceof Error ? error.message : String(error)}\n`);
        context.setExitCode(benchExitCodes.error);
      }
    });
}
