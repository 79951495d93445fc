/**
 * The in-memory part of one group's Raft log (PersistentLogStorage): every retained entry's term,
 * and the entries themselves only for a suffix of the log bounded in bytes (the window). An entry
 * older than the window is read back from the engine (a synchronous point read) when the core
 * asks for it, which happens only for a follower that fell behind by more than the window.
 *
 * Before the window, the storage held every retained entry: up to snapshotEveryEntries plus
 * logEntriesKeptAfterSnapshot (3,000 by default) per partition, about 80 MB per node at 64
 * partitions under a steady write load (docs/performance.md, "Memory"). The window keeps the
 * entries the hot paths use (the leader's sends to followers that keep up, and apply) in memory.
 *
 * Invariants (checked by test/node/log-window.test.ts):
 * - terms[i] is the term of entry first + i, for every retained entry (first..last).
 * - entries is exactly the entries last - entries.length + 1 .. last (a suffix), and
 *   bytes === the sum of entryCost over entries.
 * - After every call, bytes <= maxBytes + the cost of the entries of the latest append: eviction
 *   never drops an entry appended by the current call, because the host writes those only after
 *   the call returns (raft-log-store.ts: one synced write per loop iteration, awaited before the
 *   next staging), so only entries of earlier calls are known to be readable from the engine.
 * What the window holds never changes what the core reads: an evicted entry reads back equal.
 */
import { AtollError } from '../../errors.js';
import { entryBytes, type Entry } from '../../raft/types.js';

/**
 * Heap cost of one entry besides its data bytes: the entry object, the Uint8Array object and its
 * separately allocated backing store (the estimate the version cache measured for a similar shape).
 */
export const entryOverheadBytes = 200;

export function entryCost(entry: Entry): number {
  return entry.data.length + entryOverheadBytes;
}

/** Reads one stored entry by index (undefined when the engine has none). */
export type ReadEntry = (index: number) => Entry | undefined;

export class LogWindow {
  private terms: number[] = [];
  private entries: Entry[] = [];
  private bytes = 0;

  /**
   * `first` is the index of the first retained entry (the truncated index + 1); `initial` the
   * retained entries, all already on disk. `maxBytes` Infinity keeps everything in memory (an
   * engine without synchronous reads).
   */
  constructor(
    private first: number,
    initial: readonly Entry[],
    private readonly maxBytes: number,
    private readonly read: ReadEntry,
  ) {
    if (!(maxBytes >= 0)) throw new RangeError('maxBytes must be a non-negative number');
    this.append(first, initial);
    this.evict(Number.POSITIVE_INFINITY);
  }

  /** Retained entries (last - first + 1). */
  get length(): number {
    return this.terms.length;
  }

  /** Bytes the window holds (entry data plus the estimated overhead per entry). */
  get memoryBytes(): number {
    return this.bytes;
  }

  /** Entries held in memory (a suffix of the retained log). */
  get heldEntries(): number {
    return this.entries.length;
  }

  /** The term of retained entry `index` (first <= index <= last; the caller checks). */
  termAt(index: number): number {
    return this.terms[index - this.first] as number;
  }

  /**
   * Entries [lo, hi) (retained; the caller checks), cut as limitBySize does: the first entry
   * always, then while the running size stays within maxBytes. Entries before the window are
   * read from the engine, and never more than the cut keeps.
   */
  slice(lo: number, hi: number, maxBytes: number): Entry[] {
    const windowFirst = this.first + this.terms.length - this.entries.length;
    const out: Entry[] = [];
    let total = 0;
    for (let index = lo; index < hi; index++) {
      const entry = index >= windowFirst ? (this.entries[index - windowFirst] as Entry) : this.readStored(index);
      total += entryBytes(entry);
      if (out.length > 0 && total > maxBytes) break;
      out.push(entry);
    }
    return out;
  }

  /**
   * Truncates the log after start - 1 and appends `entries` (indexes start...). Then evicts the
   * oldest entries of earlier appends while over the budget, down to three quarters of it, so
   * eviction runs in batches rather than on every append.
   */
  append(start: number, entries: readonly Entry[]): void {
    const keep = start - this.first;
    if (keep < this.terms.length) {
      const drop = this.terms.length - keep;
      this.terms.length = keep;
      const dropHeld = Math.min(drop, this.entries.length);
      for (let i = this.entries.length - dropHeld; i < this.entries.length; i++) this.bytes -= entryCost(this.entries[i] as Entry);
      this.entries.length -= dropHeld;
    }
    for (const entry of entries) {
      this.terms.push(entry.term);
      this.entries.push(entry);
      this.bytes += entryCost(entry);
    }
    this.evict(start);
  }

  /** Drops the entries up to and including `index` (compaction; first <= index + 1). */
  dropThrough(index: number): void {
    const drop = Math.min(index + 1 - this.first, this.terms.length);
    if (drop <= 0) return;
    const windowFirst = this.first + this.terms.length - this.entries.length;
    const dropHeld = Math.max(0, Math.min(index + 1 - windowFirst, this.entries.length));
    for (let i = 0; i < dropHeld; i++) this.bytes -= entryCost(this.entries[i] as Entry);
    this.entries.splice(0, dropHeld);
    this.terms.splice(0, drop);
    this.first += drop;
  }

  /** Forgets every entry: the log now starts after a snapshot at `first - 1`. */
  reset(first: number): void {
    this.terms = [];
    this.entries = [];
    this.bytes = 0;
    this.first = first;
  }

  /** Evicts entries below `before` from the front while over budget, down to 3/4 of it. */
  private evict(before: number): void {
    if (this.bytes <= this.maxBytes) return;
    const target = Math.floor(this.maxBytes * 0.75);
    let count = 0;
    while (count < this.entries.length && this.bytes > target) {
      const entry = this.entries[count] as Entry;
      if (entry.index >= before) break;
      this.bytes -= entryCost(entry);
      count++;
    }
    if (count > 0) this.entries.splice(0, count);
  }

  private readStored(index: number): Entry {
    const entry = this.read(index);
    // The entry was written before it left the window (see the invariants): missing means damage.
    if (entry === undefined || entry.index !== index || entry.term !== this.terms[index - this.first]) {
      throw new AtollError('INTERNAL', `raft log entry ${index} is not readable from storage as retained`, { index });
    }
    return entry;
  }
}
