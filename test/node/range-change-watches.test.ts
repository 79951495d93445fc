/**
 * Watches across range changes (issue 32, defects 1 and 2): every path that moves a partition's
 * revision or history without a commit (a merge, a snapshot install) tells the partition's watch
 * hub, so that the hub's top is the store's revision whenever a watcher looks.
 *
 * - A merge that raises the left partition's revision (the right side was ahead) left the hub
 *   behind the store: a caught-up watcher then asked the hub again and again without awaiting and
 *   froze its node. Here the hub's top is checked right after the merge, with no watcher running
 *   (a running one would freeze this very process on the old code).
 * - A merge that does not raise the revision (the left side was ahead) brings the right side's
 *   history in at revisions the hub claimed to hold: a watch of a right-side key resumed there from
 *   a revision inside the ring skipped the right side's changes.
 * - A snapshot install on a follower moved the store without telling the hub (checked at the
 *   moment the import returns, before any later entry could publish and hide it).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { WatchHub } from '../../src/watch/watch-hub.js';
import { CollectingSink, InProcessCluster, waitFor } from './in-process-cluster.js';
import { isAtollError } from '../../src/errors.js';
import { hashOf, leaderOf, leaderSoon, mergeAligned, NODES, put, ranges, splitCluster } from './merge-support.js';

let cluster: InProcessCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const track = (c: InProcessCluster): void => {
  cluster = c;
};

/** The watch hub node `id` keeps for `partition`, if a watch was ever served there. */
function hubOf(c: InProcessCluster, id: number, partition: number): WatchHub | undefined {
  const service = (c.node(id) as unknown as { watches: { hubs: Map<number, { hub: WatchHub }> } }).watches;
  return service.hubs.get(partition)?.hub;
}

const context = (signal: AbortSignal, ms = 10_000): { deadlineMs: number; signal: AbortSignal } => ({ deadlineMs: Date.now() + ms, signal });

/** Changes as "revision:key=value". */
const changesOf = (sink: CollectingSink): string[] => sink.messages.flatMap((m) => m.events.map((e) => `${e.revision}:${e.key}=${Buffer.from(e.value).toString()}`));

/** Opens a stale watch at node `id` (its own applied history, no leadership needed), waits for its first message, and ends it. */
async function touchHub(c: InProcessCluster, id: number, key: string): Promise<number> {
  const abort = new AbortController();
  const sink = new CollectingSink();
  const done = c.node(id).watch({ key, stale: true, progress: true }, context(abort.signal), sink).catch((error: unknown) => error);
  expect(await waitFor(() => sink.messages.length > 0, 5_000)).toBe(true);
  abort.abort();
  expect(await done).toBeUndefined();
  return sink.messages[0]!.revision;
}

describe('a watch resumed at a partition that does not hold its keys', () => {
  it('ends PARTITION_MOVED, not FUTURE_REVISION at that partition\'s lower revision (fault suite seed 205)', { timeout: 90_000 }, async () => {
    const { c, mid, keys } = await splitCluster(track);
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    // The right side runs ahead of the left.
    let last = 0;
    for (let i = 0; i < 30; i++) last = await put(c, mid, rightKey, `r${i}`);
    const leftLeader = await leaderSoon(c, 0);
    expect(c.groups(leftLeader).get(0)!.mvcc.revision).toBeLessThan(last);
    // That node's table routes the right side's keys to the left (as one that met a merge it has not applied).
    ranges(c, leftLeader).forget(mid, 0);
    const abort = new AbortController();
    const outcome = await c
      .node(leftLeader)
      .watch({ key: rightKey, startRevision: last }, context(abort.signal, 3_000), new CollectingSink())
      .then(() => undefined, (error: unknown) => error);
    abort.abort();
    expect(isAtollError(outcome, 'PARTITION_MOVED'), String(outcome)).toBe(true);
  });
});

describe('watch hubs follow merges and installs', () => {
  it('a merge that raises the left revision resets the left hub, and a watch there keeps delivering', { timeout: 90_000 }, async () => {
    const { c, mid, keys } = await splitCluster(track);
    const leftKey = keys.find((key) => hashOf(key) < mid)!;
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    // The right side ends well ahead of the left: the merge raises the left partition's revision.
    for (let i = 0; i < 40; i++) await put(c, mid, rightKey, `r${i}`);
    await put(c, 0, leftKey, 'l-before');
    const watchNode = 1;
    expect(await waitFor(() => leaderOf(c, 0) !== undefined && c.groups(watchNode).get(0)!.mvcc.revision === c.groups(leaderOf(c, 0)!).get(0)!.mvcc.revision, 5_000)).toBe(true);
    const watchedAt = await touchHub(c, watchNode, leftKey);
    const left = c.groups(watchNode).get(0)!;
    expect(left.mvcc.revision).toBeLessThan(c.groups(watchNode).get(mid)!.mvcc.revision);
    expect(hubOf(c, watchNode, 0)!.top).toBe(left.mvcc.revision);

    await mergeAligned(c, 0, mid);
    expect(await waitFor(() => left.mvcc.hashRange?.end === 2 ** 31, 10_000)).toBe(true);
    // Invariant: the hub's top is the store's revision (the old code left it at the left's old one).
    expect(left.mvcc.revision).toBeGreaterThan(watchedAt);
    expect(hubOf(c, watchNode, 0)!.top).toBe(left.mvcc.revision);

    // A watch resumed after the last revision it saw, on the quiet left key: it delivers the next
    // change, and the node keeps answering meanwhile.
    const abort = new AbortController();
    const sink = new CollectingSink();
    const done = c.node(watchNode).watch({ key: leftKey, stale: true, startRevision: watchedAt, progress: true }, context(abort.signal), sink).catch((error: unknown) => error);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const started = Date.now();
    await c.node(watchNode).get({ key: leftKey, consistency: 'stale' }, { deadlineMs: Date.now() + 1_000 });
    expect(Date.now() - started).toBeLessThan(1_000);
    const revision = await put(c, 0, leftKey, 'l-after');
    expect(await waitFor(() => changesOf(sink).length > 0, 5_000)).toBe(true);
    expect(changesOf(sink)).toEqual([`${revision}:${leftKey}=l-after`]);
    abort.abort();
    expect(await done).toBeUndefined();
  });

  it('a merge that keeps the left revision resets the left hub: a right-side key resumed there misses nothing', { timeout: 90_000 }, async () => {
    const { c, mid, keys } = await splitCluster(track);
    const leftKey = keys.find((key) => hashOf(key) < mid)!;
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    const watchNode = 2;
    // The hub of the left partition at watchNode exists before the writes below, so its ring holds them.
    await touchHub(c, watchNode, leftKey);
    for (let i = 0; i < 40; i++) await put(c, 0, leftKey, `l${i}`);
    const rightRevisions: number[] = [];
    for (let i = 0; i < 5; i++) rightRevisions.push(await put(c, mid, rightKey, `r${i}`));
    const left = c.groups(watchNode).get(0)!;
    expect(await waitFor(() => leaderOf(c, 0) !== undefined && left.mvcc.revision === c.groups(leaderOf(c, 0)!).get(0)!.mvcc.revision, 5_000)).toBe(true);
    // Precondition: the left side is ahead, and the resume point lies inside the left hub's ring.
    const from = rightRevisions[1]!;
    expect(left.mvcc.revision).toBeGreaterThan(rightRevisions.at(-1)!);
    expect(hubOf(c, watchNode, 0)!.floor).toBeLessThan(from);

    await mergeAligned(c, 0, mid);
    expect(await waitFor(() => left.mvcc.hashRange?.end === 2 ** 31, 10_000)).toBe(true);
    const abort = new AbortController();
    const sink = new CollectingSink();
    const done = c.node(watchNode).watch({ key: rightKey, stale: true, startRevision: from, progress: true }, context(abort.signal), sink).catch((error: unknown) => error);
    const expected = rightRevisions.slice(2).map((revision, i) => `${revision}:${rightKey}=r${i + 2}`);
    await waitFor(() => changesOf(sink).length >= expected.length, 5_000);
    abort.abort();
    expect(await done).toBeUndefined();
    expect(changesOf(sink)).toEqual(expected);
  });

  it('a snapshot install on a follower resets its hub in the same step as the store moves', { timeout: 90_000 }, async () => {
    const c = new InProcessCluster({ snapshotEveryEntries: 20, logEntriesKeptAfterSnapshot: 5 });
    track(c);
    await c.start();
    const leader = await c.waitForLeader();
    const follower = NODES.find((id) => id !== leader)!;
    await c.put('ins/k', 'v0');
    expect(await waitFor(() => c.replica(follower).mvcc.revision === c.replica(leader).mvcc.revision, 5_000)).toBe(true);
    await touchHub(c, follower, 'ins/k');
    // Checked when the import returns: a later entry would publish the jump and hide the defect.
    const store = c.replica(follower).mvcc;
    const original = store.importSnapshot.bind(store);
    const atImport: Array<{ top: number; revision: number }> = [];
    store.importSnapshot = async (...args: Parameters<typeof original>) => {
      const status = await original(...args);
      atImport.push({ top: hubOf(c, follower, 0)!.top, revision: store.revision });
      return status;
    };
    c.network.cut.add(follower);
    for (let i = 1; i <= 80; i++) await c.put(`ins/k${i % 4}`, `v${i}`);
    c.network.cut.delete(follower);
    expect(await waitFor(() => atImport.length > 0 && store.revision === c.replica(leader).mvcc.revision, 10_000)).toBe(true);
    for (const seen of atImport) expect(seen.top).toBe(seen.revision);
  });
});
