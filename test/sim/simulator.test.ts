import { describe, expect, it } from 'vitest';
import type { RaftBugs } from '../../src/raft/config.js';
import { runSeed, scenarioFromSeed } from '../../src/sim/cluster.js';

const SEEDS = 300;

describe('cluster simulator', () => {
  it(`${SEEDS} seeds of faults keep every safety invariant and recover liveness`, () => {
    const failures: string[] = [];
    let writes = 0;
    let reads = 0;
    const profiles = new Map<string, number>();
    for (let seed = 1; seed <= SEEDS; seed++) {
      const result = runSeed(seed);
      writes += result.stats.writesAcked;
      reads += result.stats.readsChecked;
      const profile = `${scenarioFromSeed(seed).profile}/${scenarioFromSeed(seed).nodeCount}`;
      profiles.set(profile, (profiles.get(profile) ?? 0) + 1);
      if (!result.ok) failures.push(`seed ${seed}: ${result.error?.split('\n')[0]} (replay: npm run sim -- --seed ${seed})`);
    }
    console.log(`sim: ${SEEDS} seeds, ${SEEDS - failures.length} passed, ${failures.length} failed; ${writes} writes and ${reads} reads checked; profiles ${JSON.stringify(Object.fromEntries(profiles))}`);
    expect(failures).toEqual([]);
    // The run must have exercised something: a simulator that does nothing passes trivially.
    expect(writes).toBeGreaterThan(SEEDS * 50);
    expect(reads).toBeGreaterThan(SEEDS * 20);
    expect(profiles.size).toBeGreaterThanOrEqual(5);
  }, 120_000);

  it('replays a seed exactly', () => {
    const first = runSeed(4711, { trace: true });
    const second = runSeed(4711, { trace: true });
    expect(second.trace).toEqual(first.trace);
    expect(second.stats).toEqual(first.stats);
    expect(first.trace.length).toBeGreaterThan(10);
  });
});

/**
 * Negative controls: each deliberately broken variant of the core must be caught by the checkers
 * within a bounded number of seeds, or the checkers cannot be trusted.
 */
describe('simulator negative controls', () => {
  const MAX_SEEDS = 500;
  // Each bug names the invariants it breaks and no other: a control must not pass on a failure of
  // some other kind (a log-matching failure is not what committing a previous term's entry breaks).
  const cases: Array<{ bug: keyof RaftBugs; invariant: string }> = [
    { bug: 'commitPreviousTerm', invariant: 'leader-completeness|state-machine-safety' },
    { bug: 'readIndexWithoutQuorum', invariant: 'stale-read' },
    { bug: 'skipCheckQuorum', invariant: 'check-quorum|stale-read' },
  ];
  for (const { bug, invariant } of cases) {
    it(`catches ${bug} within ${MAX_SEEDS} seeds`, () => {
      let caughtAt = 0;
      let error = '';
      for (let seed = 1; seed <= MAX_SEEDS && caughtAt === 0; seed++) {
        const result = runSeed(seed, { bugs: { [bug]: true } });
        if (!result.ok) {
          caughtAt = seed;
          error = result.error?.split('\n')[0] ?? '';
        }
      }
      console.log(`negative control ${bug}: caught at seed ${caughtAt}: ${error}`);
      expect(caughtAt).toBeGreaterThan(0);
      expect(error).toMatch(new RegExp(`^(${invariant}):`));
      // The same seed without the bug is valid: the failure above is the bug's, not the seed's.
      const clean = runSeed(caughtAt);
      expect(clean.error?.split('\n')[0]).toBeUndefined();
      expect(clean.ok).toBe(true);
    }, 120_000);
  }
});
