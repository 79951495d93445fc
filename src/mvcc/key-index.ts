/**
 * The key index of one MVCC store (MvccState.newestRevisionOf): every stored key's newest version
 * revision, bounded in bytes. The store keeps it exact (see the invariant there) while it fits;
 * when an insert would take it past its budget, `set` refuses and the store drops the whole index
 * and reads the newest version from storage instead (an iterator per lookup, as before the index
 * existed) until the index is rebuilt at the next open or snapshot import. The index only makes
 * lookups cheaper: with it or without it, a lookup answers the same, so apply decides the same.
 *
 * Invariant (test/mvcc/key-index.test.ts): bytes === the sum of entryBytes(key) over the keys held,
 * and bytes <= maxBytes after every call.
 */

/**
 * Heap cost of one key besides its characters: the Map's slot and hash table share, the string's
 * header and the number. Measured: 200,000 keys of 20 characters grew the heap by 148 bytes each,
 * and entryBytes charges 168 for such a key (characters counted as two bytes, so never less).
 */
export const keyIndexEntryOverheadBytes = 128;

export function keyIndexEntryBytes(key: string): number {
  return keyIndexEntryOverheadBytes + 2 * key.length;
}

export class KeyIndex {
  private readonly revisions = new Map<string, number>();
  private bytesValue = 0;

  constructor(readonly maxBytes: number = Number.POSITIVE_INFINITY) {
    if (!(maxBytes >= 0)) throw new RangeError('maxBytes must be a non-negative number');
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
      if (this.bytesValue + cost > this.maxBytes) return false;
      this.bytesValue += cost;
    }
    this.revisions.set(key, revision);
    return true;
  }

  delete(key: string): void {
    if (this.revisions.delete(key)) this.bytesValue -= keyIndexEntryBytes(key);
  }

  clear(): void {
    this.revisions.clear();
    this.bytesValue = 0;
  }

  /** The indexed key names, in no particular order (a split's choice of split point reads them). */
  keys(): IterableIterator<string> {
    return this.revisions.keys();
  }
}
