import { describe, expect, it } from 'vitest';
import { negativeControls } from '../../../src/sim/node/negative-controls.js';
import { runNodeSeed } from '../../../src/sim/node/run-seed.js';
import { firstCatch } from './seed-range.js';

/**
 * Each defect must be caught by its named checker, for the invariant it breaks, within its seed
 * budget; the catching seed run with the same settings and no defect must pass, so the catch is
 * the defect's doing.
 */
async function expectCaught(name: string): Promise<{ seed: number; failure: { message: string } }> {
  const control = negativeControls[name]!;
  const caught = await firstCatch(name);
  expect(caught, `${name}: no seed in 1..${control.budget} failed ${control.checker}/${control.invariant}`).toBeDefined();
  const clean = await runNodeSeed(caught!.seed, { overrides: control.overrides, traceLines: 0 });
  expect(clean.failures, `${name}: seed ${caught!.seed} without the defect`).toEqual([]);
  return caught!;
}

describe('whole-node simulator: negative controls', () => {
  // The control's schedule (negative-controls.ts) reaches the double fault the defect needs: a
  // follower's lost acknowledged entry, the third replica cut off, the old leader down through the
  // next election.
  it('a follower acknowledging appends before its synced write loses acknowledged increments (counter checker)', async () => {
    const caught = await expectCaught('followerAckBeforeSync');
    expect(caught.failure.message).toMatch(/below the \d+ acknowledged/);
  }, 300_000);

  it('a replica applying entries before they commit diverges from the others at the same index (digest checker)', async () => {
    await expectCaught('applyBeforeCommit');
  }, 300_000);

  it('a SERIALIZABLE commit skipping read-prefix validation lets two claims of one round commit (claims checker, and the isolation checker as a G2 phantom)', async () => {
    await expectCaught('serializableSkipsPrefixValidation');
    // The isolation checker must catch the same defect within the control's seed budget: two
    // SERIALIZABLE claims that each missed the other's key under the round's prefix (a G2 cycle
    // of predicate rw edges).
    const control = negativeControls['serializableSkipsPrefixValidation']!;
    let phantom: string | undefined;
    for (let seed = 1; seed <= control.budget && phantom === undefined; seed++) {
      const result = await runNodeSeed(seed, { testBugs: { [control.bug]: true }, overrides: control.overrides, traceLines: 0 });
      phantom = result.failures.find((f) => f.checker === 'isolation' && f.invariant === 'G2')?.message;
    }
    expect(phantom, `no seed in 1..${control.budget} failed isolation/G2`).toBeDefined();
    expect(phantom).toMatch(/phantom .*-rw\(prefix claim\/r\d+\/: /);
  }, 300_000);
});
