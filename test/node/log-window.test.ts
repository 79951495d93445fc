import { describe, expect, it } from 'vitest';
import { LogWindow, entryCost } from '../../src/node/raftlog/log-window.js';
import { Rng } from '../../src/raft/rng.js';
import { EntryType, type Entry } from '../../src/raft/types.js';

function entry(index: number, term: number, size: number): Entry {
  return { index, term, type: EntryType.Normal, data: new Uint8Array(size).fill(index & 0xff) };
}

/**
 * The host's side of the contract: a call's entries reach the "disk" only after the call returns
 * (the loop's synced write), so a window that evicted an entry of the current call would fail to
 * read it back here.
 */
class Host {
  readonly disk = new Map<number, Entry>();
  /** The reference log: every retained entry, in memory. */
  log: Entry[] = [];
  first = 1;
  readonly window: LogWindow;

  constructor(maxBytes: number) {
    this.window = new LogWindow(1, [], maxBytes, (index) => this.disk.get(index));
  }

  append(start: number, entries: Entry[]): void {
    this.window.append(start, entries);
    this.log.length = start - this.first;
    this.log.push(...entries);
    for (const e of entries) this.disk.set(e.index, e);
  }

  dropThrough(index: number): void {
    this.window.dropThrough(index);
    this.log = this.log.slice(index + 1 - this.first);
    this.first = index + 1;
  }

  get last(): number {
    return this.first + this.log.length - 1;
  }
}

describe('LogWindow', () => {
  it('keeps at most its byte budget (plus the latest append) under a long synthetic load, and reads back what it evicted', () => {
    const maxBytes = 64 * 1024;
    const host = new Host(maxBytes);
    const rng = new Rng(7);
    let term = 1;
    let peak = 0;
    for (let round = 0; round < 3_000; round++) {
      const roll = rng.int(100);
      if (roll < 3 && host.log.length > 10) {
        // A conflicting suffix: truncate somewhere in the retained log (often before the window).
        term++;
        const start = host.first + 1 + rng.int(host.log.length - 1);
        host.append(start, [entry(start, term, 50 + rng.int(300))]);
        continue;
      }
      if (roll < 6 && host.log.length > 100) {
        host.dropThrough(host.first + rng.int(host.log.length - 50));
        continue;
      }
      const count = 1 + rng.int(8);
      const start = host.last + 1;
      const batch = Array.from({ length: count }, (_, i) => entry(start + i, term, 50 + rng.int(300)));
      host.append(start, batch);
      // The bound: the budget, plus the entries of the call that just returned (not yet on disk).
      const latest = batch.reduce((sum, e) => sum + entryCost(e), 0);
      expect(host.window.memoryBytes).toBeLessThanOrEqual(maxBytes + latest);
      peak = Math.max(peak, host.window.memoryBytes);
      // Invariant: the terms of every retained entry, the log as the reference holds it.
      expect(host.window.length).toBe(host.log.length);
      if (round % 50 === 0) {
        const lo = host.first + rng.int(host.log.length);
        const got = host.window.slice(lo, host.last + 1, Number.MAX_SAFE_INTEGER);
        expect(got).toEqual(host.log.slice(lo - host.first));
        for (let i = lo; i <= host.last; i++) expect(host.window.termAt(i)).toBe(host.log[i - host.first]?.term);
      }
    }
    // The load is far larger than the budget (so the bound did something) and the window did fill.
    expect(host.disk.size * 250).toBeGreaterThan(10 * maxBytes);
    expect(peak).toBeGreaterThan(maxBytes / 2);
  });

  it('cuts a slice by size like limitBySize, reading no more evicted entries than it returns', () => {
    let reads = 0;
    const disk = new Map<number, Entry>();
    const window = new LogWindow(1, [], 0, (index) => {
      reads++;
      return disk.get(index);
    });
    for (let index = 1; index <= 100; index++) {
      const e = entry(index, 1, 100);
      window.append(index, [e]);
      disk.set(index, e);
    }
    expect(window.heldEntries).toBe(1);
    const got = window.slice(1, 101, 400);
    // entryBytes counts the data plus a small header: three 100-byte entries fit in 400, four do not.
    expect(got.map((e) => e.index)).toEqual([1, 2, 3]);
    expect(reads).toBeLessThanOrEqual(4);
    // At least one entry, however small the limit.
    expect(window.slice(5, 101, 0).map((e) => e.index)).toEqual([5]);
  });

  it('refuses to hand out an evicted entry the engine does not hold', () => {
    const window = new LogWindow(1, [entry(1, 1, 10), entry(2, 1, 10)], 0, () => undefined);
    expect(() => window.slice(1, 2, 1_000)).toThrow(/not readable/);
  });

  it('keeps everything with an unbounded budget', () => {
    const window = new LogWindow(1, [], Number.POSITIVE_INFINITY, () => undefined);
    for (let index = 1; index <= 1_000; index++) window.append(index, [entry(index, 1, 10)]);
    expect(window.heldEntries).toBe(1_000);
    expect(window.slice(1, 1_001, Number.MAX_SAFE_INTEGER)).toHaveLength(1_000);
  });
});
