/**
 * The two log entries of a partition merge (issue 19, docs/architecture.md "Partition merges"):
 *
 * - the FREEZE entry, in the right partition R's log: from it on R applies nothing, serves
 *   nothing and waits to be merged into its left neighbour L (MvccStore.applyFreeze). Layout: the
 *   8 magic bytes 0xFF "AFREEZ" 0x01, then nowMs u64 | into u32 (L's id).
 * - the MERGE entry, in L's log: every replica of L folds R (at R's freeze index) into L at this
 *   entry's index (MvccStore.applyMerge). Layout: the 8 magic bytes 0xFF "AMERGE" 0x01, then
 *   nowMs u64 | right u32 (R's id) | freezeIndex u64 | rightEnd u64 (R's range end as the admin saw
 *   it) | voterCount u16 | voterCount × u32 (R's voters at the freeze, ascending).
 *
 * An ordinary entry (partition-replica.ts encodeEntryPayload) starts with its proposer's clock as
 * a big-endian u64, whose first byte is 0 for any time before the year 2^56 ms, so the first byte
 * 0xFF tells these apart from client commands, and the magic tells them apart from each other
 * and from a split entry (split-entry.ts, 0xFF "ASPLIT").
 *
 * Invariants checked at decode (bytes from another node are never trusted): ids are u32, the
 * freeze index is positive, the range end is at most 2^32, the voters are non-empty, ascending,
 * and at most maxMergeVoters; a malformed entry is INVALID_ARGUMENT, never a crash.
 */
import { AtollError } from '../../errors.js';
import { ByteReader, ByteWriter } from '../../storage/byte-codec.js';

const freezeMagic = Uint8Array.of(0xff, 0x41, 0x46, 0x52, 0x45, 0x45, 0x5a, 0x01);
const mergeMagic = Uint8Array.of(0xff, 0x41, 0x4d, 0x45, 0x52, 0x47, 0x45, 0x01);

/** A Raft group has at most this many voters in a merge entry (the replication factor is far smaller). */
export const maxMergeVoters = 64;

export interface FreezeEntry {
  /** The proposer's clock (the partition clock takes the max with its own, as for any entry). */
  readonly nowMs: number;
  /** The left partition R is frozen into. */
  readonly into: number;
}

export interface MergeEntry {
  readonly nowMs: number;
  /** The right partition, folded into the partition whose log holds this entry. */
  readonly right: number;
  /** The index of R's freeze entry: every replica reads R at exactly that state. */
  readonly freezeIndex: number;
  /** R's range end as the admin saw it (the merged range ends there; applyMerge checks adjacency). */
  readonly rightEnd: number;
  /** R's voters at the freeze, ascending: L's voters must be the same for the merge to apply. */
  readonly voters: readonly number[];
}

function hasMagic(data: Uint8Array, magic: Uint8Array): boolean {
  if (data.length < magic.length) return false;
  for (let i = 0; i < magic.length; i++) if (data[i] !== magic[i]) return false;
  return true;
}

export function isFreezeEntry(data: Uint8Array): boolean {
  return hasMagic(data, freezeMagic);
}

export function isMergeEntry(data: Uint8Array): boolean {
  return hasMagic(data, mergeMagic);
}

export function encodeFreezeEntry(entry: FreezeEntry): Uint8Array {
  return new ByteWriter(24).raw(freezeMagic).uint64(entry.nowMs).uint32(entry.into).finish();
}

export function encodeMergeEntry(entry: MergeEntry): Uint8Array {
  const writer = new ByteWriter(48 + 4 * entry.voters.length).raw(mergeMagic).uint64(entry.nowMs).uint32(entry.right).uint64(entry.freezeIndex).uint64(entry.rightEnd);
  writer.uint16(entry.voters.length);
  for (const voter of entry.voters) writer.uint32(voter);
  return writer.finish();
}

/** Decodes a freeze entry; INVALID_ARGUMENT for malformed bytes. */
export function decodeFreezeEntry(data: Uint8Array): FreezeEntry {
  if (!isFreezeEntry(data)) throw new AtollError('INVALID_ARGUMENT', 'not a merge freeze entry');
  const reader = new ByteReader(data.subarray(freezeMagic.length), 'merge freeze entry');
  const entry = { nowMs: reader.uint64(), into: reader.uint32() };
  reader.finish();
  return entry;
}

/** Decodes a merge entry; INVALID_ARGUMENT for malformed bytes. */
export function decodeMergeEntry(data: Uint8Array): MergeEntry {
  if (!isMergeEntry(data)) throw new AtollError('INVALID_ARGUMENT', 'not a merge entry');
  const reader = new ByteReader(data.subarray(mergeMagic.length), 'merge entry');
  const nowMs = reader.uint64();
  const right = reader.uint32();
  const freezeIndex = reader.uint64();
  const rightEnd = reader.uint64();
  const voterCount = reader.uint16();
  if (voterCount === 0 || voterCount > maxMergeVoters) throw reader.malformed(`${voterCount} voters (1 to ${maxMergeVoters})`);
  const voters: number[] = [];
  for (let i = 0; i < voterCount; i++) {
    const voter = reader.uint32();
    if (voters.length > 0 && voter <= voters[voters.length - 1]!) throw reader.malformed('the voters are not ascending');
    voters.push(voter);
  }
  reader.finish();
  if (freezeIndex < 1) throw reader.malformed('the freeze index is not positive');
  if (rightEnd < 1 || rightEnd > 2 ** 32) throw reader.malformed(`bad range end ${rightEnd}`);
  return { nowMs, right, freezeIndex, rightEnd, voters };
}
