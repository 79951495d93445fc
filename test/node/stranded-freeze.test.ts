/**
 * A merge cut off after its freeze is finished by the nodes themselves (issue 32;
 * src/node/cluster/stranded-freezes.ts). The admin froze R into L and died before the merge entry: R's keys
 * take no writes until the merge applies. The old node waited for an
 * operator to run `atoll cluster merge` again, forever; the fault suite's merges left a bucket
 * range unwritable that way. Now R's leader, after STRANDED_FREEZE_MS of one term, runs the merge
 * where it also leads L, or hands R's leadership to L's leader, which then runs it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { encodeFreezeEntry } from '../../src/node/replica/merge-entry.js';
import { STRANDED_FREEZE_MS } from '../../src/node/cluster/stranded-freezes.js';
import { InProcessCluster, waitFor } from './in-process-cluster.js';
import { atLeader, deadline, fromBytes, hashOf, leaderOf, leaderSoon, NODES, proposeRaw, put, splitCluster, text } from './merge-support.js';

let cluster: InProcessCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

describe('a merge whose freeze was left behind', () => {
  it('is finished by the nodes: R folds into L without another admin call, and its keys take writes again', { timeout: 120_000 }, async () => {
    const { c, mid, keys } = await splitCluster((made) => (cluster = made));
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    await put(c, mid, rightKey, 'before-freeze');
    // Leaders on different nodes where possible: the finisher must hand R's leadership over first.
    const leftLeader = await leaderSoon(c, 0);
    const other = NODES.find((id) => id !== leftLeader)!;
    if (leaderOf(c, mid) === leftLeader) {
      await c.node(leftLeader).transferLeader({ partition: mid, targetNode: other }, deadline()).catch(() => undefined);
      // A proposal made while the transfer runs is dropped unanswered: wait until it is over.
      await waitFor(() => leaderOf(c, mid) !== undefined && leaderOf(c, mid) !== leftLeader, 5_000);
    }
    // The admin that crashed right after its freeze (proposed again at the current leader if a
    // leadership change dropped it: a second freeze into the same partition changes nothing).
    let frozen: Awaited<ReturnType<typeof proposeRaw>> | undefined;
    for (let attempt = 0; attempt < 5 && frozen === undefined; attempt++) {
      frozen = await proposeRaw(c, mid, encodeFreezeEntry({ nowMs: Date.now(), into: 0 })).catch(() => undefined);
      if (frozen === undefined) await waitFor(() => leaderOf(c, mid) !== undefined, 2_000);
    }
    expect(frozen).toBeDefined();
    expect(frozen?.error).toBeUndefined();
    expect(await waitFor(() => NODES.every((id) => c.groups(id).get(mid)?.mvcc.frozen?.into === 0), 5_000)).toBe(true);
    const frozenAt = Date.now();
    // Nobody merges: within a few patiences, every node has R folded into L.
    const merged = await waitFor(() => NODES.every((id) => !c.groups(id).has(mid) && c.groups(id).get(0)?.mvcc.hashRange?.end === 2 ** 31), 6 * STRANDED_FREEZE_MS);
    expect(merged, `R still frozen ${Date.now() - frozenAt} ms after its freeze`).toBe(true);
    expect(Date.now() - frozenAt).toBeGreaterThanOrEqual(STRANDED_FREEZE_MS - 1_000);
    // The right side's key lives at L with its value, and takes writes again.
    const got = await atLeader(c, 0, (node) => c.node(node).get({ key: rightKey }, deadline()));
    expect(fromBytes(got.value)).toBe('before-freeze');
    await atLeader(c, 0, (node) => c.node(node).put({ key: rightKey, value: text('after-merge') }, deadline()));
    expect(fromBytes((await atLeader(c, 0, (node) => c.node(node).get({ key: rightKey }, deadline()))).value)).toBe('after-merge');
  });
});
