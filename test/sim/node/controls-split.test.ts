import { describe, expect, it } from 'vitest';
import { runNodeSeed } from '../../../src/sim/node/run-seed.js';
import { expectControlCaught } from './seed-range.js';

/**
 * Splits in the whole-node simulator (issue 19): the split checker catches a split that leaves
 * the moved keys in the source too, and the seed that caught it passes without the defect; seed
 * 12 splits partition 1 and then the partition that split made, while faults run, and passes;
 * seed 1486 is the regression seed of a split applied differently by one replica.
 */
describe('whole-node simulator: partition splits', () => {
  it('a split that keeps the moved keys in the source leaves keys outside its range (split checker)', async () => {
    await expectControlCaught('splitKeepsMovedKeys');
  }, 300_000);

  it('seed 1486: a replica that applies the split entry in one batch with the conf changes before it splits like the others', async () => {
    // The split's refusal ('in-progress': learners) and the new group's voters read the
    // configuration as of the entry (conf-after.ts); Raft's own covered only the previous batches,
    // so node 3, restarted and catching up, refused the split the others applied, and the new
    // partition was left without its third replica (membership/rf-replicas-on-distinct-members).
    const result = await runNodeSeed(1486, { traceLines: 1_000_000 });
    expect(result.scenario).toContain('1 split of partition 0');
    expect(result.trace.some((line) => line.includes('partition split refused'))).toBe(false);
    expect(result.failures).toEqual([]);
  }, 120_000);

  it('seed 12: two splits during the faults, every checker passes', async () => {
    const result = await runNodeSeed(12, { traceLines: 1_000_000 });
    expect(result.scenario).toContain('2 splits of partition 1');
    expect(result.trace.filter((line) => /MEMBERSHIP split partition \d+: (new partition|done)/.test(line))).toHaveLength(2);
    expect(result.failures).toEqual([]);
  }, 120_000);
});
