/**
 * A cluster whose nodes start at different times (start-cluster.mjs, docker-compose, a rolling
 * restart): the preferred leaders' campaign in their first loop iteration reaches no peer, and
 * every group then waited for randomized election timeouts on all nodes at once (at 1,024
 * partitions on a busy machine an election storm of split votes: 20-40 s to lead every group).
 * Now a preferred leader campaigns again when the first frame from a voter of the group arrives,
 * and the other replicas postpone their first election by two timeouts (maintenance.ts), so each
 * group is led by its preferred node about one round trip after a quorum is up. The control
 * `noStartupCampaigns` is the old behaviour.
 */
import { describe, expect, it } from 'vitest';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import type { SimCluster } from '../../src/sim/node/sim-cluster.js';
import { driverOf } from './in-process-cluster.js';
import { quietSim } from './quiet-sim.js';

const NODES = [1, 2, 3];
const PARTITIONS = 48;
const MAX_EVENTS = 20_000_000;

function groupsOf(cluster: SimCluster, node: number): ReadonlyMap<number, PartitionReplica> | undefined {
  const api = cluster.apiOf(node);
  return api === undefined ? undefined : driverOf(api).groups;
}

/** Each partition's leader as its replicas see it, or 0 while any replica knows none or they disagree. */
function leaders(cluster: SimCluster): number[] {
  return Array.from({ length: PARTITIONS }, (_, partition) => {
    const seen = NODES.map((node) => groupsOf(cluster, node)?.get(partition)?.raw.lead ?? 0);
    return seen.every((lead) => lead !== 0 && lead === seen[0]) ? (seen[0] as number) : 0;
  });
}

/** Node 1 starts alone; nodes 2 and 3 start 3 s later. Returns how long after that every group was led, and by whom. */
async function staggeredStart(noStartupCampaigns: boolean): Promise<{ ledAfterMs: number; leaders: number[] }> {
  const { scheduler, cluster } = quietSim({ nodeIds: NODES, partitions: PARTITIONS, seed: 7, startNow: [1], ...(noStartupCampaigns && { testBugs: { noStartupCampaigns } }) });
  await scheduler.runUntil(3_000, MAX_EVENTS);
  cluster.start(2);
  cluster.start(3);
  const startedMs = scheduler.now;
  expect(await scheduler.runUntil(startedMs + 30_000, MAX_EVENTS, () => leaders(cluster).every((lead) => lead !== 0))).toBe(true);
  return { ledAfterMs: scheduler.now - startedMs, leaders: leaders(cluster) };
}

describe('start-up campaigns', () => {
  it('lead every group at its preferred node soon after a quorum is up; without them, election timeouts decide', async () => {
    const preferred = Array.from({ length: PARTITIONS }, (_, partition) => preferredLeaderOf(partition, NODES, 3));
    const now = await staggeredStart(false);
    // Within one election timeout (10 ticks of 50 ms) of the late nodes' start, opening included.
    expect(now.ledAfterMs).toBeLessThan(500);
    expect(now.leaders).toEqual(preferred);

    const before = await staggeredStart(true);
    expect(before.ledAfterMs).toBeGreaterThan(now.ledAfterMs);
    expect(before.leaders).not.toEqual(preferred);
  }, 120_000);
});
