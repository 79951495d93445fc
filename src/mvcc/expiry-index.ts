/**
 * Which stored keys expire, and when: the in-memory index a partition's leader reads to find the
 * keys it should propose for physical removal (an `expire` command), without scanning storage.
 *
 * It holds, for every key whose newest stored version is a value with an expiry, that expiry
 * (`expiryOf`), and a binary min-heap of (expiresAtMs, key) pairs to find the earliest ones. The
 * heap is lazy: rewriting or deleting a key leaves its old pair in the heap, and a pair counts only
 * while it matches `expiryOf`. Stale pairs are dropped when they reach the top, and the whole heap
 * is rebuilt from `expiryOf` when stale pairs outnumber live ones, so its size stays below
 * 2 × keys + a constant.
 *
 * It is local and derived: it decides nothing by itself (apply checks every key again against the
 * replicated clock), so it need not be identical across replicas, only correct for this one.
 */
import assert from 'node:assert/strict';

/** Below this many pairs the heap is never rebuilt (rebuilding tiny heaps gains nothing). */
const minRebuildSize = 1024;

/**
 * expiryOf's value for a key whose expiry was removed (its newer version has none, or is a
 * tombstone). The entry stays until the next rebuild instead of being deleted: a V8 Map pays for
 * deleting and re-inserting one key in time that grows with every such cycle until its table is
 * rebuilt, so a key with a TTL written and deleted again and again (a lock's key) cost 109 µs per
 * cycle beside 10,000 keys with an expiry; 1.2 µs now (docs/performance.md).
 */
const NO_EXPIRY = -1;

export class ExpiryIndex {
  /**
   * Invariant: exactly the keys whose newest stored version is a value with an expiry, with it;
   * plus keys that had one, with NO_EXPIRY (`cleared` of them), dropped at the next rebuild.
   */
  private expiryOf = new Map<string, number>();
  /** Invariant: every entry of expiryOf with an expiry has its pair in the heap (plus stale pairs). */
  private heap: Array<{ readonly expiresAtMs: number; readonly key: string }> = [];
  private cleared = 0;

  /** How many keys have an expiry. */
  get size(): number {
    return this.expiryOf.size - this.cleared;
  }

  /** Records a key's newest stored version: its expiry, or undefined for none (or a tombstone). */
  set(key: string, expiresAtMs: number | undefined): void {
    const current = this.expiryOf.get(key);
    if (expiresAtMs === undefined) {
      if (current === undefined || current === NO_EXPIRY) return;
      this.expiryOf.set(key, NO_EXPIRY);
      this.cleared++;
      this.rebuildWhenMostlyStale();
      return;
    }
    assert(expiresAtMs >= 0, 'an expiry is a time in ms');
    if (current === expiresAtMs) return;
    if (current === NO_EXPIRY) this.cleared--;
    this.expiryOf.set(key, expiresAtMs);
    this.push({ expiresAtMs, key });
    this.rebuildWhenMostlyStale();
  }

  /** Keeps the heap below 2 × keys + minRebuildSize pairs, and the cleared entries below keys + minRebuildSize (amortized O(1) per set). */
  private rebuildWhenMostlyStale(): void {
    const size = this.size;
    if ((this.heap.length > minRebuildSize && this.heap.length > 2 * size) || (this.cleared > minRebuildSize && this.cleared > size)) this.rebuild();
  }

  clear(): void {
    this.expiryOf.clear();
    this.heap = [];
    this.cleared = 0;
  }

  /**
   * Up to `max` keys whose expiry is at or before `nowMs`, earliest first. The index keeps them
   * (only a stored tombstone or rewrite, reported through set, removes a key): a proposal that is
   * lost is simply made again. Cost: at most 4 × max + minRebuildSize pairs popped (stale ones
   * are dropped for good, so a later call continues where this one stopped), each O(log size).
   */
  expiredKeys(nowMs: number, max: number): string[] {
    assert(Number.isSafeInteger(max) && max >= 0);
    // Nothing due (the common case, asked every second of every led partition): no allocation.
    if (this.heap.length === 0 || this.heap[0]!.expiresAtMs > nowMs) return [];
    const taken: Array<{ readonly expiresAtMs: number; readonly key: string }> = [];
    const takenKeys = new Set<string>();
    const maxPops = 4 * max + minRebuildSize;
    for (let pops = 0; pops < maxPops && taken.length < max && this.heap.length > 0; pops++) {
      const top = this.heap[0]!;
      if (top.expiresAtMs > nowMs) break;
      this.pop();
      // A stale pair (the key was rewritten or deleted since) or a second pair of a key already
      // taken (set back to an earlier expiry) is dropped for good; the taken one is pushed back.
      if (this.expiryOf.get(top.key) === top.expiresAtMs && !takenKeys.has(top.key)) {
        taken.push(top);
        takenKeys.add(top.key);
      }
    }
    for (const pair of taken) this.push(pair);
    return taken.map((pair) => pair.key);
  }

  private rebuild(): void {
    // A new map, without the cleared keys (and with none of the old one's deleted-entry chains).
    const live = new Map<string, number>();
    for (const [key, expiresAtMs] of this.expiryOf) if (expiresAtMs !== NO_EXPIRY) live.set(key, expiresAtMs);
    this.expiryOf = live;
    this.cleared = 0;
    this.heap = [...live].map(([key, expiresAtMs]) => ({ expiresAtMs, key }));
    for (let index = (this.heap.length >> 1) - 1; index >= 0; index--) this.siftDown(index);
  }

  private push(pair: { readonly expiresAtMs: number; readonly key: string }): void {
    this.heap.push(pair);
    let index = this.heap.length - 1;
    while (index > 0) {
      const parent = (index - 1) >> 1;
      if (this.heap[parent]!.expiresAtMs <= this.heap[index]!.expiresAtMs) break;
      [this.heap[parent], this.heap[index]] = [this.heap[index]!, this.heap[parent]!];
      index = parent;
    }
  }

  private pop(): void {
    const last = this.heap.pop()!;
    if (this.heap.length === 0) return;
    this.heap[0] = last;
    this.siftDown(0);
  }

  private siftDown(start: number): void {
    let index = start;
    for (;;) {
      const left = 2 * index + 1;
      const right = left + 1;
      let smallest = index;
      if (left < this.heap.length && this.heap[left]!.expiresAtMs < this.heap[smallest]!.expiresAtMs) smallest = left;
      if (right < this.heap.length && this.heap[right]!.expiresAtMs < this.heap[smallest]!.expiresAtMs) smallest = right;
      if (smallest === index) return;
      [this.heap[smallest], this.heap[index]] = [this.heap[index]!, this.heap[smallest]!];
      index = smallest;
    }
  }
}
