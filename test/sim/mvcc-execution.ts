/**
 * A model of Atoll's transactions for testing the isolation checker without a cluster: concurrent
 * transactions over one partition's MVCC versions, each reading at its snapshot revision and
 * committing with first-committer-wins (the write set, and under SERIALIZABLE the read set and
 * prefixes), recorded as TxnRecords the way the workload records them. `skipValidation` plants a
 * bug: that share of commits skips the first-committer-wins check; `skipPrefixValidation` another:
 * SERIALIZABLE commits do not check the prefixes they read.
 */
import { Rng } from '../../src/raft/rng.js';
import type { TxnIsolation, TxnPrefixRead, TxnRead, TxnRecord, TxnWriteRecord } from '../../src/sim/node/isolation-checker.js';

export interface ExecutionOptions {
  readonly transactions: number;
  readonly keys: readonly string[];
  readonly prefixes: readonly string[];
  /** Most transactions open at once. */
  readonly maxOpen: number;
  /** Share of commits that skip first-committer-wins (a planted bug); 0 for a correct store. */
  readonly skipValidation: number;
  /** Share of outcomes whose answer is lost (recorded as unknown). */
  readonly lostAnswers: number;
  /** A planted bug: SERIALIZABLE commits check the keys they read but not their prefixes. */
  readonly skipPrefixValidation?: boolean;
}

interface Version {
  readonly revision: number;
  /** Undefined for a tombstone. */
  readonly value: string | undefined;
}

interface Open {
  readonly id: string;
  readonly isolation: TxnIsolation;
  readonly snapshot: number;
  readonly reads: TxnRead[];
  readonly prefixReads: TxnPrefixRead[];
  readonly writes: TxnWriteRecord[];
}

export function simulateExecution(seed: number, options: ExecutionOptions): TxnRecord[] {
  const rng = new Rng(seed);
  const versions = new Map<string, Version[]>(options.keys.map((key) => [key, []]));
  let revision = 0;
  const at = (key: string, snapshot: number): Version | undefined => {
    const list = versions.get(key)!;
    for (let i = list.length - 1; i >= 0; i--) if (list[i]!.revision <= snapshot) return list[i];
    return undefined;
  };
  const records: TxnRecord[] = [];
  const open: Open[] = [];
  let begun = 0;
  // Bounded: every step begins or ends one transaction.
  for (let step = 0; step < 2 * options.transactions && (begun < options.transactions || open.length > 0); step++) {
    if (begun < options.transactions && (open.length === 0 || (open.length < options.maxOpen && rng.chance(0.5)))) {
      open.push(begin(`T${begun++}`));
      continue;
    }
    const txn = open.splice(rng.int(open.length), 1)[0]!;
    records.push(commit(txn));
  }
  return records;

  function begin(id: string): Open {
    const snapshot = revision;
    const isolation: TxnIsolation = rng.chance(0.5) ? 'SERIALIZABLE' : 'SNAPSHOT';
    const reads: TxnRead[] = options.keys
      .filter(() => rng.chance(0.4))
      .map((key) => {
        const version = at(key, snapshot);
        return version?.value === undefined ? { key } : { key, modRevision: version.revision, value: version.value };
      });
    const prefixReads: TxnPrefixRead[] = [];
    if (rng.chance(0.3)) {
      const prefix = rng.pick(options.prefixes);
      const items = options.keys.flatMap((key) => {
        const version = at(key, snapshot);
        return key.startsWith(prefix) && version?.value !== undefined ? [{ key, modRevision: version.revision, value: version.value }] : [];
      });
      prefixReads.push({ prefix, items });
    }
    const writes: TxnWriteRecord[] = [];
    for (const key of options.keys) {
      if (!rng.chance(0.3)) continue;
      if (rng.chance(0.1)) writes.push({ key, value: `${id}~first` });
      // A delete only of a key present at the snapshot (Atoll stores nothing for an absent one).
      writes.push(rng.chance(0.15) && at(key, snapshot)?.value !== undefined ? { key, delete: true } : { key, value: id });
    }
    return { id, isolation, snapshot, reads, prefixReads, writes };
  }

  function commit(txn: Open): TxnRecord {
    const finals = new Map(txn.writes.map((write) => [write.key, write]));
    const base = { id: txn.id, isolation: txn.isolation, partition: 0, snapshotRevision: txn.snapshot, reads: txn.reads, prefixReads: txn.prefixReads, writes: txn.writes };
    const lost = rng.chance(options.lostAnswers);
    if (finals.size === 0) return { ...base, outcome: 'committed' };
    const checked = new Set(finals.keys());
    if (txn.isolation === 'SERIALIZABLE') {
      for (const read of txn.reads) checked.add(read.key);
      if (options.skipPrefixValidation !== true) {
        for (const prefixRead of txn.prefixReads) for (const key of options.keys) if (key.startsWith(prefixRead.prefix)) checked.add(key);
      }
    }
    const conflict = [...checked].some((key) => (at(key, revision)?.revision ?? 0) > txn.snapshot);
    if (conflict && !rng.chance(options.skipValidation)) return { ...base, outcome: lost ? 'unknown' : 'aborted' };
    revision++;
    for (const [key, write] of finals) versions.get(key)!.push({ revision, value: write.delete === true ? undefined : write.value });
    return lost ? { ...base, outcome: 'unknown' } : { ...base, outcome: 'committed', commitRevision: revision };
  }
}
