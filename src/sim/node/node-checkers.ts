/**
 * The checkers every seed runs over what the clients recorded and what the nodes hold: per-key
 * linearizability of acknowledged register operations and exactly-once counters (the chaos
 * suite's checkers), no acknowledged write lost (by the final reads after every crash healed),
 * at most one committed claim per round (SERIALIZABLE read-prefix validation), replicas' logical
 * state digests equal at equal applied index, every crashed node restarted, liveness, and the
 * isolation of the random transactions (checkTransactions).
 * Each failure names its checker and the invariant it broke.
 */
import { checkCounter, checkLinearizableRegister, headline } from '../../chaos/checkers/index.js';
import { pairOperations, type HistoryEvent, type Operation } from '../../chaos/history.js';
import { checkIsolation, type TxnRecord } from './isolation-checker.js';
import type { NodeFailure } from './sim-cluster.js';
import type { WorkloadKeys } from './workload.js';

export type CheckerName = 'restart' | 'linearizability' | 'counter' | 'no-lost-write' | 'serializable-claims' | 'digest' | 'liveness' | 'isolation' | 'membership' | 'split' | 'harness' | 'watch' | 'loop-liveness' | 'lease' | 'lock';

export interface CheckFailure {
  readonly checker: CheckerName;
  readonly invariant: string;
  readonly message: string;
}

/** Every history checker; the caller adds the cluster-state ones (digest, restart, liveness). */
export function checkHistory(events: readonly HistoryEvent[], keys: WorkloadKeys, finalReadOps: ReadonlySet<number>): CheckFailure[] {
  const failures: CheckFailure[] = [];
  const operations = pairOperations(events);
  const registerKeys = new Set(keys.registers);
  const counterKeys = new Set(keys.counters);
  const registerOps = operations.filter((op) => op.key !== undefined && registerKeys.has(op.key));
  const counterOps = operations.filter((op) => op.key !== undefined && counterKeys.has(op.key));

  // Invariant: every register key's ok operations fit one sequential register history, each at an
  // instant inside its own [invoke, complete] interval.
  const lin = checkLinearizableRegister(registerOps, { maxExploredStates: 300_000 });
  if (lin.valid === false) failures.push({ checker: 'linearizability', invariant: 'per-key-linearizable', message: `key ${lin.key}: ${headline(lin, 400)}` });

  // Invariant: an increment counts once if acknowledged, at most once if unknown, never if failed.
  const counter = checkCounter(counterOps, { requireFinalRead: false });
  if (counter.valid === false) failures.push({ checker: 'counter', invariant: 'exactly-once', message: headline(counter, 400) });

  failures.push(...checkNoLostWrite(registerOps, finalReadOps));
  return failures;
}

/**
 * No acknowledged write is lost: a key's final value (read once every node restarted and the
 * network healed) was written by some write W, and no acknowledged write of the key began after
 * W ended (that one would have had to win). Writes whose outcome is unknown may have landed at
 * any later time, so they are taken as ending never; for an absent final value, the latest-ending
 * delete (or the initial state) is W.
 */
export function checkNoLostWrite(registerOps: readonly Operation[], finalReadOps: ReadonlySet<number>): CheckFailure[] {
  const failures: CheckFailure[] = [];
  const byKey = new Map<string, Operation[]>();
  for (const op of registerOps) {
    const list = byKey.get(op.key as string) ?? [];
    list.push(op);
    byKey.set(op.key as string, list);
  }
  for (const [key, ops] of byKey) {
    const finals = ops.filter((op) => finalReadOps.has(op.op) && op.status === 'ok');
    const final = finals[finals.length - 1];
    if (final === undefined) continue;
    const value = final.output;
    const writtenValue = (op: Operation): unknown => (op.f === 'write' ? op.input : (op.input as { next: unknown }).next);
    const mayHaveWritten = (op: Operation): boolean =>
      (op.f === 'write' && (op.status === 'ok' || op.status === 'info')) || (op.f === 'cas' && (op.status === 'info' || (op.status === 'ok' && op.output === true)));
    const producers = ops.filter((op) => mayHaveWritten(op) && writtenValue(op) === value);
    // Not written by anyone: the linearizability checker reports that; there is nothing to order here.
    if (producers.length === 0 && value !== null) continue;
    const endOf = (op: Operation): number => (op.status === 'info' ? Infinity : op.completeMs);
    const producerEnd = producers.reduce((latest, op) => Math.max(latest, endOf(op)), -Infinity);
    const acknowledged = ops.filter((op) => op.status === 'ok' && ((op.f === 'write') || (op.f === 'cas' && op.output === true)));
    const lost = acknowledged.find((op) => op.invokeMs > producerEnd && writtenValue(op) !== value && op.completeMs < final.invokeMs);
    if (lost !== undefined) {
      failures.push({
        checker: 'no-lost-write',
        invariant: 'acknowledged-write-survives',
        message: `key ${key}: the final read saw ${JSON.stringify(value)}, but ${JSON.stringify(writtenValue(lost))} was acknowledged (op ${lost.op}, ${lost.invokeMs.toFixed(0)}-${lost.completeMs.toFixed(0)} ms) after that value's write ended (${producerEnd.toFixed(0)} ms)`,
      });
    }
  }
  return failures;
}

/** At most one claim per round commits (two would mean SERIALIZABLE missed a phantom in the read prefix). */
export function checkClaims(committed: ReadonlyMap<string, readonly number[]>, finalCounts: ReadonlyMap<string, number>): CheckFailure[] {
  const failures: CheckFailure[] = [];
  for (const [round, processes] of committed) {
    if (processes.length > 1) {
      failures.push({ checker: 'serializable-claims', invariant: 'one-claim-per-round', message: `round ${round}: ${processes.length} claims committed (clients ${processes.join(', ')})` });
    }
  }
  for (const [round, count] of finalCounts) {
    const alreadyReported = (committed.get(round)?.length ?? 0) > 1;
    if (count > 1 && !alreadyReported) {
      failures.push({ checker: 'serializable-claims', invariant: 'one-claim-per-round', message: `round ${round}: ${count} claims stored` });
    }
  }
  return failures;
}

export interface ReplicaDigest {
  readonly node: number;
  readonly partition: number;
  readonly appliedIndex: number;
  readonly digest: string;
}

/** Invariant: two replicas of a partition at the same applied index hold the same logical state. */
export function checkDigests(digests: readonly ReplicaDigest[]): CheckFailure[] {
  const failures: CheckFailure[] = [];
  const seen = new Map<string, ReplicaDigest>();
  for (const digest of digests) {
    const key = `${digest.partition}@${digest.appliedIndex}`;
    const other = seen.get(key);
    if (other === undefined) seen.set(key, digest);
    else if (other.digest !== digest.digest) {
      failures.push({
        checker: 'digest',
        invariant: 'equal-state-at-equal-index',
        message: `partition ${digest.partition} at applied index ${digest.appliedIndex}: node ${other.node} and node ${digest.node} hold different states (${other.digest.slice(0, 12)} vs ${digest.digest.slice(0, 12)})`,
      });
    }
  }
  return failures;
}

/** Invariant: every crash is followed by a restart that opens, and no node stops on a fatal error. */
export function checkRestarts(failures: readonly NodeFailure[]): CheckFailure[] {
  return failures.map((failure) => ({
    checker: 'restart' as const,
    invariant: failure.kind === 'open-failed' ? 'open-succeeds' : 'no-fatal-stop',
    message: `node ${failure.node} incarnation ${failure.incarnation} at ${failure.atMs.toFixed(0)} ms: ${failure.message.split('\n').slice(0, 3).join(' | ')}`,
  }));
}

/**
 * Invariant: the isolation transactions' history (every write of the isolation buckets) shows no
 * anomaly their isolation levels forbid (isolation-checker.ts): no G0/G1 cycle or G1a/G1b read,
 * no G-single under either level, no G2 cycle whose rw edges all leave SERIALIZABLE (or read-only)
 * transactions, no garbage, future or stale read, no first-committer-wins conflict missed.
 * Each anomaly becomes one failure named by its kind.
 */
export function checkTransactions(records: readonly TxnRecord[]): CheckFailure[] {
  const verdict = checkIsolation(records);
  const failures: CheckFailure[] = verdict.anomalies.map((anomaly) => ({ checker: 'isolation' as const, invariant: anomaly.kind, message: anomaly.message }));
  if (verdict.counts.unreported > 0 && failures.length > 0) {
    const last = failures[failures.length - 1]!;
    failures[failures.length - 1] = { ...last, message: `${last.message} (and ${verdict.counts.unreported} more anomalies not listed)` };
  }
  return failures;
}
