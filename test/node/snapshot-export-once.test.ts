/**
 * One lagging follower costs its leader one snapshot export (issue 16, "Snapshot install"), even
 * while writes go on and the log would be compacted many times during the transfer: the exported
 * data is kept, and the snapshot point stays on it, until the follower has it
 * (PartitionReplica.builtSnapshot). Before, a log compaction right after the export threw it away
 * and Raft asked for a new one at the new point, again and again under load.
 */
import { describe, expect, it } from 'vitest';
import { closedAfterEach, CrashableEngine, InProcessCluster, laggingFollower, waitFor } from './in-process-cluster.js';

const LAGGING = laggingFollower();

const opened = closedAfterEach();

describe('a snapshot exported for a lagging follower', () => {
  it('is exported once, kept through compactions until the follower has it, then released', async () => {
    // Compaction every 10 applied entries, 5 kept: under load the log moves past any snapshot point fast.
    // Slower ticks than the default keep leadership still on a busy machine (the count is per leader).
    const c = opened.add(new InProcessCluster({ snapshotEveryEntries: 10, logEntriesKeptAfterSnapshot: 5, tickMs: 50 }));
    await c.start();
    const leader = await c.waitForLeader();
    await c.putRange('before', 0, 5);
    c.network.cut.add(LAGGING);
    await c.putRange('missed', 0, 60);
    expect(c.replica(leader).snapshotsExported).toBe(0);

    // The follower comes back while 8 writers keep the leader applying (and wanting to compact),
    // and the leader's export reads slowly, so many entries apply while it runs.
    (c.engines.get(leader) as CrashableEngine).iterateDelayMs = 1;
    c.network.cut.delete(LAGGING);
    await c.putRange('during', 0, 300, 8);
    const caughtUp = await waitFor(() => c.replica(LAGGING).appliedIndex >= c.replica(leader).appliedIndex, 10_000);
    expect(caughtUp).toBe(true);
    (c.engines.get(leader) as CrashableEngine).iterateDelayMs = undefined;
    expect(c.leaderId(), 'the same leader throughout').toBe(leader);
    expect(c.replica(leader).snapshotsExported, 'snapshot exports').toBe(1);
    for (let i = 0; i < 60; i += 7) expect(await c.localValue(LAGGING, `missed/${i}`)).toBe(`v${i}`);

    // Acknowledged: the data is released and compaction resumes (the log stays bounded).
    await c.putRange('later', 0, 30);
    expect(await waitFor(() => !c.replica(leader).holdsSnapshotData, 2_000)).toBe(true);
    const status = c.replica(leader).raw.status();
    expect(status.lastIndex - status.firstIndex).toBeLessThan(40);
  }, 30_000);
});
