/**
 * The hostile load run of issue 33 ("Beyond these"): on a three-node cluster with authentication,
 * every hostile pattern at once from three tenants (hostile-attacks.ts, in a worker thread) while
 * a fourth tenant does ordinary puts and gets at a steady rate over the TypeScript client, for a
 * set time. Reports the ordinary tenant's operations, errors by code and latency, every node's
 * peak resident memory and longest event-loop stall (node-sampler.ts), what the attackers did,
 * and the goal checked (hostile-load-report.ts). `npm run hostile-load` (hostile-load-cli.ts).
 *
 * The tenants:
 * - hostile-watch (read role; a readwrite token of the same tenant writes its history first):
 *   zero-window watches from revision 0;
 * - hostile-script (readwrite): hostile scripts, and the KV.Stream that never reads;
 * - hostile-lease (readwrite): the lease-grant flood into one bucket;
 * - no tenant at all: the token guesses and the partial-header admin connections;
 * - ordinary (readwrite): puts and gets of 100-byte values on keys spread over every partition.
 *
 * The ordinary load is open-loop: operations start on schedule whether or not earlier ones have
 * answered (at most `maxInFlight` at once; one that cannot start counts as an error,
 * CLIENT_BACKLOG), so a stalled node shows as latency and errors rather than as fewer operations.
 * Every operation has a 5 s deadline. Nodes keep their default bounds (watch memory, admin port,
 * leases, scripts): the run measures the defaults an operator gets.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { AtollClient } from '../client/index.js';
import { LocalCluster, packageRoot } from '../chaos/local-cluster.js';
import { newToken } from '../tenancy/token.js';
import { partitionOf } from '../keys/partition-table.js';
import { toInternalKey } from '../keys/tenant-keys.js';
import { preferredLeaderOf } from '../keys/placement.js';
import type { AttackWorkerCommand, AttackWorkerMessage } from './hostile-attack-worker.js';
import { countOutcome, emptyAttackStats, outcomeOf, patternNames, type AttackPlan, type AttackScale, type AttackStats, type Outcomes, type PatternName } from './hostile-attacks.js';
import { goalChecks, nodeReportOf, type HostileLoadReport, type OrdinaryTenantReport } from './hostile-load-report.js';
import { LatencyHistogram } from './latency-histogram.js';
import { NodeSampler } from './node-sampler.js';

/** The patterns at the strength of the issue's findings (watches: 8 connections x 25; scripts: five at once; admin: 96 connections a node). */
export const defaultAttackScale: AttackScale = Object.freeze({
  watchConnections: 8,
  watchesPerConnection: 25,
  maxWatchesOpened: 20_000,
  maxWatchConnectionsOpened: 400,
  scripts: 5,
  maxScripts: 10_000,
  adminConnectionsPerNode: 96,
  adminSourceAddresses: 8,
  maxAdminConnectionsOpened: 100_000,
  leaseConcurrency: 8,
  leaseRate: 500,
  maxLeaseGrants: 100_000,
  leaseTtlMs: 600_000,
  guessConcurrencyPerNode: 4,
  guessRate: 1_000,
  maxGuesses: 200_000,
  guessConnectionEveryMs: 2_000,
  guessSourceAddresses: 4,
  streamFrames: 200_000,
  maxStreamsPerNode: 20,
});

/** A few of each, for the test and a quick look (`--reduced`). */
export const reducedAttackScale: AttackScale = Object.freeze({
  ...defaultAttackScale,
  watchConnections: 3,
  watchesPerConnection: 3,
  scripts: 2,
  adminConnectionsPerNode: 8,
  adminSourceAddresses: 2,
  leaseConcurrency: 2,
  leaseRate: 100,
  guessConcurrencyPerNode: 1,
  guessRate: 100,
  guessSourceAddresses: 1,
  streamFrames: 2_000,
});

export interface HostileLoadOptions {
  readonly durationMs: number;
  /** The ordinary tenant's operations a second. */
  readonly rate: number;
  readonly partitions: number;
  /** The watching tenant's history: this many values of this many bytes, read by every hostile watch. */
  readonly historyValues: number;
  readonly historyValueBytes: number;
  readonly scale: AttackScale;
  /** The hostile patterns to run: all of them for the goal; fewer to find which one hurts. */
  readonly patterns: readonly PatternName[];
  readonly progressEveryMs: number;
  /**
   * The ordinary tenant runs at its rate this long before the attacks start, not measured: it is a
   * service already running when the attack comes, not one whose first requests (token, quota and
   * leader lookups at each node, its connections) happen to start with it.
   */
  readonly warmUpMs: number;
  /**
   * The attackers' thread's nice value (Linux), or undefined to leave it at the run's own. The
   * attackers stand for clients on other hosts, which take no CPU from the nodes: on the machine
   * the nodes share, at 19 they take only what the nodes and the measuring thread leave (the report
   * gives what each pattern did, so an attack slowed by it shows).
   */
  readonly attackerNice?: number;
  /** Where progress lines go (one line a call, no newline). */
  readonly log: (line: string) => void;
}

export const defaultHostileLoadOptions: Omit<HostileLoadOptions, 'log'> = Object.freeze({
  durationMs: 60_000,
  rate: 200,
  partitions: 8,
  historyValues: 24,
  historyValueBytes: 200 * 1024,
  scale: defaultAttackScale,
  patterns: patternNames,
  progressEveryMs: 5_000,
  attackerNice: 19,
  warmUpMs: 2_000,
});

const ordinaryTimeoutMs = 5_000;
const ordinaryBuckets = 64;
const ordinaryKeysPerBucket = 200;
const maxInFlight = 1_000;

/** The ordinary tenant's open-loop load: puts and gets alternating, on schedule. */
class OrdinaryLoad {
  readonly latency = new LatencyHistogram();
  started = 0;
  answered = 0;
  puts = 0;
  gets = 0;
  errors = 0;
  readonly errorsByCode: Outcomes = {};
  /** The first message seen for each error code (what an INTERNAL was, say). */
  readonly firstErrorByCode: Record<string, string> = {};
  private inFlight = 0;
  private readonly value = Buffer.alloc(100, 'v');
  private idle: (() => void) | undefined;

  constructor(
    private readonly client: AtollClient,
    private readonly rate: number,
  ) {}

  /**
   * Starts operations on schedule from now until `untilMs` (performance.now()); resolves once every
   * operation due by then has started (after a late timer too: it catches up first).
   */
  run(untilMs: number): Promise<void> {
    const startMs = performance.now();
    return new Promise((resolveRun) => {
      const timer = setInterval(() => {
        const nowMs = Math.min(performance.now(), untilMs);
        const due = Math.floor(((nowMs - startMs) * this.rate) / 1000);
        while (this.started < due) this.launch();
        if (nowMs >= untilMs) {
          clearInterval(timer);
          resolveRun();
        }
      }, 5);
    });
  }

  private launch(): void {
    const index = this.started++;
    if (this.inFlight >= maxInFlight) {
      this.fail('CLIENT_BACKLOG', 0);
      return;
    }
    const key = `o${index % ordinaryBuckets}/k${Math.floor(index / ordinaryBuckets) % ordinaryKeysPerBucket}`;
    const put = index % 2 === 0;
    if (put) this.puts++;
    else this.gets++;
    this.inFlight++;
    const startMs = performance.now();
    const operation: Promise<unknown> = put ? this.client.put(key, this.value, { timeoutMs: ordinaryTimeoutMs }) : this.client.get(key, { timeoutMs: ordinaryTimeoutMs });
    operation.then(
      () => {
        this.answered++;
        this.latency.recordUs((performance.now() - startMs) * 1000);
        this.settled();
      },
      (error: unknown) => {
        const code = outcomeOf(error);
        this.firstErrorByCode[code] ??= (error instanceof Error ? error.message : String(error)).slice(0, 300);
        this.fail(code, performance.now() - startMs);
        this.settled();
      },
    );
  }

  private fail(code: string, latencyMs: number): void {
    this.errors++;
    countOutcome(this.errorsByCode, code);
    if (latencyMs > 0) this.latency.recordUs(latencyMs * 1000);
  }

  private settled(): void {
    this.inFlight--;
    if (this.inFlight === 0) this.idle?.();
  }

  /** Resolves once every started operation has answered (each is bounded by its deadline), or after `ms`. */
  drained(ms: number): Promise<void> {
    if (this.inFlight === 0) return Promise.resolve();
    return new Promise((resolveDrained) => {
      const timer = setTimeout(resolveDrained, ms);
      this.idle = () => {
        clearTimeout(timer);
        resolveDrained();
      };
    });
  }

  report(tenant: string, elapsedMs: number): OrdinaryTenantReport {
    const summary = this.latency.summary();
    return {
      tenant,
      targetRate: this.rate,
      achievedRate: elapsedMs > 0 ? (this.answered * 1000) / elapsedMs : 0,
      operations: this.started,
      puts: this.puts,
      gets: this.gets,
      errors: this.errors,
      errorsByCode: { ...this.errorsByCode },
      firstErrorByCode: { ...this.firstErrorByCode },
      latencyMs: { p50: summary.p50Ms, p90: summary.p90Ms, p99: summary.p99Ms, max: summary.maxMs, mean: summary.meanMs },
    };
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

/** Waits (at most `ms`) until every partition is led by its preferred node, so the leader balancer moves nothing during the run. */
async function leadersSettled(client: AtollClient, ms: number): Promise<boolean> {
  const deadlineMs = Date.now() + ms;
  while (Date.now() < deadlineMs) {
    const info = await client.clusterInfo({ timeoutMs: 2_000 }).catch(() => undefined);
    if (info?.partitions.every((partition) => Number(partition.leader) === preferredLeaderOf(partition.id, [1, 2, 3], 3)) === true) return true;
    await sleep(250);
  }
  return false;
}

/** A bucket of the watching tenant on a partition each node leads (as ClusterInfo says now), with that node's client address. */
async function historyBuckets(admin: AtollClient, cluster: LocalCluster, partitions: number): Promise<Array<{ prefix: string; address: string }>> {
  const info = await admin.clusterInfo({ timeoutMs: 5_000 });
  const leaderOf = new Map(info.partitions.map((partition) => [partition.id, Number(partition.leader)]));
  const targets: Array<{ prefix: string; address: string }> = [];
  for (const node of [1, 2, 3]) {
    // Bounded: a node that leads some partition has one of these 1,000 buckets on it almost surely.
    for (let index = 0; index < 1_000; index++) {
      const prefix = `hist${index}`;
      if (leaderOf.get(partitionOf(toInternalKey('hostile-watch', `${prefix}/k`), partitions)) !== node) continue;
      targets.push({ prefix, address: cluster.addresses.get(node)! });
      break;
    }
  }
  // No node leads anything (an election under way): one bucket, wherever its leader turns out to be.
  return targets.length > 0 ? targets : [{ prefix: 'hist0', address: cluster.addresses.get(1)! }];
}

/** CPU time (process.cpuUsage: every thread of this process) as a percentage of one core over `elapsedMs`. */
function cpuPercentOfUsage(usage: NodeJS.CpuUsage, elapsedMs: number): number {
  return Math.round(((usage.user + usage.system) / 1000 / Math.max(1, elapsedMs)) * 1000) / 10;
}

/** One progress line: key=value pairs. */
function progressLine(elapsedMs: number, load: OrdinaryLoad, samplers: readonly NodeSampler[], attacks: AttackStats): string {
  const windows = samplers.map((sampler) => sampler.takeWindow());
  const fields: Array<[string, string | number]> = [
    ['t_s', (elapsedMs / 1000).toFixed(0)],
    ['ops', load.started],
    ['errors', load.errors],
    ['p99_ms', load.latency.atPercentileMs(99).toFixed(1)],
    ['max_ms', load.latency.atPercentileMs(100).toFixed(1)],
    ['rss_mb', windows.map((window) => (window.rssBytes / 1024 / 1024).toFixed(0)).join('/')],
    ['stall_ms', windows.map((window) => window.stallMs.toFixed(0)).join('/')],
    ['cpu_pct', windows.map((window) => (window.cpuPercent === undefined ? '-' : window.cpuPercent.toFixed(0))).join('/')],
    ['watches_open', attacks.watches.open],
    ['watches_opened', attacks.watches.opened],
    ['scripts_running', attacks.scripts.running],
    ['scripts_started', attacks.scripts.started],
    ['admin_open', attacks.admin.open],
    ['lease_grants', attacks.leases.attempted],
    ['leases_granted', attacks.leases.outcomes['granted'] ?? 0],
    ['token_guesses', attacks.tokenGuesses.sent],
    ['stream_open', attacks.stream.open],
  ];
  return `hostile-load progress ${fields.map(([name, value]) => `${name}=${value}`).join(' ')}`;
}

/** Starts the cluster, runs the load, stops everything; the report says whether the goal was met. */
export async function runHostileLoad(options: HostileLoadOptions): Promise<HostileLoadReport> {
  const { log } = options;
  const work = mkdtempSync(join(tmpdir(), 'atoll-hostile-load-'));
  const adminToken = newToken();
  const tokenFile = join(work, 'admin-token');
  writeFileSync(tokenFile, `${adminToken}\n`, { mode: 0o600 });
  const clients: AtollClient[] = [];
  let cluster: LocalCluster | undefined;
  let worker: Worker | undefined;
  try {
    log(`hostile-load setup: starting 3 nodes, ${options.partitions} partitions, authentication on`);
    cluster = await LocalCluster.start({ partitions: options.partitions, extraArgs: ['--admin-token-file', tokenFile] });
    const started = cluster;
    const clientFor = (token: string, timeoutMs = 30_000): AtollClient => {
      const client = new AtollClient({ endpoints: started.endpoints, token, defaultTimeoutMs: timeoutMs });
      clients.push(client);
      return client;
    };
    const admin = clientFor(adminToken);
    const tokenOf = async (tenant: string, role: string): Promise<string> => (await admin.authCall('CreateToken', { tenant, role, name: `${tenant}-${role}` }))['token'] as string;
    const tokens = {
      watchWriter: await tokenOf('hostile-watch', 'readwrite'),
      watchReader: await tokenOf('hostile-watch', 'read'),
      script: await tokenOf('hostile-script', 'readwrite'),
      lease: await tokenOf('hostile-lease', 'readwrite'),
      ordinary: await tokenOf('ordinary', 'readwrite'),
    };
    const ordinaryClient = clientFor(tokens.ordinary, ordinaryTimeoutMs);
    for (let bucket = 0; bucket < ordinaryBuckets; bucket++) await ordinaryClient.put(`o${bucket}/k0`, 'warm-up');
    if (!(await leadersSettled(admin, 30_000))) log('hostile-load setup: some partitions are not led by their preferred node yet; leadership may move during the run');
    // The watching tenant's history: in one bucket a node, each on a partition that node leads.
    const watchWriter = clientFor(tokens.watchWriter);
    const watchTargets = await historyBuckets(admin, started, options.partitions);
    for (const { prefix } of watchTargets) {
      for (let index = 0; index < options.historyValues; index++) await watchWriter.put(`${prefix}/k${index}`, Buffer.alloc(options.historyValueBytes, index % 256));
    }
    log(`hostile-load setup: tenants and tokens made, history of ${options.historyValues} x ${options.historyValueBytes} bytes in ${watchTargets.map((target) => target.prefix).join(', ')}; running for ${(options.durationMs / 1000).toFixed(0)} s`);

    const samplers = [1, 2, 3].map((id) => new NodeSampler(id, started.pidOf(id), started.adminAddresses.get(id)!));
    // The attackers prepare (their payloads) before the clock starts; the plan's deadline is sent with the start.
    const plan: AttackPlan = {
      patterns: options.patterns,
      endpoints: [1, 2, 3].map((id) => started.addresses.get(id)!),
      adminAddresses: [1, 2, 3].map((id) => started.adminAddresses.get(id)!),
      watchToken: tokens.watchReader,
      watchTargets,
      scriptToken: tokens.script,
      leaseToken: tokens.lease,
      leaseBucket: 'flood',
      untilEpochMs: Date.now() + options.durationMs,
      scale: options.scale,
    };
    let attacks = emptyAttackStats();
    let attackerError: string | undefined;
    const attackWorker = new Worker(join(packageRoot(), 'dist/src/bench/hostile-attack-worker.js'), { workerData: { ...plan, ...(options.attackerNice !== undefined && { threadNice: options.attackerNice }) } });
    worker = attackWorker;
    let attackersReady: () => void = () => undefined;
    const ready = new Promise<void>((resolveReady) => (attackersReady = resolveReady));
    const attackersDone = new Promise<void>((resolveDone) => {
      attackWorker.on('message', (message: AttackWorkerMessage) => {
        if (message.type === 'ready') return attackersReady();
        attacks = message.stats;
        if (message.type === 'done') resolveDone();
      });
      attackWorker.on('error', (error) => {
        attackerError = error instanceof Error ? (error.stack ?? error.message) : String(error);
        resolveDone();
      });
      attackWorker.on('exit', () => resolveDone());
    });
    await Promise.race([ready, attackersDone]);
    const failedEarly = (): string | undefined => attackerError;
    if (failedEarly() !== undefined) throw new Error(`the attackers failed before the run: ${failedEarly()}`);

    if (options.warmUpMs > 0) {
      const warmUp = new OrdinaryLoad(ordinaryClient, options.rate);
      await warmUp.run(performance.now() + options.warmUpMs);
      log(`hostile-load warm-up: the ordinary tenant ran ${warmUp.started} operations in ${(options.warmUpMs / 1000).toFixed(1)} s (not measured); the attacks start now`);
    }
    await Promise.all(samplers.map((sampler) => sampler.sample()));
    for (const sampler of samplers) sampler.startRun();
    const generatorDelay = monitorEventLoopDelay({ resolution: 10 });
    generatorDelay.enable();
    const generatorCpu = process.cpuUsage();
    const startedAt = new Date().toISOString();
    const loadAverageStart = loadavg();
    const startMs = performance.now();
    const untilMs = startMs + options.durationMs;
    attackWorker.postMessage({ type: 'start', untilEpochMs: Date.now() + options.durationMs } satisfies AttackWorkerCommand);

    const load = new OrdinaryLoad(ordinaryClient, options.rate);
    const loadRun = load.run(untilMs);
    const sampling = setInterval(() => void Promise.all(samplers.map((sampler) => sampler.sample())), 1_000);
    const progress = setInterval(() => log(progressLine(performance.now() - startMs, load, samplers, attacks)), options.progressEveryMs);
    try {
      await loadRun;
      attackWorker.postMessage({ type: 'stop' });
      await Promise.race([attackersDone, sleep(10_000)]);
      await load.drained(ordinaryTimeoutMs + 1_000);
    } finally {
      clearInterval(progress);
      clearInterval(sampling);
    }
    const elapsedMs = performance.now() - startMs;
    // A last round: the histogram's maximum since the last scrape covers the end of the run.
    await Promise.all(samplers.map((sampler) => sampler.sample()));
    log(progressLine(elapsedMs, load, samplers, attacks));
    generatorDelay.disable();
    if (attackerError !== undefined) log(`hostile-load: the attacking thread failed: ${attackerError}`);

    const exited = new Set(started.crashes.map((crash) => crash.id));
    const ordinary = load.report('ordinary', elapsedMs);
    const nodes = samplers.map((sampler) => nodeReportOf(sampler.observation, exited.has(sampler.observation.id)));
    const checks = goalChecks(ordinary, nodes, attacks, options.patterns);
    if (attackerError !== undefined) checks.push({ name: 'the attacking thread ran to its end', limit: 'yes', measured: attackerError.split('\n')[0]!, pass: false });
    return {
      startedAt,
      durationMs: Math.round(elapsedMs),
      config: { durationMs: options.durationMs, rate: options.rate, partitions: options.partitions, historyValues: options.historyValues, historyValueBytes: options.historyValueBytes, patterns: options.patterns, scale: options.scale, attackerNice: options.attackerNice ?? null },
      machine: { cpus: cpus().length, loadAverageStart, loadAverageEnd: loadavg() },
      ordinary,
      nodes,
      patterns: options.patterns,
      attacks,
      // Less the histogram's own 10 ms sampling interval, which every value it records includes.
      generatorStallMs: Math.max(0, Math.round(generatorDelay.max / 1e3) / 1e3 - 10),
      generatorCpuPercent: cpuPercentOfUsage(process.cpuUsage(generatorCpu), elapsedMs),
      nodeBugReports: started.bugReports.map((bug) => `node ${bug.id}: ${bug.line}`),
      goal: { met: checks.every((check) => check.pass), checks },
    };
  } finally {
    await worker?.terminate();
    for (const client of clients) client.close();
    await cluster?.stop();
    rmSync(work, { recursive: true, force: true });
  }
}
