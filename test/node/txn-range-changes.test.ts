/**
 * Transactions across splits and merges (issue 32, defect 3): a transaction reads and writes only
 * keys of its own partition, at its own snapshot, decided by the range that partition owned when
 * the transaction began (the handle carries it), and its reads run at that partition.
 *
 * The old scope check used the initial equal table, so a bucket a split had moved to a sibling
 * still passed; the read was then routed by key to the sibling and served there at the first
 * partition's snapshot revision (a version the sibling's own history never had at that point), and
 * after a merge the right side's keys were read at the left's snapshot revision.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { isAtollError } from '../../src/errors.js';
import type { InProcessCluster } from './in-process-cluster.js';
import { atLeader, deadline, fromBytes, hashOf, mergeAligned, put, splitCluster, text } from './merge-support.js';

let cluster: InProcessCluster | undefined;
afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

const track = (c: InProcessCluster): void => {
  cluster = c;
};

/** What a call answered: the value read, or the error code. */
async function outcome<T>(call: Promise<T>, show: (value: T) => string): Promise<string> {
  try {
    return show(await call);
  } catch (error) {
    if (isAtollError(error)) return error.code;
    throw error;
  }
}

describe('transactions and range changes', () => {
  it('after a split, a transaction of the old partition cannot read a moved bucket at its snapshot', { timeout: 90_000 }, async () => {
    const { c, mid, keys } = await splitCluster(track);
    const leftKey = keys.find((key) => hashOf(key) < mid)!;
    const movedKey = keys.find((key) => hashOf(key) >= mid)!;
    // Ten acknowledged writes to the moved key, in its new partition.
    for (let i = 0; i < 10; i++) await put(c, mid, movedKey, `new-${i}`);
    const begun = await atLeader(c, 0, (node) => c.node(node).beginTransaction({ key: leftKey }, deadline()));
    expect(begun.partition).toBe(0);
    const read = await outcome(
      atLeader(c, 0, (node) => c.node(node).get({ key: movedKey, transaction: begun.transaction }, deadline())),
      (got) => (got.found ? `value:${fromBytes(got.value)}` : 'absent'),
    );
    // The old code answered the first version (v1-...), read at partition 0's snapshot revision in `mid`.
    expect(read).toBe('OUTSIDE_TRANSACTION');
    // A commit built on it is refused too, and changes nothing.
    const committed = await outcome(
      atLeader(c, 0, (node) => c.node(node).commit({ transaction: begun.transaction, writes: [{ key: movedKey, value: text('stale-based') }], readKeys: [], readPrefixes: [] }, deadline())),
      () => 'committed',
    );
    expect(committed).toBe('OUTSIDE_TRANSACTION');
    const now = await atLeader(c, mid, (node) => c.node(node).get({ key: movedKey }, deadline()));
    expect(fromBytes(now.value)).toBe('new-9');
  });

  it('a transaction begun before a split that moves a key it later reads or writes must run again', { timeout: 90_000 }, async () => {
    const begun: Array<{ transaction: string }> = [];
    const { c, mid, keys } = await splitCluster(track, {
      beforeSplit: async (c0, written) => {
        // Two transactions of partition 0, begun while it still owns every written key.
        for (let i = 0; i < 2; i++) begun.push(await atLeader(c0, 0, (node) => c0.node(node).beginTransaction({ key: written[0]! }, deadline())));
      },
    });
    const keptKey = keys.find((key) => hashOf(key) < mid)!;
    const movedKey = keys.find((key) => hashOf(key) >= mid)!;
    await put(c, mid, movedKey, 'after-split');
    const [reader, writer] = begun as [{ transaction: string }, { transaction: string }];
    const read = await outcome(
      atLeader(c, 0, (node) => c.node(node).get({ key: movedKey, transaction: reader.transaction }, deadline())),
      (got) => (got.found ? `value:${fromBytes(got.value)}` : 'absent'),
    );
    expect(read).toBe('TXN_CONFLICT');
    // A key the partition kept is read at the snapshot as before.
    const kept = await atLeader(c, 0, (node) => c.node(node).get({ key: keptKey, transaction: reader.transaction }, deadline()));
    expect(fromBytes(kept.value)).toBe(`v1-${keptKey}`);
    const committed = await outcome(
      atLeader(c, 0, (node) => c.node(node).commit({ transaction: writer.transaction, writes: [{ key: movedKey, value: text('lost') }], readKeys: [], readPrefixes: [] }, deadline())),
      () => 'committed',
    );
    expect(committed).toBe('TXN_CONFLICT');
    expect(fromBytes((await atLeader(c, mid, (node) => c.node(node).get({ key: movedKey }, deadline()))).value)).toBe('after-split');
  });

  it('after a merge, a transaction begun on the left side before it cannot read the right side at its snapshot', { timeout: 90_000 }, async () => {
    const { c, mid, keys } = await splitCluster(track);
    const leftKey = keys.find((key) => hashOf(key) < mid)!;
    const rightKey = keys.find((key) => hashOf(key) >= mid)!;
    for (let i = 0; i < 10; i++) await put(c, mid, rightKey, `r${i}`);
    const begun = await atLeader(c, 0, (node) => c.node(node).beginTransaction({ key: leftKey }, deadline()));
    await mergeAligned(c, 0, mid);
    const read = await outcome(
      atLeader(c, 0, (node) => c.node(node).get({ key: rightKey, transaction: begun.transaction }, deadline())),
      (got) => (got.found ? `value:${fromBytes(got.value)}` : 'absent'),
    );
    expect(read).toBe('OUTSIDE_TRANSACTION');
    // Its own side is still its snapshot: the left key as it was at begin.
    const own = await atLeader(c, 0, (node) => c.node(node).get({ key: leftKey, transaction: begun.transaction }, deadline()));
    expect(fromBytes(own.value)).toBe(`v1-${leftKey}`);
  });
});
