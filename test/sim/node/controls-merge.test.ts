import { describe, expect, it } from 'vitest';
import { runNodeSeed } from '../../../src/sim/node/run-seed.js';
import { expectControlCaught } from './seed-range.js';

/**
 * Merges in the whole-node simulator (issue 19): the membership checker catches a leftover right
 * partition on a replica that caught up past the merge by snapshot, and the seed that caught it
 * passes without the defect; seed 435 splits partition 0 and merges it back while faults run (its
 * node 2 installs a snapshot of partition 0 taken after the merge, with its right partition still
 * frozen: the regression seed of the leftover), and passes.
 */
describe('whole-node simulator: partition merges', () => {
  it('a replica that keeps its right partition after installing a merged snapshot leaves a leaderless leftover (membership checker)', async () => {
    await expectControlCaught('mergeLeavesLeftovers');
  }, 300_000);

  it('seed 435: a split and a merge back during the faults, every checker passes', async () => {
    const result = await runNodeSeed(435, { traceLines: 1_000_000 });
    expect(result.scenario).toContain('then a merge back');
    expect(result.trace.some((line) => /MEMBERSHIP merge of partition \d+ into 0: done/.test(line))).toBe(true);
    expect(result.failures).toEqual([]);
  }, 120_000);
});
