/**
 * The newest stored version of recently used keys, in memory, so a write's condition check and a
 * read at the current revision cost a map lookup instead of a LevelDB iterator (a seek through the
 * native thread pool). One cache serves every partition store of a node, bounded in bytes, least
 * recently used first out.
 *
 * Invariant (kept by MvccStore, asserted by test/mvcc/version-cache.test.ts against a store without
 * a cache): an entry (store, key) -> (revision, value) holds exactly the newest stored version of
 * the key in that store at the store's current revision, and that version is a value (tombstones
 * are never cached). It follows that for any read revision r >= entry.revision the entry is also
 * the newest version at or below r; for r < entry.revision it says nothing (fall back to storage).
 * - A commit that writes a key replaces its entry (a value) or removes it (a tombstone) in the same
 *   synchronous step that moves the store's revision, after the batch is written.
 * - A miss is filled only from a lookup at the current revision during which the revision and the
 *   store's epoch did not move (see find-version.ts findVersion).
 * - Compaction never removes a key's newest version when it is a value, so it leaves entries valid.
 * - A snapshot import replaces the whole store: it drops the store's entries (`clear`).
 */
import type { StoredValue } from './version-record.js';

export interface CachedVersion {
  readonly revision: number;
  readonly stored: StoredValue;
}

/**
 * One entry, linked into the recency list (newest first). A key's slot is reused by its next set,
 * and a delete only empties it (`stored` undefined: a miss, as if absent; it still costs its key
 * and overhead, and ages out like any slot), so a key deleted and written again (a lock's key)
 * never takes its map entry out and back in (see set).
 */
interface Slot {
  readonly id: string;
  revision: number;
  stored: StoredValue | undefined;
  bytes: number;
  /** The next more recently used slot, or undefined for the newest. */
  newer: Slot | undefined;
  /** The next less recently used slot, or undefined for the oldest. */
  older: Slot | undefined;
}

/**
 * Heap cost of one entry besides its key and value bytes: the map slot, the id string's header, two
 * small objects, the Uint8Array object and its separately allocated backing store. Measured: 200,000
 * entries of 128-byte values under 12-character keys grew the heap and array buffers by about 680
 * bytes each (test/mvcc/version-cache.test.ts keeps the estimate from falling behind again).
 */
export const entryOverheadBytes = 520;

/**
 * Recency is a doubly linked list through the slots, so a hit, an insert and an eviction are O(1)
 * pointer moves and the map is touched only to add or drop a key. (It was a Map in insertion order,
 * re-inserted on use, evicting `keys().next()`: V8 leaves a deleted Map entry as a hole until the
 * table is rebuilt, and an iterator from the front steps over every hole, so with a full cache of
 * a few hundred thousand entries each eviction scanned a long run of holes. Right after a
 * 1,000,000-key preload that scan was 9% of the nodes' busy time, docs/performance.md.)
 */
export class VersionCache {
  private readonly slots = new Map<string, Slot>();
  private newest: Slot | undefined;
  private oldest: Slot | undefined;
  private bytes = 0;
  /** Slots emptied by delete (stats counts the others as entries). */
  private emptied = 0;
  private hitCount = 0;
  private missCount = 0;

  constructor(readonly maxBytes: number) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 0) throw new RangeError('maxBytes must be a non-negative integer');
  }

  /** The cached newest version of `key` in store `store`, or undefined. Counts a hit or a miss. */
  get(store: number, key: string): CachedVersion | undefined {
    const slot = this.slots.get(slotId(store, key));
    if (slot?.stored === undefined) {
      this.missCount++;
      return undefined;
    }
    this.hitCount++;
    if (slot !== this.newest) {
      this.unlink(slot);
      this.linkNewest(slot);
    }
    return { revision: slot.revision, stored: slot.stored };
  }

  set(store: number, key: string, version: CachedVersion): void {
    const id = slotId(store, key);
    // A value decoded from a log entry or a storage record may be a view of a much larger buffer,
    // and the caller's buffer is the caller's: keep a copy of its own bytes, so the budget is what
    // the cache really holds and no one else can change it.
    const bytes = id.length * 2 + version.stored.value.length + entryOverheadBytes;
    if (bytes > this.maxBytes) {
      this.remove(id);
      return;
    }
    const stored: StoredValue = { ...version.stored, value: version.stored.value.slice() };
    const existing = this.slots.get(id);
    if (existing !== undefined) {
      // The key's slot is updated in place and moved to the newest end: the map is not touched.
      // (It was deleted and set again: a V8 Map pays for a delete and re-insert of one key in
      // time that grows with every such cycle until the table is rebuilt, 30 µs at 10,000 entries
      // on Node 20, so increments of one hot key beside 10,000 cached keys spent 36 µs per
      // increment here; docs/performance.md.)
      this.bytes += bytes - existing.bytes;
      if (existing.stored === undefined) this.emptied--;
      existing.revision = version.revision;
      existing.stored = stored;
      existing.bytes = bytes;
      if (existing !== this.newest) {
        this.unlink(existing);
        this.linkNewest(existing);
      }
    } else {
      const slot: Slot = { id, revision: version.revision, stored, bytes, newer: undefined, older: undefined };
      this.slots.set(id, slot);
      this.linkNewest(slot);
      this.bytes += bytes;
    }
    while (this.bytes > this.maxBytes && this.oldest !== undefined) this.remove(this.oldest.id);
  }

  /** The key has no cached version any more (its newest is a tombstone): its slot is emptied, not removed. */
  delete(store: number, key: string): void {
    const slot = this.slots.get(slotId(store, key));
    if (slot?.stored === undefined) return;
    const bytes = slot.id.length * 2 + entryOverheadBytes;
    this.bytes += bytes - slot.bytes;
    slot.bytes = bytes;
    slot.stored = undefined;
    this.emptied++;
  }

  /** Drops every entry of one store (its state was replaced). O(entries): imports are rare. */
  clear(store: number): void {
    const prefix = `${store}\u0000`;
    for (const id of [...this.slots.keys()]) if (id.startsWith(prefix)) this.remove(id);
  }

  stats(): { entries: number; bytes: number; maxBytes: number; hits: number; misses: number } {
    return { entries: this.slots.size - this.emptied, bytes: this.bytes, maxBytes: this.maxBytes, hits: this.hitCount, misses: this.missCount };
  }

  private remove(id: string): void {
    const slot = this.slots.get(id);
    if (slot === undefined) return;
    this.slots.delete(id);
    this.unlink(slot);
    this.bytes -= slot.bytes;
    if (slot.stored === undefined) this.emptied--;
  }

  private linkNewest(slot: Slot): void {
    slot.older = this.newest;
    slot.newer = undefined;
    if (this.newest !== undefined) this.newest.newer = slot;
    this.newest = slot;
    if (this.oldest === undefined) this.oldest = slot;
  }

  private unlink(slot: Slot): void {
    if (slot.newer !== undefined) slot.newer.older = slot.older;
    else this.newest = slot.older;
    if (slot.older !== undefined) slot.older.newer = slot.newer;
    else this.oldest = slot.newer;
    slot.newer = undefined;
    slot.older = undefined;
  }
}

function slotId(store: number, key: string): string {
  return `${store}\u0000${key}`;
}
