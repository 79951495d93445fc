/**
 * Physical compaction at a node runs beside the loop in bounded steps (RaftDriver starts one step
 * per partition at the end of an iteration): history past the retention window is removed from
 * storage while the node keeps serving, and reads are unchanged.
 */
import { describe, expect, it } from 'vitest';
import { AtollNode } from '../../src/node/atoll-node.js';
import { MvccKeyLayout } from '../../src/mvcc/key-layout.js';
import { Rng } from '../../src/raft/rng.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { closedAfterEach, expectAllLed, loneNodeConfig, silentTransport } from './in-process-cluster.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function storedVersions(engine: MemoryEngine): Promise<number> {
  let count = 0;
  for await (const _entry of engine.iterate(new MvccKeyLayout(partitionKeyPrefix('mvcc', 0)).allVersionsRange())) count++;
  return count;
}

const opened = closedAfterEach();

describe('physical compaction at a node', () => {
  it('removes history past the retention window beside the loop while writes go on', async () => {
    const engine = new MemoryEngine();
    const retentionRevisions = 50;
    const node = opened.add(await AtollNode.open(
      loneNodeConfig('storage-compaction', { tickMs: 10, electionTicks: 5, retentionRevisions, limits: { compactionBatchOps: 16 } }),
      { transport: () => silentTransport(), engine, random: new Rng(3) },
    ));
    await expectAllLed(node, 2_000);
    const keys = 20;
    const context = () => ({ deadlineMs: Date.now() + 10_000 });
    let written = 0;
    // 40 rounds over 20 keys: 800 versions, of which the retention window keeps about the last 50 revisions.
    for (let round = 0; round < 40; round++) {
      await Promise.all(Array.from({ length: keys }, (_, i) => node.put({ key: `h/${i}`, value: new TextEncoder().encode(`${round}`) }, context())));
      written += keys;
    }
    // Maintenance proposes a compact command within a second or so; the steps (16 versions each) follow.
    let stored = written;
    for (let attempt = 0; attempt < 100 && stored > keys + retentionRevisions * 2; attempt++) {
      await sleep(50);
      stored = await storedVersions(engine);
    }
    expect(stored).toBeLessThanOrEqual(keys + retentionRevisions * 2);
    for (let i = 0; i < keys; i++) {
      const got = await node.get({ key: `h/${i}` }, context());
      expect(got.found && new TextDecoder().decode(got.value)).toBe('39');
    }
    expect(node.failure).toBeUndefined();
  });
});
