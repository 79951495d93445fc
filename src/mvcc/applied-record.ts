/**
 * The partition's applied state as ONE meta record (key P 'm' 'applied', key-layout.ts): the last
 * applied Raft index, the partition clock at it, and the revision. Every apply batch rewrites it,
 * so one record instead of three ('applied-index', 'applied-time', 'revision', the format before
 * issue 18) is two LevelDB operations fewer per group per apply batch.
 *
 * Value: version u8 (1) | applied index u64 | applied time ms u64 | revision u64, big-endian.
 *
 * Old data directories hold the three separate records; MvccStore.open reads them when this record
 * is absent, and the first apply batch after that writes this record and deletes them. Invariant:
 * when this record exists it is at least as new as the separate ones (every apply batch writes it;
 * clearing a partition deletes both), so a reader that prefers it is always right.
 */
import { ByteReader, ByteWriter } from '../storage/byte-codec.js';

export const APPLIED_RECORD_VERSION = 1;

export interface AppliedRecord {
  readonly appliedIndex: number;
  readonly appliedTimeMs: number;
  readonly revision: number;
}

export function encodeAppliedRecord(record: AppliedRecord): Uint8Array {
  return new ByteWriter(25).uint8(APPLIED_RECORD_VERSION).uint64(record.appliedIndex).uint64(record.appliedTimeMs).uint64(record.revision).finish();
}

/** Throws AtollError('INVALID_ARGUMENT') for an unknown version, a short value or trailing bytes. */
export function decodeAppliedRecord(value: Uint8Array): AppliedRecord {
  const reader = new ByteReader(value, 'applied record');
  const version = reader.uint8();
  if (version !== APPLIED_RECORD_VERSION) throw reader.malformed(`unknown format version ${version}`);
  const record = { appliedIndex: reader.uint64(), appliedTimeMs: reader.uint64(), revision: reader.uint64() };
  reader.finish();
  return record;
}
