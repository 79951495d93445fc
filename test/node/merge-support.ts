/**
 * Shared by the merge and range-change tests on the in-process cluster: a split partition 0 with
 * writes on both sides, calls at a partition's leader that retry while leadership moves, and a
 * merge that aligns the two sides' leaders first.
 */
import { expect } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import { bucketOf } from '../../src/keys/bucket.js';
import { bucketHash } from '../../src/keys/bucket-hash.js';
import type { ApplyResult } from '../../src/mvcc/index.js';
import type { MergePartitionResult } from '../../src/api/node-api.js';
import type { RangeRouting } from '../../src/node/cluster/range-routing.js';
import { RaftError } from '../../src/raft/errors.js';
import { InProcessCluster, waitFor } from './in-process-cluster.js';

export const text = (value: string): Uint8Array => new TextEncoder().encode(value);
export const fromBytes = (value: Uint8Array | undefined): string | undefined => (value === undefined ? undefined : new TextDecoder().decode(value));
export const hashOf = (key: string): number => bucketHash(bucketOf(key));
export const NODES = [1, 2, 3];
export const RETRYABLE = ['NOT_LEADER', 'NO_LEADER', 'UNAVAILABLE', 'DEADLINE_EXCEEDED', 'PARTITION_MOVED'];

export function leaderOf(c: InProcessCluster, partition: number): number | undefined {
  return NODES.find((id) => c.groups(id).get(partition)?.raw.status().role === 'leader');
}

/** The leader of `partition` once it has one (under load an election may still be under way). */
export async function leaderSoon(c: InProcessCluster, partition: number, timeoutMs = 5_000): Promise<number> {
  let leader: number | undefined;
  await waitFor(() => (leader = leaderOf(c, partition)) !== undefined, timeoutMs);
  if (leader === undefined) throw new Error(`partition ${partition}: no leader within ${timeoutMs} ms`);
  return leader;
}

export const ranges = (c: InProcessCluster, id: number): RangeRouting => (c.node(id) as unknown as { router: { ranges: RangeRouting } }).router.ranges;

/** Runs `call` at the leader of `partition` (the loopback network forwards nothing), retrying while leadership moves. */
export async function atLeader<T>(c: InProcessCluster, partition: number, call: (node: number) => Promise<T>): Promise<T> {
  let last: unknown;
  for (let attempt = 0; attempt < 100; attempt++) {
    const leader = leaderOf(c, partition);
    if (leader !== undefined) {
      try {
        return await call(leader);
      } catch (error) {
        last = error;
        if (!isAtollError(error) || !RETRYABLE.includes(error.code)) throw error;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`partition ${partition}: no leader answered: ${String(last)}`);
}

export const deadline = (ms = 2_000): { deadlineMs: number } => ({ deadlineMs: Date.now() + ms });

export async function get(c: InProcessCluster, partition: number, key: string, revision?: number): Promise<string | undefined> {
  const got = await atLeader(c, partition, (node) => c.node(node).get({ key, ...(revision !== undefined && { revision }) }, deadline()));
  return got.found ? fromBytes(got.value) : undefined;
}

/** Puts at the partition's leader; a retry carries the same request id, so it applies once. */
export async function put(c: InProcessCluster, partition: number, key: string, value: string): Promise<number> {
  const requestId = `put-${key}-${value}`;
  return (await atLeader(c, partition, (node) => c.node(node).put({ key, value: text(value), requestId }, deadline()))).revision;
}

/**
 * Proposes raw bytes to `partition` at its leader and waits for the apply (entries no admin would
 * propose). A proposal Raft refuses at once (PROPOSAL_DROPPED: not the leader, or the nodes'
 * leader balancing is moving the leadership) appended nothing, so it is made again at the leader
 * of the moment until `timeoutMs` runs out.
 */
export async function proposeRaw(c: InProcessCluster, partition: number, payload: Uint8Array, timeoutMs = 5_000): Promise<ApplyResult> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await proposeRawOnce(c, partition, payload, Math.max(1, until - Date.now()));
    } catch (error) {
      if (!(error instanceof RaftError && error.code === 'PROPOSAL_DROPPED') || Date.now() >= until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
}

async function proposeRawOnce(c: InProcessCluster, partition: number, payload: Uint8Array, timeoutMs: number): Promise<ApplyResult> {
  const leader = await leaderSoon(c, partition, timeoutMs);
  const replica = c.groups(leader).get(partition)!;
  const driver = (c.node(leader) as unknown as { driver: { enqueue(task: () => void): void } }).driver;
  // Bounded: a proposal a leadership change dropped (a transfer under way) is never answered.
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`partition ${partition}: the proposal at node ${leader} was not answered in ${timeoutMs} ms`)), timeoutMs);
    const settle = { resolve: (result: ApplyResult) => (clearTimeout(timer), resolve(result)), reject: (error: unknown) => (clearTimeout(timer), reject(error)) };
    driver.enqueue(() => {
      try {
        replica.propose(payload, settle);
      } catch (error) {
        settle.reject(error);
      }
    });
  });
}

/** Moves `right`'s leadership to the node leading `left` (the merge admin needs both led by one node). */
export async function alignLeaders(c: InProcessCluster, left: number, right: number): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const target = leaderOf(c, left);
    const current = leaderOf(c, right);
    if (target !== undefined && target === current) return target;
    if (target !== undefined && current !== undefined) await c.node(current).transferLeader({ partition: right, targetNode: target }, deadline()).catch(() => undefined);
    await waitFor(() => leaderOf(c, right) === leaderOf(c, left) && leaderOf(c, left) !== undefined, 2_000);
  }
  throw new Error(`could not align the leaders of ${left} and ${right}`);
}

/**
 * Merges `right` into `left` at the node leading both, aligning them again when the nodes' leader
 * balancing moved one meanwhile (NOT_LEADER, leaders-differ: nothing applied), a bounded number of times.
 */
export async function mergeAligned(c: InProcessCluster, left: number, right: number): Promise<MergePartitionResult> {
  let last: unknown;
  for (let attempt = 0; attempt < 10; attempt++) {
    const leader = await alignLeaders(c, left, right);
    try {
      return await c.node(leader).mergePartition({ partition: left }, deadline(10_000));
    } catch (error) {
      last = error;
      const retry = isAtollError(error) && (['NOT_LEADER', 'NO_LEADER'].includes(error.code) || error.details?.['reason'] === 'leaders-differ');
      if (!retry) throw error;
    }
  }
  throw new Error(`merging ${right} into ${left}: ${String(last)}`);
}

/** Two initial partitions; partition 0 split at `mid` into 0 and `mid`, with writes on both sides. */
export async function splitCluster(
  track: (c: InProcessCluster) => void,
  options: {
    readonly snapshotEveryEntries?: number;
    readonly logEntriesKeptAfterSnapshot?: number;
    /** Runs after the writes, just before the split (what a test needs begun before it). */
    readonly beforeSplit?: (c: InProcessCluster, keys: readonly string[]) => Promise<void>;
  } = {},
): Promise<{ c: InProcessCluster; mid: number; keys: string[] }> {
  const c = new InProcessCluster({ snapshotEveryEntries: options.snapshotEveryEntries ?? 10_000, logEntriesKeptAfterSnapshot: options.logEntriesKeptAfterSnapshot ?? 100, partitions: 2 });
  track(c);
  await c.start();
  expect(await waitFor(() => leaderOf(c, 0) !== undefined && leaderOf(c, 1) !== undefined, 10_000)).toBe(true);
  const keys = Array.from({ length: 200 }, (_, i) => `user${i}/profile`).filter((key) => hashOf(key) < 2 ** 31);
  for (const key of keys) await put(c, 0, key, `v1-${key}`);
  await options.beforeSplit?.(c, keys);
  const split = await atLeader(c, 0, (node) => c.node(node).splitPartition({ partition: 0 }, deadline(5_000)));
  expect(await waitFor(() => NODES.every((id) => c.groups(id).has(split.newPartition)) && leaderOf(c, split.newPartition) !== undefined, 10_000)).toBe(true);
  return { c, mid: split.mid, keys };
}

