/**
 * A transaction begun on a partition that has no write yet has snapshot revision 0, a real
 * revision: its prefix reads must read at revision 0 like its gets do, not at the newest revision.
 * (kv-executor's prefixPage took a revision of 0 for "none given" and read the newest state: the
 * whole-node simulator's isolation checker found it as a future-read, a claim that began at
 * snapshot 0 and saw another claim's later write under the round's prefix.)
 */
import { describe, expect, it } from 'vitest';
import { AtollNode } from '../../src/node/atoll-node.js';
import type { CallContext } from '../../src/api/node-api.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { closedAfterEach, expectAllLed, loneNodeConfig, silentTransport } from './in-process-cluster.js';

const text = (value: string): Uint8Array => new TextEncoder().encode(value);
const context = (): CallContext => ({ deadlineMs: Date.now() + 5_000 });

const opened = closedAfterEach();

async function openSingleNode(): Promise<AtollNode> {
  const opened = await AtollNode.open(loneNodeConfig('txn-prefix-zero'), { transport: () => silentTransport(), engine: new MemoryEngine(), random: new Rng(7) });
  // Bounded: a single node elects itself within a few election timeouts.
  await expectAllLed(opened, 4_000);
  return opened;
}

describe('a transaction at snapshot revision 0', () => {
  it('reads a prefix at revision 0: a key written after it began is not there, in every isolation', async () => {
    const node = opened.add(await openSingleNode());
    for (const isolation of ['snapshot', 'serializable'] as const) {
      const bucket = `b-${isolation}`;
      // Only the first round begins at revision 0 (the partition's first write comes after it);
      // the second begins at 1 and checks the same thing at a non-zero snapshot.
      const begun = await node.beginTransaction({ key: bucket, isolation }, context());
      await node.put({ key: `${bucket}/late`, value: text('after the snapshot') }, context());
      const page = await node.getByPrefix({ prefix: bucket, transaction: begun.transaction, limit: 10 }, context());
      const get = await node.get({ key: `${bucket}/late`, transaction: begun.transaction }, context());
      // Invariant: a transaction's reads all see its snapshot; the get and the prefix read agree.
      expect(get.found).toBe(false);
      expect(page.items.map((item) => item.key)).toEqual([]);
      if (isolation === 'snapshot') expect(begun.snapshotRevision).toBe(0);
    }
  }, 30_000);
});
