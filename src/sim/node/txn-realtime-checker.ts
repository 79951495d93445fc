/**
 * The isolation checker's real-time rule (issue 32), which isolation-checker.ts cannot see: it
 * orders versions by revision alone, and a transaction that reads a sibling partition's key at its
 * own snapshot revision (NodeTestBugs.txnScopeByInitialTable: the revision numbers of two
 * partitions a split made are unrelated) reads a version that is consistent with those numbers and
 * yet old.
 *
 * Invariant isolation/realtime-stale-read: a transaction's snapshot is a linearizable read of its
 * partition's revision taken after its begin was invoked, so every transaction whose commit was
 * acknowledged before that begin and wrote a key the transaction then read (a point read or a key
 * a prefix read returned) is visible to it: the version read is at or after that commit's revision.
 * Keys a split moved away after the begin, or a merge brought in, are refused (TXN_CONFLICT,
 * OUTSIDE_TRANSACTION), so they are never read; a transaction whose begin failed read nothing.
 *
 * Invariant isolation/clear-error (checkClearErrors): a transaction that fails, whether or not a
 * split or merge came between its begin and its reads or commit, fails with a stable error code
 * other than INTERNAL (TXN_CONFLICT, OUTSIDE_TRANSACTION, PARTITION_MOVED, UNAVAILABLE, ...), or
 * because the simulated network lost the call (the simulator's own "did not answer" and "died
 * before answering"); never with a bare error or an internal one.
 */
import type { CheckFailure } from './node-checkers.js';
import type { TxnRecord } from './isolation-checker.js';
import type { TxnTimes } from './txn-span.js';


export function checkRealTimeSnapshots(records: readonly TxnRecord[], times: ReadonlyMap<string, TxnTimes>): CheckFailure[] {
  // Per key: the acknowledged commits that wrote it, by the time their answer came.
  const writers = new Map<string, Array<{ id: string; revision: number; completeMs: number }>>();
  for (const record of records) {
    const at = times.get(record.id);
    if (record.outcome !== 'committed' || record.commitRevision === undefined || at === undefined) continue;
    for (const write of record.writes) {
      const list = writers.get(write.key) ?? [];
      list.push({ id: record.id, revision: record.commitRevision, completeMs: at.completeMs });
      writers.set(write.key, list);
    }
  }
  for (const record of records) {
    const at = times.get(record.id);
    if (at === undefined || record.partition < 0) continue;
    const observed = [
      ...record.reads.filter((read) => read.modRevision !== undefined).map((read) => ({ key: read.key, modRevision: read.modRevision as number })),
      ...record.prefixReads.flatMap((read) => read.items.map((item) => ({ key: item.key, modRevision: item.modRevision }))),
    ];
    for (const { key, modRevision } of observed) {
      const missed = (writers.get(key) ?? []).find((w) => w.id !== record.id && w.completeMs < at.beginInvokeMs && w.revision > modRevision);
      if (missed !== undefined) {
        return [
          {
            checker: 'isolation',
            invariant: 'realtime-stale-read',
            message: `transaction ${record.id} (partition ${record.partition}, snapshot ${record.snapshotRevision}, begun at ${at.beginInvokeMs.toFixed(1)} ms) read ${key} at revision ${modRevision}, but ${missed.id} had written it at revision ${missed.revision} and was acknowledged at ${missed.completeMs.toFixed(1)} ms, before the begin`,
          },
        ];
      }
    }
  }
  return [];
}

/** The failures the simulator's clients make up themselves (workload.ts call and rawCall): a lost call, a node down. */
const SIM_CALL_LOST = /^(node \d+ (did not answer|died before answering|refused the connection)|no answer|the node died before answering|connection refused)/;

export function checkClearErrors(records: readonly TxnRecord[]): CheckFailure[] {
  for (const record of records) {
    if (record.outcome === 'committed' || record.note === undefined) continue;
    const failed = /^(begin|read|commit) failed: (.*)$/s.exec(record.note);
    if (failed === undefined || failed === null) continue;
    const text = failed[2] as string;
    const code = /^([A-Z][A-Z_]+)[ :(]/.exec(text)?.[1];
    if (SIM_CALL_LOST.test(text) || (code !== undefined && code !== 'INTERNAL')) continue;
    return [{ checker: 'isolation', invariant: 'clear-error', message: `transaction ${record.id} (partition ${record.partition}, snapshot ${record.snapshotRevision}) ${record.outcome}: ${record.note.slice(0, 300)}` }];
  }
  return [];
}
