/**
 * The log entry that splits a partition (issue 19), and the rule that names the new partition.
 *
 * Layout: the 8 magic bytes 0xFF "ASPLIT" 0x01, then nowMs u64 | mid u64 | newId u32. An ordinary
 * entry (partition-replica.ts encodeEntryPayload) starts with its proposer's clock as a big-endian
 * u64, whose first byte is 0 for any time before the year 2^56 ms, so the first byte 0xFF alone
 * tells the two apart and no client command can ever be read as a split.
 *
 * The new partition's id is its range's first hash: newId = mid. Invariant (no coordination
 * needed, the same on every replica): ranges never overlap and a split never undoes a start
 * (merges do not exist yet), so no two partitions ever share a start, hence never an id; and
 * mid >= the initial partition count keeps it clear of the equal table's ids 0..P-1. A split
 * point below P is refused ('bad-split-point'), which only ever forbids a few hashes at the very
 * bottom of partition 0's range.
 */
import { AtollError } from '../../errors.js';
import { ByteReader, ByteWriter } from '../../storage/byte-codec.js';

const magic = Uint8Array.of(0xff, 0x41, 0x53, 0x50, 0x4c, 0x49, 0x54, 0x01);

export interface SplitEntry {
  /** The proposer's clock (the partition clock takes the max with its own, as for any entry). */
  readonly nowMs: number;
  /** The first hash of the new partition's range. */
  readonly mid: number;
  /** The new partition's id: always mid (see the file comment), checked at decode. */
  readonly newId: number;
}

/** The id of the partition a split at `mid` creates. */
export function splitPartitionId(mid: number): number {
  return mid;
}

/** True when `mid` may be a split point under this rule (its id is clear of the equal table's). */
export function splitIdAllowed(mid: number, initialPartitions: number): boolean {
  return Number.isInteger(mid) && mid >= initialPartitions && mid < 2 ** 32 - 1;
}

export function encodeSplitEntry(entry: SplitEntry): Uint8Array {
  return new ByteWriter(32).raw(magic).uint64(entry.nowMs).uint64(entry.mid).uint32(entry.newId).finish();
}

export function isSplitEntry(data: Uint8Array): boolean {
  if (data.length < magic.length) return false;
  for (let i = 0; i < magic.length; i++) if (data[i] !== magic[i]) return false;
  return true;
}

/** Decodes a split entry; INVALID_ARGUMENT for malformed bytes (never from our own log). */
export function decodeSplitEntry(data: Uint8Array): SplitEntry {
  if (!isSplitEntry(data)) throw new AtollError('INVALID_ARGUMENT', 'not a split entry');
  const reader = new ByteReader(data.subarray(magic.length), 'split entry');
  const entry = { nowMs: reader.uint64(), mid: reader.uint64(), newId: reader.uint32() };
  reader.finish();
  if (entry.newId !== splitPartitionId(entry.mid)) throw reader.malformed('the new partition id is not its first hash');
  return entry;
}
