import { describe, expect, it } from 'vitest';
import { negativeControls } from '../../../src/sim/node/negative-controls.js';
import { runNodeSeed } from '../../../src/sim/node/run-seed.js';
import { firstCatch } from './seed-range.js';

describe('whole-node simulator: the leader lease', () => {
  // The control: a lease three election timeouts long lets an isolated leader answer reads from
  // its own state after the others elected a new leader and wrote. The catching seed then passes
  // with the real lease (the default read mode), under the same read-heavy isolations.
  it('a lease without its margin serves a stale read (linearizability checker); the real lease passes the same seed', async () => {
    const control = negativeControls['leaseIgnoresMargin']!;
    const caught = await firstCatch('leaseIgnoresMargin');
    expect(caught, `no seed in 1..${control.budget} failed ${control.checker}/${control.invariant}`).toBeDefined();
    // A stale read: the shortcut names the overwritten value; otherwise the search finds that the
    // read cannot take effect within its interval.
    expect(caught!.failure.message).toMatch(/already overwritten|cannot take effect in time/);
    const clean = await runNodeSeed(caught!.seed, { overrides: control.overrides, traceLines: 0 });
    expect(clean.failures).toEqual([]);
  }, 300_000);
});
