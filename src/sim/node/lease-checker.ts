/**
 * The checkers of the simulator's leases and locks (lease-workload.ts, lock-workload.ts).
 *
 * Which clock ends a lease. Not the partition's replicated time (the entry times, max(wall clock,
 * appliedTimeMs), which decide key TTLs in apply): a lease's deadline is kept by the partition's
 * leader on its MONOTONIC clock (lease-keeper.ts): now + ttl when it first sees the lease in its
 * term, moved to now + ttl by each keepalive it acknowledges after a ReadIndex round; once it
 * passes, the leader proposes the `leaseRevoke` entry. A simulated node's monotonic clock runs at
 * 1 + drift of true (virtual) time, |drift| <= MAX_CLOCK_DRIFT, so ttl on any leader's clock lasts
 * at least ttl / (1 + MAX_CLOCK_DRIFT) of virtual time, whichever leader counts it. Skew of the
 * wall clocks does not enter.
 *
 * Leases (checkLeases):
 * - lease/no-early-expiry: a lease's keys are never gone before ttl / (1 + MAX_CLOCK_DRIFT) after
 *   the INVOKE of its last acknowledged keepalive (or grant), unless the client revoked it: a
 *   linearizable get of an attached key (its Put with the lease acknowledged before the get began)
 *   that answers "not found" must complete no earlier than that. Invoke, not answer: the leader
 *   restarts the deadline somewhere inside the call. Any acknowledged keepalive counts, even one
 *   that answered after the get: a keepalive is acknowledged only while the lease exists after a
 *   ReadIndex round, so an acknowledgement after the keys were gone is itself the violation.
 * - lease/keys-gone-after-revoke: a get invoked after an acknowledged revoke answered does not
 *   find the lease's keys.
 * - lease/keys-gone-at-end: once the faults stopped and nothing is kept alive, every key ever put
 *   with a lease is gone and every lease answers LEASE_NOT_FOUND, within a bound (finish()).
 *
 * Locks (checkLocks), in fencing order (a holder's token is its waiter key's create revision):
 * - lock/fence-order: in the guarded key's applied history (the acknowledged fenced writes, ordered
 *   by the revision each applied at), tokens never decrease: a fenced write with an older token
 *   never applies after a newer one.
 * - lock/one-holder: no two holders at once. (a) A fenced write of the holder with token b applied
 *   at a revision before the waiter key of an older waiter (token a < b) was deleted (the revision
 *   its acknowledged revoke answered): at that revision the older key still existed, so b could not
 *   hold the lock. (b) A holder's fenced write was refused FENCED (a newer token wrote the key)
 *   although its lease was proven alive after the refusal (a keepalive acknowledged that was
 *   invoked after the refusal answered): the newer holder wrote while this one still held.
 */
import type { CheckFailure } from './node-checkers.js';
import type { SimLeaseRecord } from './lease-workload.js';
import type { LockHoldRecord } from './lock-workload.js';
import { MAX_CLOCK_DRIFT } from './sim-host.js';

export function checkLeases(leases: readonly SimLeaseRecord[], finalProblems: readonly string[]): CheckFailure[] {
  const failures: CheckFailure[] = [];
  for (const lease of leases) {
    const acked = [lease.grant.invokeMs, ...lease.keepAlives.filter((k) => k.outcome === 'ok').map((k) => k.invokeMs)];
    const lastAckInvoke = Math.max(...acked);
    const earliestEnd = lastAckInvoke + lease.ttlMs / (1 + MAX_CLOCK_DRIFT);
    const revokeInvoked = lease.revoke?.invokeMs ?? Infinity;
    const revokeAcked = lease.revoke?.outcome === 'ok' ? lease.revoke.completeMs : Infinity;
    for (const read of lease.reads) {
      const attached = lease.keys.find((k) => k.key === read.key && k.put.outcome === 'ok');
      if (!read.found && attached !== undefined && attached.put.completeMs <= read.invokeMs && read.completeMs < revokeInvoked && read.completeMs < earliestEnd) {
        failures.push({
          checker: 'lease',
          invariant: 'no-early-expiry',
          message: `lease ${lease.lease} (ttl ${lease.ttlMs} ms): its key ${read.key} was gone by ${read.completeMs.toFixed(1)} ms (get ${read.invokeMs.toFixed(1)}-${read.completeMs.toFixed(1)}), but a keepalive (or the grant) invoked at ${lastAckInvoke.toFixed(1)} ms was acknowledged, so it may not end before ${earliestEnd.toFixed(1)} ms`,
        });
        break;
      }
      if (read.found && read.invokeMs > revokeAcked) {
        failures.push({ checker: 'lease', invariant: 'keys-gone-after-revoke', message: `lease ${lease.lease}: its key ${read.key} was found by a get invoked at ${read.invokeMs.toFixed(1)} ms, after its revoke was acknowledged at ${revokeAcked.toFixed(1)} ms` });
        break;
      }
    }
  }
  for (const problem of finalProblems) failures.push({ checker: 'lease', invariant: 'keys-gone-at-end', message: problem });
  return failures;
}

export function checkLocks(holds: readonly LockHoldRecord[]): CheckFailure[] {
  const failures: CheckFailure[] = [];
  // Fence order in the guarded key's applied history.
  const applied = holds.flatMap((hold) => hold.writes.filter((w) => w.outcome === 'ok' && w.revision !== undefined).map((w) => ({ ...w, client: hold.client }))).sort((x, y) => (x.revision as number) - (y.revision as number));
  for (let i = 1; i < applied.length; i++) {
    const before = applied[i - 1]!;
    const after = applied[i]!;
    if (after.token < before.token) {
      failures.push({ checker: 'lock', invariant: 'fence-order', message: `the fenced write of token ${after.token} (client ${after.client}) applied at revision ${after.revision} after the one of token ${before.token} at revision ${before.revision}` });
      break;
    }
  }
  // (a) A holder's write applied while an older waiter's key still existed.
  const deleted = holds.filter((h) => h.revoke?.outcome === 'ok' && h.revoke.revision !== undefined && h.revoke.revision > 0);
  outer: for (const hold of holds) {
    for (const write of hold.writes) {
      if (write.outcome !== 'ok' || write.revision === undefined) continue;
      for (const older of deleted) {
        if (older.token < hold.token && (older.revoke!.revision as number) > write.revision) {
          failures.push({
            checker: 'lock',
            invariant: 'one-holder',
            message: `the holder with token ${hold.token} (client ${hold.client}, granted by the read at revision ${hold.grantRevision}) wrote the guarded key at revision ${write.revision}, while the waiter key of token ${older.token} (client ${older.client}) still existed: its revoke deleted it at revision ${older.revoke!.revision}`,
          });
          break outer;
        }
      }
    }
  }
  // (b) A holder refused FENCED while its lease lived.
  for (const hold of holds) {
    const refused = hold.writes.find((w) => w.fenced);
    if (refused === undefined) continue;
    const alive = hold.keepAlives.find((k) => k.outcome === 'ok' && k.invokeMs >= refused.completeMs);
    if (alive !== undefined) {
      failures.push({
        checker: 'lock',
        invariant: 'one-holder',
        message: `the holder with token ${hold.token} (client ${hold.client}) was refused FENCED at ${refused.completeMs.toFixed(1)} ms, so a newer token wrote the guarded key, yet its lease lived on (a keepalive invoked at ${alive.invokeMs.toFixed(1)} ms was acknowledged)`,
      });
      break;
    }
  }
  return failures;
}
