/**
 * Real AtollNodes in the whole-node simulator's virtual time, for focused node tests that count
 * ticks and messages (heartbeat-rounds, idle-sweeps, lease-reads, quiescence, rebalance-zones):
 * one seed gives the scheduler, trace, network and cluster, with the settings those tests share;
 * and the calls at a node in virtual time the merge tests share (answer, splitAmong, mergeStep).
 * (in-process-cluster.ts is the real-time counterpart, on loopback links.)
 */
import { expect } from 'vitest';
import type { AtollNode } from '../../src/node/atoll-node.js';
import type { MergePartitionResult } from '../../src/api/node-api.js';
import type { NodeTestBugs } from '../../src/node/node-config.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { Rng } from '../../src/raft/rng.js';
import { Scheduler } from '../../src/sim/node/scheduler.js';
import { SimCluster } from '../../src/sim/node/sim-cluster.js';
import { SimNetwork } from '../../src/sim/node/sim-network.js';
import { Trace } from '../../src/sim/node/trace.js';

export interface SimNodeClusterOptions {
  readonly seed: number;
  readonly nodes: readonly number[];
  readonly partitions: number;
  /** Milliseconds of virtual time per Raft tick (default 50). */
  readonly tickMs?: number;
  /** Ticks before an election (default 10). */
  readonly electionTicks?: number;
  /** Lines the trace keeps for a failure message (default 200). */
  readonly traceLines?: number;
  readonly zones?: ReadonlyMap<number, string>;
  readonly readMode?: 'safe' | 'lease';
  /** Deliberate defects of a negative control (default none). */
  readonly testBugs?: NodeTestBugs;
  /** Whether the nodes send node-level batches (AtollNodeConfig.coalesceRaftMessages; default the simulator's: on). */
  readonly coalesceRaftMessages?: boolean;
}

export interface SimNodeCluster {
  readonly scheduler: Scheduler;
  readonly trace: Trace;
  readonly network: SimNetwork;
  readonly cluster: SimCluster;
}

/** A simulated cluster of `nodes`, none started yet; snapshots, log and retention at 1,000, a 1 MiB cache, true clocks. */
export function simNodeCluster(options: SimNodeClusterOptions): SimNodeCluster {
  const scheduler = new Scheduler();
  const trace = new Trace(() => scheduler.now, options.traceLines ?? 200);
  const rng = new Rng(options.seed);
  const network = new SimNetwork(scheduler, rng.fork(), trace);
  const cluster = new SimCluster(scheduler, network, trace, rng.fork(), {
    nodeIds: options.nodes,
    ...(options.zones === undefined ? {} : { zones: options.zones }),
    partitions: options.partitions,
    tickMs: options.tickMs ?? 50,
    electionTicks: options.electionTicks ?? 10,
    snapshotEveryEntries: 1_000,
    logEntriesKeptAfterSnapshot: 1_000,
    retentionRevisions: 1_000,
    cacheBytes: 1 << 20,
    clocks: new Map(),
    testBugs: options.testBugs ?? {},
    ...(options.readMode === undefined ? {} : { readMode: options.readMode }),
    ...(options.coalesceRaftMessages === undefined ? {} : { coalesceRaftMessages: () => options.coalesceRaftMessages as boolean }),
  });
  return { scheduler, trace, network, cluster };
}

/** Whether every node in `nodes` is up and sees a leader for each of its partitions (/readyz's check). */
export function allLed(cluster: SimCluster, nodes: readonly number[]): boolean {
  return nodes.every((id) => cluster.apiOf(id)?.allPartitionsLed() === true);
}

/**
 * Starts every node in `nodes` and runs virtual time until all of them see every partition led;
 * fails the test when the event budget `maxEvents` runs out first, or when they are not all led
 * by virtual time `byMs` (runUntil returns true when time runs out too: its result speaks only of
 * the budget).
 */
export async function startAllLed(sim: SimNodeCluster, nodes: readonly number[], byMs: number, maxEvents: number): Promise<void> {
  for (const id of nodes) sim.cluster.start(id);
  expect(await sim.scheduler.runUntil(byMs, maxEvents, () => allLed(sim.cluster, nodes)), `${maxEvents} events before ${byMs} ms`).toBe(true);
  expect(allLed(sim.cluster, nodes), `every partition led on nodes ${nodes.join(',')} by ${byMs} ms (virtual)`).toBe(true);
}

/** The groups `node` hosts (its driver's), empty when the node is down. */
export function groupsOf(node: AtollNode | undefined): Map<number, PartitionReplica> {
  return node === undefined ? new Map() : (node as unknown as { driver: { groups: Map<number, PartitionReplica> } }).driver.groups;
}

/** Runs `call` at `node` in virtual time until it answers (or `forMs` pass, plus 2 s). */
export async function answer<T>(sim: SimNodeCluster, node: number, forMs: number, call: (api: AtollNode, deadlineMs: number) => Promise<T>, maxEvents = 5_000_000): Promise<{ value?: T; error?: unknown }> {
  const api = sim.cluster.apiOf(node);
  if (api === undefined) return { error: new Error(`node ${node} is down`) };
  let result: { value?: T; error?: unknown } | undefined;
  void call(api, sim.cluster.hostOf(node)!.clock.wallMs() + forMs).then(
    (value) => (result = { value }),
    (error: unknown) => (result = { error }),
  );
  await sim.scheduler.runUntil(sim.scheduler.now + forMs + 2_000, maxEvents, () => result !== undefined);
  return result ?? { error: new Error('no answer') };
}

/** The node of `nodes` that leads `partition` now, if any. */
export function leaderAmong(sim: SimNodeCluster, nodes: readonly number[], partition: number): number | undefined {
  return nodes.find((id) => groupsOf(sim.cluster.apiOf(id)).get(partition)?.raw.status().role === 'leader');
}

/**
 * Splits `left` at its leader (retried while it has none, bounded) and waits until every node of
 * `hosts` holds the new partition and it has a leader; the new partition's id, or undefined.
 */
export async function splitAmong(sim: SimNodeCluster, nodes: readonly number[], left: number, hosts: readonly number[], maxEvents = 5_000_000): Promise<number | undefined> {
  const { scheduler, cluster } = sim;
  let right: number | undefined;
  for (let attempt = 0; attempt < 20 && right === undefined; attempt++) {
    const leader = leaderAmong(sim, nodes, left);
    if (leader === undefined) {
      await scheduler.runUntil(scheduler.now + 500, maxEvents);
      continue;
    }
    right = (await answer(sim, leader, 5_000, (api, deadlineMs) => api.splitPartition({ partition: left }, { deadlineMs }), maxEvents)).value?.newPartition;
  }
  if (right !== undefined) {
    const r = right;
    await scheduler.runUntil(scheduler.now + 10_000, maxEvents, () => hosts.every((id) => groupsOf(cluster.apiOf(id)).has(r)) && leaderAmong(sim, nodes, r) !== undefined);
  }
  return right;
}

/**
 * One step toward merging `right` into `left` at the node leading both (the merge admin needs that):
 * waits 500 ms while either side has no leader, hands `right`'s leadership to `left`'s leader while
 * they differ, else runs the merge there. The merge's answer, or undefined after a step that ran none.
 */
export async function mergeStep(sim: SimNodeCluster, nodes: readonly number[], left: number, right: number, forMs: number, maxEvents = 5_000_000): Promise<{ value?: MergePartitionResult; error?: unknown } | undefined> {
  const { scheduler } = sim;
  const leftLeader = leaderAmong(sim, nodes, left);
  const rightLeader = leaderAmong(sim, nodes, right);
  if (leftLeader === undefined || rightLeader === undefined) {
    await scheduler.runUntil(scheduler.now + 500, maxEvents);
    return undefined;
  }
  if (leftLeader !== rightLeader) {
    await answer(sim, rightLeader, 2_000, (api, deadlineMs) => api.transferLeader({ partition: right, targetNode: leftLeader }, { deadlineMs }), maxEvents);
    await scheduler.runUntil(scheduler.now + 2_000, maxEvents, () => leaderAmong(sim, nodes, right) === leaderAmong(sim, nodes, left));
    return undefined;
  }
  return answer(sim, leftLeader, forMs, (api, deadlineMs) => api.mergePartition({ partition: left }, { deadlineMs }), maxEvents);
}
