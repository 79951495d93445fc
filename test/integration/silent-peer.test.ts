/**
 * A leader that goes silent without closing its connections (SIGSTOP: its kernel still holds the
 * TCP connections, so nothing is reset) must be replaced, also for partitions that were idle.
 *
 * Idle partitions are quiet by design: their leader stops heartbeating, so their followers have
 * nothing whose absence they could notice. What tells them is the peer link's keepalive
 * (src/wire/channel-options.ts): the stopped node does not answer pings, the link fails, the
 * transport reports the peer unreachable, and the groups it led wake up and elect. Without the
 * keepalive the writes below never succeed while the leader is stopped.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOfBucket } from '../../src/keys/partition-table.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import { LocalCluster } from './local-cluster.js';

const PARTITIONS = 3;
/** Quiet after electionTicks * 3 idle ticks: 10 * 3 * 50 ms = 1.5 s; wait well beyond that. */
const QUIET_WAIT_MS = 4_000;
/** Keepalive (about 5 s) + an election or two (0.5-1 s each) + the client's map refresh. */
const FAILOVER_BUDGET_MS = 25_000;

function bucketOf(partition: number): string {
  for (let i = 0; ; i++) if (partitionOfBucket(`quiet${i}`, PARTITIONS) === partition) return `quiet${i}`;
}

describe('a silent leader', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: PARTITIONS });
  }, 60_000);

  afterAll(async () => {
    const stopped = [...cluster.addresses.keys()].map((id) => cluster.pidOf(id)).filter((pid) => pid !== undefined);
    for (const pid of stopped) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // Already gone.
      }
    }
    await cluster?.stop();
  });

  it('is replaced for a quiet partition while it stays stopped, and catches up when it resumes', async () => {
    const client = cluster.client();
    const partition = 0;
    const bucket = bucketOf(partition);
    await client.put(`${bucket}/before`, 'v0', { timeoutMs: 5_000 });
    // Let every group go quiet (and the leader balancer settle), then stop the partition's leader
    // without closing anything. The victim is the leader the balancer settled on: before the
    // rebalancer plans, the founding placement's preferred leader; once it planned (it may within
    // the wait), its choice. It must say so itself just before it is stopped.
    await new Promise((r) => setTimeout(r, QUIET_WAIT_MS));
    client.close();
    const settled = Number((await cluster.clusterInfoOf(1)).partitions.find((p) => p.id === partition)?.leader);
    const victim = settled !== 0 ? settled : preferredLeaderOf(partition, [...cluster.addresses.keys()], 3);
    const pinnedBy = Date.now() + 10_000;
    let seen = await cluster.clusterInfoOf(victim);
    while (Number(seen.partitions.find((p) => p.id === partition)?.leader) !== victim && Date.now() < pinnedBy) {
      await new Promise((r) => setTimeout(r, 100));
      seen = await cluster.clusterInfoOf(victim);
    }
    const led = seen.partitions.find((p) => p.id === partition);
    expect(Number(led?.leader), `node ${victim} never led partition ${partition}`).toBe(victim);
    const pid = cluster.pidOf(victim)!;
    process.kill(pid, 'SIGSTOP');
    // Proof that it still led when it stopped: both survivors, asked after the stop (long before
    // any election could end), still name it leader in the same term. Had leadership moved in
    // between, the new leader would name itself, or a candidate would be in a later term.
    for (const id of [...cluster.addresses.keys()].filter((other) => other !== victim)) {
      const view = (await cluster.clusterInfoOf(id)).partitions.find((p) => p.id === partition);
      expect({ node: id, leader: Number(view?.leader), term: String(view?.term) }).toEqual({ node: id, leader: victim, term: String(led?.term) });
    }
    const survivors = [...cluster.addresses].filter(([id]) => id !== victim).map(([, address]) => address);
    const through = cluster.client(survivors);
    const started = Date.now();
    let written = false;
    let lastError = '';
    while (!written && Date.now() - started < FAILOVER_BUDGET_MS) {
      try {
        await through.put(`${bucket}/during`, 'v1', { timeoutMs: 3_000 });
        written = true;
      } catch (error) {
        lastError = error instanceof Error ? `${(error as { code?: string }).code}: ${error.message}` : String(error);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    const tookMs = Date.now() - started;
    console.log(`silent leader: node ${victim} stopped; partition ${partition} took writes again after ${tookMs} ms${written ? '' : ` (never; last error ${lastError})`}`);
    expect(written, `no write to partition ${partition} within ${FAILOVER_BUDGET_MS} ms of stopping its leader; last error ${lastError}`).toBe(true);
    const survivor = [...cluster.addresses.keys()].find((id) => id !== victim)!;
    const newLeader = Number((await cluster.clusterInfoOf(survivor)).partitions.find((p) => p.id === partition)?.leader ?? 0);
    expect(newLeader).not.toBe(victim);
    expect(newLeader).toBeGreaterThan(0);

    // Resumed, the old leader follows and holds the write made without it.
    process.kill(pid, 'SIGCONT');
    const resumed = cluster.client([cluster.addresses.get(victim)!]);
    const deadline = Date.now() + 20_000;
    let value: string | undefined;
    while (Date.now() < deadline) {
      const got = await resumed.get(`${bucket}/during`, { consistency: 'stale', timeoutMs: 2_000 }).catch(() => undefined);
      if (got?.found) {
        value = new TextDecoder().decode(got.value);
        break;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    resumed.close();
    through.close();
    expect(value).toBe('v1');
  }, 90_000);
});
