/**
 * A follower that missed more than the log keeps catches up by snapshot. The log is compacted
 * without exporting anything; the leader exports the state machine only when Raft asks for it on
 * behalf of the lagging follower (src/node/replica/partition-replica.ts, compactLog and snapshotData).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOfBucket } from '../../src/keys/partition-table.js';
import { LocalCluster } from './local-cluster.js';

const PARTITIONS = 2;
const BUCKET = 'catchup';
/** The node keeps 1,000 entries behind a snapshot point; the follower misses more than that. */
const WRITES = 1_400;

describe('snapshot catch-up', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: PARTITIONS, snapshotEvery: 50, logLevel: 'info' });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('a follower that missed more than the retained log installs a snapshot and serves every write', async () => {
    const client = cluster.client();
    const partition = partitionOfBucket(BUCKET, PARTITIONS);
    // The cluster was ready (every node knew every leader), but a leadership can move right after
    // (the leader balancer hands partitions to their preferred leaders): ask until one is known.
    let leader = 0;
    for (let attempt = 0; attempt < 100 && leader === 0; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 100));
      leader = Number((await client.clusterInfo()).partitions.find((p) => p.id === partition)?.leader ?? 0);
    }
    expect(leader).toBeGreaterThan(0);
    const follower = [...cluster.addresses.keys()].find((id) => id !== leader) as number;
    await cluster.kill(follower);

    const written = new Map<string, string>();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < WRITES) {
          const i = next++;
          const key = `${BUCKET}/k${i}`;
          await client.put(key, `v${i}`, { timeoutMs: 10_000 });
          written.set(key, `v${i}`);
        }
      }),
    );
    expect(written.size).toBe(WRITES);

    cluster.startNode(follower);
    const restarted = cluster.client([cluster.addresses.get(follower) as string]);
    const deadline = Date.now() + 30_000;
    let missing = WRITES;
    while (Date.now() < deadline) {
      missing = 0;
      for (const [key, value] of written) {
        const got = await restarted.get(key, { consistency: 'stale' }).catch(() => undefined);
        if (!got?.found || new TextDecoder().decode(got.value) !== value) missing++;
      }
      if (missing === 0) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    restarted.close();
    client.close();
    expect(missing).toBe(0);
    // It got there by snapshot (the entries it missed were compacted away on the leader).
    expect(cluster.logOf(follower)).toMatch(new RegExp(`"partition":${partition},[^\\n]*installing a snapshot from the leader`));
  }, 90_000);
});
