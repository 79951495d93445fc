import assert from 'node:assert/strict';
import { isRaftError } from './errors.js';
import { limitBySize, type LogStorage } from './storage.js';
import type { Entry, Snapshot } from './types.js';

/**
 * Entries and a snapshot the core holds before the host has made them stable. `offset` is the index
 * of entries[0]. Invariant: if snapshot is set, offset === snapshot.meta.index + 1.
 */
class Unstable {
  snapshot: Snapshot | undefined = undefined;
  entries: Entry[] = [];
  offset: number;

  constructor(offset: number) {
    this.offset = offset;
  }

  maybeFirstIndex(): number | undefined {
    return this.snapshot ? this.snapshot.meta.index + 1 : undefined;
  }

  maybeLastIndex(): number | undefined {
    if (this.entries.length > 0) return this.offset + this.entries.length - 1;
    return this.snapshot ? this.snapshot.meta.index : undefined;
  }

  maybeTerm(index: number): number | undefined {
    if (index < this.offset) {
      return this.snapshot && this.snapshot.meta.index === index ? this.snapshot.meta.term : undefined;
    }
    const last = this.maybeLastIndex();
    if (last === undefined || index > last) return undefined;
    return (this.entries[index - this.offset] as Entry).term;
  }

  stableTo(index: number, term: number): void {
    const current = this.maybeTerm(index);
    // Only drop entries that are exactly what the host persisted; a newer leader may have replaced them.
    if (current === term && index >= this.offset) {
      this.entries = this.entries.slice(index + 1 - this.offset);
      this.offset = index + 1;
    }
  }

  stableSnapshotTo(index: number): void {
    if (this.snapshot && this.snapshot.meta.index === index) this.snapshot = undefined;
  }

  restore(snapshot: Snapshot): void {
    this.offset = snapshot.meta.index + 1;
    this.entries = [];
    this.snapshot = snapshot;
  }

  truncateAndAppend(entries: readonly Entry[]): void {
    const after = (entries[0] as Entry).index;
    if (after === this.offset + this.entries.length) {
      for (const entry of entries) this.entries.push(entry);
    } else if (after <= this.offset) {
      // Replaces everything unstable; the host will truncate its stable log when persisting.
      this.offset = after;
      this.entries = entries.slice();
    } else {
      this.entries = this.entries.slice(0, after - this.offset).concat(entries);
    }
  }

  slice(lo: number, hi: number): Entry[] {
    if (!(lo >= this.offset && hi <= this.offset + this.entries.length)) assert.fail(`unstable slice [${lo},${hi}) out of range`);
    return this.entries.slice(lo - this.offset, hi - this.offset);
  }
}

/**
 * The Raft log: stable storage plus the unstable tail.
 * Invariants: applied <= committed <= lastIndex(); committed entries are never truncated.
 */
export class RaftLog {
  readonly storage: LogStorage;
  readonly unstable: Unstable;
  committed: number;
  applied: number;

  constructor(storage: LogStorage) {
    this.storage = storage;
    const first = storage.firstIndex();
    this.unstable = new Unstable(storage.lastIndex() + 1);
    this.committed = first - 1;
    this.applied = first - 1;
  }

  firstIndex(): number {
    return this.unstable.maybeFirstIndex() ?? this.storage.firstIndex();
  }

  lastIndex(): number {
    return this.unstable.maybeLastIndex() ?? this.storage.lastIndex();
  }

  lastTerm(): number {
    const term = this.maybeTerm(this.lastIndex());
    assert.ok(term !== undefined, 'term of the last index must be known');
    return term;
  }

  /** The term at `index`, or undefined when it is compacted or beyond the log. */
  maybeTerm(index: number): number | undefined {
    const dummy = this.firstIndex() - 1;
    if (index < dummy || index > this.lastIndex()) return undefined;
    const unstable = this.unstable.maybeTerm(index);
    if (unstable !== undefined) return unstable;
    try {
      return this.storage.term(index);
    } catch (error) {
      if (isRaftError(error, 'COMPACTED') || isRaftError(error, 'UNAVAILABLE')) return undefined;
      throw error;
    }
  }

  matchTerm(index: number, term: number): boolean {
    return this.maybeTerm(index) === term;
  }

  /** Raft §5.4.1: a candidate's log is at least as up to date as ours. */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /**
   * Follower side of AppendEntries (Raft §5.3). Returns the last new index, or undefined when the
   * entry at `index` does not have `logTerm` (the leader must back off).
   */
  maybeAppend(index: number, logTerm: number, committed: number, entries: readonly Entry[]): number | undefined {
    if (!this.matchTerm(index, logTerm)) return undefined;
    const lastNew = index + entries.length;
    const conflict = this.findConflict(entries);
    if (conflict !== 0) {
      if (!(conflict > this.committed)) assert.fail(`entry ${conflict} conflicts with committed ${this.committed}`);
      this.append(entries.slice(conflict - (index + 1)));
    }
    this.commitTo(Math.min(committed, lastNew));
    return lastNew;
  }

  append(entries: readonly Entry[]): number {
    if (entries.length === 0) return this.lastIndex();
    const after = (entries[0] as Entry).index - 1;
    if (!(after >= this.committed)) assert.fail(`append after ${after} would overwrite committed ${this.committed}`);
    this.unstable.truncateAndAppend(entries);
    return this.lastIndex();
  }

  /** Index of the first entry whose term differs from ours (or that we lack); 0 if none. */
  findConflict(entries: readonly Entry[]): number {
    for (const entry of entries) {
      if (!this.matchTerm(entry.index, entry.term)) return entry.index;
    }
    return 0;
  }

  /**
   * The largest index <= `index` whose term is <= `term`, with that term: lets a leader skip a whole
   * conflicting term per round trip instead of one entry (Raft §5.3, the optimisation in the text).
   */
  findConflictByTerm(index: number, term: number): { index: number; term: number } {
    let at = Math.min(index, this.lastIndex());
    for (;;) {
      const ourTerm = this.maybeTerm(at);
      if (ourTerm === undefined) return { index: at, term: 0 };
      if (ourTerm <= term) return { index: at, term: ourTerm };
      at--;
    }
  }

  commitTo(index: number): void {
    if (index <= this.committed) return;
    if (!(index <= this.lastIndex())) assert.fail(`commit ${index} beyond last index ${this.lastIndex()}`);
    this.committed = index;
  }

  appliedTo(index: number): void {
    if (index === 0) return;
    if (!(index <= this.committed && index >= this.applied)) assert.fail(`applied ${index} outside [${this.applied}, ${this.committed}]`);
    this.applied = index;
  }

  stableTo(index: number, term: number): void {
    this.unstable.stableTo(index, term);
  }

  stableSnapshotTo(index: number): void {
    this.unstable.stableSnapshotTo(index);
  }

  unstableEntries(): Entry[] {
    return this.unstable.entries.slice();
  }

  hasNextCommittedEntries(): boolean {
    if (this.unstable.snapshot) return false;
    return this.committed > Math.max(this.applied, this.firstIndex() - 1);
  }

  nextCommittedEntries(maxBytes: number): Entry[] {
    if (!this.hasNextCommittedEntries()) return [];
    const lo = Math.max(this.applied + 1, this.firstIndex());
    return this.slice(lo, this.committed + 1, maxBytes);
  }

  /** Entries from `lo` to the end, bounded by bytes. Throws COMPACTED when lo is below firstIndex. */
  entriesFrom(lo: number, maxBytes: number): Entry[] {
    if (lo > this.lastIndex()) return [];
    return this.slice(lo, this.lastIndex() + 1, maxBytes);
  }

  /** Entries in [lo, hi) from storage and the unstable tail. Throws COMPACTED below firstIndex. */
  slice(lo: number, hi: number, maxBytes: number): Entry[] {
    if (!(lo <= hi)) assert.fail(`slice lo ${lo} > hi ${hi}`);
    if (lo === hi) return [];
    if (!(hi <= this.lastIndex() + 1)) assert.fail(`slice hi ${hi} beyond last ${this.lastIndex()}`);
    let result: Entry[] = [];
    const unstableStart = this.unstable.offset;
    if (lo < unstableStart) {
      result = this.storage.entries(lo, Math.min(hi, unstableStart), maxBytes);
      // Storage stopped early for size: do not add unstable entries after a gap.
      if (result.length < Math.min(hi, unstableStart) - lo) return result;
    }
    if (hi > unstableStart) {
      const tail = this.unstable.slice(Math.max(lo, unstableStart), hi);
      result = result.length > 0 ? result.concat(tail) : tail;
    }
    return limitBySize(result, maxBytes);
  }

  /** Installs a snapshot from the leader (the host persists it from the next Ready). */
  restore(snapshot: Snapshot): void {
    this.committed = snapshot.meta.index;
    this.unstable.restore(snapshot);
  }
}
