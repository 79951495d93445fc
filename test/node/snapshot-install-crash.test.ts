/**
 * A follower killed at any point of installing a snapshot from its leader restarts and rejoins
 * (issue 16, "Snapshot install"). The follower's engine dies at one write of the install (the
 * import mark, each write of the import, the import's final synced batch, the loop's batch after
 * it, the write after that), by power loss (unsynced writes lost) or process kill (kept); the node
 * then reopens on what is on disk. It must open, its store and Raft log must agree (the invariant
 * PartitionReplica's constructor asserts), and it must catch up to the leader's state.
 *
 * The regression control (NodeTestBugs.nonAtomicSnapshotInstall, the install as it was) fails the
 * same scenario: killed after the import's synced end but before the log records the snapshot, the
 * follower's store is ahead of its log and it never opens again.
 */
import { describe, expect, it } from 'vitest';
import type { NodeTestBugs } from '../../src/node/atoll-node.js';
import { MvccKeyLayout } from '../../src/mvcc/index.js';
import { equalBytes } from '../../src/storage/bytes.js';
import { partitionKeyPrefix } from '../../src/storage/keyspace.js';
import type { WriteOperation } from '../../src/storage/storage-engine.js';
import { closedAfterEach, InProcessCluster, laggingFollower, waitFor } from './in-process-cluster.js';

const markKey = new MvccKeyLayout(partitionKeyPrefix('mvcc', 0)).importInProgressKey;
const touchesMark = (operations: readonly WriteOperation[] | 'deleteRange', type: 'put' | 'del'): boolean =>
  operations !== 'deleteRange' && operations.some((operation) => operation.type === type && equalBytes(operation.key, markKey));

const LAGGING = laggingFollower();
/** More than the leader keeps behind its snapshot point (5), so the follower needs a snapshot. */
const MISSED_WRITES = 40;
/** Writes made while the follower comes back and installs. */
const DURING_WRITES = 10;

interface CrashResult {
  /** Whether the follower died at the chosen write (false: the install had fewer writes). */
  crashed: boolean;
  /** The offset (from the import mark) of the write that removes the mark, once seen. */
  finalOffset: number | undefined;
  /** Why the restarted follower failed to open, if it did. */
  openError: unknown;
}

const clusters = closedAfterEach();

/**
 * Runs one scenario: the lagging follower misses MISSED_WRITES writes, comes back, and dies at
 * the write `crashAt` writes after its import mark (0: the mark itself); its engine loses the
 * unsynced writes (power) or keeps them (process); the follower reopens on it.
 */
async function crashDuringInstall(crashAt: number, mode: 'power' | 'process', testBugs?: NodeTestBugs): Promise<CrashResult> {
  const c = clusters.add(new InProcessCluster({ snapshotEveryEntries: 10, logEntriesKeptAfterSnapshot: 5, ...(testBugs ? { testBugs } : {}) }));
  await c.start();
  await c.waitForLeader();
  await c.putRange('before', 0, 5);
  c.network.cut.add(LAGGING);
  await c.putRange('missed', 0, MISSED_WRITES);

  // Arm the follower's engine: count writes from the import mark on, die at `crashAt`.
  const engine = c.engines.get(LAGGING);
  if (engine === undefined) throw new Error('no engine');
  const result: CrashResult = { crashed: false, finalOffset: undefined, openError: undefined };
  let offset = -1;
  engine.beforeWrite = (operations) => {
    if (offset < 0 && touchesMark(operations, 'put')) offset = 0;
    else if (offset >= 0) offset++;
    if (offset >= 0 && result.finalOffset === undefined && touchesMark(operations, 'del')) result.finalOffset = offset;
    if (offset !== crashAt) return false;
    result.crashed = true;
    return true;
  };
  c.network.cut.delete(LAGGING);
  // Writes go on meanwhile, so the follower's loop writes again after its install.
  const during = c.putRange('during', 0, DURING_WRITES, 1);
  // Until the follower dies, or it has written well past the install.
  await waitFor(() => result.crashed || (result.finalOffset !== undefined && offset > result.finalOffset + 3), 5_000);
  await during;
  if (!result.crashed) return result;

  // The follower's process is gone: what is on disk is what the memory engine keeps.
  c.network.cut.add(LAGGING);
  await waitFor(() => c.node(LAGGING).failure !== undefined, 2_000);
  await c.node(LAGGING).close();
  c.memory.get(LAGGING)?.crash({ keepUnsyncedBatches: mode === 'power' ? 0 : Number.MAX_SAFE_INTEGER });
  try {
    await c.open(LAGGING);
  } catch (error) {
    result.openError = error;
    c.nodes.delete(LAGGING);
    return result;
  }

  // Right after open: the store and the log agree (no import mark; snapshot point <= applied <= last).
  const replica = c.replica(LAGGING);
  expect(replica.mvcc.needsSnapshot).toBe(false);
  expect(Math.max(replica.mvcc.appliedIndex, 1)).toBeGreaterThanOrEqual(replica.storage.snapshotMeta().index);
  expect(replica.mvcc.appliedIndex).toBeLessThanOrEqual(replica.storage.lastIndex());
  expect(replica.storage.hardState().commit).toBeLessThanOrEqual(replica.storage.lastIndex());

  // It rejoins and catches up to the leader's state, including writes made after its restart.
  c.network.cut.delete(LAGGING);
  await c.putRange('after', 0, 5);
  const caughtUp = await waitFor(() => {
    const leader = c.leaderId();
    return leader !== undefined && c.replica(LAGGING).appliedIndex >= c.replica(leader).appliedIndex;
  }, 10_000);
  expect(caughtUp).toBe(true);
  for (const [prefix, count] of [['before', 5], ['missed', MISSED_WRITES], ['during', DURING_WRITES], ['after', 5]] as const) {
    for (let i = 0; i < count; i++) expect(await c.localValue(LAGGING, `${prefix}/${i}`)).toBe(`v${i}`);
  }
  expect(c.node(LAGGING).failure).toBeUndefined();
  return result;
}

describe('a follower killed while installing a snapshot', () => {
  for (const mode of ['power', 'process'] as const) {
    it(`restarts and rejoins whichever write it dies at (${mode === 'power' ? 'power loss' : 'process kill'})`, async () => {
      // Offsets from the import mark: 0 is the mark, then the import's writes, its final batch
      // (finalOffset), the loop's batch, and the write after it. The last run dies after the install.
      let lastOffset = Number.POSITIVE_INFINITY;
      let runs = 0;
      for (let crashAt = 0; crashAt <= lastOffset && crashAt < 40; crashAt++) {
        const result = await crashDuringInstall(crashAt, mode);
        expect(result.openError).toBeUndefined();
        expect(result.crashed).toBe(true);
        if (result.finalOffset !== undefined) lastOffset = result.finalOffset + 2;
        await clusters.closeAll();
        runs++;
      }
      // The mark, at least one write of the import, its final batch, the loop's batch, one after.
      expect(runs).toBeGreaterThanOrEqual(5);
    }, 60_000);
  }

  it('the regression control (nonAtomicSnapshotInstall) never opens again after dying between the import and the log write', async () => {
    // A dry run finds the import's final batch; the loop's batch that records the snapshot follows it.
    const dry = await crashDuringInstall(1_000, 'power', { nonAtomicSnapshotInstall: true });
    expect(dry.finalOffset).toBeDefined();
    await clusters.closeAll();
    const result = await crashDuringInstall((dry.finalOffset as number) + 1, 'power', { nonAtomicSnapshotInstall: true });
    expect(result.crashed).toBe(true);
    expect(String(result.openError)).toMatch(/beyond the log/);
  }, 30_000);
});
