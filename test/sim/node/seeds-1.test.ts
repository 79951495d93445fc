import { describe, expect, it } from 'vitest';
import { failingSeeds } from './seed-range.js';

// Five files of 20 seeds each, so vitest spreads the 100 seeds over both workers.
describe('whole-node simulator', () => {
  it('seeds 1-20 pass every checker (linearizability, exactly-once, no lost write, claims, digests, restarts, liveness, isolation)', async () => {
    const { failures, operations } = await failingSeeds(1, 20);
    expect(failures).toEqual([]);
    expect(operations).toBeGreaterThan(20 * 50);
  }, 300_000);
});
