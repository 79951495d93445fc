/**
 * A second, independent judge of serializability for small histories, to cross-check the graph
 * checker (src/sim/node/isolation-checker.ts): a history is serializable when some serial order of
 * its committed transactions (and of the unknown ones a read proved committed), keeping each key's
 * version order (writers of a key in increasing commit revision), explains every read they made.
 * Found by backtracking over orders: exponential, so only for a handful of transactions.
 *
 * It shares only the record conventions with the checker (documented there): an unknown
 * transaction joins when a read first observed its final value of a key, at that read's revision;
 * an absent read observed the newest absent version (initial or a delete) at or below its snapshot,
 * and proves nothing when a present version lies between that one and the snapshot while an
 * unknown transaction no read proved committed deletes the key (its delete may explain it).
 */
import type { TxnRecord } from '../../src/sim/node/isolation-checker.js';

interface State {
  /** Index of the writer, -1 for the initial version. */
  readonly writer: number;
  readonly revision: number;
  readonly deleted: boolean;
  readonly value: string | undefined;
}

const initial: State = { writer: -1, revision: 0, deleted: true, value: undefined };
const maxTransactions = 8;

export function bruteForceSerializable(records: readonly TxnRecord[]): boolean {
  const revisionOf = new Map<number, number | undefined>();
  records.forEach((record, index) => {
    if (record.outcome === 'committed') revisionOf.set(index, record.commitRevision);
  });
  // Unknown outcomes seen by some read, in record order (gets, then prefix items).
  for (const record of records) {
    const seen = [...record.reads, ...record.prefixReads.flatMap((prefixRead) => prefixRead.items)];
    for (const observation of seen) {
      if (observation.value === undefined || observation.modRevision === undefined) continue;
      records.forEach((writer, index) => {
        if (writer.outcome !== 'unknown' || revisionOf.has(index)) return;
        const last = lastWrites(writer).get(observation.key);
        if (last !== undefined && last.delete !== true && last.value === observation.value) revisionOf.set(index, observation.modRevision);
      });
    }
  }
  const members = [...revisionOf.keys()];
  if (members.length > maxTransactions) throw new Error(`brute force takes at most ${maxTransactions} transactions`);
  const keys = new Set<string>();
  for (const record of records) {
    for (const write of record.writes) keys.add(write.key);
    for (const read of record.reads) keys.add(read.key);
    for (const prefixRead of record.prefixReads) for (const item of prefixRead.items) keys.add(item.key);
  }
  /** The absent version a record's absent read saw: the newest member delete at or below its snapshot. */
  const absentSeen = (record: TxnRecord, key: string): number => {
    let writer = -1;
    let revision = 0;
    for (const member of members) {
      const last = lastWrites(records[member]!).get(key);
      const at = revisionOf.get(member)!;
      if (last?.delete === true && at <= record.snapshotRevision && at > revision) {
        writer = member;
        revision = at;
      }
    }
    return writer;
  };

  /** Keys an unknown transaction that no read proved committed deletes. */
  const unprovenDeletes = new Set<string>();
  records.forEach((record, index) => {
    if (record.outcome !== 'unknown' || revisionOf.has(index)) return;
    for (const [key, write] of lastWrites(record)) if (write.delete === true) unprovenDeletes.add(key);
  });
  /** An absence that member versions do not explain (a present one lies between it and the snapshot) but such a delete may. */
  const unexplainedAbsence = (record: TxnRecord, key: string): boolean => {
    if (!unprovenDeletes.has(key)) return false;
    const absentWriter = absentSeen(record, key);
    const absentRevision = absentWriter < 0 ? 0 : revisionOf.get(absentWriter)!;
    return members.some((member) => {
      const at = revisionOf.get(member)!;
      return lastWrites(records[member]!).has(key) && at > absentRevision && at <= record.snapshotRevision;
    });
  };

  const explains = (record: TxnRecord, self: number, state: ReadonlyMap<string, State>): boolean => {
    const matches = (key: string, modRevision: number | undefined, value: string | undefined): boolean => {
      const current = state.get(key) ?? initial;
      if (current.writer === self) return false;
      if (modRevision === undefined) return (current.deleted && current.writer === absentSeen(record, key)) || unexplainedAbsence(record, key);
      return !current.deleted && current.revision === modRevision && (value === undefined || current.value === value);
    };
    for (const read of record.reads) if (!matches(read.key, read.modRevision, read.value)) return false;
    for (const prefixRead of record.prefixReads) {
      const listed = new Set<string>();
      for (const item of prefixRead.items) {
        if (!item.key.startsWith(prefixRead.prefix) || listed.has(item.key)) return false;
        listed.add(item.key);
        if (!matches(item.key, item.modRevision, item.value)) return false;
      }
      for (const key of keys) if (key.startsWith(prefixRead.prefix) && !listed.has(key) && !matches(key, undefined, undefined)) return false;
    }
    return true;
  };

  const placed = new Set<number>();
  const search = (state: ReadonlyMap<string, State>): boolean => {
    if (placed.size === members.length) return true;
    for (const member of members) {
      if (placed.has(member)) continue;
      const record = records[member]!;
      if (!explains(record, member, state)) continue;
      const revision = revisionOf.get(member);
      const next = new Map(state);
      let ordered = true;
      for (const write of lastWrites(record).values()) {
        // Version order: a key's writers follow one another in increasing revision.
        if (revision === undefined || revision <= (state.get(write.key) ?? initial).revision) ordered = false;
        next.set(write.key, { writer: member, revision: revision ?? 0, deleted: write.delete === true, value: write.value });
      }
      if (!ordered) continue;
      placed.add(member);
      if (search(next)) return true;
      placed.delete(member);
    }
    return false;
  };
  return search(new Map());
}

function lastWrites(record: TxnRecord): Map<string, TxnRecord['writes'][number]> {
  const last = new Map<string, TxnRecord['writes'][number]>();
  for (const write of record.writes) last.set(write.key, write);
  return last;
}
