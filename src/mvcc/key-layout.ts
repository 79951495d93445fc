/**
 * Where one partition's MVCC state lives in the shared ordered store. Every key starts with the
 * partition's prefix P (storage/keyspace.ts: 0x03 + uint32BE(partitionId) in a node's LevelDB):
 *
 *   P 'm' <name>                                   meta records (ASCII names):
 *       'applied'             the last Raft index applied, the partition clock at it and the
 *                             current revision, in one record (applied-record.ts)
 *       'applied-index'       uint64BE   before 'applied' (read when it is absent, then deleted)
 *       'revision'            uint64BE   before 'applied' (the same)
 *       'compacted-revision'  uint64BE   the compaction floor: reads below it fail
 *       'import-in-progress'  empty      present while a snapshot import is unfinished
 *       'dedup-floor'         uint64BE   queue entries below this index are evicted (absent: 0)
 *       'dedup-count'         uint64BE   live queue entries, those at or above the floor (absent: 0)
 *       'applied-time'        uint64BE   before 'applied' (the same): the partition's replicated
 *                                        clock, the time of the last applied entry (absent: 0)
 *       'range'               uint64BE(start) uint64BE(end)   the hash range the partition owns,
 *                                        written by a split (absent: its place in the equal table)
 *       'merge-freeze'        uint64BE(into) uint64BE(index)   the partition is frozen for a merge
 *                                        into partition `into` by the entry at `index` (absent: live)
 *   P 'q' uint64BE(index)                one deduplicated result, recorded by the entry at `index`,
 *                                        with its request id (dedup-record.ts); written once, never
 *                                        changed, deleted only after eviction. Big-endian, so key
 *                                        order is apply order and the oldest entry comes first.
 *   P 'r' utf8(requestId)      uint64BE  the index of the request id's queue entry (the lookup)
 *   P 'v' escapeOrdered(utf8(key)) uint64BE(revision)   one version of one key (version-record.ts)
 *   P 'l' uint64BE(id)                   one lease: its tenant, TTL and keys (lease-table.ts)
 *
 * The request id is the last field of its key, so it needs no escaping: P 'r' + id bytes names
 * exactly one id. A record pointing below the dedup floor is evicted; the queue entry and record
 * of an evicted id stay until no snapshot export needs them (MvccStore, "Deduplication").
 *
 * escapeOrdered (storage/ordered-escape.ts) replaces each 0x00 by 0x00 0xFF and ends the field
 * with 0x00 0x01. That gives the three properties the store relies on:
 *
 * (a) All versions of one key are contiguous and ordered by revision: they share the bytes up to
 *     the terminator, and no other key's encoding can start with those bytes, because 0x00 0x01
 *     appears nowhere but at the end of an encoding.
 * (b) The keys with a given text prefix form one contiguous range: P 'v' + escapeOrderedBody(prefix)
 *     is a byte prefix of exactly their version keys. Keys sort by their UTF-8 bytes, which is
 *     Unicode code point order (not JavaScript's UTF-16 order).
 * (c) Keys with U+0000 (byte 0x00) or any other character cannot be confused with each other or
 *     with a neighbour's versions, because the escape is self-delimiting and order-preserving.
 */
import assert from 'node:assert/strict';
import { encodeUtf8 } from '../keys/utf8.js';
import { asciiBytes, concatBytes, decodeUint64BE, encodeUint64BE, prefixUpperBound, startsWithBytes } from '../storage/bytes.js';
import { escapeOrdered, escapeOrderedBody, unescapeOrdered } from '../storage/ordered-escape.js';
import type { KeyRange } from '../storage/storage-engine.js';

const metaTag = asciiBytes('m');
const dedupQueueTag = asciiBytes('q');
const dedupRecordTag = asciiBytes('r');
const versionTag = asciiBytes('v');
const leaseTag = asciiBytes('l');
const revisionBytes = 8;
const indexBytes = 8;

export interface ParsedVersionKey {
  /** The user key's UTF-8 bytes. */
  readonly userKey: Uint8Array;
  /** The stored key without its revision: equal for all versions of one user key. */
  readonly groupKey: Uint8Array;
  readonly revision: number;
}

export class MvccKeyLayout {
  readonly appliedIndexKey: Uint8Array;
  readonly revisionKey: Uint8Array;
  readonly compactedRevisionKey: Uint8Array;
  readonly importInProgressKey: Uint8Array;
  readonly dedupFloorKey: Uint8Array;
  readonly dedupCountKey: Uint8Array;
  readonly appliedTimeKey: Uint8Array;
  /** Applied index, applied time and revision in one record (applied-record.ts). */
  readonly appliedKey: Uint8Array;
  /** The partition's hash range, once a split made it data (split-plan.ts). */
  readonly rangeKey: Uint8Array;
  /** Present once the partition is frozen for a merge into its left neighbour (merge-entry.ts). */
  readonly freezeKey: Uint8Array;
  /** The prefix of every version key. */
  readonly versionPrefix: Uint8Array;
  /** The prefix of every dedup queue entry. */
  readonly dedupQueuePrefix: Uint8Array;
  /** The prefix of every dedup record. */
  readonly dedupRecordPrefix: Uint8Array;
  /** The prefix of every lease record. */
  readonly leasePrefix: Uint8Array;

  constructor(readonly partitionPrefix: Uint8Array) {
    assert(partitionPrefix.length > 0, 'an MVCC partition needs a non-empty key prefix');
    this.appliedIndexKey = this.metaKey('applied-index');
    this.revisionKey = this.metaKey('revision');
    this.compactedRevisionKey = this.metaKey('compacted-revision');
    this.importInProgressKey = this.metaKey('import-in-progress');
    this.dedupFloorKey = this.metaKey('dedup-floor');
    this.dedupCountKey = this.metaKey('dedup-count');
    this.appliedTimeKey = this.metaKey('applied-time');
    this.appliedKey = this.metaKey('applied');
    this.rangeKey = this.metaKey('range');
    this.freezeKey = this.metaKey('merge-freeze');
    this.versionPrefix = concatBytes(partitionPrefix, versionTag);
    this.dedupQueuePrefix = concatBytes(partitionPrefix, dedupQueueTag);
    this.dedupRecordPrefix = concatBytes(partitionPrefix, dedupRecordTag);
    this.leasePrefix = concatBytes(partitionPrefix, leaseTag);
  }

  private metaKey(name: string): Uint8Array {
    return concatBytes(this.partitionPrefix, metaTag, asciiBytes(name));
  }

  /** Every key of the partition, meta included. */
  partitionRange(): KeyRange {
    return rangeOfPrefix(this.partitionPrefix);
  }

  /** Every version of every key. */
  allVersionsRange(): KeyRange {
    return rangeOfPrefix(this.versionPrefix);
  }

  /** The meta records; clearing a partition deletes them, except the import mark. */
  metaKeys(): Uint8Array[] {
    return [this.appliedIndexKey, this.revisionKey, this.compactedRevisionKey, this.dedupFloorKey, this.dedupCountKey, this.appliedTimeKey, this.appliedKey, this.rangeKey, this.freezeKey];
  }

  /** Every data key (versions, dedup queue, dedup records), in key order: all but the meta records. */
  dataRanges(): KeyRange[] {
    return [this.allLeasesRange(), this.dedupQueueRange(0), this.allDedupRecordsRange(), this.allVersionsRange()];
  }

  // Leases

  leaseKey(id: number): Uint8Array {
    return concatBytes(this.leasePrefix, encodeUint64BE(id));
  }

  allLeasesRange(): KeyRange {
    return rangeOfPrefix(this.leasePrefix);
  }

  /** The id of a lease key (also one from a peer's snapshot), or undefined when it is not one. */
  parseLeaseKey(storageKey: Uint8Array): number | undefined {
    if (!startsWithBytes(storageKey, this.leasePrefix) || storageKey.length !== this.leasePrefix.length + indexBytes) return undefined;
    const view = new DataView(storageKey.buffer, storageKey.byteOffset, storageKey.byteLength);
    const id = view.getBigUint64(this.leasePrefix.length, false);
    return id >= 1n && id <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id) : undefined;
  }

  // Deduplication

  dedupQueueKey(index: number): Uint8Array {
    return concatBytes(this.dedupQueuePrefix, encodeUint64BE(index));
  }

  /** The queue entries with index in [fromIndex, belowIndex), or from fromIndex on when belowIndex is absent. */
  dedupQueueRange(fromIndex: number, belowIndex?: number): KeyRange {
    const gte = this.dedupQueueKey(fromIndex);
    if (belowIndex !== undefined) return { gte, lt: this.dedupQueueKey(belowIndex) };
    const all = rangeOfPrefix(this.dedupQueuePrefix);
    return all.lt === undefined ? { gte } : { gte, lt: all.lt };
  }

  isDedupQueueKey(storageKey: Uint8Array): boolean {
    return startsWithBytes(storageKey, this.dedupQueuePrefix) && storageKey.length === this.dedupQueuePrefix.length + indexBytes;
  }

  parseDedupQueueKey(storageKey: Uint8Array): number {
    assert(this.isDedupQueueKey(storageKey), 'not a dedup queue key of this partition');
    return decodeUint64BE(storageKey, this.dedupQueuePrefix.length);
  }

  /**
   * The index of a key that came from another node (a snapshot), or undefined when it is not a
   * queue key or its index is past the safe integers: malformed input, not a reason to crash.
   */
  maybeParseDedupQueueKey(storageKey: Uint8Array): number | undefined {
    if (!this.isDedupQueueKey(storageKey)) return undefined;
    const view = new DataView(storageKey.buffer, storageKey.byteOffset, storageKey.byteLength);
    const index = view.getBigUint64(this.dedupQueuePrefix.length, false);
    return index <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(index) : undefined;
  }

  /** The caller has validated the request id (validateRequestId). */
  dedupRecordKey(requestId: string): Uint8Array {
    return concatBytes(this.dedupRecordPrefix, encodeUtf8(requestId));
  }

  allDedupRecordsRange(): KeyRange {
    return rangeOfPrefix(this.dedupRecordPrefix);
  }

  /** The bytes all versions of a key start with. */
  groupKey(userKey: string): Uint8Array {
    return concatBytes(this.versionPrefix, escapeOrdered(encodeUtf8(userKey)));
  }

  versionKey(userKey: string, revision: number): Uint8Array {
    return concatBytes(this.groupKey(userKey), encodeUint64BE(revision));
  }

  /** Every version of one key. */
  versionsOfKey(userKey: string): KeyRange {
    return rangeOfPrefix(this.groupKey(userKey));
  }

  /** The versions of one key at or below `revision`: read backwards, the first is the one visible there. */
  versionsOfKeyUpTo(userKey: string, revision: number): KeyRange {
    const group = this.groupKey(userKey);
    return { gte: group, lt: concatBytes(group, encodeUint64BE(revision + 1)) };
  }

  /** Every version of every key that starts with `keyPrefix`. */
  versionsOfPrefix(keyPrefix: string): KeyRange {
    return rangeOfPrefix(concatBytes(this.versionPrefix, escapeOrderedBody(encodeUtf8(keyPrefix))));
  }

  /** Where a scan resumes after `userKey`: the first stored key past all its versions. */
  afterKey(userKey: string): Uint8Array {
    const bound = prefixUpperBound(this.groupKey(userKey));
    // A group key ends in 0x01, so it always has an upper bound.
    assert(bound !== undefined);
    return bound;
  }

  isVersionKey(storageKey: Uint8Array): boolean {
    return startsWithBytes(storageKey, this.versionPrefix);
  }

  parseVersionKey(storageKey: Uint8Array): ParsedVersionKey {
    assert(this.isVersionKey(storageKey), 'not a version key of this partition');
    const { bytes: userKey, nextOffset } = unescapeOrdered(storageKey, this.versionPrefix.length);
    assert.equal(storageKey.length, nextOffset + revisionBytes, 'version key has a malformed revision');
    return {
      userKey,
      groupKey: storageKey.subarray(0, nextOffset),
      revision: decodeUint64BE(storageKey, nextOffset),
    };
  }
}

function rangeOfPrefix(prefix: Uint8Array): KeyRange {
  const lt = prefixUpperBound(prefix);
  return lt === undefined ? { gte: prefix } : { gte: prefix, lt };
}
