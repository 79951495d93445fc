/**
 * Real AtollNodes in the whole-node simulator's virtual time, for focused node tests that count
 * ticks and messages (heartbeat-rounds, idle-sweeps, lease-reads, quiescence, rebalance-zones):
 * one seed gives the scheduler, trace, network and cluster, with the settings those tests share.
 * (in-process-cluster.ts is the real-time counterpart, on loopback links.)
 */
import { expect } from 'vitest';
import type { NodeTestBugs } from '../../src/node/node-config.js';
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
