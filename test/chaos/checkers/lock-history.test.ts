/**
 * The lock-history checker on planted histories: a clean history of three holders passes (a lost
 * holder may overlap the next one, and its refused stale write is fine); each violation is named:
 * a grant without a higher token (token-order), an older token's write accepted after a newer
 * one's (fence-order), and two holders whose leases lived holding at once (overlap) — the last is
 * what a lock that grants without waiting for its predecessor (the chaos control
 * lock-skips-waiting) produces.
 */
import { describe, expect, it } from 'vitest';
import { checkLockHistory, type AcceptedFencedWrite, type LockGrant } from '../../../src/chaos/checkers/index.js';

const grants: LockGrant[] = [
  { worker: 'w1', token: 10, grantRevision: 11, startMs: 0, endMs: 100, lived: true },
  // w2's lease ended while it held the lock: it overlaps w3, which is allowed (fencing covers it).
  { worker: 'w2', token: 12, grantRevision: 14, startMs: 120, endMs: 400, lived: false },
  { worker: 'w3', token: 13, grantRevision: 20, startMs: 300, endMs: 500, lived: true },
  { worker: 'w1', token: 21, grantRevision: 25, startMs: 520, endMs: 600, lived: undefined },
];
const accepted: AcceptedFencedWrite[] = [
  { worker: 'w1', token: 10, revision: 12 },
  { worker: 'w2', token: 12, revision: 15 },
  { worker: 'w3', token: 13, revision: 21 },
  { worker: 'w3', token: 13, revision: 22 },
  { worker: 'w1', token: 21, revision: 26 },
];

const kinds = (input: { grants: LockGrant[]; accepted: AcceptedFencedWrite[] }): string[] => {
  const verdict = checkLockHistory(input);
  return verdict.valid === false ? [...new Set(verdict.anomalies.map((anomaly) => anomaly.kind))] : [String(verdict.valid)];
};

describe('lock-history checker', () => {
  it('passes a clean history and summarises it', () => {
    const verdict = checkLockHistory({ grants, accepted, fencedWrites: 1 });
    expect(verdict.valid).toBe(true);
    expect(verdict.summary).toEqual({ grants: 4, lived: 2, lost: 1, unchecked: 1, acceptedWrites: 5, fencedWrites: 1 });
  });

  it('names a grant whose token does not increase in grant order', () => {
    const planted = grants.map((grant) => (grant.worker === 'w3' ? { ...grant, token: 11 } : grant));
    expect(kinds({ grants: planted, accepted })).toEqual(['token-order']);
    const sameRead = grants.map((grant) => (grant.worker === 'w3' ? { ...grant, grantRevision: 14 } : grant));
    expect(kinds({ grants: sameRead, accepted })).toEqual(['token-order']);
  });

  it("names an older token's write accepted after a newer one's (a store that skips the fence check)", () => {
    const planted = [...accepted, { worker: 'w2', token: 12, revision: 23 }];
    const verdict = checkLockHistory({ grants, accepted: planted });
    expect(verdict.valid).toBe(false);
    if (verdict.valid === false) expect(verdict.explanation).toMatch(/^fence-order: w2's write with token 12 was accepted at revision 23, after w3's write with the newer token 13/);
  });

  it('names overlapping critical sections of holders whose leases lived (a lock that skips waiting)', () => {
    // Without waiting, a grant's read is its own put: tokens stay ordered, sections overlap.
    const planted: LockGrant[] = [
      { worker: 'w1', token: 10, grantRevision: 10, startMs: 0, endMs: 200, lived: true },
      { worker: 'w2', token: 11, grantRevision: 11, startMs: 50, endMs: 150, lived: true },
      { worker: 'w3', token: 12, grantRevision: 12, startMs: 180, endMs: 300, lived: true },
    ];
    const verdict = checkLockHistory({ grants: planted, accepted: [] });
    expect(verdict.valid).toBe(false);
    if (verdict.valid === false) {
      expect(verdict.anomalies.map((anomaly) => anomaly.kind)).toEqual(['overlap', 'overlap']);
      expect(verdict.explanation).toMatch(/^overlap: w2's grant \(token 11, granted at revision 11\) began 150 ms before w1's grant/);
    }
  });

  it('cannot decide from fewer than two grants', () => {
    expect(checkLockHistory({ grants: grants.slice(0, 1), accepted: [] }).valid).toBe('unknown');
  });
});
