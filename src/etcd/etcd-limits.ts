/**
 * The bounds of the etcd layer, with how they relate to Atoll's (src/limits.ts).
 */
import assert from 'node:assert/strict';
import { limits } from '../limits.js';

export const etcdLimits = Object.freeze({
  /** Keys one Range (or a transaction's ranges together) may read; etcd has no such bound, Atoll bounds every scan. */
  maxRangeKeys: 100_000,
  /** Operations per branch and compares per transaction: etcd's default --max-txn-ops. */
  maxTxnOps: 128,
  /** Attempts of a transaction that lost a conflict at commit (it re-reads and re-decides each time). */
  maxTxnAttempts: 16,
  /** Watches one Watch stream may hold at once. */
  maxWatchesPerStream: 1_000,
  /** Lease ids one LeaseLeases answer lists. */
  maxListedLeases: 10_000,
  /** The longest TTL a lease may have, in seconds (etcd's MaxLeaseTTL is 9,000,000,000 s; Atoll holds ms in a safe integer). */
  maxLeaseTtlSeconds: 9_000_000_000,
  /** Keep-alives one KeepAlive stream may have in flight. */
  maxKeepAlivesInFlight: 64,
});

assert(etcdLimits.maxTxnOps <= limits.maxTxnReadKeys, 'every compare of a transaction can be validated as a read key');
assert(etcdLimits.maxRangeKeys >= limits.maxPageSize, 'a Range reads at least one page');
assert(etcdLimits.maxLeaseTtlSeconds * 1000 <= Number.MAX_SAFE_INTEGER, 'lease TTLs in ms are safe integers');
