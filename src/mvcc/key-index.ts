/**
 * The key index of one MVCC store (MvccState.newestRevisionOf): every stored key's newest version
 * revision, bounded in bytes. The store keeps it exact (see the invariant there) while it fits;
 * when an insert would take it past its budget, `set` refuses and the store drops the whole index
 * and reads the newest version from storage instead (an iterator per lookup, as before the index
 * existed) until the index is rebuilt at the next open or snapshot import. The index only makes
 * lookups cheaper: with it or without it, a lookup answers the same, so apply decides the same.
 *
 * Invariant (test/mvcc/key-index.test.ts): bytes === the sum of entryBytes(key) over the keys held,
 * and the budget's used bytes <= its maxBytes after every call.
 */
import assert from 'node:assert/strict';

/**
 * Heap cost of one key besides its characters: the Map's slot and hash table share, the string's
 * header and the number. Measured: 200,000 keys of 20 characters grew the heap by 148 bytes each,
 * and entryBytes charges 168 for such a key (characters counted as two bytes, so never less).
 */
export const keyIndexEntryOverheadBytes = 128;

export function keyIndexEntryBytes(key: string): number {
  return keyIndexEntryOverheadBytes + 2 * key.length;
}

/**
 * A byte budget several key indexes share: a node's, over all its partitions, so that one large
 * partition (a tenant's etcd keyspace is one bucket) may use what small ones leave, where an equal
 * share each made it drop its index past about 6,000 keys at 64 partitions.
 *
 * Invariant: `used` is the sum of `bytes` over the live indexes that share it, and never more than
 * `maxBytes` (asserted). An index its owner drops without clear() keeps its bytes counted: later
 * indexes then find less room (they read storage sooner), never more memory than the budget.
 */
export class KeyIndexBudget {
  private usedValue = 0;

  constructor(readonly maxBytes: number = Number.POSITIVE_INFINITY) {
    if (!(maxBytes >= 0)) throw new RangeError('maxBytes must be a non-negative number');
  }

  get used(): number {
    return this.usedValue;
  }

  /** Takes `bytes` when they fit; false (and nothing taken) when they do not. */
  take(bytes: number): boolean {
    if (this.usedValue + bytes > this.maxBytes) return false;
    this.usedValue += bytes;
    return true;
  }

  give(bytes: number): void {
    this.usedValue -= bytes;
    assert(this.usedValue >= 0, 'a key index budget gives back only what was taken');
  }
}

export class KeyIndex {
  private readonly revisions = new Map<string, number>();
  private bytesValue = 0;
  /** The budget this index draws on: its own (a number) or one it shares (a node's). */
  readonly budget: KeyIndexBudget;

  constructor(budget: number | KeyIndexBudget = Number.POSITIVE_INFINITY) {
    this.budget = budget instanceof KeyIndexBudget ? budget : new KeyIndexBudget(budget);
  }

  /** The budget's bound (for a shared one, of every index that shares it). */
  get maxBytes(): number {
    return this.budget.maxBytes;
  }

  get bytes(): number {
    return this.bytesValue;
  }

  get size(): number {
    return this.revisions.size;
  }

  get(key: string): number | undefined {
    return this.revisions.get(key);
  }

  /** Records `key`'s newest revision; false (and nothing changed) when a new key would not fit. */
  set(key: string, revision: number): boolean {
    if (!this.revisions.has(key)) {
      const cost = keyIndexEntryBytes(key);
      if (!this.budget.take(cost)) return false;
      this.bytesValue += cost;
    }
    this.revisions.set(key, revision);
    return true;
  }

  delete(key: string): void {
    if (this.revisions.delete(key)) {
      const cost = keyIndexEntryBytes(key);
      this.bytesValue -= cost;
      this.budget.give(cost);
    }
  }

  /** Empties the index and gives its bytes back to the budget. */
  clear(): void {
    this.revisions.clear();
    this.budget.give(this.bytesValue);
    this.bytesValue = 0;
  }

  /** The indexed key names, in no particular order (a split's choice of split point reads them). */
  keys(): IterableIterator<string> {
    return this.revisions.keys();
  }
}
