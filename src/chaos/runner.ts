/**
 * One fault-injection run: start a real cluster, drive the workloads (registers, sets, counters and
 * a bank of transactions) through the client library while the nemesis kills, pauses and restarts
 * nodes and watchers follow the register and set buckets (watch-workload.ts) and lock workers take
 * a lock with fencing tokens (lock-workload.ts), heal, read everything back, check the history,
 * what the watchers saw and the lock's grants and fenced writes, and report. The last line is
 * `chaos: valid` or `chaos: INVALID (...)`, logged after the namespaces are removed (an INVALID
 * run says how to replay it on the line before).
 */
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { AtollClient } from '../client/index.js';
import { checkHistory, type CheckReport } from './check-history.js';
import { LocalCluster } from './local-cluster.js';
import { MembershipNemesis } from './membership-nemesis.js';
import { SplitNemesis } from './split-nemesis.js';
import { bucketHash } from '../keys/bucket-hash.js';
import { LINK_FAULTS, NETWORK_FAULTS, Nemesis, type FaultKind } from './nemesis.js';
import { cleanupStale, createTopology, detectNetns, ensureIptables, type Topology } from './netns.js';
import { partitionOfBucket } from '../keys/partition-table.js';
import { WATCH_SKIP_BUG, WatchWorkload } from './watch-workload.js';
import { LOCK_SKIP_BUG, LockWorkload } from './lock-workload.js';
import type { Verdict } from './checkers/verdict.js';
import { bankTotal, bankWorkload, counterWorkload, finalReads, makeBank, openBank, Recorder, registerWorkload, setWorkload } from './workloads.js';

export interface ChaosOptions {
  readonly nodes: number;
  readonly durationSec: number;
  readonly seed: number;
  readonly partitions: number;
  readonly faults: readonly FaultKind[];
  /**
   * A planted defect (negative control): reads-without-quorum | ack-before-commit | no-dedup |
   * torn-transactions (in the servers), watch-skips-on-resume (in the watchers' client) or
   * lock-skips-waiting (in the lock workers' client).
   */
  readonly testBug?: string;
  readonly historyDir?: string;
  /**
   * Membership faults (membership-nemesis.ts): a node joins and leaves, replicas move, a node whose
   * data directory was wiped is replaced, all while the fault nemesis runs.
   */
  readonly membership?: boolean;
  /** Per-attempt timeout of counter increments: short ones force retries of writes that did apply. */
  readonly counterTimeoutMs?: number;
  readonly log?: (line: string) => void;
  /**
   * The network namespaces' name prefix and subnet 10.203.S.0/24 (default atollch, 7). Two runs at
   * once on one machine need different ones: a run first removes whatever has its prefix.
   */
  readonly netns?: { readonly prefix: string; readonly subnetIndex: number };
}

export const defaultChaosNetns = Object.freeze({ prefix: 'atollch', subnetIndex: 7 });

export interface ChaosResult {
  readonly valid: boolean;
  readonly report: CheckReport;
  readonly historyPath: string;
  readonly operations: { ok: number; fail: number; info: number };
  readonly faults: Record<string, number>;
  readonly recoveryMs: { count: number; p50: number; p99: number; max: number; unrecovered: number };
  /** Leader kills and isolations that hit the bank's partition, where the transactions run. */
  readonly bankLeaderFaults: number;
  readonly summary: string;
  /** Whether the network faults (namespaces) were available, and if not, why. */
  readonly networkFaults: boolean;
  readonly networkFaultsSkipped?: string;
  /** What the membership nemesis did (with options.membership). */
  readonly membershipSteps?: readonly string[];
  /** Partition splits that applied during the run (with options.membership: split-nemesis.ts). */
  readonly partitionSplits?: number;
}

const REGISTER_KEYS = ['ra/x', 'rb/x', 'rc/x', 'rd/x'];
// Enough buckets that every partition holds some set elements: any leader kill hits the set.
const SET_BUCKETS = ['sa', 'sb', 'sc', 'sd', 'se', 'sf', 'sg', 'sh', 'si', 'sj', 'sk', 'sl'];
const COUNTER_KEY = 'counter/total';
const BANK = makeBank('bank', 8, 100);

export async function runChaos(options: ChaosOptions): Promise<ChaosResult> {
  const log = options.log ?? ((line: string) => console.log(line));
  const historyDir = options.historyDir ?? join(tmpdir(), 'atoll-chaos');
  mkdirSync(historyDir, { recursive: true });
  const historyPath = join(historyDir, `history-seed${options.seed}-${Date.now()}.jsonl`);
  log(`chaos: seed ${options.seed}, ${options.nodes} nodes, ${options.durationSec}s, faults ${options.faults.join(',')}${options.membership === true ? ', membership changes' : ''}${options.testBug ? `, PLANTED BUG ${options.testBug}` : ''}`);
  log(`chaos: history ${historyPath}`);

  let networkFaultsSkipped: string | undefined;
  const topology = await maybeTopology(options, (line) => {
    networkFaultsSkipped = line.replace(/^chaos: network faults skipped: /, '');
    log(line);
  });
  let result: ChaosResult;
  try {
    result = await runWithTopology(options, log, historyPath, topology, networkFaultsSkipped);
  } finally {
    await topology?.destroy();
  }
  // The verdict comes last, after the clean-up (which may log), so scripts can read the last line.
  if (!result.valid) log(`chaos: replay the fault schedule with --seed ${options.seed}; history ${historyPath}`);
  log(result.summary);
  return result;
}

async function runWithTopology(options: ChaosOptions, log: (line: string) => void, historyPath: string, topology: Topology | undefined, networkFaultsSkipped: string | undefined): Promise<ChaosResult> {
  // Namespaces and loopback proxies exclude each other: with namespaces, link faults are skipped.
  const faultKinds = options.faults.filter((fault) => (topology ? !LINK_FAULTS.includes(fault) : !NETWORK_FAULTS.includes(fault)));
  const linkProxies = !topology && faultKinds.some((fault) => LINK_FAULTS.includes(fault));
  const cluster = await LocalCluster.start({
    ...(topology ? { topology } : {}),
    linkProxies,
    nodes: options.nodes,
    partitions: options.partitions,
    tickMs: 50,
    snapshotEvery: 500,
    ...(options.testBug && options.testBug !== WATCH_SKIP_BUG && options.testBug !== LOCK_SKIP_BUG ? { extraArgs: ['--unsafe-test-bug', options.testBug] } : {}),
  });
  const recorder = new Recorder(historyPath);
  const client = new AtollClient({ endpoints: cluster.endpoints, defaultTimeoutMs: 2_000 });
  const started = performance.now();
  const untilMs = started + options.durationSec * 1_000;
  const nemesis = new Nemesis(cluster, {
    seed: options.seed,
    kinds: faultKinds.length > 0 ? faultKinds : ['kill-leader'],
    gapMs: [1_000, 2_500],
    downMs: [1_000, 2_500],
    log,
    ...(topology ? { topology } : {}),
  });
  const membership = options.membership === true ? new MembershipNemesis(cluster, { seed: options.seed, log }) : undefined;
  // With membership faults, partitions also split and merge back (split-nemesis.ts); leader faults then hit the new ones too.
  const splits = options.membership === true ? new SplitNemesis(cluster, { seed: options.seed, log, onSplit: (id) => nemesis.knownPartition(id), onMerge: (id) => nemesis.forgetPartition(id) }) : undefined;
  let membershipProblems: string[] = [];
  const progress = setInterval(() => {
    const elapsed = ((performance.now() - started) / 1000).toFixed(0);
    log(`chaos: ${elapsed}s ok=${recorder.counts.ok} fail=${recorder.counts.fail} info=${recorder.counts.info} faults=${nemesis.faults.length}`);
  }, 5_000);
  progress.unref();
  let watches: WatchWorkload | undefined;
  let watchResult: Awaited<ReturnType<WatchWorkload['finish']>> | undefined;
  let locks: LockWorkload | undefined;
  let lockResult: Awaited<ReturnType<LockWorkload['finish']>> | undefined;
  try {
    // Before any fault: the accounts exist once, so every snapshot must show the whole total.
    await openBank(client, BANK, 5_000);
    // The watchers start before any fault too (their start revisions are known before the first).
    watches = await WatchWorkload.start({ endpoints: cluster.endpoints, buckets: watchedBuckets(options.partitions), skipOnResume: options.testBug === WATCH_SKIP_BUG, waitMs: 15_000 });
    const context = { client, recorder, untilMs, seed: options.seed, opTimeoutMs: 1_500 };
    const probes = probeRecoveries(client, nemesis, options.partitions, untilMs);
    locks = LockWorkload.start({ endpoints: cluster.endpoints, workers: 3, seed: options.seed, untilMs, grantWithoutWaiting: options.testBug === LOCK_SKIP_BUG });
    await Promise.all([
      registerWorkload(context, 4, REGISTER_KEYS),
      setWorkload(context, 4, SET_BUCKETS),
      counterWorkload({ ...context, opTimeoutMs: options.counterTimeoutMs ?? 300 }, 2, COUNTER_KEY),
      bankWorkload(context, 4, BANK),
      nemesis.run(untilMs),
      probes,
      membership?.run(untilMs),
      splits?.run(untilMs),
    ]);
    clearInterval(progress);
    log('chaos: faults stopped; healing and reading everything back');
    await nemesis.healAll();
    await cluster.waitReady(60_000);
    if (membership !== undefined) membershipProblems = await membership.check();
    await finalReads({ client, recorder, seed: options.seed, opTimeoutMs: 3_000 }, { registerKeys: REGISTER_KEYS, setBuckets: SET_BUCKETS, counterKey: COUNTER_KEY, bank: BANK });
    watchResult = await watches.finish(client, recorder.events);
    lockResult = await locks.finish();
  } finally {
    clearInterval(progress);
    if (watchResult === undefined) watches?.close();
    if (lockResult === undefined) locks?.close();
    client.close();
    await recorder.close();
    await cluster.stop();
  }

  for (const crash of cluster.crashes) log(`chaos: node ${crash.id} CRASHED (exit ${crash.signal ?? crash.code}):\n${crash.log}`);
  const report = withVerdict('lock', lockResult, withWatchVerdict(checkHistory(recorder.events, { bank: { total: bankTotal(BANK), accounts: BANK.accounts } }), watchResult));
  const faults: Record<string, number> = {};
  for (const fault of nemesis.faults) faults[fault.kind] = (faults[fault.kind] ?? 0) + 1;
  const recoveries = nemesis.leaderKills.filter((kill) => kill.recoveredAtMs !== undefined).map((kill) => (kill.recoveredAtMs as number) - kill.atMs);
  const recoveryMs = {
    count: recoveries.length,
    p50: percentile(recoveries, 0.5),
    p99: percentile(recoveries, 0.99),
    max: recoveries.length ? Math.max(...recoveries) : 0,
    unrecovered: nemesis.leaderKills.length - recoveries.length,
  };
  log(`chaos: operations ok=${recorder.counts.ok} fail=${recorder.counts.fail} info=${recorder.counts.info}`);
  log(`chaos: faults ${JSON.stringify(faults)}`);
  log(`chaos: writes resumed after leader kills: n=${recoveryMs.count} p50=${recoveryMs.p50.toFixed(0)}ms p99=${recoveryMs.p99.toFixed(0)}ms max=${recoveryMs.max.toFixed(0)}ms unrecovered=${recoveryMs.unrecovered}`);
  const bankPartition = partitionOfBucket(BANK.bucket, options.partitions);
  // After splits the bank's bucket may live in a split partition: a kill counts by the range it hit.
  const bankHash = bucketHash(BANK.bucket);
  const bankLeaderFaults = nemesis.leaderKills.filter((kill) => (kill.range !== undefined ? bankHash >= kill.range.start && bankHash < kill.range.end : kill.partition === bankPartition)).length;
  log(`chaos: bank: partition ${bankPartition} at the start, ${bankLeaderFaults} leader kills or isolations of the bank's partition`);
  if (splits !== undefined) log(`chaos: splits: ${splits.splits.length} partition splits during the run (${splits.splits.map((split) => `${split.partition}->${split.newPartition}`).join(', ') || 'none'})`);
  for (const line of report.lines) log(`chaos: ${line}`);
  // A node that dies by itself is a failure even when the data survived it.
  for (const bug of cluster.bugReports) log(`chaos: node ${bug.id} reported a bug: ${bug.line}`);
  const problems = [
    ...report.problems,
    ...cluster.crashes.map((crash) => `node ${crash.id} crashed (exit ${crash.signal ?? crash.code})`),
    ...cluster.bugReports.map((bug) => `node ${bug.id} logged an unhandled rejection`),
    ...membershipProblems,
  ];
  if (membership !== undefined) log(`chaos: membership: ${membership.moves} replica moves; ${membershipProblems.length === 0 ? 'valid' : `INVALID: ${membershipProblems.join('; ')}`}`);
  // runChaos logs the summary once everything is cleaned up.
  const summary = problems.length === 0 ? 'chaos: valid' : `chaos: INVALID (${problems.join('; ')})`;
  return {
    valid: problems.length === 0,
    report,
    historyPath,
    operations: { ...recorder.counts },
    faults,
    recoveryMs,
    bankLeaderFaults,
    summary,
    networkFaults: topology !== undefined,
    ...(networkFaultsSkipped !== undefined ? { networkFaultsSkipped } : {}),
    ...(membership !== undefined ? { membershipSteps: membership.steps } : {}),
    ...(splits !== undefined ? { partitionSplits: splits.splits.length } : {}),
  };
}

/**
 * One watched bucket per partition, so every leader kill interrupts a watcher, with as few watchers
 * as that takes: a workload's bucket where the partition has one (register buckets first: their
 * acknowledged writes are checked against the committed history too), else the partition's probe
 * bucket, which probeRecoveries writes after each leader kill of that partition.
 */
function watchedBuckets(partitions: number): string[] {
  const byPartition = new Map<number, string>();
  const workloadBuckets = [...REGISTER_KEYS.map((key) => key.split('/')[0]!), ...SET_BUCKETS, BANK.bucket, COUNTER_KEY.split('/')[0]!];
  for (const bucket of workloadBuckets) {
    const partition = partitionOfBucket(bucket, partitions);
    if (!byPartition.has(partition)) byPartition.set(partition, bucket);
  }
  for (let partition = 0; partition < partitions; partition++) {
    if (!byPartition.has(partition)) byPartition.set(partition, Nemesis.probeKeyFor(partition, partitions).split('/')[0]!);
  }
  return [...byPartition.values()];
}

/** Adds the watchers' verdict to the history's report: one more required checker, 'watch'. */
function withWatchVerdict(report: CheckReport, watch: Awaited<ReturnType<WatchWorkload['finish']>> | undefined): CheckReport {
  return withVerdict('watch', watch, report);
}

/** Adds a workload's own verdict (watch, lock) to the report: one more required checker; unchecked is 'unknown'. */
function withVerdict(name: string, result: { readonly verdict: Verdict; readonly lines: readonly string[] } | undefined, report: CheckReport): CheckReport {
  const verdict = result?.verdict ?? { valid: 'unknown' as const, reason: `the ${name} workload was not checked` };
  const text = verdict.valid === true ? 'valid' : verdict.valid === false ? verdict.explanation.split('\n', 1)[0]! : verdict.reason;
  const lines = [...report.lines, ...(result?.lines ?? []), `${name}: ${verdict.valid === true ? 'valid' : verdict.valid === false ? `INVALID: ${text}` : `unknown: ${text}`}`];
  const problems = verdict.valid === true ? report.problems : [...report.problems, `${name}: ${text}`];
  return { valid: problems.length === 0, lines, problems, verdicts: { ...report.verdicts, [name]: verdict } };
}

/**
 * After each leader kill, writes to a key of that partition until one succeeds: the time from the
 * kill to that success is how long the partition was unavailable for writes.
 */
async function probeRecoveries(client: AtollClient, nemesis: Nemesis, partitions: number, untilMs: number): Promise<void> {
  // By the range the kill hit when known (splits change which keys a partition owns), else by id in the equal table.
  const probeKeys = new Map<string, string | undefined>();
  const unprobed = new Set<(typeof nemesis.leaderKills)[number]>();
  for (let n = 0; n < 100_000 && performance.now() < untilMs + 5_000; n++) {
    const pending = nemesis.leaderKills.find((kill) => kill.recoveredAtMs === undefined && !unprobed.has(kill));
    if (!pending) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      continue;
    }
    const where = pending.range !== undefined ? `${pending.range.start}-${pending.range.end}` : `p${pending.partition}`;
    if (!probeKeys.has(where)) probeKeys.set(where, pending.range !== undefined ? Nemesis.probeKeyIn(pending.range) : pending.partition < partitions ? Nemesis.probeKeyFor(pending.partition, partitions) : undefined);
    const key = probeKeys.get(where);
    if (key === undefined) {
      // No probe key in a narrow range: this kill's recovery is not measured (counted unrecovered).
      unprobed.add(pending);
      continue;
    }
    try {
      await client.put(key, String(n), { timeoutMs: 1_000 });
      pending.recoveredAtMs = performance.now();
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

/** Network faults need every node in its own namespace; without root they are skipped, said aloud. */
async function maybeTopology(options: ChaosOptions, log: (line: string) => void): Promise<Topology | undefined> {
  if (!options.faults.some((fault) => NETWORK_FAULTS.includes(fault))) return undefined;
  try {
    await ensureIptables();
  } catch {
    // detectNetns reports why below.
  }
  const availability = await detectNetns();
  if (!availability.available) {
    log(`chaos: network faults skipped: ${availability.reason}`);
    return undefined;
  }
  const { prefix, subnetIndex } = options.netns ?? defaultChaosNetns;
  await cleanupStale(prefix);
  // A subnet of its own, so a concurrent netns test (subnet 0) cannot collide with it. Membership
  // changes start two more nodes (one joins and leaves, one replaces a lost one): namespaces for them too.
  return createTopology({ prefix, nodeCount: options.nodes + (options.membership === true ? 2 : 0), subnetIndex });
}

function percentile(values: number[], q: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}
