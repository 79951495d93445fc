/**
 * A whole-node simulator cluster for focused node tests in virtual time: no faults, no clock
 * skew, 50 ms ticks, an election timeout of 10 ticks, large snapshot and retention bounds. Each
 * test drives `scheduler.runUntil` itself.
 */
import type { NodeTestBugs } from '../../src/node/node-config.js';
import { Rng } from '../../src/raft/rng.js';
import { Scheduler } from '../../src/sim/node/scheduler.js';
import { SimCluster } from '../../src/sim/node/sim-cluster.js';
import { SimNetwork } from '../../src/sim/node/sim-network.js';
import { Trace } from '../../src/sim/node/trace.js';

export interface QuietSimOptions {
  readonly nodeIds: readonly number[];
  readonly partitions: number;
  readonly seed: number;
  readonly zones?: ReadonlyMap<number, string>;
  readonly testBugs?: NodeTestBugs;
  /** Trace lines kept (default 200). */
  readonly traceLines?: number;
  /** The nodes started now (default all; start the others with cluster.start). */
  readonly startNow?: readonly number[];
}

export interface QuietSim {
  readonly scheduler: Scheduler;
  readonly network: SimNetwork;
  readonly cluster: SimCluster;
}

/** Builds the cluster and starts every node (nothing has run yet). */
export function quietSim(options: QuietSimOptions): QuietSim {
  const scheduler = new Scheduler();
  const trace = new Trace(() => scheduler.now, options.traceLines ?? 200);
  const rng = new Rng(options.seed);
  const network = new SimNetwork(scheduler, rng.fork(), trace);
  const cluster = new SimCluster(scheduler, network, trace, rng.fork(), {
    nodeIds: options.nodeIds,
    ...(options.zones !== undefined && { zones: options.zones }),
    partitions: options.partitions,
    tickMs: 50,
    electionTicks: 10,
    snapshotEveryEntries: 1_000,
    logEntriesKeptAfterSnapshot: 1_000,
    retentionRevisions: 1_000,
    cacheBytes: 1 << 20,
    clocks: new Map(),
    testBugs: options.testBugs ?? {},
  });
  for (const id of options.startNow ?? options.nodeIds) cluster.start(id);
  return { scheduler, network, cluster };
}
