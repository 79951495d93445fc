/**
 * The transaction isolation checker: judges a history of transactions (what each read, wrote and
 * how it ended) against snapshot isolation and serializability, with a dependency-graph check over
 * read and write sets in the manner of Adya's thesis and Elle.
 *
 * Atoll gives every committed write a per-partition revision, so the version order of every key is
 * known: a key's versions are its committed writes ordered by revision, after the initial absent
 * version (revision 0). Reads name the version they saw by its modRevision and by its value, which
 * the workload makes unique per transaction so a value names its writer. From that:
 *
 * - ww: the writer of a key's version -> the writer of its next version;
 * - wr: the writer of the version a transaction read -> that reader;
 * - rw (anti-dependency): a reader -> the writer of the version after the one it read. A prefix
 *   read observes every key under the prefix (present ones at the version returned, the others
 *   absent), so a key that appeared under a scanned prefix gives a predicate rw edge (a phantom).
 *
 * Cycles are found per strongly connected component (Tarjan), then a shortest cycle per component
 * and class, searched from a bounded number of start nodes. Classes, most severe first: G0 (ww
 * only), G1c (ww and wr), G-single / G-nonadjacent (rw edges, no two of them adjacent: impossible
 * under snapshot isolation, Fekete et al. 2005), then G2-item / G2 (a cycle with adjacent rw edges,
 * G2 when one of its rw edges comes from a prefix read): allowed under SNAPSHOT, forbidden when
 * every rw edge of the cycle leaves a SERIALIZABLE or a read-only transaction (Atoll validates a
 * SERIALIZABLE commit's read set, and a read-only transaction is serialized at its snapshot, so
 * only an rw edge from a SNAPSHOT transaction that writes can close a cycle).
 *
 * Besides cycles: G1a (a read of an aborted write), G1b (a read of a value its writer replaced in
 * the same transaction), garbage reads (a value nobody wrote, or at a revision its writer did not
 * commit at), duplicate versions, and lost updates (two committed transactions that read the same
 * version of a key and both wrote it). Atoll's MVCC adds checks that need no cycle, because every
 * transaction has a snapshot revision and a commit revision: a read must return the newest known
 * version at or below its snapshot (future-read, stale-read), and first-committer-wins must have
 * aborted a transaction when another wrote a key it writes (write-conflict-missed), or for a
 * SERIALIZABLE one a key it read (read-conflict-missed), between its snapshot and its commit.
 *
 * Outcomes: a committed transaction is in the graph; an aborted one never is; an unknown one
 * (a commit whose answer was lost) is in it only if some read observed one of its writes, and its
 * commit revision is then the revision that read observed. Non-transactional writes (plain puts)
 * may appear as committed records with one write and snapshotRevision = commitRevision - 1.
 *
 * Record conventions: a record's reads are what the server returned (reads at the snapshot, never
 * the transaction's own buffered writes); a read of an absent key observed the newest absent
 * version (the initial one or a committed delete) at or below the snapshot revision; `writes` are
 * in order, and only the last write of a key reaches the server (earlier ones are intermediate).
 * A delete must remove a key that is present when it commits: Atoll stores no version for the
 * delete of an absent key (and a commit of only such deletes answers with the partition's current
 * revision, not a new one), so record such a delete as no write at all.
 */
import { AtollError } from '../../errors.js';

export type TxnIsolation = 'SNAPSHOT' | 'SERIALIZABLE';
export type TxnOutcome = 'committed' | 'aborted' | 'unknown';

/** One key read: the version observed, or its absence (modRevision and value undefined). */
export interface TxnRead {
  readonly key: string;
  readonly modRevision?: number;
  /** The value observed (UTF-8 text); it names the writer. */
  readonly value?: string;
}

export interface TxnPrefixItem {
  readonly key: string;
  readonly modRevision: number;
  readonly value?: string;
}

/** One prefix read: every key it returned. `prefix` is the raw key prefix (`bucket/`, not `bucket`). */
export interface TxnPrefixRead {
  readonly prefix: string;
  readonly items: readonly TxnPrefixItem[];
}

/** One write, in the order the transaction made it: a put of `value`, or a delete. */
export interface TxnWriteRecord {
  readonly key: string;
  readonly value?: string;
  readonly delete?: boolean;
}

export interface TxnRecord {
  readonly id: string;
  readonly isolation: TxnIsolation;
  readonly outcome: TxnOutcome;
  readonly partition: number;
  readonly snapshotRevision: number;
  readonly reads: readonly TxnRead[];
  readonly prefixReads: readonly TxnPrefixRead[];
  readonly writes: readonly TxnWriteRecord[];
  /** Set when committed with writes (a committed read-only transaction has none). */
  readonly commitRevision?: number;
  /** Why it aborted or its outcome is unknown, for people reading a failure. */
  readonly note?: string;
}

export type AnomalyKind =
  | 'G0'
  | 'G1a'
  | 'G1b'
  | 'G1c'
  | 'G-single'
  | 'G-nonadjacent'
  | 'G2-item'
  | 'G2'
  | 'lost-update'
  | 'garbage-read'
  | 'duplicate-version'
  | 'future-read'
  | 'stale-read'
  | 'write-conflict-missed'
  | 'read-conflict-missed'
  | 'invalid-revision';

export type EdgeKind = 'ww' | 'wr' | 'rw';

export interface DependencyEdge {
  readonly from: string;
  readonly to: string;
  readonly kind: EdgeKind;
  readonly key: string;
  /** Set on an rw edge that comes from a prefix read (a predicate anti-dependency). */
  readonly prefix?: string;
}

export interface Anomaly {
  readonly kind: AnomalyKind;
  readonly message: string;
  /** The transactions involved (for a cycle, in cycle order). */
  readonly transactions: readonly string[];
  /** For cycle anomalies: the edges, each one's `to` the next one's `from`, the last back to the first. */
  readonly cycle?: readonly DependencyEdge[];
}

export interface IsolationVerdict {
  /** No anomaly that the isolation levels of the transactions involved forbid. */
  readonly valid: boolean;
  /** The forbidden anomalies (at most maxAnomaliesPerKind of each kind). */
  readonly anomalies: readonly Anomaly[];
  /** Anomalies found that the levels involved allow (a SNAPSHOT write skew or phantom). */
  readonly allowed: readonly Anomaly[];
  /**
   * Whether some serial order of the committed (and observed unknown) transactions, keeping each
   * key's version order, explains every read they made: no cycle and none of G1a, G1b, garbage
   * reads or duplicate versions among them, whatever isolation they asked for. Revisions against
   * snapshots (future/stale reads, missed conflicts) do not enter it.
   */
  readonly serializable: boolean;
  readonly counts: {
    readonly committed: number;
    readonly aborted: number;
    readonly unknown: number;
    /** Unknown outcomes that some read proved committed. */
    readonly unknownIncluded: number;
    readonly edges: number;
    /** Anomalies found beyond the reported ones (per-kind cap). */
    readonly unreported: number;
  };
}

export interface IsolationCheckOptions {
  /** Records accepted (default 100,000). */
  readonly maxRecords?: number;
  /** BFS start nodes per strongly connected component when looking for a shortest cycle (default 32). */
  readonly maxCycleStarts?: number;
  /** Anomalies reported per kind (default 20); the rest are counted. */
  readonly maxAnomaliesPerKind?: number;
}

const defaultMaxRecords = 100_000;
const defaultMaxCycleStarts = 32;
const defaultMaxAnomaliesPerKind = 20;

/** A version of a key: the initial absent one (writer -1, revision 0) or a committed write. */
interface Version {
  readonly key: string;
  readonly revision: number;
  /** Index of the writing record; -1 for the initial version. */
  readonly writer: number;
  readonly deleted: boolean;
}

/** One observation a record made of a key: from a get, or from a prefix read (predicate). */
interface Observation {
  readonly key: string;
  readonly modRevision: number | undefined;
  readonly value: string | undefined;
  readonly prefix: string | undefined;
}

interface Edge {
  readonly to: number;
  readonly kind: EdgeKind;
  readonly key: string;
  readonly prefix: string | undefined;
}

/** What a value names: the record that wrote it to the key, and whether that write was its last to the key. */
interface WriterRef {
  readonly record: number;
  readonly final: boolean;
}

export function checkIsolation(records: readonly TxnRecord[], options: IsolationCheckOptions = {}): IsolationVerdict {
  const maxRecords = options.maxRecords ?? defaultMaxRecords;
  if (records.length > maxRecords) {
    throw new AtollError('INVALID_ARGUMENT', `the isolation checker takes at most ${maxRecords} records, got ${records.length}`);
  }
  return new HistoryCheck(records, options).run();
}

class HistoryCheck {
  private readonly maxCycleStarts: number;
  private readonly report: AnomalyReport;
  /** key -> value -> its writer. Invariant: a (key, value) pair names at most one record. */
  private readonly writerOfValue = new Map<string, Map<string, WriterRef>>();
  /** Per record: its last write of each key (the one that reaches the server). */
  private readonly finalWrites: Array<Map<string, TxnWriteRecord>> = [];
  /** Per record: its commit revision if it is in the graph (committed, or an observed unknown). */
  private readonly commitRevisionOf: Array<number | undefined> = [];
  private readonly included: boolean[] = [];
  /** key -> its versions in revision order, the initial absent version first. */
  private readonly versions = new Map<string, Version[]>();
  /** Each version's position in its key's list; and per key, its absent versions and its versions by writer. */
  private readonly positionOf = new Map<Version, number>();
  private readonly absentVersions = new Map<string, Version[]>();
  private readonly versionByWriter = new Map<string, Map<number, Version>>();
  /** Every key any record wrote or saw: the universe a prefix read ranges over. */
  private readonly universe = new Set<string>();
  /**
   * Keys written (and deleted) by unknown transactions no read proved committed: a version seen
   * there without a value, or an absence the known versions do not explain, may be theirs.
   */
  private readonly keysOfUnprovenWrites = new Set<string>();
  private readonly keysOfUnprovenDeletes = new Set<string>();
  private readonly adjacency: Edge[][] = [];
  private edgeCount = 0;
  private serializable = true;

  constructor(
    private readonly records: readonly TxnRecord[],
    options: IsolationCheckOptions,
  ) {
    this.maxCycleStarts = options.maxCycleStarts ?? defaultMaxCycleStarts;
    this.report = new AnomalyReport(options.maxAnomaliesPerKind ?? defaultMaxAnomaliesPerKind);
  }

  run(): IsolationVerdict {
    this.indexWrites();
    this.includeTransactions();
    this.buildVersions();
    for (let index = 0; index < this.records.length; index++) this.resolveReads(index);
    this.addWriteEdges();
    this.checkCommitValidation();
    this.searchCycles();
    const counts = {
      committed: this.records.filter((record) => record.outcome === 'committed').length,
      aborted: this.records.filter((record) => record.outcome === 'aborted').length,
      unknown: this.records.filter((record) => record.outcome === 'unknown').length,
      unknownIncluded: this.records.filter((record, index) => record.outcome === 'unknown' && this.included[index]).length,
      edges: this.edgeCount,
      unreported: this.report.unreported,
    };
    return {
      valid: this.report.forbidden.length === 0,
      anomalies: this.report.forbidden,
      allowed: this.report.allowed,
      serializable: this.serializable,
      counts,
    };
  }

  // ------------------------------------------------------------ indexing

  private indexWrites(): void {
    const ids = new Set<string>();
    this.records.forEach((record, index) => {
      if (ids.has(record.id)) throw new AtollError('INVALID_ARGUMENT', `two records have the id ${JSON.stringify(record.id)}`);
      ids.add(record.id);
      if (!Number.isSafeInteger(record.snapshotRevision) || record.snapshotRevision < 0) {
        throw new AtollError('INVALID_ARGUMENT', `record ${record.id}: snapshotRevision must be a non-negative integer`);
      }
      const finals = new Map<string, TxnWriteRecord>();
      for (const write of record.writes) finals.set(write.key, write);
      this.finalWrites.push(finals);
      for (const write of record.writes) {
        this.universe.add(write.key);
        if (write.delete === true) continue;
        if (write.value === undefined) throw new AtollError('INVALID_ARGUMENT', `record ${record.id}: a put of ${write.key} has no value`);
        let byValue = this.writerOfValue.get(write.key);
        if (byValue === undefined) this.writerOfValue.set(write.key, (byValue = new Map()));
        const existing = byValue.get(write.value);
        if (existing !== undefined && existing.record !== index) {
          throw new AtollError('INVALID_ARGUMENT', `records ${this.records[existing.record]!.id} and ${record.id} both write ${JSON.stringify(write.value)} to ${write.key}: values must name their writer`);
        }
        byValue.set(write.value, { record: index, final: finals.get(write.key) === write });
      }
      if (record.outcome === 'committed' && record.writes.length > 0 && record.commitRevision === undefined) {
        throw new AtollError('INVALID_ARGUMENT', `record ${record.id} committed writes without a commitRevision`);
      }
      for (const observation of observationsOf(record)) this.universe.add(observation.key);
    });
  }

  /**
   * Committed records are in the graph; an unknown one joins when a read observed its final value
   * of a key, at the revision that (first) read observed. A later read that saw it elsewhere is a
   * garbage read, found when reads are resolved.
   */
  private includeTransactions(): void {
    this.records.forEach((record) => {
      this.included.push(record.outcome === 'committed');
      this.commitRevisionOf.push(record.outcome === 'committed' ? record.commitRevision : undefined);
    });
    for (const record of this.records) {
      for (const observation of observationsOf(record)) {
        if (observation.value === undefined || observation.modRevision === undefined) continue;
        const writer = this.writerOfValue.get(observation.key)?.get(observation.value);
        if (writer === undefined || !writer.final || this.records[writer.record]!.outcome !== 'unknown') continue;
        if (this.included[writer.record]) continue;
        this.included[writer.record] = true;
        this.commitRevisionOf[writer.record] = observation.modRevision;
      }
    }
    this.records.forEach((record, index) => {
      if (record.outcome !== 'unknown' || this.included[index]) return;
      for (const [key, write] of this.finalWrites[index]!) {
        this.keysOfUnprovenWrites.add(key);
        if (write.delete === true) this.keysOfUnprovenDeletes.add(key);
      }
    });
  }

  private buildVersions(): void {
    for (const key of this.universe) this.versions.set(key, [{ key, revision: 0, writer: -1, deleted: true }]);
    this.records.forEach((record, index) => {
      this.adjacency.push([]);
      const revision = this.commitRevisionOf[index];
      if (!this.included[index] || revision === undefined) return;
      if (revision <= record.snapshotRevision) {
        this.report.add(false, {
          kind: 'invalid-revision',
          message: `${record.id} committed at revision ${revision}, not after its snapshot revision ${record.snapshotRevision}`,
          transactions: [record.id],
        });
      }
      for (const write of this.finalWrites[index]!.values()) {
        this.versions.get(write.key)!.push({ key: write.key, revision, writer: index, deleted: write.delete === true });
      }
    });
    for (const [key, list] of this.versions) {
      // Stable sort: equal revisions keep record order (a duplicate is reported just below).
      list.sort((a, b) => a.revision - b.revision);
      list.forEach((version, position) => this.positionOf.set(version, position));
      this.absentVersions.set(key, list.filter((version) => version.deleted));
      this.versionByWriter.set(key, new Map(list.filter((version) => version.writer >= 0).map((version) => [version.writer, version])));
      for (let i = 1; i < list.length; i++) {
        if (list[i]!.revision !== list[i - 1]!.revision) continue;
        this.serializable = false;
        const writers = [list[i - 1]!, list[i]!].map((version) => (version.writer < 0 ? '(initial)' : this.records[version.writer]!.id));
        this.report.add(false, {
          kind: 'duplicate-version',
          message: `${writers.join(' and ')} both installed a version of ${key} at revision ${list[i]!.revision}`,
          transactions: writers,
        });
      }
    }
  }

  // ------------------------------------------------------------ reads

  /** Maps each observation of a record to a version, checks it, and adds wr and rw edges. */
  private resolveReads(index: number): void {
    const record = this.records[index]!;
    const inGraph = this.included[index]!;
    const readersOfKey = new Map<string, Version>();
    for (const observation of this.expandedObservations(index)) {
      const version = this.observedVersion(index, observation);
      if (version === undefined) continue;
      this.checkAgainstSnapshot(record, observation, version);
      if (!inGraph) continue;
      readersOfKey.set(observation.key, version);
      if (version.writer === index) {
        this.serializable = false;
        this.report.add(false, {
          kind: 'G1c',
          message: `${record.id} read its own write of ${observation.key} from the server (a one-transaction cycle)`,
          transactions: [record.id],
          cycle: [{ from: record.id, to: record.id, kind: 'wr', key: observation.key }],
        });
      } else if (version.writer >= 0) {
        this.addEdge(version.writer, { to: index, kind: 'wr', key: observation.key, prefix: undefined });
      }
      const next = this.nextVersion(version);
      if (next !== undefined && next.writer !== index) {
        this.addEdge(index, { to: next.writer, kind: 'rw', key: observation.key, prefix: observation.prefix });
      }
    }
    if (inGraph) this.lostUpdates.push({ reader: index, observed: readersOfKey });
  }

  /** Reads, then every prefix read as one observation per key of the universe under its prefix. */
  private *expandedObservations(index: number): Generator<Observation> {
    const record = this.records[index]!;
    for (const read of record.reads) yield { key: read.key, modRevision: read.modRevision, value: read.value, prefix: undefined };
    for (const prefixRead of record.prefixReads) {
      const seen = new Set<string>();
      for (const item of prefixRead.items) {
        if (!item.key.startsWith(prefixRead.prefix) || seen.has(item.key)) {
          this.garbage(index, `its read of prefix ${prefixRead.prefix} returned ${item.key} ${seen.has(item.key) ? 'twice' : 'which is outside it'}`);
          continue;
        }
        seen.add(item.key);
        yield { key: item.key, modRevision: item.modRevision, value: item.value, prefix: prefixRead.prefix };
      }
      for (const key of this.universe) {
        if (key.startsWith(prefixRead.prefix) && !seen.has(key)) yield { key, modRevision: undefined, value: undefined, prefix: prefixRead.prefix };
      }
    }
  }

  /** The version an observation saw, or undefined when it is unusable (reported) or ambiguous. */
  private observedVersion(index: number, observation: Observation): Version | undefined {
    const record = this.records[index]!;
    const list = this.versions.get(observation.key)!;
    if (observation.modRevision === undefined) {
      // Absent: the newest absent version at or below the snapshot (see the record conventions).
      const absent = this.absentVersions.get(observation.key)!;
      const chosen = absent[Math.max(0, firstAbove(absent, record.snapshotRevision) - 1)]!;
      const next = this.nextVersion(chosen);
      // A present version at or below the snapshot, after the chosen absence: a stale read, unless
      // an unknown delete no read could prove (a delete has no value) explains the absence.
      if (next !== undefined && next.revision <= record.snapshotRevision && this.keysOfUnprovenDeletes.has(observation.key)) return undefined;
      return chosen;
    }
    if (observation.value === undefined) {
      let version: Version | undefined;
      for (let at = firstAbove(list, observation.modRevision - 1); at < list.length && list[at]!.revision === observation.modRevision; at++) {
        if (!list[at]!.deleted) version = list[at];
      }
      if (version !== undefined) return version;
      // An unknown transaction no read proved committed may have written it: nothing to conclude.
      if (!this.keysOfUnprovenWrites.has(observation.key)) this.garbage(index, `it saw ${observation.key} at revision ${observation.modRevision}, a version no transaction wrote`);
      return undefined;
    }
    const writer = this.writerOfValue.get(observation.key)?.get(observation.value);
    if (writer === undefined) {
      this.garbage(index, `it saw ${observation.key} = ${JSON.stringify(observation.value)}, a value no transaction wrote`);
      return undefined;
    }
    const writerRecord = this.records[writer.record]!;
    if (writerRecord.outcome === 'aborted') {
      this.readAnomaly(index, 'G1a', `${record.id} read ${observation.key} = ${JSON.stringify(observation.value)} written by ${writerRecord.id}, which aborted`, writer.record);
      return undefined;
    }
    if (!writer.final) {
      this.readAnomaly(index, 'G1b', `${record.id} read ${observation.key} = ${JSON.stringify(observation.value)}, an intermediate value ${writerRecord.id} overwrote before it committed`, writer.record);
      return undefined;
    }
    const version = this.versionByWriter.get(observation.key)!.get(writer.record);
    if (version === undefined || version.revision !== observation.modRevision) {
      this.garbage(
        index,
        `it saw ${observation.key} = ${JSON.stringify(observation.value)} at revision ${observation.modRevision}, but ${writerRecord.id} ${version === undefined ? 'is not known to have committed it' : `committed it at revision ${version.revision}`}`,
        writer.record,
      );
      return undefined;
    }
    return version;
  }

  /** Reads are served at the snapshot revision: the newest version at or below it, never a later one. */
  private checkAgainstSnapshot(record: TxnRecord, observation: Observation, version: Version): void {
    const snapshot = record.snapshotRevision;
    const name = (v: Version): string => (v.writer < 0 ? 'the initial version' : `${this.records[v.writer]!.id}'s version (revision ${v.revision})`);
    const writers = (v: Version): string[] => (v.writer < 0 ? [record.id] : [record.id, this.records[v.writer]!.id]);
    if (version.revision > snapshot) {
      this.report.add(false, {
        kind: 'future-read',
        message: `${record.id} (snapshot ${snapshot}) read ${observation.key} at ${name(version)}, committed after its snapshot`,
        transactions: writers(version),
      });
      return;
    }
    const next = this.nextVersion(version);
    if (next !== undefined && next.revision <= snapshot) {
      this.report.add(false, {
        kind: 'stale-read',
        message: `${record.id} (snapshot ${snapshot}) read ${observation.key} at ${name(version)}, but ${name(next)} is at or below its snapshot`,
        transactions: writers(next),
      });
    }
  }

  private nextVersion(version: Version): Version | undefined {
    return this.versions.get(version.key)![this.positionOf.get(version)! + 1];
  }

  private garbage(index: number, what: string, writer?: number): void {
    const record = this.records[index]!;
    if (this.included[index]) this.serializable = false;
    this.report.add(false, {
      kind: 'garbage-read',
      message: `${record.id}: ${what}`,
      transactions: writer === undefined ? [record.id] : [record.id, this.records[writer]!.id],
    });
  }

  private readAnomaly(reader: number, kind: 'G1a' | 'G1b', message: string, writer: number): void {
    if (this.included[reader]) this.serializable = false;
    this.report.add(false, { kind, message, transactions: [this.records[reader]!.id, this.records[writer]!.id] });
  }

  // ------------------------------------------------------------ edges and revision checks

  /** Per reader in the graph: the version it observed of each key (for lost updates). */
  private readonly lostUpdates: Array<{ reader: number; observed: Map<string, Version> }> = [];

  private addEdge(from: number, edge: Edge): void {
    const list = this.adjacency[from]!;
    // One edge per (target, kind, predicate-or-not) is enough for cycles; keep the first key.
    if (list.some((e) => e.to === edge.to && e.kind === edge.kind && (e.prefix === undefined) === (edge.prefix === undefined))) return;
    list.push(edge);
    this.edgeCount++;
  }

  /** ww edges between consecutive versions, and lost updates: two writers that read the same version. */
  private addWriteEdges(): void {
    for (const list of this.versions.values()) {
      for (let i = 1; i + 1 < list.length; i++) {
        const from = list[i]!.writer;
        const to = list[i + 1]!.writer;
        if (from !== to) this.addEdge(from, { to, kind: 'ww', key: list[i]!.key, prefix: undefined });
      }
    }
    const byVersion = new Map<Version, number[]>();
    for (const { reader, observed } of this.lostUpdates) {
      for (const [key, version] of observed) {
        if (!this.finalWrites[reader]!.has(key)) continue;
        const writers = byVersion.get(version) ?? [];
        writers.push(reader);
        byVersion.set(version, writers);
      }
    }
    for (const [version, writers] of byVersion) {
      if (writers.length < 2) continue;
      this.serializable = false;
      const ids = writers.map((writer) => this.records[writer]!.id);
      this.report.add(false, {
        kind: 'lost-update',
        message: `${ids.join(', ')} all read the same version of ${version.key} (revision ${version.revision}) and all wrote it`,
        transactions: ids,
      });
    }
  }

  /**
   * First committer wins: a transaction that committed at R with snapshot S saw no other version,
   * between S and R, of a key it writes (either level) or, under SERIALIZABLE, of a key it read or
   * a key under a prefix it read.
   */
  private checkCommitValidation(): void {
    this.records.forEach((record, index) => {
      const commit = this.commitRevisionOf[index];
      if (!this.included[index] || commit === undefined) return;
      const between = (key: string): Version | undefined => {
        const list = this.versions.get(key)!;
        for (let at = firstAbove(list, record.snapshotRevision); at < list.length && list[at]!.revision < commit; at++) {
          if (list[at]!.writer !== index) return list[at];
        }
        return undefined;
      };
      for (const key of this.finalWrites[index]!.keys()) {
        const other = between(key);
        if (other !== undefined) this.missedConflict('write-conflict-missed', index, key, other);
      }
      if (record.isolation !== 'SERIALIZABLE') return;
      const readKeys = new Set(record.reads.map((read) => read.key));
      for (const prefixRead of record.prefixReads) for (const key of this.universe) if (key.startsWith(prefixRead.prefix)) readKeys.add(key);
      for (const key of readKeys) {
        const other = between(key);
        if (other !== undefined) this.missedConflict('read-conflict-missed', index, key, other);
      }
    });
  }

  private missedConflict(kind: 'write-conflict-missed' | 'read-conflict-missed', index: number, key: string, other: Version): void {
    const record = this.records[index]!;
    const otherId = this.records[other.writer]!.id;
    this.report.add(false, {
      kind,
      message: `${record.id} (${record.isolation}, snapshot ${record.snapshotRevision}) committed at ${this.commitRevisionOf[index]} although ${otherId} wrote ${key}, which it ${kind === 'write-conflict-missed' ? 'writes' : 'read'}, at revision ${other.revision} in between`,
      transactions: [record.id, otherId],
    });
  }

  // ------------------------------------------------------------ cycles

  private searchCycles(): void {
    const nodes = [...this.adjacency.keys()].filter((index) => this.included[index]);
    const components = stronglyConnected(nodes, (node) => this.adjacency[node]!.map((edge) => edge.to));
    for (const component of components) {
      if (component.length < 2) continue;
      this.serializable = false;
      this.classifyComponent(new Set(component));
    }
  }

  /** Reports the most severe cycle class one strongly connected component holds. */
  private classifyComponent(members: ReadonlySet<number>): void {
    const only = (kinds: readonly EdgeKind[]) => (from: number) =>
      this.adjacency[from]!.filter((edge) => members.has(edge.to) && kinds.includes(edge.kind)).map((edge) => ({ to: edge.to, edge: { from, ...edge } }));
    const g0 = this.shortestCycle([...members], only(['ww']));
    if (g0 !== undefined) return this.reportCycle('G0', g0, true);
    const g1c = this.shortestCycle([...members], only(['ww', 'wr']));
    if (g1c !== undefined) return this.reportCycle('G1c', g1c, true);
    // States (transaction, whether the edge into it was rw): a closed walk never takes rw twice in a row.
    const nonAdjacent = this.shortestCycle(
      [...members].flatMap((node) => [node * 2, node * 2 + 1]),
      (state) => {
        const from = state >> 1;
        const afterRw = (state & 1) === 1;
        return this.adjacency[from]!
          .filter((edge) => members.has(edge.to) && !(afterRw && edge.kind === 'rw'))
          .map((edge) => ({ to: edge.to * 2 + (edge.kind === 'rw' ? 1 : 0), edge: { from, ...edge } }));
      },
    );
    if (nonAdjacent !== undefined) {
      const rwCount = nonAdjacent.filter((edge) => edge.kind === 'rw').length;
      return this.reportCycle(rwCount === 1 ? 'G-single' : 'G-nonadjacent', nonAdjacent, true);
    }
    const serializableReaders = this.shortestCycle([...members], (from) =>
      this.adjacency[from]!
        .filter((edge) => members.has(edge.to) && (edge.kind !== 'rw' || this.readsValidated(from)))
        .map((edge) => ({ to: edge.to, edge: { from, ...edge } })),
    );
    if (serializableReaders !== undefined) return this.reportCycle(g2Kind(serializableReaders), serializableReaders, true);
    const any = this.shortestCycle([...members], only(['ww', 'wr', 'rw']));
    if (any !== undefined) this.reportCycle(g2Kind(any), any, false);
  }

  /**
   * Whether a transaction's anti-dependencies all point forward in commit order: a SERIALIZABLE
   * one's read set is validated at its commit, and a read-only one is serialized at its snapshot.
   * Only a SNAPSHOT transaction that writes can have an rw edge pointing back, and every cycle in a
   * history of correct snapshot reads and first-committer-wins commits needs one.
   */
  private readsValidated(index: number): boolean {
    return this.records[index]!.isolation === 'SERIALIZABLE' || this.finalWrites[index]!.size === 0;
  }

  /**
   * A shortest cycle among `states` following `successors`, or undefined: strongly connected
   * components first, then a BFS back to the start from up to maxCycleStarts states of each.
   */
  private shortestCycle(states: number[], successors: (state: number) => Array<{ to: number; edge: Edge & { from: number } }>): Array<Edge & { from: number }> | undefined {
    const allowed = new Set(states);
    const next = (state: number) => successors(state).filter((step) => allowed.has(step.to));
    let best: Array<Edge & { from: number }> | undefined;
    for (const component of stronglyConnected(states, (state) => next(state).map((step) => step.to))) {
      const inComponent = new Set(component);
      const selfLoop = component.length === 1 && next(component[0]!).some((step) => step.to === component[0]);
      if (component.length < 2 && !selfLoop) continue;
      for (const start of component.slice(0, this.maxCycleStarts)) {
        const cycle = bfsCycle(start, (state) => next(state).filter((step) => inComponent.has(step.to)));
        if (cycle !== undefined && (best === undefined || cycle.length < best.length)) best = cycle;
      }
    }
    return best;
  }

  private reportCycle(kind: AnomalyKind, cycle: Array<Edge & { from: number }>, forbidden: boolean): void {
    const id = (index: number): string => this.records[index]!.id;
    const edges: DependencyEdge[] = cycle.map((edge) => ({
      from: id(edge.from),
      to: id(edge.to),
      kind: edge.kind,
      key: edge.key,
      ...(edge.kind === 'rw' && edge.prefix !== undefined ? { prefix: edge.prefix } : {}),
    }));
    const text = edges.map((edge) => `${edge.from} -${edge.kind}(${edge.prefix !== undefined ? `prefix ${edge.prefix}: ` : ''}${edge.key})-> `).join('') + edges[0]!.from;
    this.report.add(!forbidden, {
      kind,
      message: `${describeKind(kind)}: ${text}`,
      transactions: edges.map((edge) => edge.from),
      cycle: edges,
    });
  }
}

/** The position of the first version above `revision` in a list sorted by revision (binary search). */
function firstAbove(list: readonly Version[], revision: number): number {
  let low = 0;
  let high = list.length;
  while (low < high) {
    const middle = (low + high) >> 1;
    if (list[middle]!.revision <= revision) low = middle + 1;
    else high = middle;
  }
  return low;
}

function g2Kind(cycle: ReadonlyArray<Edge>): 'G2' | 'G2-item' {
  return cycle.some((edge) => edge.kind === 'rw' && edge.prefix !== undefined) ? 'G2' : 'G2-item';
}

function describeKind(kind: AnomalyKind): string {
  switch (kind) {
    case 'G0':
      return 'write cycle';
    case 'G1c':
      return 'circular information flow';
    case 'G-single':
      return 'read skew (a cycle with one anti-dependency)';
    case 'G-nonadjacent':
      return 'a cycle whose anti-dependencies are never adjacent';
    case 'G2-item':
      return 'write skew (anti-dependency cycle)';
    case 'G2':
      return 'phantom (anti-dependency cycle through a prefix read)';
    default:
      return kind;
  }
}

function observationsOf(record: TxnRecord): Observation[] {
  return [
    ...record.reads.map((read) => ({ key: read.key, modRevision: read.modRevision, value: read.value, prefix: undefined })),
    ...record.prefixReads.flatMap((prefixRead) =>
      prefixRead.items.map((item) => ({ key: item.key, modRevision: item.modRevision, value: item.value, prefix: prefixRead.prefix })),
    ),
  ];
}

class AnomalyReport {
  readonly forbidden: Anomaly[] = [];
  readonly allowed: Anomaly[] = [];
  unreported = 0;
  private readonly perKind = new Map<string, number>();

  constructor(private readonly maxPerKind: number) {}

  add(allowed: boolean, anomaly: Anomaly): void {
    const slot = `${allowed}:${anomaly.kind}`;
    const count = this.perKind.get(slot) ?? 0;
    this.perKind.set(slot, count + 1);
    if (count >= this.maxPerKind) {
      this.unreported++;
      return;
    }
    (allowed ? this.allowed : this.forbidden).push(anomaly);
  }
}

/**
 * Tarjan's strongly connected components, iterative (histories can be long enough to overflow a
 * recursive one). Returns components in reverse topological order.
 */
export function stronglyConnected(nodes: readonly number[], successors: (node: number) => readonly number[]): number[][] {
  const index = new Map<number, number>();
  const low = new Map<number, number>();
  const onStack = new Set<number>();
  const stack: number[] = [];
  const components: number[][] = [];
  let counter = 0;
  const allowed = new Set(nodes);
  for (const root of nodes) {
    if (index.has(root)) continue;
    const work: Array<{ node: number; next: readonly number[]; position: number }> = [];
    const visit = (node: number): void => {
      index.set(node, counter);
      low.set(node, counter);
      counter++;
      stack.push(node);
      onStack.add(node);
      work.push({ node, next: successors(node).filter((to) => allowed.has(to)), position: 0 });
    };
    visit(root);
    while (work.length > 0) {
      const frame = work[work.length - 1]!;
      if (frame.position < frame.next.length) {
        const to = frame.next[frame.position++]!;
        if (!index.has(to)) visit(to);
        else if (onStack.has(to)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(to)!));
        continue;
      }
      work.pop();
      const parent = work[work.length - 1];
      if (parent !== undefined) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!));
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: number[] = [];
        let member: number;
        do {
          member = stack.pop()!;
          onStack.delete(member);
          component.push(member);
        } while (member !== frame.node);
        components.push(component);
      }
    }
  }
  return components;
}

/** The shortest path of steps from `start` back to `start` (BFS), or undefined. */
function bfsCycle<E>(start: number, next: (state: number) => Array<{ to: number; edge: E }>): E[] | undefined {
  const parent = new Map<number, { from: number; edge: E }>();
  const queue: number[] = [start];
  for (let head = 0; head < queue.length; head++) {
    const state = queue[head]!;
    for (const step of next(state)) {
      if (step.to === start) {
        const edges: E[] = [step.edge];
        for (let at = state; at !== start; at = parent.get(at)!.from) edges.push(parent.get(at)!.edge);
        return edges.reverse();
      }
      if (parent.has(step.to)) continue;
      parent.set(step.to, { from: state, edge: step.edge });
      queue.push(step.to);
    }
  }
  return undefined;
}
