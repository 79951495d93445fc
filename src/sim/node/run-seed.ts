/**
 * Runs one seed of the whole-node simulator: builds the scenario's cluster on simulated time,
 * runs the clients through the fault window, heals everything, then proves liveness, takes the
 * final reads and the replicas' state digests, and runs every checker. Bounded in virtual time and
 * in events; the same seed (and settings) always gives the same trace.
 */
import type { NodeTestBugs } from '../../node/node-config.js';
import { bucketHash } from '../../keys/bucket-hash.js';
import { RangeRouting } from '../../node/cluster/range-routing.js';
import { Rng } from '../../raft/rng.js';
import { HistoryRecorder } from './history-recorder.js';
import { MembershipDriver } from './membership-driver.js';
import type { TxnRecord } from './isolation-checker.js';
import { checkClaims, checkDigests, checkHistory, checkRestarts, checkTransactions, type CheckFailure, type ReplicaDigest } from './node-checkers.js';
import { describeScenario, scenarioFromSeed, type FaultEvent, type NodeScenario, type ScenarioOverrides } from './scenario.js';
import { Scheduler } from './scheduler.js';
import { SIM_BUCKET_HASH, SimCluster } from './sim-cluster.js';
import { calmNetwork, SimNetwork } from './sim-network.js';
import { checkPartitionRanges } from './split-checker.js';
import { replicaDigests } from './state-digest.js';
import { Trace } from './trace.js';
import { Workload, workloadKeys } from './workload.js';
import { checkLeases, checkLocks } from './lease-checker.js';
import { LeaseWorkload } from './lease-workload.js';
import { LockWorkload } from './lock-workload.js';
import { checkClearErrors, checkRealTimeSnapshots } from './txn-realtime-checker.js';
import { runRangeChangeClients } from './txn-span.js';
// Watches (issue 32): the watch workload, its checker and the event-loop liveness probe.
import { activateProbe, LoopProbe } from './loop-liveness.js';
import { checkWatches } from './watch-checker.js';
import { WATCHES_PER_SEED, WatchWorkload } from './watch-workload.js';

export interface NodeSeedOptions {
  readonly testBugs?: NodeTestBugs;
  readonly overrides?: ScenarioOverrides;
  /** Trace lines kept for printing (default 400); the digest covers every line anyway. */
  readonly traceLines?: number;
}

export interface NodeSeedResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly failures: readonly CheckFailure[];
  readonly scenario: string;
  readonly trace: readonly string[];
  /** SHA-256 of the whole trace: two runs of a seed must agree on it. */
  readonly traceDigest: string;
  readonly stats: {
    readonly virtualMs: number;
    readonly events: number;
    readonly operations: number;
    readonly crashes: number;
    readonly snapshotInstalls: number;
    readonly installCrashes: number;
    /** The isolation transactions by outcome (what the isolation checker judged). */
    readonly transactions: { readonly committed: number; readonly aborted: number; readonly unknown: number };
  };
}

/** Bounds of one seed. */
const MAX_VIRTUAL_MS = 180_000;
const MAX_EVENTS = 3_000_000;
const LIVENESS_BOUND_MS = 20_000;
const FINAL_READ_BOUND_MS = 15_000;
/** Membership changes may run this long past the fault window (they retry through the faults, then finish healed). */
const MEMBERSHIP_BOUND_MS = 40_000;
/**
 * A node's log line about installing a snapshot from its leader (raft-driver.ts says "installing a
 * snapshot from the leader"); matched loosely so a reworded line still arms the install crashes
 * (the regression test asserts that some did).
 */
const INSTALL_LOG = /\binstall/i;
const SNAPSHOT_WORD = /\bsnapshot/i;

export async function runNodeSeed(seed: number, options: NodeSeedOptions = {}): Promise<NodeSeedResult> {
  // The planted defects add to the overrides' (a control may switch a second mechanism off in both runs).
  const scenario = scenarioFromSeed(seed, { ...options.overrides, ...(options.testBugs !== undefined && { testBugs: { ...options.overrides?.testBugs, ...options.testBugs } }) });
  const scheduler = new Scheduler();
  const trace = new Trace(() => scheduler.now, options.traceLines ?? 400);
  const rng = new Rng(seed);
  const network = new SimNetwork(scheduler, rng.fork(), trace);
  const cluster = new SimCluster(scheduler, network, trace, rng.fork(), {
    nodeIds: scenario.nodeIds,
    partitions: scenario.partitions,
    tickMs: scenario.tickMs,
    electionTicks: scenario.electionTicks,
    snapshotEveryEntries: scenario.snapshotEveryEntries,
    logEntriesKeptAfterSnapshot: scenario.logEntriesKeptAfterSnapshot,
    retentionRevisions: scenario.retentionRevisions,
    cacheBytes: scenario.cacheBytes,
    clocks: scenario.clocks,
    testBugs: scenario.testBugs,
    ...(scenario.readMode !== undefined && { readMode: scenario.readMode }),
    // Node-level batches (AtollNodeConfig.coalesceRaftMessages, off by default in a node): seeds 1
    // mod 4 run without them (the default), seeds 0 mod 4 with them on every node but the first (a
    // rolling upgrade's middle: that node decodes them and sends none), the rest with them on every
    // node. No rng draw: the seed's other choices stay as they were.
    coalesceRaftMessages: (node) => seed % 4 !== 1 && (seed % 4 !== 0 || node !== scenario.nodeIds[0]),
  });
  const history = new HistoryRecorder(() => scheduler.now, (line) => trace.add(line));
  const issue32 = scenario.issue32Workloads !== false;
  const keys = issue32 ? workloadKeys(4, 2, 2) : workloadKeys(4, 2, 2, ['x0', 'x1']);
  const workload = new Workload(scheduler, cluster, history, trace, keys, {
    clients: scenario.clients,
    mix: scenario.mix,
    thinkMs: scenario.thinkMs,
    timeoutMs: 2_000,
    resendAnsweredRate: scenario.resendAnsweredRate,
    maxOpsPerClient: 400,
  });
  // Leases and locks (issue 32): clients of their own, on an Rng of their own (the other streams keep their draws).
  const leases = new LeaseWorkload(scheduler, cluster, workload, trace, { clients: issue32 ? 3 : 0, firstProcess: 200 });
  const locks = new LockWorkload(scheduler, cluster, workload, trace, { clients: issue32 ? 3 : 0, firstProcess: 300, grantBeforeDelete: scenario.testBugs.lockGrantsBeforeDelete === true });
  // Watches: their own rng stream (the other streams' draws stay as they were).
  const watches = new WatchWorkload(scheduler, cluster, trace, keys, seed, scenario.watches ?? WATCHES_PER_SEED);
  workload.onWriteAcked = (key, value, revision) => watches.writeAcked(key, value, revision);
  const loopProbe = new LoopProbe(scheduler);
  const failures: CheckFailure[] = [];
  const finalReadOps = new Set<number>();
  const digestSamples: ReplicaDigest[] = [];
  /** Keys stored under each claim round's prefix, read once faults stopped (claims whose answer was lost count too). */
  const claimsStored = new Map<string, number>();
  const faultRng = rng.fork();
  let faultsActive = true;
  let snapshotInstalls = 0;
  let installCrashes = 0;
  cluster.onLog = (node, _level, message) => {
    if (!INSTALL_LOG.test(message) || !SNAPSHOT_WORD.test(message)) return;
    snapshotInstalls++;
    if (!faultsActive || cluster.isArmed(node) || !faultRng.chance(scenario.installCrashRate)) return;
    installCrashes++;
    // Somewhere in the import (its synced writes, range deletes, the staged chunks' and the key
    // index rebuild's iterations) or the loop's synced write that records the snapshot right
    // after it. (14: since the import reads its chunks from staging, it makes a few more calls.)
    cluster.armCrash(node, ['sync-write', 'write', 'delete-range', 'iterate'], 1 + faultRng.int(14), faultRng.chance(0.5) ? 'before' : 'after', 'during a snapshot install');
  };

  // Forked after every other stream, and only for seeds that change membership: the other seeds keep their schedules.
  const membership = new MembershipDriver(scenario.membership, scenario.partitions, cluster, workload, scheduler, trace, scenario.membership.kind === 'none' ? faultRng : rng.fork());
  trace.add(`seed ${seed}: ${describeScenario(scenario)}`);
  const harness = async (): Promise<void> => {
    network.faults = scenario.network;
    cluster.restartDelay = () => 300 + faultRng.int(3_500);
    for (const id of scenario.nodeIds) cluster.start(id);
    for (const fault of scenario.faults) scheduler.at(fault.atMs, () => applyFault(fault, cluster, network, trace, faultRng));
    // Digests during the faults too: replicas that part and are later repaired by a snapshot
    // still disagree at some index they both passed through.
    const sampling = sampleDigests(cluster, workload, keys.buckets, () => faultsActive, digestSamples);
    const changing = membership.run(scenario.faultEndMs + MEMBERSHIP_BOUND_MS);
    const leasing = leases.run(new Rng(seed * 15_485_863 + 11), scenario.faultEndMs);
    const locking = locks.run(new Rng(seed * 32_452_843 + 7), scenario.faultEndMs);
    // Transactions in flight across the splits and merges of split seeds (txn-span.ts).
    const spanning = issue32 && scenario.membership.kind === 'split'
      ? runRangeChangeClients(2, scenario.membership.atMs - 1_000, scenario.faultEndMs, new Rng(seed * 49_979_687 + 5), { now: () => scheduler.now, sleep: (ms) => workload.sleep(ms) }, (own) => workload.isolationTransaction(own))
      : Promise.resolve();
    watches.start(Math.floor(scenario.faultEndMs * 0.6));
    await workload.run(rng.fork(), scenario.faultEndMs);
    // Faults stop: the network heals and calms, every node is (re)started and stays up.
    faultsActive = false;
    trace.add('faults stop: heal, calm, restart every node');
    network.heal();
    network.faults = calmNetwork;
    cluster.disarmAll();
    cluster.restartDelay = () => 100;
    cluster.restartAll();
    // Membership changes still under way finish on the healed cluster (bounded: MEMBERSHIP_BOUND_MS).
    await changing;
    failures.push(...(await proveLiveness(scenario, membership.splitsMade, cluster, workload, scheduler)));
    failures.push(...(await finalReads(keys, cluster, workload, scheduler, finalReadOps, claimsStored)));
    await Promise.all([leasing, locking, spanning]);
    await leases.finish();
    await watches.finish();
    await sampling;
    failures.push(...(await membership.check()));
    await workload.sleep(3_000);
    failures.push(...(await compareDigests(cluster, workload, keys.buckets, digestSamples)));
    failures.push(...(await checkPartitionRanges(cluster, workload, SIM_BUCKET_HASH)));
    failures.push(...(await checkWatches(watches.records, watches.acked, cluster, SIM_BUCKET_HASH)));
  };
  let finished = false;
  let harnessError: unknown;
  void harness().then(
    () => (finished = true),
    (error: unknown) => {
      harnessError = error;
      finished = true;
    },
  );
  const deactivateProbe = activateProbe(loopProbe);
  let withinBudget: boolean;
  try {
    withinBudget = await scheduler.runUntil(MAX_VIRTUAL_MS, MAX_EVENTS, () => finished);
  } finally {
    deactivateProbe();
  }
  if (!finished) {
    failures.push({ checker: 'harness', invariant: 'bounded-run', message: withinBudget ? `the run did not finish within ${MAX_VIRTUAL_MS} virtual ms` : `the run took more than ${MAX_EVENTS} events` });
  }
  if (harnessError !== undefined) failures.push({ checker: 'harness', invariant: 'no-harness-error', message: harnessError instanceof Error ? (harnessError.stack ?? harnessError.message) : String(harnessError) });

  failures.unshift(...checkRestarts(cluster.failures));
  failures.unshift(...loopProbe.failures());
  failures.push(...checkHistory(history.events, keys, finalReadOps));
  failures.push(...checkClaims(workload.claimsCommitted, claimsStored));
  if (workload.resendMismatches.length > 0) {
    failures.push({ checker: 'counter', invariant: 'resend-answers-same', message: workload.resendMismatches.slice(0, 3).join('; ') });
  }
  failures.push(...checkTransactions(workload.txnRecords));
  failures.push(...checkRealTimeSnapshots(workload.txnRecords, workload.txnTimes), ...checkClearErrors(workload.txnRecords));
  failures.push(...checkLeases(leases.leases, leases.finalProblems), ...checkLocks(locks.holds));
  for (const failure of failures) trace.add(`CHECK FAILED ${failure.checker}/${failure.invariant}: ${failure.message.split('\n')[0]}`);
  const crashes = cluster.everyNodeId.reduce((sum, id) => sum + cluster.crashCount(id), 0);
  trace.add(`done: ${scheduler.executed} events, ${history.events.length} history events, ${crashes} crashes, ${snapshotInstalls} installs, ${failures.length} failures`);
  return {
    seed,
    ok: failures.length === 0,
    failures,
    scenario: describeScenario(scenario),
    trace: trace.tail(),
    traceDigest: trace.digest(),
    stats: { virtualMs: scheduler.now, events: scheduler.executed, operations: workload.opsDone, crashes, snapshotInstalls, installCrashes, transactions: transactionCounts(workload.txnRecords) },
  };
}

function transactionCounts(records: readonly TxnRecord[]): NodeSeedResult['stats']['transactions'] {
  const counts = { committed: 0, aborted: 0, unknown: 0 };
  for (const record of records) counts[record.outcome]++;
  return counts;
}

function applyFault(fault: FaultEvent, cluster: SimCluster, network: SimNetwork, trace: Trace, rng: Rng): void {
  switch (fault.kind) {
    case 'crash':
      cluster.crash(fault.node, 'scheduled crash');
      return;
    case 'crash-point':
      cluster.armCrash(fault.node, fault.kinds, fault.countdown, fault.timing, 'scheduled crash point');
      return;
    case 'partition': {
      const other = cluster.nodeIds.filter((id) => !fault.side.includes(id));
      trace.add(`PARTITION [${fault.side.join(',')}] ${fault.oneWay ? '-/->' : '<-/->'} [${other.join(',')}]`);
      for (const a of fault.side) {
        for (const b of other) {
          network.block(a, b);
          if (!fault.oneWay) network.block(b, a);
        }
      }
      return;
    }
    case 'cut':
      trace.add(`CUT n${fault.a} <-> n${fault.b}`);
      network.cut(fault.a, fault.b);
      return;
    case 'pause':
      cluster.pause(fault.node, fault.forMs);
      return;
    case 'heal':
      trace.add('HEAL');
      network.heal();
      return;
    case 'power-loss':
      // Each node dies inside one of its next few synced writes: not all at the same step.
      trace.add('POWER LOSS: every node dies inside one of its next synced writes');
      for (const id of cluster.nodeIds) cluster.armCrash(id, ['sync-write'], 1 + rng.int(3), 'before', 'power loss');
      return;
  }
}

/** A key of each partition (the initial ones and those the splits made), for the liveness writes. */
function probeKeys(partitions: number, splitsMade: readonly number[]): string[] {
  const table = new RangeRouting(partitions, SIM_BUCKET_HASH);
  for (const start of splitsMade) table.learn(start);
  const ranges = table.table();
  const keys = new Map<number, string>();
  for (let i = 0; keys.size < ranges.length && i < 100_000; i++) {
    const hash = bucketHash(`p${i}`, SIM_BUCKET_HASH);
    const range = ranges.find((r) => r.start <= hash && hash < r.end);
    if (range !== undefined && !keys.has(range.id)) keys.set(range.id, `p${i}/probe`);
  }
  return [...keys.values()];
}

/**
 * Liveness: once faults stop, every node that is not broken is up, every partition has a leader
 * every node agrees on... and a write to each partition, through any node, succeeds within the bound.
 */
async function proveLiveness(scenario: NodeScenario, splitsMade: readonly number[], cluster: SimCluster, workload: Workload, scheduler: Scheduler): Promise<CheckFailure[]> {
  const giveUpAt = scheduler.now + LIVENESS_BOUND_MS;
  const pending = new Set(probeKeys(scenario.partitions, splitsMade));
  let attempt = 0;
  const nodes = cluster.nodeIds;
  while (pending.size > 0 && scheduler.now < giveUpAt) {
    for (const key of [...pending]) {
      const node = nodes[attempt++ % nodes.length] as number;
      const outcome = await workload.call(node, (api, context) => api.put({ key, value: new Uint8Array([1]) }, context));
      if (outcome.ok) pending.delete(key);
    }
    if (pending.size > 0) await workload.sleep(200);
  }
  const failures: CheckFailure[] = [];
  if (pending.size > 0) {
    failures.push({ checker: 'liveness', invariant: 'writes-succeed-after-faults', message: `no write succeeded within ${LIVENESS_BOUND_MS} ms after the faults stopped to ${[...pending].join(', ')}` });
  }
  for (const id of cluster.nodeIds) {
    if (!cluster.isBroken(id) && !cluster.isUp(id)) failures.push({ checker: 'restart', invariant: 'node-up-after-faults', message: `node ${id} is not up ${LIVENESS_BOUND_MS} ms after the faults stopped` });
  }
  return failures;
}

/** Reads every register and counter once more (retrying, bounded), invoked after every write settled. */
async function finalReads(
  keys: ReturnType<typeof workloadKeys>,
  cluster: SimCluster,
  workload: Workload,
  scheduler: Scheduler,
  finalReadOps: Set<number>,
  claimsStored: Map<string, number>,
): Promise<CheckFailure[]> {
  const giveUpAt = scheduler.now + FINAL_READ_BOUND_MS;
  const failures: CheckFailure[] = [];
  const nodes = cluster.nodeIds;
  let turn = 0;
  const readUntilOk = async (read: (node: number) => Promise<boolean>, what: string): Promise<void> => {
    while (scheduler.now < giveUpAt) {
      if (await read(nodes[turn++ % nodes.length] as number)) return;
      await workload.sleep(100);
    }
    failures.push({ checker: 'liveness', invariant: 'final-reads-succeed', message: `no final read of ${what} succeeded within ${FINAL_READ_BOUND_MS} ms` });
  };
  const FINAL_PROCESS = 999;
  for (const key of keys.registers) {
    await readUntilOk((node) => workload.read(FINAL_PROCESS, key, node, finalReadOps), key);
  }
  for (const key of keys.counters) await readUntilOk((node) => workload.counterRead(FINAL_PROCESS, key, node), key);
  for (const round of [...workload.claimRounds].sort()) {
    await readUntilOk(async (node) => {
      const read = await workload.call(node, (api, context) => api.getByPrefix({ prefix: round, limit: 100 }, context));
      if (read.ok) claimsStored.set(round, read.value.items.length);
      return read.ok;
    }, round);
  }
  return failures;
}

/** Rounds of digests taken, a second apart, until every partition's up replicas agree on their applied index. */
const DIGEST_ROUNDS = 5;
const DIGEST_SAMPLE_EVERY_MS = 1_500;

/** Takes every up node's digests every DIGEST_SAMPLE_EVERY_MS while `active()`; a sample a crash interrupts is dropped. */
async function sampleDigests(cluster: SimCluster, workload: Workload, buckets: readonly string[], active: () => boolean, into: ReplicaDigest[]): Promise<void> {
  for (let round = 0; round < 1_000 && active(); round++) {
    await workload.sleep(DIGEST_SAMPLE_EVERY_MS);
    for (const id of cluster.nodeIds) {
      const api = cluster.apiOf(id);
      if (api !== undefined) void replicaDigests(id, api, buckets).then((digests) => into.push(...digests), () => undefined);
    }
  }
}

async function compareDigests(cluster: SimCluster, workload: Workload, buckets: readonly string[], samples: readonly ReplicaDigest[]): Promise<CheckFailure[]> {
  const all: ReplicaDigest[] = [...samples];
  let lagging: string[] = [];
  for (let round = 0; round < DIGEST_ROUNDS; round++) {
    if (round > 0) await workload.sleep(1_000);
    const digests: ReplicaDigest[] = [];
    for (const id of cluster.nodeIds) {
      const api = cluster.apiOf(id);
      if (api === undefined) continue;
      const taken = await Promise.race([replicaDigests(id, api, buckets), workload.sleep(5_000).then(() => undefined)]);
      if (taken !== undefined) digests.push(...taken);
    }
    all.push(...digests);
    // Caught up: after the quiet period every up replica of a partition has applied the same index.
    const byPartition = new Map<number, ReplicaDigest[]>();
    for (const digest of digests) byPartition.set(digest.partition, [...(byPartition.get(digest.partition) ?? []), digest]);
    lagging = [...byPartition]
      .filter(([, replicas]) => new Set(replicas.map((r) => r.appliedIndex)).size > 1)
      .map(([partition, replicas]) => `partition ${partition}: ${replicas.map((r) => `n${r.node}=${r.appliedIndex}`).join(', ')}`);
    if (lagging.length === 0) break;
  }
  const failures = checkDigests(all);
  if (lagging.length > 0) {
    // What each replica of a lagging partition says of itself (and a leader of its followers): where to look first.
    const partitions = new Set(lagging.map((line) => Number(/^partition (\d+)/.exec(line)?.[1])));
    const details: string[] = [];
    for (const id of cluster.nodeIds) {
      const states = await cluster.apiOf(id)?.betweenIterations((replicas) =>
        [...replicas.values()].filter((replica) => partitions.has(replica.id)).map((replica) => {
          const st = replica.raw.status();
          const progress = [...st.progress].filter(([peer]) => peer !== id).map(([peer, p]) => `${peer}:${p.state}@${p.match}`);
          return `partition ${replica.id} at n${id}: ${st.role} term ${st.term} lead ${st.lead} commit ${st.commit} applied ${replica.appliedIndex} last ${st.lastIndex}${progress.length > 0 ? ` followers ${progress.join(' ')}` : ''}`;
        }),
      );
      details.push(...(states ?? []));
    }
    failures.push({ checker: 'restart', invariant: 'caught-up', message: `replicas at different applied indexes after ${DIGEST_ROUNDS} s of quiet: ${lagging.join('; ')}\n${details.join('\n')}` });
  }
  return failures;
}
