import { describe, expect, it } from 'vitest';
import { runNodeSeed } from '../../../src/sim/node/run-seed.js';
import { expectControlCaught } from './seed-range.js';

/**
 * Seeds on which the simulator finds the snapshot-install crash bug (issue 16) with
 * nonAtomicSnapshotInstall: a node killed inside or right after an install then fails every open
 * ("applied index ... is beyond the log"). 25 and 29 are the first two seeds in 1..150 whose failing
 * node crashed inside an install, and whose clean run crashes inside one too and passes. Any change
 * that moves the node's schedule (messages, timers, workloads) can move them: when a seed here no
 * longer crashes inside an install (the tests below expect installCrashes above 0), take the first
 * two such seeds in 1..150 again.
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

  // Regression for issue 16's snapshot-install crash bug: passes because the install is
  // crash-atomic.
  it.each(INSTALL_CRASH_SEEDS)('seed %i (a crash inside a snapshot install) passes every checker', async (seed) => {
    const result = await runNodeSeed(seed, { traceLines: 0 });
    expect(result.stats.installCrashes).toBeGreaterThan(0);
    expect(result.failures).toEqual([]);
  }, 120_000);
});
