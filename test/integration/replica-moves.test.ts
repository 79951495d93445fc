/**
 * Online replica moves (src/node/cluster/replica-moves.ts) on four real nodes with replication factor 3:
 * a partition's replica moves from its preferred leader to the node that held none, under
 * continuous writes through every node and reads; every acknowledged write is there afterwards,
 * the source's data for the partition is gone, and after restarting every node the placement
 * holds (it is data now, not the static function). A move whose leader is killed mid-way is
 * finished by repeating it.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AtollClient } from '../../src/client/index.js';
import { partitionOf } from '../../src/keys/partition-table.js';
import { replicasOf } from '../../src/keys/placement.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { prefixRange } from '../../src/storage/bytes.js';
import { LevelEngine } from '../../src/storage/level-engine.js';
import { LocalCluster } from './local-cluster.js';
import { pauseRebalancer, until as untilEvery } from './membership-support.js';

const NODES = [1, 2, 3, 4];
const PARTITIONS = 4;
const RF = 3;

function bucketOf(partition: number, tag: string): string {
  for (let i = 0; i < 100_000; i++) if (partitionOf(`${tag}${i}/k`, PARTITIONS) === partition) return `${tag}${i}`;
  throw new Error(`no bucket for partition ${partition}`);
}

async function votersSeenBy(cluster: LocalCluster, node: number, partition: number): Promise<number[]> {
  const info = await cluster.clusterInfoOf(node);
  return [...(info.partitions.find((p) => p.id === partition)?.replicas ?? [])].map(Number).sort();
}

/** Polls every 100 ms (membership-support's until): the moves here finish in a few hundred. */
const until = (condition: () => Promise<boolean>, timeoutMs: number): Promise<boolean> => untilEvery(condition, timeoutMs, 100);

/**
 * The partition's leader once the leader balancer settled it: the rebalancer's planned leader (it
 * is paused here, so the plan is frozen) or, before any plan, the founding placement's first
 * replica; waits until that node says it leads.
 */
async function settledLeader(cluster: LocalCluster, partition: number): Promise<number> {
  const admin = cluster.client();
  const status = await admin.rebalance({ action: 'status' }).finally(() => admin.close());
  const preferred = status.plannedLeaders.find((entry) => entry.partition === partition)?.node ?? (replicasOf(partition, NODES, RF)[0] as number);
  const leads = await until(async () => Number((await cluster.clusterInfoOf(preferred)).partitions.find((p) => p.id === partition)?.leader) === preferred, 20_000);
  expect(leads, `node ${preferred} does not lead partition ${partition}`).toBe(true);
  return preferred;
}

/** The replicas a node opened at its last start (its "partitions opened" log line). */
function hostedAtLastStart(log: string): number {
  const lines = log.split('\n').filter((line) => line.includes('"msg":"partitions opened"'));
  return Number((JSON.parse(lines[lines.length - 1] ?? '{}') as { hosted?: number }).hosted);
}

/** Keys of `partition` (Raft log and state machine) in a stopped node's LevelDB. */
async function keysOfPartition(dataDir: string, partition: number): Promise<number> {
  const engine = await LevelEngine.open(dataDir);
  try {
    let count = 0;
    for (const keyspace of ['raft', 'mvcc'] as const) {
      for await (const _ of engine.iterate(prefixRange(partitionKeyPrefix(keyspace, partition)))) count++;
    }
    return count;
  } finally {
    await engine.close();
  }
}

describe('moving a replica online (4 nodes, RF 3)', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    // A small snapshot interval: the new replica catches up by snapshot, then from the log.
    // Info logs: the second test watches the leader's log for the move's first step.
    cluster = await LocalCluster.start({ nodes: NODES.length, partitions: PARTITIONS, snapshotEvery: 100, logLevel: 'info', extraArgs: ['--replication-factor', String(RF)] });
    // Explicit moves only: the rebalancer would move replicas back towards even counts (and hold
    // a partition's move slot meanwhile), as it does after any operator's move; an operator who
    // places replicas by hand pauses it the same way (README, "Growing and healing a cluster").
    await pauseRebalancer(cluster);
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('moves a replica under writes through every node; the data follows, the source forgets it, restarts keep it', async () => {
    const partition = 1;
    const seed = replicasOf(partition, NODES, RF);
    const from = seed[0] as number; // the preferred leader: the move hands leadership away first
    const to = NODES.find((id) => !seed.includes(id)) as number;
    const expected = [...seed.filter((id) => id !== from), to].sort();
    const bucket = bucketOf(partition, 'mv');
    const clients = new Map<number, AtollClient>(NODES.map((id) => [id, cluster.client([cluster.addresses.get(id) as string])]));
    const acknowledged = new Map<string, string>();
    let stop = false;
    let reads = 0;
    const writers = NODES.map(async (id) => {
      const client = clients.get(id) as AtollClient;
      for (let i = 0; !stop && i < 100_000; i++) {
        const key = `${bucket}/n${id}-${i}`;
        try {
          if ((await client.put(key, `v${id}-${i}`, { timeoutMs: 3_000 })).applied) acknowledged.set(key, `v${id}-${i}`);
          if (i % 5 === 0 && (await client.get(key, { timeoutMs: 3_000 })).text() === `v${id}-${i}`) reads++;
        } catch {
          // Indeterminate or refused during a leader change: not acknowledged, not checked.
        }
      }
    });
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      const admin = clients.get(to) as AtollClient;
      const result = await admin.moveReplica(partition, from, to, { timeoutMs: 60_000 });
      expect([...result.voters].sort()).toEqual(expected);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    } finally {
      stop = true;
      await Promise.all(writers);
    }
    expect(acknowledged.size).toBeGreaterThan(20);
    expect(reads).toBeGreaterThan(0);
    // Every node learns the new replica set (those outside it from a peer that hosts it).
    for (const id of NODES) {
      const learned = await until(async () => (await votersSeenBy(cluster, id, partition)).join() === expected.join(), 15_000);
      expect(learned, `node ${id} sees ${String(await votersSeenBy(cluster, id, partition).catch(() => []))}; its log:\n${learned ? '' : cluster.logOf(id).split('\n').filter((l) => l.includes('"partition":1')).slice(-12).join('\n')}`).toBe(true);
    }
    // Repeating the finished move changes nothing; moving onto a node that holds a replica is refused.
    expect([...(await (clients.get(1) as AtollClient).moveReplica(partition, from, to)).voters].sort()).toEqual(expected);
    await expect((clients.get(1) as AtollClient).moveReplica(partition, expected[0] as number, expected[1] as number)).rejects.toMatchObject({ code: 'MOVE_REFUSED' });
    // Every acknowledged write is there, read through every node.
    for (const [key, value] of acknowledged) {
      const via = clients.get(NODES[key.length % NODES.length] as number) as AtollClient;
      expect((await via.get(key)).text(), key).toBe(value);
    }
    for (const client of clients.values()) client.close();

    // The source deleted the partition's data; restart every node: the placement holds.
    for (const id of NODES) await cluster.stopNode(id);
    expect(await keysOfPartition(join(cluster.dataRoot, `node${from}`), partition)).toBe(0);
    expect(await keysOfPartition(join(cluster.dataRoot, `node${to}`), partition)).toBeGreaterThan(0);
    for (const id of NODES) cluster.startNode(id);
    await cluster.waitReady();
    for (const id of NODES) expect(await until(async () => (await votersSeenBy(cluster, id, partition)).join() === expected.join(), 15_000), `node ${id} after restart`).toBe(true);
    // Each node opened exactly the replicas it holds, not the static placement's.
    const seeded = (id: number): number => [...Array(PARTITIONS).keys()].filter((p) => replicasOf(p, NODES, RF).includes(id)).length;
    expect(hostedAtLastStart(cluster.logOf(from))).toBe(seeded(from) - 1);
    expect(hostedAtLastStart(cluster.logOf(to))).toBe(seeded(to) + 1);
    const client = cluster.client();
    try {
      for (const [key, value] of acknowledged) expect((await client.get(key)).text(), key).toBe(value);
    } finally {
      client.close();
    }
    expect(cluster.crashes).toEqual([]);
  }, 120_000);

  it('a move whose leader is killed mid-way is finished by repeating it', async () => {
    const partition = 2;
    const seed = replicasOf(partition, NODES, RF);
    const to = NODES.find((id) => !seed.includes(id)) as number;
    // The leader the balancer settles on (after the restarts above it moves leadership there for
    // a few seconds; taking whichever node led right then let the move start elsewhere).
    const leader = await settledLeader(cluster, partition);
    expect(seed).toContain(leader);
    const from = seed.find((id) => id !== leader) as number;
    const expected = [...seed.filter((id) => id !== from), to].sort();
    const client = cluster.client([cluster.addresses.get(to) as string]);
    try {
      const bucket = bucketOf(partition, 'kill');
      for (let i = 0; i < 50; i++) await client.put(`${bucket}/k${i}`, `v${i}`);
      const first = client.moveReplica(partition, from, to, { timeoutMs: 20_000 }).then(
        () => 'finished',
        (error: unknown) => (error as { code?: string }).code ?? 'failed',
      );
      // Kill the leader once it proposed the move's first step (the learner).
      const started = await until(async () => cluster.logOf(leader).includes('"type":"addLearner","node":' + to), 20_000);
      expect(started).toBe(true);
      await cluster.kill(leader);
      const outcome = await first;
      // Whatever the first call saw, repeating it (at the new leader) finishes the move.
      const repeated = await client.moveReplica(partition, from, to, { timeoutMs: 60_000 });
      expect([...repeated.voters].sort(), `first call: ${outcome}`).toEqual(expected);
      cluster.startNode(leader);
      await cluster.waitReady();
      for (const id of NODES) expect(await until(async () => (await votersSeenBy(cluster, id, partition)).join() === expected.join(), 15_000), `node ${id}`).toBe(true);
      for (let i = 0; i < 50; i++) expect((await client.get(`${bucket}/k${i}`)).text()).toBe(`v${i}`);
    } finally {
      client.close();
    }
    expect(cluster.crashes).toEqual([]);
  }, 120_000);
  it('a leaving node takes no new replica, and is not removed while it still holds one', async () => {
    const partition = 3;
    const seed = await votersSeenBy(cluster, await settledLeader(cluster, partition), partition);
    const outsider = NODES.find((id) => !seed.includes(id)) as number;
    const admin = cluster.client();
    try {
      const leaving = await admin.changeMember({ action: 'leave', id: outsider });
      // The partition's leader reads the member table afresh before the move's first step: it need
      // not have followed the leave yet.
      await expect(admin.moveReplica(partition, seed[1] as number, outsider, { timeoutMs: 20_000 })).rejects.toMatchObject({ code: 'MOVE_REFUSED', details: { reason: 'target-leaving' } });
      expect(await votersSeenBy(cluster, 1, partition)).toEqual([...seed].sort());
      // It is a voter of the other partitions: removing it now would leave them a voter that is gone.
      await expect(admin.changeMember({ action: 'remove', id: outsider })).rejects.toMatchObject({ code: 'MEMBERSHIP_REFUSED', details: { reason: 'holds-replicas' } });
      // The refusals changed nothing (the answering node may still be following the leave).
      let info = await admin.clusterInfo();
      for (let i = 0; i < 50 && (info.memberTableVersion ?? 0) < leaving.version; i++) info = await new Promise((r) => setTimeout(r, 100)).then(() => admin.clusterInfo());
      expect(info.memberTableVersion).toBe(leaving.version);
      expect(info.nodes.find((n) => n.id === outsider)?.state).toBe('leaving');
      await admin.changeMember({ action: 'activate', id: outsider });
    } finally {
      admin.close();
    }
    expect(cluster.crashes).toEqual([]);
  }, 60_000);
});
