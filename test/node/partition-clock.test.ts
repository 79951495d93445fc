/**
 * The replicated partition clock through whole nodes (issue 16, "Time"): in-process nodes on
 * memory engines, a loopback transport, and one injected NodeClock per node whose wall clock the
 * test skews.
 * - A leader change to a node whose clock is behind does not make an expired key visible again,
 *   neither to reads (leader or stale follower) nor to writes.
 * - A transaction's keepTtl across an expiry keeps the expiry; under SERIALIZABLE a read of a
 *   live lease that expires before the commit is TXN_CONFLICT.
 * - Expired keys are deleted by the leader's maintenance rounds (bounded per round) and then
 *   physically removed by history compaction.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { tenantTag, defaultTenant } from '../../src/keys/tenant-keys.js';
import { AtollNode } from '../../src/node/atoll-node.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import { systemClock, systemTimers, type NodeClock, type NodeTimers, type NodeTransport, type TransportEvents } from '../../src/node/ports.js';
import { MvccKeyLayout } from '../../src/mvcc/key-layout.js';
import { decodeVersionRecord } from '../../src/mvcc/version-record.js';
import { Rng } from '../../src/raft/rng.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { driverOf, loneNodeConfig } from './in-process-cluster.js';

const tickMs = 20;
const settle = (ms = 20): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const text = (value: string): Uint8Array => new TextEncoder().encode(value);

interface TestNode {
  readonly node: AtollNode;
  readonly engine: MemoryEngine;
  /** Added to the real wall clock for this node. */
  offsetMs: number;
  readonly clock: NodeClock;
  /** Runs every maintenance round (the 1 s intervals), which the test fires by hand. */
  fireMaintenance(): void;
  replica(partition: number): PartitionReplica;
}

interface Cluster {
  readonly nodes: Map<number, TestNode>;
  close(): Promise<void>;
}

let running: Cluster | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

/** Nodes 1..count, every partition on every node (replication factor = count), wired in-process. */
async function startCluster(count: number, options: { retentionRevisions?: number; limits?: Record<string, number> } = {}): Promise<Cluster> {
  const nodes = new Map<number, TestNode>();
  const events = new Map<number, TransportEvents>();
  const peers = new Map([...Array(count).keys()].map((index) => [index + 1, `n:${index + 1}`] as [number, string]));
  for (const id of peers.keys()) {
    const transport: NodeTransport = {
      send: (peer, messages) => {
        setImmediate(() => events.get(peer)?.onMessages(id, messages));
      },
      isReachable: () => true,
      forward: (peer, operation, hops, deadlineMs, signal, tenant) => {
        const target = nodes.get(peer);
        if (target === undefined) return Promise.reject(new AtollError('UNAVAILABLE', 'no such node'));
        return target.node.executeForwarded(operation, { deadlineMs, hops: hops + 1, ...(signal && { signal }), ...(tenant !== undefined && { tenant }) });
      },
      clusterInfo: () => Promise.reject(new AtollError('UNAVAILABLE', 'not in this test')),
      close: () => undefined,
    };
    const maintenance = new Set<() => void>();
    // Ticks run on real timers; the 1 s maintenance rounds only when the test fires them.
    const timers: NodeTimers = {
      every: (intervalMs, run) => {
        if (intervalMs === tickMs) return systemTimers.every(intervalMs, run);
        maintenance.add(run);
        return { cancel: () => maintenance.delete(run) };
      },
      after: systemTimers.after,
      soon: systemTimers.soon,
    };
    const engine = new MemoryEngine();
    const entry: { offsetMs: number } = { offsetMs: 0 };
    const clock: NodeClock = { monotonicMs: systemClock.monotonicMs, wallMs: () => Date.now() + entry.offsetMs };
    const node = await AtollNode.open(
      loneNodeConfig('partition-clock', {
        retentionRevisions: options.retentionRevisions ?? 1_000,
        ...(options.limits && { limits: options.limits }),
        id,
        peers,
        tickMs,
      }),
      {
        transport: (given) => {
          events.set(id, given);
          return transport;
        },
        engine,
        clock,
        timers,
        random: new Rng(100 + id),
      },
    );
    const driver = driverOf(node);
    nodes.set(
      id,
      Object.assign(entry, {
        node,
        engine,
        clock,
        fireMaintenance: () => {
          for (const run of maintenance) run();
        },
        replica: (partition: number) => driver.groups.get(partition) as PartitionReplica,
      }),
    );
  }
  const cluster: Cluster = {
    nodes,
    close: async () => {
      for (const { node } of nodes.values()) await node.close();
    },
  };
  running = cluster;
  return cluster;
}

function leaderOf(cluster: Cluster): number | undefined {
  for (const [id, entry] of cluster.nodes) if (entry.replica(0).raw.status().role === 'leader') return id;
  return undefined;
}

async function waitFor(condition: () => boolean, what: string, attempts = 250): Promise<void> {
  for (let attempt = 0; attempt < attempts && !condition(); attempt++) await settle();
  if (!condition()) throw new Error(`timed out waiting for ${what}`);
}

/** A call context on `entry`'s own clock (deadlines are compared with the serving node's clock). */
const contextOf = (entry: TestNode): { deadlineMs: number } => ({ deadlineMs: entry.clock.wallMs() + 5_000 });

describe('a leader change to a node whose clock is behind', () => {
  it('does not make an expired key visible again, to reads or writes', async () => {
    const cluster = await startCluster(3);
    const preferred = preferredLeaderOf(0, [1, 2, 3], 3);
    await waitFor(() => leaderOf(cluster) === preferred, 'the preferred leader');
    const old = cluster.nodes.get(preferred)!;
    await old.node.put({ key: 'b/k', value: text('5'), ttlMs: 4_000 }, contextOf(old));

    // 10 s later on the leader's clock the key has expired, and an entry carried that time.
    old.offsetMs = 10_000;
    await old.node.put({ key: 'b/other', value: text('x') }, contextOf(old));
    expect((await old.node.get({ key: 'b/k' }, contextOf(old))).found).toBe(false);

    // The other nodes' clocks are 10 s behind: by them the key has 4 s left to live.
    const [nextId, followerId] = [1, 2, 3].filter((id) => id !== preferred) as [number, number];
    const next = cluster.nodes.get(nextId)!;
    const follower = cluster.nodes.get(followerId)!;
    const appliedIndex = old.replica(0).mvcc.appliedIndex;
    await waitFor(() => next.replica(0).mvcc.appliedIndex >= appliedIndex && follower.replica(0).mvcc.appliedIndex >= appliedIndex, 'replication');
    await new Promise<void>((resolve) => {
      driverOf(old.node).enqueue(() => {
        old.replica(0).raw.transferLeadership(nextId);
        resolve();
      });
    });
    await waitFor(() => next.replica(0).raw.status().role === 'leader', 'the new leader');

    // Invariant: a read uses max(the node's clock, the partition's applied time).
    expect((await next.node.get({ key: 'b/k' }, contextOf(next))).found).toBe(false);
    expect((await next.node.exists({ key: 'b/k' }, contextOf(next))).exists).toBe(false);
    expect((await follower.node.get({ key: 'b/k', consistency: 'stale' }, contextOf(follower))).found).toBe(false);
    expect((await next.node.getByPrefix({ prefix: 'b/' }, contextOf(next))).items.map((item) => item.key)).toEqual(['b/other']);
    // Invariant: apply never moves the partition clock backwards, so no write sees the key live.
    const incremented = await next.node.increment({ key: 'b/k', delta: 1n }, contextOf(next));
    expect(incremented.value).toBe(1n);
    expect(next.replica(0).mvcc.appliedTimeMs).toBeGreaterThanOrEqual(old.replica(0).mvcc.appliedTimeMs);
  });
});

describe('TTLs inside transactions', () => {
  it('keepTtl (an increment) across an expiry keeps the expiry, so a rate-limit window stays bounded', async () => {
    const cluster = await startCluster(1);
    await waitFor(() => leaderOf(cluster) === 1, 'a leader');
    const only = cluster.nodes.get(1)!;
    await only.node.put({ key: 'w/count', value: text('5'), ttlMs: 1_000 }, contextOf(only));
    const begun = await only.node.beginTransaction({ key: 'w' }, contextOf(only));
    const seen = await only.node.get({ key: 'w/count', transaction: begun.transaction }, contextOf(only));
    expect(seen.found).toBe(true);
    // The window ends between the snapshot and the commit; the client commits "6" keeping the TTL.
    only.offsetMs = 3_000;
    await only.node.commit({ transaction: begun.transaction, writes: [{ key: 'w/count', value: text('6'), keepTtl: true }], readKeys: [], readPrefixes: [] }, contextOf(only));
    expect((await only.node.get({ key: 'w/count' }, contextOf(only))).found).toBe(false);
    only.offsetMs = 10 * 365 * 24 * 3_600_000;
    expect((await only.node.get({ key: 'w/count' }, contextOf(only))).found).toBe(false);
  });

  it('SERIALIZABLE: a read of a live lease that expires before the commit conflicts', async () => {
    const cluster = await startCluster(1);
    await waitFor(() => leaderOf(cluster) === 1, 'a leader');
    const only = cluster.nodes.get(1)!;
    await only.node.put({ key: 'l/lease', value: text('me'), ttlMs: 1_000 }, contextOf(only));
    const begun = await only.node.beginTransaction({ key: 'l', isolation: 'serializable' }, contextOf(only));
    expect((await only.node.get({ key: 'l/lease', transaction: begun.transaction }, contextOf(only))).found).toBe(true);
    only.offsetMs = 3_000;
    const commit = only.node.commit(
      { transaction: begun.transaction, writes: [{ key: 'l/work', value: text('done') }], readKeys: ['l/lease'], readPrefixes: [] },
      contextOf(only),
    );
    await expect(commit).rejects.toMatchObject({ code: 'TXN_CONFLICT' });
    expect((await only.node.get({ key: 'l/work' }, contextOf(only))).found).toBe(false);
  });
});

describe('expired keys', () => {
  it('are deleted by the leader, a bounded number per round, then physically removed by compaction', async () => {
    const maxBatchOps = 8;
    const cluster = await startCluster(1, { retentionRevisions: 1, limits: { maxBatchOps } });
    await waitFor(() => leaderOf(cluster) === 1, 'a leader');
    const only = cluster.nodes.get(1)!;
    const keys = 50;
    for (let index = 0; index < keys; index++) await only.node.put({ key: `e/${index}`, value: text('v'), ttlMs: 1_000 }, contextOf(only));
    await only.node.put({ key: 'e/kept', value: text('v') }, contextOf(only));

    const layout = new MvccKeyLayout(partitionKeyPrefix('mvcc', 0));
    const expiringVersions = async (kind?: 'tombstone'): Promise<number> => {
      let count = 0;
      for await (const [, record] of only.engine.iterate(layout.versionsOfPrefix(`${tenantTag(defaultTenant)}e/`))) {
        if (kind === undefined || decodeVersionRecord(record).kind === kind) count++;
      }
      return count;
    };
    const live = async (): Promise<number> => (await only.node.getByPrefix({ prefix: 'e/', limit: 1_000 }, contextOf(only))).items.length;
    expect(await expiringVersions()).toBe(keys + 1);

    only.offsetMs = 5_000;
    // One round deletes at most 4 entries of maxBatchOps keys (this round's compaction ran first).
    only.fireMaintenance();
    let tombstones = 0;
    for (let attempt = 0; attempt < 100 && tombstones < 4 * maxBatchOps; attempt++) {
      await settle();
      tombstones = await expiringVersions('tombstone');
    }
    expect(tombstones).toBe(4 * maxBatchOps);
    expect(only.replica(0).mvcc.expiredKeys(only.clock.wallMs(), 1_000)).toHaveLength(keys - 4 * maxBatchOps);
    // A bounded number of rounds removes the rest, and compaction the versions.
    for (let round = 0; round < 10 && (await expiringVersions()) > 1; round++) {
      only.fireMaintenance();
      await settle(50);
      await only.node.put({ key: `x/${round}`, value: text('v') }, contextOf(only));
    }
    expect(only.replica(0).mvcc.expiredKeys(only.clock.wallMs(), 1_000)).toEqual([]);
    expect(await expiringVersions()).toBe(1);
    expect(await live()).toBe(1);
  });
});
