/**
 * Stale watches (issue 21): `stale: true` is served by any replica from its own applied history
 * (a follower's commit listener feeds its hub), in revision order, each change once; a watch that
 * moves to another replica resumes after the last revision it received without a gap or a
 * duplicate, and a start above the replica's applied revision waits instead of failing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { CollectingSink, InProcessCluster, waitFor } from './in-process-cluster.js';

class Sink extends CollectingSink {
  /** The changes as "revision:key=value". */
  changes(): string[] {
    return this.messages.flatMap((m) => m.events.map((e) => `${e.revision}:${e.key}=${Buffer.from(e.value).toString()}`));
  }
  last(): number {
    return this.messages.at(-1)?.revision ?? 0;
  }
}

const context = (signal: AbortSignal): { deadlineMs: number; signal: AbortSignal } => ({ deadlineMs: Date.now() + 5_000, signal });

let cluster: InProcessCluster | undefined;
afterEach(async () => {
  for (const node of cluster?.nodes.values() ?? []) await node.close();
  cluster = undefined;
});

describe('stale watches', () => {
  it('a follower serves the committed history; a resume on another replica continues exactly after the last revision', async () => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000 });
    await cluster.start();
    const leader = await cluster.waitForLeader();
    const [first, second] = [1, 2, 3].filter((id) => id !== leader) as [number, number];
    await cluster.put('stw/before', 'x');

    // The reference: a leader watch over the same bucket from the same start.
    const referenceAbort = new AbortController();
    const reference = new Sink();
    const referenceDone = cluster.node(leader).watch({ prefix: 'stw', progress: true }, context(referenceAbort.signal), reference).catch((e: unknown) => e);
    await waitFor(() => reference.messages.length > 0, 5_000);
    const start = reference.messages[0]!.revision;

    const firstAbort = new AbortController();
    const atFirst = new Sink();
    const firstDone = cluster.node(first).watch({ prefix: 'stw', startRevision: start, stale: true }, context(firstAbort.signal), atFirst).catch((e: unknown) => e);
    for (let i = 0; i < 20; i++) await cluster.put(`stw/k${i % 3}`, `v${i}`);
    await waitFor(() => atFirst.changes().length >= 10, 5_000);
    // The first follower's watch ends mid-stream (a disconnect); the watch resumes at the other.
    firstAbort.abort();
    expect(await firstDone).toBeUndefined();
    const resumeAfter = atFirst.last();
    const secondAbort = new AbortController();
    const atSecond = new Sink();
    const secondDone = cluster.node(second).watch({ prefix: 'stw', startRevision: resumeAfter, stale: true }, context(secondAbort.signal), atSecond).catch((e: unknown) => e);
    for (let i = 20; i < 30; i++) await cluster.put(`stw/k${i % 3}`, `v${i}`);
    await waitFor(() => reference.changes().length === 30, 5_000);
    await waitFor(() => atFirst.changes().length + atSecond.changes().length >= 30, 5_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    secondAbort.abort();
    referenceAbort.abort();
    expect(await secondDone).toBeUndefined();
    expect(await referenceDone).toBeUndefined();

    // Exactly the leader's history: no gap, no duplicate, in revision order.
    const observed = [...atFirst.changes(), ...atSecond.changes()];
    expect(observed).toEqual(reference.changes());
    const revisions = [...atFirst.messages, ...atSecond.messages].map((m) => m.revision);
    expect(revisions).toEqual([...revisions].sort((a, b) => a - b));
    expect(new Set(revisions).size).toBe(revisions.length);
  }, 60_000);

  it('without a start revision a follower starts at its applied revision; a start above it waits for apply', async () => {
    cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 1_000 });
    await cluster.start();
    const leader = await cluster.waitForLeader();
    const follower = [1, 2, 3].find((id) => id !== leader)!;
    await cluster.put('stn/a', '1');
    // Until the follower has applied it (a stale read there sees it), its revision may lag.
    const staleRead = async (): Promise<boolean> => {
      const read = await cluster!.node(follower).get({ key: 'stn/a', consistency: 'stale' }, { deadlineMs: Date.now() + 1_000 });
      return read.found === true;
    };
    for (let n = 0; n < 100 && !(await staleRead()); n++) await new Promise((resolve) => setTimeout(resolve, 20));
    const abort = new AbortController();
    const sink = new Sink();
    const done = cluster.node(follower).watch({ prefix: 'stn', progress: true, stale: true }, context(abort.signal), sink).catch((e: unknown) => e);
    await waitFor(() => sink.messages.length > 0, 5_000);
    const start = sink.messages[0]!.revision;
    expect(start).toBeGreaterThan(0);
    // A start ahead of everything: no error, nothing sent until apply passes it.
    const aheadAbort = new AbortController();
    const ahead = new Sink();
    const aheadDone = cluster.node(follower).watch({ prefix: 'stn', startRevision: start + 2, stale: true }, context(aheadAbort.signal), ahead).catch((e: unknown) => e);
    await cluster.put('stn/b', '2');
    await cluster.put('stn/c', '3');
    await cluster.put('stn/d', '4');
    await waitFor(() => sink.changes().length === 3 && ahead.changes().length >= 1, 5_000);
    expect(sink.changes().map((c) => c.split(':')[1])).toEqual(['stn/b=2', 'stn/c=3', 'stn/d=4']);
    expect(ahead.changes().map((c) => c.split(':')[1])).toEqual(['stn/d=4']);
    abort.abort();
    aheadAbort.abort();
    expect(await done).toBeUndefined();
    expect(await aheadDone).toBeUndefined();
  }, 60_000);
});
