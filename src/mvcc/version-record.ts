/**
 * The stored form of one version of one key (the value of a version key, see key-layout.ts).
 * The version's modRevision is not stored here: it is the revision in the version key.
 *
 *   value version:  0x01, flags (bit 0: has expiry, bit 1: has fence), createRevision uint64,
 *                   version uint64, [expiresAtMs uint64 when flagged], [fence uint64 when
 *                   flagged], value bytes (the rest of the record)
 *   tombstone:      0x02, [0x01 when the key expired: written by an `expire` command,
 *                          0x02 when its lease ended: written by a `leaseRevoke` command]
 */
import assert from 'node:assert/strict';
import { ByteReader, ByteWriter } from '../storage/byte-codec.js';

const valueTag = 0x01;
const tombstoneTag = 0x02;
const hasExpiryFlag = 0x01;
const hasFenceFlag = 0x02;

export interface StoredValue {
  readonly kind: 'value';
  readonly createRevision: number;
  readonly version: number;
  readonly expiresAtMs?: number;
  /**
   * The highest fencing token a fenced put (PutOp.ifFence) wrote this key with while it stayed
   * live (fence.ts); absent when no fenced write touched it since it was created.
   */
  readonly fence?: number;
  readonly value: Uint8Array;
}

export interface StoredTombstone {
  readonly kind: 'tombstone';
  /** Set on the tombstone an `expire` command writes (watchers report the delete as expired). */
  readonly expired?: true;
  /** Set on the tombstones a `leaseRevoke` command writes (watchers report the delete as "lease"). */
  readonly lease?: true;
}

export type StoredVersion = StoredValue | StoredTombstone;

export const tombstone: StoredTombstone = Object.freeze({ kind: 'tombstone' });
export const expiredTombstone: StoredTombstone = Object.freeze({ kind: 'tombstone', expired: true });
export const leaseTombstone: StoredTombstone = Object.freeze({ kind: 'tombstone', lease: true });
const expiredReason = 0x01;
const leaseReason = 0x02;

export function encodeVersionRecord(stored: StoredVersion): Uint8Array {
  if (stored.kind === 'tombstone') {
    if (stored.lease === true) return Uint8Array.of(tombstoneTag, leaseReason);
    return stored.expired === true ? Uint8Array.of(tombstoneTag, expiredReason) : Uint8Array.of(tombstoneTag);
  }
  assert(stored.createRevision >= 1 && stored.version >= 1, 'a stored value has positive revisions');
  const writer = new ByteWriter(34 + stored.value.length);
  const flags = (stored.expiresAtMs === undefined ? 0 : hasExpiryFlag) | (stored.fence === undefined ? 0 : hasFenceFlag);
  writer.uint8(valueTag).uint8(flags);
  writer.uint64(stored.createRevision).uint64(stored.version);
  if (stored.expiresAtMs !== undefined) writer.uint64(stored.expiresAtMs);
  if (stored.fence !== undefined) writer.uint64(stored.fence);
  return writer.raw(stored.value).finish();
}

/**
 * Decodes a record. The bytes were written by encodeVersionRecord (or arrived in a snapshot whose
 * records were checked on import), so a malformed record means corruption: it asserts.
 */
export function decodeVersionRecord(record: Uint8Array): StoredVersion {
  const reader = new ByteReader(record, 'version record');
  const tag = reader.uint8();
  if (tag === tombstoneTag) {
    if (reader.done) return tombstone;
    const reason = reader.uint8();
    assert(reason === expiredReason || reason === leaseReason, 'unknown tombstone reason');
    assert(reader.done, 'tombstone record has trailing bytes');
    return reason === leaseReason ? leaseTombstone : expiredTombstone;
  }
  assert.equal(tag, valueTag, 'unknown version record tag');
  const flags = reader.uint8();
  assert((flags & ~(hasExpiryFlag | hasFenceFlag)) === 0, 'unknown version record flags');
  const createRevision = reader.uint64();
  const version = reader.uint64();
  const expiresAtMs = (flags & hasExpiryFlag) !== 0 ? reader.uint64() : undefined;
  const fence = (flags & hasFenceFlag) !== 0 ? reader.uint64() : undefined;
  const value = reader.raw(reader.remaining);
  const base: StoredValue =
    expiresAtMs === undefined
      ? { kind: 'value', createRevision, version, value }
      : { kind: 'value', createRevision, version, expiresAtMs, value };
  return fence === undefined ? base : { ...base, fence };
}

/** Like decodeVersionRecord, but reports malformed input as false instead of asserting. */
export function isWellFormedVersionRecord(record: Uint8Array): boolean {
  try {
    const stored = decodeVersionRecord(record);
    return stored.kind === 'tombstone' || (stored.createRevision >= 1 && stored.version >= 1);
  } catch {
    return false;
  }
}
