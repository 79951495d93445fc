import { describe, it } from 'vitest';
import { expectControlCaught } from './seed-range.js';

/**
 * Watches in the whole-node simulator (issue 32): each planted watch defect is caught within its
 * seed budget by the named checker (the watch checker, or the event-loop liveness probe for a
 * watcher that never yields), and the catching seed passes without the defect.
 */
describe('whole-node simulator: watches', () => {
  it('a merge that leaves the hub as it was: a watch resumed at the merged partition misses changes (watch/no-gap)', async () => {
    await expectControlCaught('hubNotResetOnMerge');
  }, 300_000);

  it('an install the hub is not told of: a caught-up watcher spins without yielding (loop-liveness/task-yields)', async () => {
    await expectControlCaught('hubNotToldOfInstall');
  }, 300_000);

  it('a stale watch that ignores its replica leaving: it never catches up (watch/catches-up)', async () => {
    await expectControlCaught('staleWatchIgnoresRemoval');
  }, 300_000);
});
