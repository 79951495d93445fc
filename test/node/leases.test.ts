/**
 * Leases through whole nodes (issue 21): in-process nodes on memory engines and a loopback
 * transport. The lease keeper's rounds are fired by hand, and its clock is the test's: each node's
 * lease time is real monotonic time plus an offset the test moves (the Raft ticks keep real time,
 * so moving lease time never starts an election).
 * - Keys attached to a lease stay while keepalives come, and vanish, all at one revision on every
 *   replica, once keepalives stop for the TTL (not before); a watcher sees reason "lease".
 * - A follower's skewed clock decides nothing, and a new leader (after a leader kill) gives the
 *   lease a full TTL from its takeover: a kept-alive lease is not expired by the change.
 * - Revoke deletes at once; bad ids and TTLs are refused; a key of another partition is refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { bucketOf } from '../../src/keys/bucket.js';
import { partitionOfBucket } from '../../src/keys/partition-table.js';
import { defaultTenant, toInternalKey } from '../../src/keys/tenant-keys.js';
import type { WatchMessage } from '../../src/api/node-api.js';
import { AtollNode } from '../../src/node/atoll-node.js';
import { LEASE_TICK_MS, type LeaseKeeper } from '../../src/node/service/lease-keeper.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import { systemClock, systemTimers, type NodeClock, type NodeTimers, type NodeTransport, type TransportEvents } from '../../src/node/ports.js';
import { Rng } from '../../src/raft/rng.js';
import { leasesPerTenantPerPartitionMax } from '../../src/mvcc/lease-table.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { driverOf, loneNodeConfig } from './in-process-cluster.js';

const tickMs = 20;
const partitions = 2;
const settle = (ms = 20): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value: string): Uint8Array => new TextEncoder().encode(value);

interface TestNode {
  readonly id: number;
  readonly node: AtollNode;
  /** Added to this node's lease clock (monotonic) and wall clock. */
  leaseOffsetMs: number;
  wallOffsetMs: number;
  readonly clock: NodeClock;
  /** Runs one lease keeper round and lets the loop run it. */
  leaseRound(): Promise<void>;
  replica(partition: number): PartitionReplica;
  closed: boolean;
}

let nodes: Map<number, TestNode> | undefined;
afterEach(async () => {
  for (const entry of nodes?.values() ?? []) if (!entry.closed) await entry.node.close();
  nodes = undefined;
});

async function startCluster(count: number): Promise<Map<number, TestNode>> {
  const started = new Map<number, TestNode>();
  nodes = started;
  const events = new Map<number, TransportEvents>();
  const peers = new Map([...Array(count).keys()].map((index) => [index + 1, `n:${index + 1}`] as [number, string]));
  for (const id of peers.keys()) {
    const transport: NodeTransport = {
      send: (peer, messages) => {
        if (started.get(id)?.closed === true || started.get(peer)?.closed === true) return;
        setImmediate(() => events.get(peer)?.onMessages(id, messages));
      },
      isReachable: (peer) => started.get(peer)?.closed !== true,
      forward: (peer, operation, hops, deadlineMs, signal, tenant) => {
        const target = started.get(peer);
        if (target === undefined || target.closed) return Promise.reject(new AtollError('UNAVAILABLE', 'no such node', { fromTransport: true }));
        return target.node.executeForwarded(operation, { deadlineMs, hops: hops + 1, ...(signal && { signal }), ...(tenant !== undefined && { tenant }) });
      },
      clusterInfo: () => Promise.reject(new AtollError('UNAVAILABLE', 'not in this test')),
      close: () => undefined,
    };
    const leaseRounds = new Set<() => void>();
    // Raft ticks run on real timers; lease rounds only when the test fires them; maintenance never.
    const timers: NodeTimers = {
      every: (intervalMs, run) => {
        if (intervalMs === tickMs) return systemTimers.every(intervalMs, run);
        if (intervalMs === LEASE_TICK_MS) leaseRounds.add(run);
        return { cancel: () => leaseRounds.delete(run) };
      },
      after: systemTimers.after,
      soon: systemTimers.soon,
    };
    const entry = { id, leaseOffsetMs: 0, wallOffsetMs: 0, closed: false };
    const clock: NodeClock = { monotonicMs: systemClock.monotonicMs, wallMs: () => Date.now() + entry.wallOffsetMs };
    const node = await AtollNode.open(
      loneNodeConfig('leases', { id, peers, partitions, tickMs }),
      {
        transport: (given) => {
          events.set(id, given);
          return transport;
        },
        engine: new MemoryEngine(),
        clock,
        timers,
        random: new Rng(200 + id),
      },
    );
    // The test's seam: the lease keeper reads its time from a clock whose monotonic time the test moves.
    const keeper = (node as unknown as { leases: LeaseKeeper }).leases as unknown as { options: { clock: NodeClock } };
    keeper.options = { ...keeper.options, clock: { monotonicMs: () => systemClock.monotonicMs() + entry.leaseOffsetMs, wallMs: clock.wallMs } };
    const driver = driverOf(node);
    started.set(
      id,
      Object.assign(entry, {
        node,
        clock,
        leaseRound: async () => {
          for (const run of leaseRounds) run();
          await settle();
        },
        replica: (partition: number) => driver.groups.get(partition) as PartitionReplica,
      }),
    );
  }
  return started;
}

async function waitFor(condition: () => boolean, what: string, attempts = 300): Promise<void> {
  for (let attempt = 0; attempt < attempts && !condition(); attempt++) await settle();
  if (!condition()) throw new Error(`timed out waiting for ${what}`);
}

const contextOf = (entry: TestNode): { deadlineMs: number } => ({ deadlineMs: entry.clock.wallMs() + 5_000 });

/** A bucket of `partition` (for the default tenant). */
function bucketIn(partition: number): string {
  for (let index = 0; index < 1_000; index++) {
    const bucket = `svc${index}`;
    if (partitionOfBucket(bucketOf(toInternalKey(defaultTenant, `${bucket}/x`)), partitions) === partition) return bucket;
  }
  throw new Error('no bucket found');
}

function leaderOf(cluster: Map<number, TestNode>, partition: number): TestNode | undefined {
  for (const entry of cluster.values()) if (!entry.closed && entry.replica(partition).raw.status().role === 'leader') return entry;
  return undefined;
}

async function liveKeys(entry: TestNode, bucket: string): Promise<string[]> {
  return (await entry.node.getByPrefix({ prefix: `${bucket}/` }, contextOf(entry))).items.map((item) => item.key);
}

describe('leases through whole nodes', () => {
  it('keys vanish within the TTL after keepalives stop, not before, at one revision, with reason "lease" to watchers', async () => {
    const cluster = await startCluster(3);
    const preferred = preferredLeaderOf(0, [1, 2, 3], 3);
    await waitFor(() => leaderOf(cluster, 0)?.id === preferred, 'the preferred leader');
    const leader = cluster.get(preferred)!;
    const bucket = bucketIn(0);
    const granted = await leader.node.lease!({ action: 'grant', key: bucket, ttlMs: 2_000 }, contextOf(leader));
    expect(granted.lease).toMatch(/^0\.\d+$/);
    await leader.node.put({ key: `${bucket}/a`, value: text('host:1'), lease: granted.lease }, contextOf(leader));
    await leader.node.put({ key: `${bucket}/b`, value: text('host:2'), lease: granted.lease }, contextOf(leader));
    await leader.node.put({ key: `${bucket}/plain`, value: text('stays') }, contextOf(leader));

    const messages: WatchMessage[] = [];
    const controller = new AbortController();
    const watching = leader.node.watch({ prefix: `${bucket}/` }, { deadlineMs: leader.clock.wallMs() + 60_000, signal: controller.signal }, {
      write: (message: WatchMessage) => messages.push(message) > 0,
      drained: async () => true,
    } as never);

    // Keepalives every 1.5 s of lease time: the lease outlives several TTLs.
    for (let round = 0; round < 3; round++) {
      leader.leaseOffsetMs += 1_500;
      await leader.leaseRound();
      expect((await leader.node.lease!({ action: 'keepAlive', lease: granted.lease }, contextOf(leader))).ttlLeftMs).toBe(2_000);
    }
    expect(await liveKeys(leader, bucket)).toEqual([`${bucket}/a`, `${bucket}/b`, `${bucket}/plain`]);
    // Keepalives stop: 1.9 s later the keys are still there; past 2 s they are gone.
    leader.leaseOffsetMs += 1_900;
    await leader.leaseRound();
    expect(await liveKeys(leader, bucket)).toHaveLength(3);
    leader.leaseOffsetMs += 200;
    await leader.leaseRound();
    await waitFor(() => leader.replica(0).mvcc.lease(Number(granted.lease.split('.')[1])) === undefined, 'the revocation');
    expect(await liveKeys(leader, bucket)).toEqual([`${bucket}/plain`]);
    await expect(leader.node.lease!({ action: 'keepAlive', lease: granted.lease }, contextOf(leader))).rejects.toMatchObject({ code: 'LEASE_NOT_FOUND' });
    // Every replica deleted the same keys at the same revision.
    const revision = leader.replica(0).mvcc.revision;
    for (const entry of cluster.values()) await waitFor(() => entry.replica(0).mvcc.revision === revision, 'replication');
    await waitFor(() => messages.some((message) => message.events.some((event) => event.type === 'delete')), 'the watch events');
    const deletes = messages.flatMap((message) => message.events.filter((event) => event.type === 'delete').map((event) => ({ key: event.key, reason: event.reason, revision: event.revision })));
    expect(deletes).toEqual([
      { key: `${bucket}/a`, reason: 'lease', revision },
      { key: `${bucket}/b`, reason: 'lease', revision },
    ]);
    controller.abort();
    await watching.catch(() => undefined);
  });

  it("a grant past the tenant's share of the partition is refused at the leader without a Raft round (issue 33: a grant flood costs no writes)", async () => {
    const cluster = await startCluster(1);
    await waitFor(() => leaderOf(cluster, 0)?.id === 1, 'a leader');
    const leader = cluster.get(1)!;
    const bucket = bucketIn(0);
    // The default tenant takes its whole share, 64 grants at a time.
    for (let granted = 0; granted < leasesPerTenantPerPartitionMax; granted += 64) {
      const batch = Math.min(64, leasesPerTenantPerPartitionMax - granted);
      await Promise.all(Array.from({ length: batch }, () => leader.node.lease!({ action: 'grant', key: bucket, ttlMs: 60_000 }, contextOf(leader))));
    }
    const replica = leader.replica(0);
    expect(replica.mvcc.leaseCountsByTenant().get(defaultTenant)).toBe(leasesPerTenantPerPartitionMax);
    const lastIndex = replica.raw.status().lastIndex;
    for (let attempt = 0; attempt < 20; attempt++) {
      await expect(leader.node.lease!({ action: 'grant', key: bucket, ttlMs: 60_000 }, contextOf(leader))).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });
    }
    // Twenty refusals, and the log did not grow: no entry was proposed for them.
    await settle(50);
    expect(replica.raw.status().lastIndex).toBe(lastIndex);
  });

  it('a follower skewed ahead decides nothing, and a leader kill does not expire a kept-alive lease', async () => {
    const cluster = await startCluster(3);
    const preferred = preferredLeaderOf(0, [1, 2, 3], 3);
    await waitFor(() => leaderOf(cluster, 0)?.id === preferred, 'the preferred leader');
    const leader = cluster.get(preferred)!;
    const bucket = bucketIn(0);
    const { lease } = await leader.node.lease!({ action: 'grant', key: bucket, ttlMs: 3_000 }, contextOf(leader));
    await leader.node.put({ key: `${bucket}/a`, value: text('up'), lease }, contextOf(leader));
    const followers = [...cluster.values()].filter((entry) => entry.id !== preferred);
    // The followers' clocks run an hour ahead (wall and lease time): their rounds propose nothing.
    for (const follower of followers) {
      follower.wallOffsetMs = 3_600_000;
      follower.leaseOffsetMs = 3_600_000;
      await follower.leaseRound();
    }
    await leader.node.lease!({ action: 'keepAlive', lease }, contextOf(leader));
    await settle(100);
    expect(await liveKeys(leader, bucket)).toEqual([`${bucket}/a`]);

    // The leader dies right after a keepalive; a skewed follower takes over.
    cluster.get(preferred)!.closed = true;
    await leader.node.close();
    await waitFor(() => leaderOf(cluster, 0) !== undefined, 'a new leader');
    const next = leaderOf(cluster, 0)!;
    // The new leader counts a full TTL from its takeover: 2.9 s of its lease time later the lease lives.
    await next.leaseRound();
    next.leaseOffsetMs += 2_900;
    await next.leaseRound();
    expect(await liveKeys(next, bucket)).toEqual([`${bucket}/a`]);
    expect((await next.node.lease!({ action: 'keepAlive', lease }, contextOf(next))).ttlLeftMs).toBe(3_000);
    const info = await next.node.lease!({ action: 'info', lease }, contextOf(next));
    expect(info.keys).toEqual([`${bucket}/a`]);
    // Revoke deletes at once.
    const revoked = await next.node.lease!({ action: 'revoke', lease }, contextOf(next));
    expect(revoked.revision).toBe(next.replica(0).mvcc.revision);
    expect(await liveKeys(next, bucket)).toEqual([]);
  });

  it('refuses bad ids, bad TTLs, unknown leases and keys of another partition, changing nothing', async () => {
    const cluster = await startCluster(1);
    await waitFor(() => leaderOf(cluster, 0) !== undefined && leaderOf(cluster, 1) !== undefined, 'leaders');
    const only = cluster.get(1)!;
    const [inZero, inOne] = [bucketIn(0), bucketIn(1)];
    for (const lease of ['', 'x', '1', '9.1', '0.0', '-1.2', '0.1.2', `0.${'9'.repeat(20)}`]) {
      await expect(only.node.lease!({ action: 'keepAlive', lease }, contextOf(only))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
      await expect(only.node.put({ key: `${inZero}/k`, value: text('v'), lease }, contextOf(only))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    for (const ttlMs of [0, -1, 1.5]) {
      await expect(only.node.lease!({ action: 'grant', key: inZero, ttlMs }, contextOf(only))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    }
    await expect(only.node.lease!({ action: 'info', lease: '0.99999' }, contextOf(only))).rejects.toMatchObject({ code: 'LEASE_NOT_FOUND' });
    await expect(only.node.put({ key: `${inZero}/k`, value: text('v'), lease: '0.99999' }, contextOf(only))).rejects.toMatchObject({ code: 'LEASE_NOT_FOUND' });
    const { lease } = await only.node.lease!({ action: 'grant', key: inZero, ttlMs: 10_000 }, contextOf(only));
    await expect(only.node.put({ key: `${inOne}/k`, value: text('v'), lease }, contextOf(only))).rejects.toMatchObject({ code: 'LEASE_WRONG_PARTITION' });
    expect(await liveKeys(only, inZero)).toEqual([]);
    expect(await liveKeys(only, inOne)).toEqual([]);
  });
});
