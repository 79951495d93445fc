/**
 * ClusterInfo with `partitions` (node-reports.ts) lists only those partitions and answers every
 * other field as a whole report does: nodes ask each other about a few (stray-check.ts), so an
 * idle node with 1,024 partitions does not build, encode and decode every partition's report.
 */
import { describe, expect, it } from 'vitest';
import { AtollNode } from '../../src/node/atoll-node.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { expectAllLed, loneNodeConfig, silentTransport } from './in-process-cluster.js';

describe('ClusterInfo with a partitions filter', () => {
  it('lists only the partitions asked about (unknown ids left out), and all of them without a filter', async () => {
    const node = await AtollNode.open(loneNodeConfig('cluster-info-filter', { partitions: 16 }), { transport: () => silentTransport(), engine: new MemoryEngine(), random: new Rng(3) });
    try {
      await expectAllLed(node, 10_000);
      const context = { deadlineMs: Date.now() + 5_000 };
      const all = await node.clusterInfo(context);
      expect(all.partitions.map((partition) => partition.id)).toEqual(Array.from({ length: 16 }, (_, i) => i));
      const some = await node.clusterInfo(context, { partitions: [9, 2, 70] });
      expect(some.partitions.map((partition) => partition.id)).toEqual([2, 9]);
      expect(some.partitions).toEqual(all.partitions.filter((partition) => partition.id === 2 || partition.id === 9));
      const { partitions: _all, ...rest } = all;
      const { partitions: _some, ...someRest } = some;
      expect(someRest).toEqual(rest);
      expect((await node.clusterInfo(context, { partitions: [] })).partitions).toHaveLength(16);
    } finally {
      await node.close();
    }
  });
});
