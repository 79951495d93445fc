import { describe, expect, it } from 'vitest';
import { expectControlCaught } from './seed-range.js';

/**
 * Leases and locks in the whole-node simulator (issue 32): every seed runs lease clients (grant,
 * keepalives, revoke or abandon) and lock clients (src/client/lock.ts's recipe with fenced writes);
 * src/sim/node/lease-checker.ts checks them. The negative control: a lock client that hands the
 * lock on when its holder asks to unlock, before the revoke applied, is caught by lock/one-holder,
 * and the catching seed passes without it.
 */
describe('whole-node simulator: leases and locks', () => {
  it('a lock granted before the predecessor key is deleted makes two holders at once (lock checker)', async () => {
    const caught = await expectControlCaught('lockGrantsBeforeDelete');
    expect(caught.failure.message).toMatch(/still existed/);
  }, 300_000);
});
