/**
 * Weighted Space-Saving (Metwally, Agrawal, El Abbadi, "Efficient Computation of Frequent and
 * Top-k Elements in Data Streams", ICDT 2005; weighted form: Berinde, Indyk, Cormode, Strauss,
 * "Space-optimal heavy hitters with strong error bounds", TODS 2010): the heaviest keys of a
 * stream in at most `capacity` entries, however many distinct keys the stream holds.
 *
 * Each entry is a key with a `count` and an `error`. A new key, when the table is full, takes the
 * place of the entry with the smallest count and inherits that count as its error. With W the
 * total weight added and m the capacity, for every key k with true weight f(k):
 *
 *   1. monitored k:    count(k) - error(k) <= f(k) <= count(k)
 *   2. every entry:    error(k) <= minCount <= W / m
 *   3. unmonitored k:  f(k) <= minCount <= W / m, so any key with f(k) > W / m is monitored.
 *
 * (2) holds because the counts sum to W and there are m of them once the table is full.
 *
 * The entries live in a binary min-heap on count with a key -> slot map, so an add costs
 * O(log m). Pure: no clock, no I/O.
 */
import assert from 'node:assert/strict';

export interface SpaceSavingEntry {
  readonly key: string;
  /** An upper bound on the key's weight. */
  readonly count: number;
  /** How much of `count` may belong to keys this entry replaced: count - error <= weight. */
  readonly error: number;
}

interface Slot {
  key: string;
  count: number;
  error: number;
}

export class SpaceSaving {
  readonly capacity: number;
  // Invariant: heap[i].count <= heap[2i+1].count and heap[2i+2].count (a min-heap on count).
  // Invariant: slotOf.get(heap[i].key) === i for every i, and slotOf.size === heap.length <= capacity.
  private readonly heap: Slot[] = [];
  private readonly slotOf = new Map<string, number>();
  private total = 0;

  constructor(capacity: number) {
    assert(Number.isSafeInteger(capacity) && capacity >= 1, 'Space-Saving capacity must be a positive integer');
    this.capacity = capacity;
  }

  /** Entries held: never more than `capacity`. */
  get size(): number {
    return this.heap.length;
  }

  /** W: every weight added (scaled along with the counts). */
  get totalWeight(): number {
    return this.total;
  }

  /** The smallest count held (0 while the table has room): the bound on any unmonitored key. */
  get minCount(): number {
    return this.heap.length < this.capacity ? 0 : (this.heap[0]?.count ?? 0);
  }

  add(key: string, weight: number): void {
    assert(Number.isFinite(weight) && weight > 0, 'a Space-Saving weight must be positive and finite');
    this.total += weight;
    const slot = this.slotOf.get(key);
    if (slot !== undefined) {
      (this.heap[slot] as Slot).count += weight;
      this.siftDown(slot);
    } else if (this.heap.length < this.capacity) {
      this.heap.push({ key, count: weight, error: 0 });
      this.slotOf.set(key, this.heap.length - 1);
      this.siftUp(this.heap.length - 1);
    } else {
      const smallest = this.heap[0] as Slot;
      this.slotOf.delete(smallest.key);
      this.heap[0] = { key, count: smallest.count + weight, error: smallest.count };
      this.slotOf.set(key, 0);
      this.siftDown(0);
    }
  }

  /**
   * Multiplies every count, error and the total by `factor`; the order is unchanged. 0 (what a
   * decay factor underflows to after a long idle spell) forgets all weight but keeps the keys.
   */
  scale(factor: number): void {
    assert(Number.isFinite(factor) && factor >= 0, 'a scale factor must be finite and not negative');
    for (const slot of this.heap) {
      slot.count *= factor;
      slot.error *= factor;
    }
    this.total *= factor;
  }

  /** The entries, largest count first (ties by key, so the order is deterministic). */
  entries(): SpaceSavingEntry[] {
    return this.heap
      .map(({ key, count, error }) => ({ key, count, error }))
      .sort((a, b) => b.count - a.count || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  private siftUp(start: number): void {
    let child = start;
    while (child > 0) {
      const parent = (child - 1) >> 1;
      if ((this.heap[parent] as Slot).count <= (this.heap[child] as Slot).count) return;
      this.swap(parent, child);
      child = parent;
    }
  }

  private siftDown(start: number): void {
    let parent = start;
    for (;;) {
      const left = 2 * parent + 1;
      const right = left + 1;
      let smallest = parent;
      if (left < this.heap.length && (this.heap[left] as Slot).count < (this.heap[smallest] as Slot).count) smallest = left;
      if (right < this.heap.length && (this.heap[right] as Slot).count < (this.heap[smallest] as Slot).count) smallest = right;
      if (smallest === parent) return;
      this.swap(parent, smallest);
      parent = smallest;
    }
  }

  private swap(i: number, j: number): void {
    const a = this.heap[i] as Slot;
    const b = this.heap[j] as Slot;
    this.heap[i] = b;
    this.heap[j] = a;
    this.slotOf.set(b.key, i);
    this.slotOf.set(a.key, j);
  }
}
