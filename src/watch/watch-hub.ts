/**
 * The in-memory tail of one partition's changes, fed by the apply path (MvccStore's commit
 * listener) and read by that partition's watchers (watcher.ts). A bounded ring: it holds the
 * versions of the newest revisions only; a watcher whose position fell out of it re-reads the
 * store's retained history instead, so the ring is an optimisation, never the source of truth.
 *
 * Invariants (asserted in publish and since):
 * - The ring holds every version stored at each revision in (floor, top], and nothing else; the
 *   entries are in revision order. floor <= top.
 * - Revisions arrive one at a time in order (top + 1). A jump empties the ring: floor = top = the
 *   revision before the new one.
 * - top is the store's revision at every moment a watcher can look (issue 32): the store tells the
 *   hub through reset() in the same synchronous step as every change of its revision or history
 *   that is not a commit (a snapshot import, a merge, the discard of an interrupted import), and
 *   reset empties the ring (floor = top = that revision) and wakes every waiter. Without it a
 *   caught-up watcher saw the store ahead of the hub and asked again forever (a merge or an
 *   install froze the node), and a merge's incoming history hid behind a ring that claimed it.
 * - Eviction removes whole revisions from the front and raises floor to the evicted revision, so
 *   a revision is either wholly in the ring or not at all.
 * - Count and bytes stay within maxChanges and maxBytes after every publish (one revision larger
 *   than the bounds is not kept: floor jumps past it).
 */
import assert from 'node:assert/strict';
import type { StoredChange, StoredChangeAt } from '../mvcc/index.js';
import type { CallSignal } from '../api/call-signal.js';

export interface WatchHubBounds {
  /** Versions kept at most. */
  readonly maxChanges: number;
  /** Key and value bytes kept at most. */
  readonly maxBytes: number;
}

function sizeOf(change: StoredChange): number {
  return Buffer.byteLength(change.key) + (change.stored.kind === 'value' ? change.stored.value.length : 0);
}

export class WatchHub {
  private ring: StoredChangeAt[] = [];
  /** Index of the oldest live entry in `ring` (entries before it are evicted, compacted lazily). */
  private head = 0;
  private bytes = 0;
  private floorValue: number;
  private topValue: number;
  private readonly waiters = new Set<() => void>();

  constructor(
    revision: number,
    private readonly bounds: WatchHubBounds,
  ) {
    assert(Number.isSafeInteger(revision) && revision >= 0, 'hub revision');
    assert(bounds.maxChanges >= 1 && bounds.maxBytes >= 1, 'hub bounds must be positive');
    this.floorValue = revision;
    this.topValue = revision;
  }

  /** The ring holds every change in (floor, top]. */
  get floor(): number {
    return this.floorValue;
  }

  get top(): number {
    return this.topValue;
  }

  get size(): number {
    return this.ring.length - this.head;
  }

  /** One committed revision and every version it stored (MvccStore's commit listener). */
  publish(revision: number, changes: readonly StoredChange[]): void {
    assert(Number.isSafeInteger(revision) && revision > 0, 'published revision');
    if (revision !== this.topValue + 1) {
      // A gap (snapshot import) or a store that restarted lower: nothing before it is known here.
      this.ring = [];
      this.head = 0;
      this.bytes = 0;
      this.floorValue = revision - 1;
    }
    for (const change of changes) {
      this.ring.push({ key: change.key, revision, stored: change.stored });
      this.bytes += sizeOf(change);
    }
    this.topValue = revision;
    while (this.size > 0 && (this.size > this.bounds.maxChanges || this.bytes > this.bounds.maxBytes)) {
      const evicted = this.ring[this.head]!.revision;
      while (this.size > 0 && this.ring[this.head]!.revision === evicted) {
        this.bytes -= sizeOf(this.ring[this.head]!);
        this.head++;
      }
      this.floorValue = evicted;
    }
    if (this.head > 1024 && this.head * 2 > this.ring.length) {
      this.ring = this.ring.slice(this.head);
      this.head = 0;
    }
    assert(this.floorValue <= this.topValue && this.size <= this.bounds.maxChanges, 'hub invariants');
    for (const wake of [...this.waiters]) wake();
  }

  /**
   * The store's revision or history moved without a commit (MvccStore's reset listener): nothing
   * at or below `revision` is known here any more. Wakes every waiter, so each re-reads the store.
   */
  reset(revision: number): void {
    assert(Number.isSafeInteger(revision) && revision >= 0, 'reset revision');
    this.ring = [];
    this.head = 0;
    this.bytes = 0;
    this.floorValue = revision;
    this.topValue = revision;
    for (const wake of [...this.waiters]) wake();
  }

  /**
   * Every change with a revision in (after, top], and top; undefined when the ring no longer holds
   * all of them (after < floor), or when `after` is above top (the caller knows a newer revision
   * than the hub, e.g. after an import: it reads the store).
   */
  since(after: number): { changes: StoredChangeAt[]; through: number } | undefined {
    if (after < this.floorValue || after > this.topValue) return undefined;
    // The ring is sorted by revision: find the first change above `after` by bisection.
    let low = this.head;
    let high = this.ring.length;
    while (low < high) {
      const middle = (low + high) >>> 1;
      if (this.ring[middle]!.revision <= after) low = middle + 1;
      else high = middle;
    }
    return { changes: this.ring.slice(low), through: this.topValue };
  }

  /** Resolves at the next publish, after `ms`, or when `signal` aborts, whichever comes first. */
  wait(ms: number, after: (ms: number, run: () => void) => { cancel(): void }, signal?: CallSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      let timer: { cancel(): void } | undefined;
      const done = (): void => {
        this.waiters.delete(done);
        timer?.cancel();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.waiters.add(done);
      timer = after(ms, done);
      signal?.addEventListener('abort', done, { once: true });
      if (signal?.aborted) done();
    });
  }
}
