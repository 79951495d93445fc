import assert from 'node:assert/strict';
import { RaftError } from './errors.js';
import {
  EMPTY_HARD_STATE,
  type ConfState,
  type Entry,
  type HardState,
  type Snapshot,
  EntryType,
  entryBytes,
} from './types.js';

/**
 * The log as the Raft core sees it: read-only. The host writes it (after each Ready) through its own
 * implementation's methods; the core only reads what has been made stable.
 *
 * Indexes: entries live in [firstIndex(), lastIndex()]. `term(firstIndex() - 1)` must still answer
 * (it is the term of the last compacted entry, at or below the snapshot), everything below it is COMPACTED and
 * everything above lastIndex() is UNAVAILABLE.
 */
export interface LogStorage {
  initialState(): { hardState: HardState; confState: ConfState };
  /** Entries in [lo, hi), at least one if any exist, then as many as fit in maxBytes. */
  entries(lo: number, hi: number, maxBytes: number): Entry[];
  term(index: number): number;
  firstIndex(): number;
  lastIndex(): number;
  /** The most recent snapshot; throws SNAPSHOT_TEMPORARILY_UNAVAILABLE while one is being built. */
  snapshot(): Snapshot;
}

export function limitBySize(entries: Entry[], maxBytes: number): Entry[] {
  if (entries.length === 0) return entries;
  let total = entryBytes(entries[0] as Entry);
  let count = 1;
  for (; count < entries.length; count++) {
    total += entryBytes(entries[count] as Entry);
    if (total > maxBytes) break;
  }
  return count === entries.length ? entries : entries.slice(0, count);
}

/**
 * In-memory LogStorage for tests and the simulator. Layout (as in etcd's MemoryStorage): `ents[0]`
 * is a dummy entry holding the snapshot's index and term, so term(firstIndex - 1) always answers.
 */
export class MemoryLogStorage implements LogStorage {
  private hardState: HardState = EMPTY_HARD_STATE;
  private snap: Snapshot;
  // Invariant: ents.length >= 1; ents[i].index === ents[0].index + i.
  private ents: Entry[];

  constructor(confState: ConfState = { voters: [], learners: [] }) {
    this.snap = { meta: { index: 0, term: 0, confState }, data: new Uint8Array(0) };
    this.ents = [{ index: 0, term: 0, type: EntryType.Normal, data: new Uint8Array(0) }];
  }

  initialState(): { hardState: HardState; confState: ConfState } {
    return { hardState: this.hardState, confState: this.snap.meta.confState };
  }

  entries(lo: number, hi: number, maxBytes: number): Entry[] {
    const offset = this.offset();
    if (lo <= offset) throw new RaftError('COMPACTED', `index ${lo} is compacted (first ${offset + 1})`);
    if (hi > this.lastIndex() + 1) {
      throw new RaftError('UNAVAILABLE', `entries up to ${hi - 1} requested, last is ${this.lastIndex()}`);
    }
    if (hi <= lo) return [];
    return limitBySize(this.ents.slice(lo - offset, hi - offset), maxBytes);
  }

  term(index: number): number {
    const offset = this.offset();
    if (index < offset) throw new RaftError('COMPACTED', `index ${index} is compacted`);
    if (index - offset >= this.ents.length) throw new RaftError('UNAVAILABLE', `index ${index} is not in the log`);
    return (this.ents[index - offset] as Entry).term;
  }

  firstIndex(): number {
    return this.offset() + 1;
  }

  lastIndex(): number {
    return this.offset() + this.ents.length - 1;
  }

  snapshot(): Snapshot {
    return this.snap;
  }

  // ---- Host-side mutators (never called by the core) ----

  /**
   * Starts a brand-new group: a snapshot at index 1, term 1 that holds the initial membership and
   * the state machine's empty state. Every founding member bootstraps identically; a node that
   * joins later starts empty and receives this (or a later) snapshot, so it learns the membership.
   */
  bootstrap(confState: ConfState, data: Uint8Array): void {
    assert.ok(this.lastIndex() === 0, 'bootstrap needs an empty log');
    this.applySnapshot({ meta: { index: 1, term: 1, confState }, data });
    this.hardState = { term: 1, vote: 0, commit: 1 };
  }

  setHardState(hardState: HardState): void {
    this.hardState = hardState;
  }

  /** Replaces the whole log with a snapshot received from the leader. */
  applySnapshot(snapshot: Snapshot): void {
    if (snapshot.meta.index <= this.snap.meta.index) return;
    this.snap = snapshot;
    this.ents = [{ index: snapshot.meta.index, term: snapshot.meta.term, type: EntryType.Normal, data: new Uint8Array(0) }];
  }

  /** Records a snapshot of the state machine at `index` (which must be applied) for sending to followers. */
  createSnapshot(index: number, confState: ConfState, data: Uint8Array): Snapshot {
    assert.ok(index > this.snap.meta.index || index === this.snap.meta.index, 'snapshot index went back');
    if (!(index <= this.lastIndex())) assert.fail(`snapshot index ${index} beyond last index ${this.lastIndex()}`);
    this.snap = { meta: { index, term: this.term(index), confState }, data };
    return this.snap;
  }

  /** Drops entries up to and including `index`, which must be covered by the snapshot. */
  compact(index: number): void {
    const offset = this.offset();
    if (index <= offset) return;
    if (!(index <= this.snap.meta.index)) assert.fail(`compact(${index}) beyond snapshot ${this.snap.meta.index}`);
    const kept = this.ents.slice(index - offset);
    this.ents = kept;
  }

  /** Appends entries, truncating any conflicting suffix first (Raft §5.3). */
  append(entries: readonly Entry[]): void {
    if (entries.length === 0) return;
    const first = (entries[0] as Entry).index;
    const offset = this.offset();
    // Entries already folded into the snapshot are skipped.
    const usable = first <= offset ? entries.slice(offset + 1 - first) : entries;
    if (usable.length === 0) return;
    const start = (usable[0] as Entry).index;
    if (!(start <= this.lastIndex() + 1)) assert.fail(`gap in log: appending ${start} after ${this.lastIndex()}`);
    // Truncate a conflicting suffix in place, then push: appending stays O(new entries).
    this.ents.length = start - offset;
    for (const entry of usable) this.ents.push(entry);
  }

  private offset(): number {
    return (this.ents[0] as Entry).index;
  }
}
