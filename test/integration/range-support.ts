/**
 * Shared setup of the tests that change the partition table on three real nodes (split.test.ts,
 * merge.test.ts): one LocalCluster for the file, started before its tests and stopped after;
 * buckets that the initial equal table puts in one partition; one client per node, each bound to
 * its node's address so writes arrive through every node.
 */
import { afterAll, beforeAll } from 'vitest';
import type { AtollClient } from '../../src/client/index.js';
import { partitionOf } from '../../src/keys/partition-table.js';
import { LocalCluster } from './local-cluster.js';

export function useRangeCluster(options: { readonly nodes: number; readonly partitions: number }): { readonly cluster: LocalCluster } {
  let cluster: LocalCluster | undefined;
  beforeAll(async () => {
    cluster = await LocalCluster.start({ nodes: options.nodes, partitions: options.partitions, logLevel: 'info' });
  }, 60_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  return {
    get cluster(): LocalCluster {
      if (cluster === undefined) throw new Error('the cluster is used before beforeAll started it');
      return cluster;
    },
  };
}

/** `count` bucket names `${prefix}N` whose keys the initial equal table of `partitions` puts in `partition`. */
export function bucketsOfPartition(prefix: string, partition: number, partitions: number, count: number): string[] {
  const buckets: string[] = [];
  for (let i = 0; buckets.length < count && i < 100_000; i++) if (partitionOf(`${prefix}${i}/k`, partitions) === partition) buckets.push(`${prefix}${i}`);
  return buckets;
}

/** One client per node, each talking to that node only. */
export function clientPerNode(cluster: LocalCluster, nodes: readonly number[]): Map<number, AtollClient> {
  return new Map(nodes.map((id) => [id, cluster.client([cluster.addresses.get(id) as string])]));
}
