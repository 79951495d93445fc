/**
 * kill -9 during writes: every write the cluster acknowledged is still there after the node comes
 * back, and the restarted node itself catches up and holds them (read from it with stale reads).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalCluster } from './local-cluster.js';
import { untilAtLeast } from './paced.js';

const PARTITIONS = 6;

describe('restart after kill -9', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    // Small snapshot interval: the restarted node may have to catch up by snapshot, not only log.
    cluster = await LocalCluster.start({ partitions: PARTITIONS, snapshotEvery: 50 });
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('keeps every acknowledged write when a leader is killed mid-write and restarted', async () => {
    const client = cluster.client();
    const acknowledged = new Map<string, string>();
    const failures = new Map<string, number>();
    let attempts = 0;
    let stop = false;
    const writers = Array.from({ length: 4 }, async (_, worker) => {
      for (let i = 0; !stop && i < 20_000; i++) {
        const key = `b${(i + worker) % 12}/w${worker}-${i}`;
        const value = `v${worker}-${i}`;
        attempts++;
        try {
          const result = await client.put(key, value, { timeoutMs: 3_000 });
          if (result.applied) acknowledged.set(key, value);
        } catch (error) {
          // Unavailable or indeterminate during the failover: not acknowledged, not checked.
          const code = (error as { code?: string }).code ?? 'unknown';
          failures.set(code, (failures.get(code) ?? 0) + 1);
        }
      }
    });
    // Paced by acknowledged writes (paced.ts): the kill lands while writes flow.
    const ackedBefore = await untilAtLeast(() => acknowledged.size, 150, 30_000);
    const victim = 1;
    await cluster.kill(victim);
    await new Promise((r) => setTimeout(r, 2_000));
    cluster.startNode(victim);
    const atRestart = acknowledged.size;
    const ackedAfter = (await untilAtLeast(() => acknowledged.size, atRestart + 100, 30_000)) - atRestart;
    stop = true;
    await Promise.all(writers);
    await cluster.waitReady();
    console.log(`restart test: ${acknowledged.size} of ${attempts} writes acknowledged (${ackedBefore} before the kill, ${ackedAfter} after the restart); failures ${JSON.stringify(Object.fromEntries(failures))}`);
    expect(ackedBefore, 'writes acknowledged before the kill').toBeGreaterThanOrEqual(150);
    // Writes resume across the failover and the restart (the cluster did not stall).
    expect(ackedAfter, 'writes acknowledged after the restart').toBeGreaterThanOrEqual(100);

    for (const [key, value] of acknowledged) {
      const got = await client.get(key);
      expect(got.found, key).toBe(true);
      expect(new TextDecoder().decode(got.value), key).toBe(value);
    }

    // The restarted node replays its log (or installs a snapshot) and serves the data itself.
    const restarted = cluster.client([cluster.addresses.get(victim) as string]);
    const deadline = Date.now() + 15_000;
    let missing: string[] = [];
    do {
      missing = [];
      for (const [key, value] of acknowledged) {
        const got = await restarted.get(key, { consistency: 'stale' }).catch(() => undefined);
        if (!got?.found || new TextDecoder().decode(got.value) !== value) missing.push(key);
      }
      if (missing.length === 0) break;
      await new Promise((r) => setTimeout(r, 300));
    } while (Date.now() < deadline);
    restarted.close();
    expect(missing).toEqual([]);

    // The balancer hands the returned node its share of leaderships back within 10 seconds.
    const balancedBy = Date.now() + 10_000;
    let counts: number[] = [];
    while (Date.now() < balancedBy) {
      const info = await cluster.clusterInfoOf(victim);
      counts = [1, 2, 3].map((id) => info.partitions.filter((p) => Number(p.leader) === id).length);
      if (counts.every((count) => Math.abs(count - PARTITIONS / 3) <= 1)) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    client.close();
    expect(counts.every((count) => Math.abs(count - PARTITIONS / 3) <= 1), `leaders per node ${counts.join('/')}`).toBe(true);
  }, 90_000);

  it('a graceful SIGTERM stops a node quickly with exit code 0', async () => {
    const started = Date.now();
    const code = await cluster.stopNode(2, 'SIGTERM');
    expect(code).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
    cluster.startNode(2);
    await cluster.waitReady();
  }, 60_000);
});
