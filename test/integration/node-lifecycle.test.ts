/**
 * Two things about a running node that no other test covers:
 * - `--cache-mb 0` (no version cache): every read is answered from the storage engine, and every
 *   kind of read is still correct, before and after a node restarts.
 * - Graceful shutdown (SIGTERM): the node reports NOT_SERVING to a health watcher, closes its client
 *   port to new connections, completes the calls already in flight, and exits 0.
 */
import { connect } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoPath as healthProtoPath } from 'grpc-health-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { partitionOf } from '../../src/keys/partition-table.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import { LocalCluster } from './local-cluster.js';
import { call, genericKvClient } from './plain-grpc.js';

const PARTITIONS = 4;

type HealthClient = grpc.Client & { watch(request: object): grpc.ClientReadableStream<{ status: string }> };
const healthDefinition = protoLoader.loadSync(healthProtoPath, { longs: String, enums: String, defaults: true, oneofs: true });
const Health = (grpc.loadPackageDefinition(healthDefinition) as unknown as { grpc: { health: { v1: { Health: new (address: string, credentials: grpc.ChannelCredentials) => HealthClient } } } }).grpc.health.v1.Health;

function portRefused(address: string): Promise<boolean> {
  const [host, port] = address.split(':') as [string, string];
  return new Promise((resolveProbe) => {
    const socket = connect({ host, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolveProbe(false);
    });
    socket.once('error', () => resolveProbe(true));
  });
}

describe('a running node with --cache-mb 0', () => {
  let cluster: LocalCluster;

  beforeAll(async () => {
    // An election timeout (40 ticks of 50 ms: 2 s) above the shutdown grace period (1.5 s), so
    // stopping a leader for a moment below cannot start an election however loaded the machine is.
    cluster = await LocalCluster.start({ partitions: PARTITIONS, retentionRevisions: 1_000, extraArgs: ['--cache-mb', '0', '--election-ticks', '40'] });
  }, 60_000);

  afterAll(async () => {
    for (const id of cluster?.addresses.keys() ?? []) {
      const pid = cluster.pidOf(id);
      if (pid !== undefined) process.kill(pid, 'SIGCONT');
    }
    await cluster?.stop();
  });

  it('serves correct reads of every kind without a version cache, also after a restart', async () => {
    const client = cluster.client();
    try {
      const model = new Map<string, string>();
      const revisions: Array<{ key: string; revision: number; value: string }> = [];
      // Overwrites, deletes and re-creations across every partition's keys.
      for (let round = 0; round < 5; round++) {
        for (let i = 0; i < 12; i++) {
          const key = `c${i % 6}/k${i}`;
          if ((round + i) % 4 === 3) {
            await client.delete(key);
            model.delete(key);
          } else {
            const value = `r${round}-${i}`;
            const put = await client.put(key, value);
            model.set(key, value);
            revisions.push({ key, revision: Number(put.revision), value });
          }
        }
      }
      expect(await client.increment('c0/count', 3)).toMatchObject({ value: 3n });
      expect(await client.increment('c0/count', 4)).toMatchObject({ value: 7n });
      const check = async (): Promise<void> => {
        for (let i = 0; i < 12; i++) {
          const key = `c${i % 6}/k${i}`;
          const got = await client.get(key);
          expect(got.found ? got.text() : undefined, key).toBe(model.get(key));
          const stale = await client.get(key, { consistency: 'stale' });
          if (stale.found || model.has(key)) expect(stale.found ? stale.text() : undefined, `stale ${key}`).toBeOneOf([model.get(key), undefined]);
        }
        for (const { key, revision, value } of revisions.slice(-20)) expect((await client.get(key, { revision })).text(), `${key} at ${revision}`).toBe(value);
        for (let bucket = 0; bucket < 6; bucket++) {
          const page = await client.getByPrefix(`c${bucket}`);
          const expected = [...model].filter(([key]) => key.startsWith(`c${bucket}/`)).sort(([a], [b]) => (a < b ? -1 : 1));
          const items = page.items.filter((item) => item.key !== 'c0/count').map((item) => [item.key, item.text()]);
          expect(items, `bucket c${bucket}`).toEqual(expected);
        }
        expect((await client.get('c0/count')).text()).toBe('7');
      };
      await check();
      // A restarted node reads everything back from its disk (no cache to hide a wrong read).
      await cluster.stopNode(1);
      cluster.startNode(1);
      await cluster.waitReady();
      await check();
      const onlyOne = cluster.client([cluster.addresses.get(1) as string]);
      try {
        for (const [key, value] of model) {
          let got = await onlyOne.get(key, { consistency: 'stale' });
          for (const until = Date.now() + 5_000; got.found === false && Date.now() < until; ) got = await onlyOne.get(key, { consistency: 'stale' });
          expect(got.text(), `${key} on the restarted node`).toBe(value);
        }
      } finally {
        onlyOne.close();
      }
    } finally {
      client.close();
    }
    expect(cluster.crashes).toEqual([]);
  }, 60_000);

  it('SIGTERM: NOT_SERVING to a health watcher, the port closed to new connections, in-flight calls completed, exit 0', async () => {
    // Calls to node `victim` for keys whose partition `leader` leads: the victim forwards them.
    // With the leader stopped for a moment, they are in flight inside the victim when it gets SIGTERM.
    // The leader is the partition's preferred one (the leader balancer moves leadership to it, never
    // away) and says itself that it leads: it cannot change between here and the SIGSTOP. The
    // rebalancer is paused first, which freezes its leader plan; the preferred leader is the plan's,
    // or before any plan the founding placement's first replica. (Taking the founding placement's
    // alone failed once in CI: the plan, which weighs load, preferred another node and moved
    // leadership between the check and the SIGSTOP.)
    const victim = 3;
    const ids = [...cluster.addresses.keys()];
    const admin = cluster.client();
    const rebalancer = await admin.rebalance({ action: 'pause' }).finally(() => admin.close());
    expect(rebalancer.paused).toBe(true);
    const planned = new Map(rebalancer.plannedLeaders.map((entry) => [entry.partition, entry.node]));
    let partition: { id: number } | undefined;
    let leader = 0;
    for (const until = Date.now() + 15_000; partition === undefined && Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
      for (let id = 0; id < PARTITIONS && partition === undefined; id++) {
        const preferred = planned.get(id) ?? preferredLeaderOf(id, ids, 3);
        if (preferred === victim) continue;
        const seen = (await cluster.clusterInfoOf(preferred)).partitions.find((p) => p.id === id);
        if (Number(seen?.leader) === preferred) [partition, leader] = [{ id }, preferred];
      }
    }
    expect(partition, 'no partition led by its preferred leader').toBeDefined();
    const keys: string[] = [];
    for (let i = 0; keys.length < 10 && i < 10_000; i++) if (partitionOf(`drain${i}/k`, PARTITIONS) === partition?.id) keys.push(`drain${i}/k`);
    const address = cluster.addresses.get(victim) as string;

    const health = new Health(address, grpc.credentials.createInsecure());
    const statuses: string[] = [];
    const watch = health.watch({ service: '' });
    watch.on('data', (message: { status: string }) => statuses.push(message.status));
    watch.on('error', () => {}); // cancelled below, or cut when the node exits
    const kv = genericKvClient(address);
    try {
      for (const until = Date.now() + 5_000; !statuses.includes('SERVING') && Date.now() < until; ) await new Promise((r) => setTimeout(r, 20));
      expect(statuses).toEqual(['SERVING']);
      // Warm the connection and the forward path, so the calls below only wait for the leader.
      await call(kv, 'put', { key: keys[0], value: Buffer.from('warm') });

      const leaderPid = cluster.pidOf(leader) as number;
      process.kill(leaderPid, 'SIGSTOP');
      let completed = 0;
      const inFlight = keys.map((key) =>
        call(kv, 'put', { key, value: Buffer.from(`drained ${key}`) }).then((answer) => {
          completed++;
          return answer;
        }),
      );
      inFlight.forEach((promise) => promise.catch(() => {}));
      await new Promise((r) => setTimeout(r, 100));
      expect(completed).toBe(0);
      const exited = cluster.stopNode(victim, 'SIGTERM');

      // NOT_SERVING reaches the watcher, and the port refuses new connections, while the calls wait.
      for (const until = Date.now() + 1_000; !statuses.includes('NOT_SERVING') && Date.now() < until; ) await new Promise((r) => setTimeout(r, 5));
      let closed = false;
      for (const until = Date.now() + 500; !closed && Date.now() < until; ) closed = await portRefused(address);
      const pendingAtResume = keys.length - completed;
      watch.cancel(); // a watcher would otherwise hold the drain open until the grace period ends
      process.kill(leaderPid, 'SIGCONT');
      expect(statuses).toEqual(['SERVING', 'NOT_SERVING']);
      expect(closed, 'the client port still accepts connections during the drain').toBe(true);
      expect(pendingAtResume).toBe(keys.length);

      const answers = await Promise.all(inFlight);
      expect(answers.map((answer) => answer['applied'])).toEqual(keys.map(() => true));
      expect(await exited).toBe(0);
    } finally {
      process.kill(cluster.pidOf(leader) ?? process.pid, 'SIGCONT');
      watch.cancel();
      health.close();
      kv.close();
    }
    // What the drained calls wrote is there.
    const client = cluster.client([...cluster.addresses].filter(([id]) => id !== victim).map(([, a]) => a));
    try {
      for (const key of keys) expect((await client.get(key)).text()).toBe(`drained ${key}`);
    } finally {
      client.close();
    }
    expect(cluster.crashes).toEqual([]);
  }, 60_000);
});
