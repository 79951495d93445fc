/**
 * A whole-node simulator cluster for focused node tests in virtual time, started at once (or the
 * `startNow` nodes only): no faults, no clock skew, 50 ms ticks, an election timeout of 10 ticks,
 * large snapshot and retention bounds (sim-node-cluster.ts). Each test drives `scheduler.runUntil`
 * itself.
 */
import type { NodeTestBugs } from '../../src/node/node-config.js';
import { simNodeCluster, type SimNodeCluster } from './sim-node-cluster.js';

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

export type QuietSim = Omit<SimNodeCluster, 'trace'>;

/** Builds the cluster and starts its nodes (nothing has run yet). */
export function quietSim(options: QuietSimOptions): QuietSim {
  const sim = simNodeCluster({
    seed: options.seed,
    nodes: options.nodeIds,
    partitions: options.partitions,
    ...(options.zones !== undefined && { zones: options.zones }),
    ...(options.testBugs !== undefined && { testBugs: options.testBugs }),
    ...(options.traceLines !== undefined && { traceLines: options.traceLines }),
  });
  for (const id of options.startNow ?? options.nodeIds) sim.cluster.start(id);
  return sim;
}
