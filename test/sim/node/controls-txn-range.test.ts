import { describe, expect, it } from 'vitest';
import { expectControlCaught } from './seed-range.js';

/**
 * Transactions and range changes in the whole-node simulator (issue 32): isolation transactions
 * cover buckets that splits of partition 0 move (x0, x1) and one that stays (x49), and some pause
 * between begin, reads and commit (src/sim/node/txn-span.ts). With the scope decided by the
 * initial equal table (txnScopeByInitialTable), a transaction of partition 0 reads a key of its
 * split sibling at its own snapshot revision: the isolation checker's real-time rule
 * (txn-realtime-checker.ts) finds a version older than a commit acknowledged before the begin.
 */
describe('whole-node simulator: transactions across splits and merges', () => {
  it('a transaction scoped by the initial table reads a sibling at its own revision (isolation checker)', async () => {
    const caught = await expectControlCaught('txnScopeByInitialTable');
    expect(caught.failure.message).toMatch(/read x[01]\/k\d at revision \d+, but .* before the begin/);
  }, 300_000);
});
