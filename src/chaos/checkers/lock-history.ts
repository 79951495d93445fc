/**
 * Lock history: what lock workers (lock-workload.ts) saw of one lock and of the key it guards
 * must be what a lock with fencing tokens allows (client/lock.ts, mvcc/fence.ts):
 *
 * - token-order: in the order of the revisions that granted them, grants carry strictly
 *   increasing fencing tokens (a lock is granted at a read that showed no earlier waiter, and an
 *   earlier waiter's key never comes back), and no two grants share a granting revision;
 * - fence-order: the fenced writes the store accepted, in revision (apply) order, carry
 *   non-decreasing tokens: no write of an older token after a newer one was accepted;
 * - overlap: the critical sections of holders whose lease lived through them (their lock key was
 *   still present when checked after the section) do not overlap in time. A holder whose lease
 *   ended may overlap the next holder (that is what fencing is for), so it is left out; so is
 *   one whose check failed (counted, never assumed).
 * Times are one process's monotonic clock (performance.now()), so the sections are comparable.
 */
import { explainAnomalies, type InvalidVerdict, type UnknownVerdict, type ValidVerdict } from './verdict.js';

export interface LockGrant {
  readonly worker: string;
  readonly token: number;
  /** The revision of the read that granted the lock (HeldLock.grantRevision). */
  readonly grantRevision: number;
  /** When the holder's critical section began (lock() resolved) and ended (before the check). */
  readonly startMs: number;
  readonly endMs: number;
  /** Whether the holder's lock key was present after the section; undefined when the check failed. */
  readonly lived: boolean | undefined;
}

/** A fenced write the store accepted, with its token and the revision it applied at. */
export interface AcceptedFencedWrite {
  readonly worker: string;
  readonly token: number;
  readonly revision: number;
}

export type LockAnomalyKind = 'token-order' | 'fence-order' | 'overlap';

export interface LockAnomaly {
  readonly kind: LockAnomalyKind;
  readonly message: string;
}

export interface LockSummary {
  readonly grants: number;
  /** Grants whose lease lived through the section (the ones the overlap check covers). */
  readonly lived: number;
  /** Grants whose lease ended (or was abandoned) before the section was checked. */
  readonly lost: number;
  /** Grants whose liveness check failed (left out of the overlap check). */
  readonly unchecked: number;
  readonly acceptedWrites: number;
  /** Fenced writes the store refused with FENCED (stale holders caught). */
  readonly fencedWrites: number;
}

export type LockVerdict =
  | (ValidVerdict & { readonly summary: LockSummary })
  | (InvalidVerdict & { readonly summary: LockSummary; readonly anomalies: readonly LockAnomaly[] })
  | (UnknownVerdict & { readonly summary: LockSummary });

const showGrant = (grant: LockGrant): string => `${grant.worker}'s grant (token ${grant.token}, granted at revision ${grant.grantRevision})`;

export function checkLockHistory(input: {
  readonly grants: readonly LockGrant[];
  readonly accepted: readonly AcceptedFencedWrite[];
  readonly fencedWrites?: number;
}): LockVerdict {
  const { grants, accepted } = input;
  const summary: LockSummary = {
    grants: grants.length,
    lived: grants.filter((grant) => grant.lived === true).length,
    lost: grants.filter((grant) => grant.lived === false).length,
    unchecked: grants.filter((grant) => grant.lived === undefined).length,
    acceptedWrites: accepted.length,
    fencedWrites: input.fencedWrites ?? 0,
  };
  // Too few grants prove nothing about ordering or exclusion.
  if (grants.length < 2) return { valid: 'unknown', reason: `lock-history: only ${grants.length} grants`, summary };
  const anomalies: LockAnomaly[] = [];

  const byGrant = [...grants].sort((a, b) => a.grantRevision - b.grantRevision || a.token - b.token);
  for (let index = 1; index < byGrant.length; index++) {
    const before = byGrant[index - 1]!;
    const after = byGrant[index]!;
    if (after.token <= before.token || after.grantRevision === before.grantRevision) {
      anomalies.push({ kind: 'token-order', message: `${showGrant(after)} came after ${showGrant(before)} without a higher token and a later granting read` });
    }
  }

  const byRevision = [...accepted].sort((a, b) => a.revision - b.revision);
  for (let index = 1; index < byRevision.length; index++) {
    const before = byRevision[index - 1]!;
    const after = byRevision[index]!;
    if (after.token < before.token) {
      anomalies.push({
        kind: 'fence-order',
        message: `${after.worker}'s write with token ${after.token} was accepted at revision ${after.revision}, after ${before.worker}'s write with the newer token ${before.token} at revision ${before.revision}`,
      });
    }
  }

  const lived = grants.filter((grant) => grant.lived === true).sort((a, b) => a.startMs - b.startMs);
  let latest: LockGrant | undefined;
  for (const grant of lived) {
    if (latest !== undefined && grant.startMs < latest.endMs) {
      anomalies.push({
        kind: 'overlap',
        message: `${showGrant(grant)} began ${(latest.endMs - grant.startMs).toFixed(0)} ms before ${showGrant(latest)} ended, while both leases lived`,
      });
    }
    if (latest === undefined || grant.endMs > latest.endMs) latest = grant;
  }

  if (anomalies.length === 0) return { valid: true, summary };
  return { valid: false, explanation: explainAnomalies(anomalies.map((anomaly) => `${anomaly.kind}: ${anomaly.message}`)), summary, anomalies };
}
