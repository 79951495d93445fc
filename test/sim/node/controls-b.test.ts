import { describe, expect, it } from 'vitest';
import { runNodeSeed } from '../../../src/sim/node/run-seed.js';
import { expectControlCaught } from './seed-range.js';

/**
 * Seeds on which the simulator finds the snapshot-install crash bug (issue 16) with
 * nonAtomicSnapshotInstall: a node killed inside or right after an install then fails every open
 * ("applied index ... is beyond the log"). It was found on seeds 10 and 16; since the isolation
 * transactions joined the default mix, seed 10 no longer crashes inside an install, so seed 9
 * (node 3, two install crashes) stood in for it; since node heartbeats and quicker quiescence
 * (issue 18) changed every seed's schedule, seeds 22 and 24 stood in for 9 and 16; with imports
 * beside the loop as well, seed 24 no longer crashes inside an install, and seeds 22 and 25 (of
 * 18, 22, 25, 29, 31, 46, 59, 60 failing in 1..60; 18 fails no-fatal-stop instead) stand in; with
 * lease reads (fewer read messages) seed 25 no longer crashes inside an install, and seed 16 (of
 * 16, 18, 22, 29 failing in 1..45; 18 fails no-fatal-stop) stands in again; with snapshots
 * streamed in chunks, the one-record bookkeeping and the idle sweeps merged as well, seeds 16 and 22
 * no longer crash inside an install, and seeds 29 and 64 stand in (the first two in 1..150 whose
 * failing node crashed inside an install, and whose clean run crashes inside one too and passes);
 * with one heartbeat round every second tick (issue 18, branch h-writepath), seed 64 no longer
 * crashes inside an install, and seeds 25 and 29 are the first two in 1..150 again.
 */
const INSTALL_CRASH_SEEDS = [25, 29];

describe('whole-node simulator: negative controls and the snapshot-install regression', () => {
  it('a snapshot without dedup records makes an installed replica apply a resend again (digest checker)', async () => {
    await expectControlCaught('dedupForgetsOnSnapshot');
  }, 300_000);

  it.each(INSTALL_CRASH_SEEDS)('with nonAtomicSnapshotInstall the restart checker fails on seed %i: the node killed inside an install never opens again', async (seed) => {
    const result = await runNodeSeed(seed, { testBugs: { nonAtomicSnapshotInstall: true }, traceLines: 1_000_000 });
    expect(result.stats.installCrashes).toBeGreaterThan(0);
    const failure = result.failures.find((f) => f.checker === 'restart' && f.invariant === 'open-succeeds');
    expect(failure, JSON.stringify(result.failures)).toBeDefined();
    expect(failure!.message).toMatch(/applied index \d+ is beyond the log/);
    // The node that failed to open is one that crashed inside a snapshot install.
    const node = /^node (\d+)/.exec(failure!.message)?.[1];
    expect(result.trace.some((line) => line.includes(`n${node} crash point reached: during a snapshot install`))).toBe(true);
  }, 120_000);

  // Regression for issue 16's snapshot-install crash bug: fails until the crash-atomic install
  // (branch h-install) is merged; passes with it.
  it.each(INSTALL_CRASH_SEEDS)('seed %i (a crash inside a snapshot install) passes every checker', async (seed) => {
    const result = await runNodeSeed(seed, { traceLines: 0 });
    expect(result.stats.installCrashes).toBeGreaterThan(0);
    expect(result.failures).toEqual([]);
  }, 120_000);
});
