import { describe, expect, it } from 'vitest';
import { runNodeSeed } from '../../../src/sim/node/run-seed.js';

describe('whole-node simulator: determinism', () => {
  it('one seed run twice gives the same trace, history and outcome', async () => {
    const first = await runNodeSeed(3);
    const second = await runNodeSeed(3);
    expect(second.traceDigest).toBe(first.traceDigest);
    expect(second.trace).toEqual(first.trace);
    expect(second.stats).toEqual(first.stats);
    expect(second.failures).toEqual(first.failures);
    // The run did real work: clients' operations, crashes and events.
    expect(first.stats.operations).toBeGreaterThan(50);
    expect(first.stats.events).toBeGreaterThan(1_000);
  }, 120_000);
});
