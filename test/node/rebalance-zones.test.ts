/**
 * Zones end to end in the whole-node simulator (virtual time): six nodes started with --zone in
 * three zones (two per zone), created with the founding placement (consecutive ids, so most
 * partitions start on two zones). Each node records its zone in the member table, and the
 * rebalancer moves replicas until every partition's three replicas sit in three zones, with
 * replica counts even.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterInfoResponse } from '../../src/api/node-api.js';
import { simNodeCluster, startAllLed } from './sim-node-cluster.js';

const NODES = [1, 2, 3, 4, 5, 6];
const PARTITIONS = 12;
const MAX_EVENTS = 5_000_000;
const zoneOf = new Map(NODES.map((id) => [id, ['a', 'b', 'c'][Math.floor((id - 1) / 2)] as string]));

describe('zones', () => {
  it('3 zones, 6 nodes: after the rebalance each partition\'s 3 replicas are on 3 zones', async () => {
    const sim = simNodeCluster({ seed: 19, nodes: NODES, zones: zoneOf, partitions: PARTITIONS, tickMs: 50, traceLines: 400 });
    const { scheduler, cluster } = sim;
    await startAllLed(sim, NODES, 20_000, MAX_EVENTS);
    const infoOf = async (id: number): Promise<ClusterInfoResponse> => (await cluster.apiOf(id)?.clusterInfo({ deadlineMs: Date.now() + 60_000 })) as ClusterInfoResponse;
    const zonesOf = (info: ClusterInfoResponse): number[] => info.partitions.map((partition) => new Set(partition.replicas.map((node) => zoneOf.get(node))).size);
    const before = zonesOf(await infoOf(1));
    expect(before.some((zones) => zones < 3)).toBe(true);

    let info: ClusterInfoResponse | undefined;
    // Bounded in virtual time: each round runs 5 s of it, at most 40 rounds.
    for (let round = 0; round < 40; round++) {
      await scheduler.runUntil(scheduler.now + 5_000, MAX_EVENTS);
      info = await infoOf(1);
      const recorded = info.nodes.every((node) => node.zone === zoneOf.get(node.id));
      const spread = zonesOf(info).every((zones) => zones === 3);
      const voters = info.partitions.every((partition) => partition.replicas.length === 3);
      const counts = NODES.map((node) => info!.partitions.filter((partition) => partition.replicas.includes(node)).length);
      if (recorded && spread && voters && Math.max(...counts) - Math.min(...counts) <= 1) break;
    }
    expect(info?.nodes.map((node) => `${node.id}:${node.zone ?? ''}`)).toEqual(NODES.map((id) => `${id}:${zoneOf.get(id)}`));
    expect(zonesOf(info!), JSON.stringify(info!.partitions.map((partition) => partition.replicas))).toEqual(Array(PARTITIONS).fill(3));
    const counts = NODES.map((node) => info!.partitions.filter((partition) => partition.replicas.includes(node)).length);
    expect(Math.max(...counts) - Math.min(...counts), counts.join(',')).toBeLessThanOrEqual(1);
    expect(cluster.failures).toEqual([]);
  }, 60_000);
});
