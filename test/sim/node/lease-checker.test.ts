import { describe, expect, it } from 'vitest';
import { checkLeases, checkLocks } from '../../../src/sim/node/lease-checker.js';
import type { SimLeaseRecord } from '../../../src/sim/node/lease-workload.js';
import type { LockHoldRecord } from '../../../src/sim/node/lock-workload.js';

/** Planted histories for the lease and lock checkers (the simulator's own run is controls-lock.test.ts). */
function lease(overrides: Partial<SimLeaseRecord> = {}): SimLeaseRecord {
  return {
    client: 1,
    lease: '0.7',
    ttlMs: 1_000,
    grant: { invokeMs: 100, completeMs: 110 },
    keepAlives: [{ invokeMs: 400, completeMs: 420, outcome: 'ok' }],
    keys: [{ key: 'l/a', put: { invokeMs: 120, completeMs: 130, outcome: 'ok' } }],
    reads: [],
    ...overrides,
  };
}

describe('lease checker', () => {
  it('passes a lease whose key is gone only after ttl / (1 + drift) from its last acknowledged keepalive', () => {
    expect(checkLeases([lease({ reads: [{ key: 'l/a', invokeMs: 200, completeMs: 210, found: true }, { key: 'l/a', invokeMs: 1_399, completeMs: 1_400, found: false }] })], [])).toEqual([]);
  });

  it('fails a key gone before its lease could end (no-early-expiry)', () => {
    const failures = checkLeases([lease({ reads: [{ key: 'l/a', invokeMs: 1_300, completeMs: 1_390, found: false }] })], []);
    expect(failures.map((f) => `${f.checker}/${f.invariant}`)).toEqual(['lease/no-early-expiry']);
  });

  it('counts a keepalive acknowledged after the key was seen gone (the lease had ended)', () => {
    const failures = checkLeases([lease({ keepAlives: [{ invokeMs: 2_000, completeMs: 2_010, outcome: 'ok' }], reads: [{ key: 'l/a', invokeMs: 1_500, completeMs: 1_510, found: false }] })], []);
    expect(failures.map((f) => f.invariant)).toEqual(['no-early-expiry']);
  });

  it('does not judge a key gone after the client asked to revoke, nor one whose put was not acknowledged', () => {
    const revoked = lease({ revoke: { invokeMs: 500, completeMs: 520, outcome: 'unknown' }, reads: [{ key: 'l/a', invokeMs: 600, completeMs: 610, found: false }] });
    const unknownPut = lease({ keys: [{ key: 'l/a', put: { invokeMs: 120, completeMs: 3_000, outcome: 'unknown' } }], reads: [{ key: 'l/a', invokeMs: 500, completeMs: 510, found: false }] });
    expect(checkLeases([revoked, unknownPut], [])).toEqual([]);
  });

  it('fails a key found after its revoke was acknowledged, and the final problems', () => {
    const failures = checkLeases([lease({ revoke: { invokeMs: 500, completeMs: 520, outcome: 'ok', revision: 9 }, reads: [{ key: 'l/a', invokeMs: 530, completeMs: 540, found: true }] })], ['key l/b still present']);
    expect(failures.map((f) => f.invariant)).toEqual(['keys-gone-after-revoke', 'keys-gone-at-end']);
  });
});

function hold(token: number, writes: Array<{ revision?: number; fenced?: boolean; at?: number }>, revokeRevision?: number, keepAliveAt?: number): LockHoldRecord {
  return {
    client: token,
    lease: `0.${token}`,
    token,
    key: `l/m/0.${token}`,
    grantRevision: token,
    keepAlives: keepAliveAt === undefined ? [] : [{ invokeMs: keepAliveAt, completeMs: keepAliveAt + 5, outcome: 'ok' }],
    writes: writes.map((w) => ({ invokeMs: w.at ?? 0, completeMs: (w.at ?? 0) + 5, outcome: w.fenced === true ? 'fail' : 'ok', token, fenced: w.fenced === true, ...(w.revision !== undefined && { revision: w.revision }) })),
    ...(revokeRevision !== undefined && { revoke: { invokeMs: 0, completeMs: 1, outcome: 'ok' as const, revision: revokeRevision } }),
  };
}

describe('lock checker', () => {
  it('passes holders one after another', () => {
    expect(checkLocks([hold(3, [{ revision: 5 }, { revision: 6 }], 7), hold(4, [{ revision: 9 }], 10), hold(8, [{ fenced: true, at: 50 }], 11)])).toEqual([]);
  });

  it('fails an older token applied after a newer one (fence-order)', () => {
    expect(checkLocks([hold(3, [{ revision: 9 }]), hold(4, [{ revision: 8 }])]).map((f) => f.invariant)).toEqual(['fence-order']);
  });

  it('fails a holder that wrote while an older waiter key still existed (one-holder)', () => {
    expect(checkLocks([hold(3, [{ revision: 5 }], 12), hold(4, [{ revision: 9 }], 13)]).map((f) => f.invariant)).toEqual(['one-holder']);
  });

  it('fails a holder refused FENCED while its lease lived (one-holder)', () => {
    expect(checkLocks([hold(3, [{ revision: 5 }, { fenced: true, at: 100 }], undefined, 200), hold(4, [{ revision: 9 }])]).map((f) => f.invariant)).toEqual(['one-holder']);
  });
});

describe('transaction real-time and clear-error rules', () => {
  const base = { isolation: 'SNAPSHOT' as const, prefixReads: [], partition: 0 };
  it('fails a read older than a commit acknowledged before the begin, passes a newer one', async () => {
    const { checkRealTimeSnapshots } = await import('../../../src/sim/node/txn-realtime-checker.js');
    const writer = { ...base, id: 'w', outcome: 'committed' as const, snapshotRevision: 4, commitRevision: 9, reads: [], writes: [{ key: 'x0/k0', value: 'w' }] };
    const stale = { ...base, id: 't', outcome: 'committed' as const, snapshotRevision: 12, reads: [{ key: 'x0/k0', modRevision: 5, value: 'old' }], writes: [] };
    const times = new Map([['w', { beginInvokeMs: 0, completeMs: 10 }], ['t', { beginInvokeMs: 20, completeMs: 30 }]]);
    expect(checkRealTimeSnapshots([writer, stale], times).map((f) => f.invariant)).toEqual(['realtime-stale-read']);
    const concurrent = new Map([['w', { beginInvokeMs: 0, completeMs: 25 }], ['t', { beginInvokeMs: 20, completeMs: 30 }]]);
    expect(checkRealTimeSnapshots([writer, stale], concurrent)).toEqual([]);
  });

  it('fails an INTERNAL or bare error, passes codes and lost calls', async () => {
    const { checkClearErrors } = await import('../../../src/sim/node/txn-realtime-checker.js');
    const failed = (note: string) => ({ ...base, id: note, outcome: 'aborted' as const, snapshotRevision: 1, reads: [], writes: [], note });
    expect(checkClearErrors([failed('read failed: TXN_CONFLICT: range changed'), failed('commit failed: node 2 did not answer'), failed('begin failed: UNAVAILABLE (not applied): x')])).toEqual([]);
    expect(checkClearErrors([failed('commit failed: INTERNAL: oops')]).map((f) => f.invariant)).toEqual(['clear-error']);
    expect(checkClearErrors([failed('read failed: Cannot read properties of undefined')]).map((f) => f.invariant)).toEqual(['clear-error']);
  });
});
