/** Runs a range of whole-node simulator seeds and lists the failures, each with its replay command. */
import { expect } from 'vitest';
import { runNodeSeed } from '../../../src/sim/node/run-seed.js';
import { negativeControls } from '../../../src/sim/node/negative-controls.js';
import type { CheckFailure } from '../../../src/sim/node/node-checkers.js';

export async function failingSeeds(from: number, to: number): Promise<{ failures: string[]; operations: number; crashes: number; installs: number }> {
  const failures: string[] = [];
  let operations = 0;
  let crashes = 0;
  let installs = 0;
  for (let seed = from; seed <= to; seed++) {
    const result = await runNodeSeed(seed, { traceLines: 0 });
    operations += result.stats.operations;
    crashes += result.stats.crashes;
    installs += result.stats.snapshotInstalls;
    if (!result.ok) {
      const first = result.failures[0] as CheckFailure;
      failures.push(`seed ${seed}: ${first.checker}/${first.invariant}: ${first.message.split('\n')[0]} (replay: npm run sim:node -- --seed ${seed})`);
    }
  }
  return { failures, operations, crashes, installs };
}

/** Tries the control's seeds in order; the first whose failures include its checker's invariant. */
export async function firstCatch(name: string): Promise<{ seed: number; failure: CheckFailure } | undefined> {
  const control = negativeControls[name];
  if (control === undefined) throw new Error(`no control ${name}`);
  for (let seed = 1; seed <= control.budget; seed++) {
    const result = await runNodeSeed(seed, { testBugs: { [control.bug]: true }, overrides: control.overrides, traceLines: 0 });
    const failure = result.failures.find((f) => f.checker === control.checker && f.invariant === control.invariant);
    if (failure !== undefined) return { seed, failure };
  }
  return undefined;
}

/**
 * A negative control's test: some seed in its budget fails its checker's invariant with the planted
 * bug, and that seed passes without it (so the failure is the bug's). Returns the catch.
 */
export async function expectControlCaught(name: string): Promise<{ seed: number; failure: CheckFailure }> {
  const control = negativeControls[name];
  if (control === undefined) throw new Error(`no control ${name}`);
  const caught = await firstCatch(name);
  expect(caught, `no seed in 1..${control.budget} failed ${control.checker}/${control.invariant}`).toBeDefined();
  const clean = await runNodeSeed(caught!.seed, { overrides: control.overrides, traceLines: 0 });
  expect(clean.failures).toEqual([]);
  return caught!;
}
