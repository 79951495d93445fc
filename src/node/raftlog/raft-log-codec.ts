/**
 * The on-disk layout of one Raft group's log inside a node's shared LevelDB, and the binary
 * encoding of its records. PersistentLogStorage (raft-log-store.ts) is the only writer.
 *
 * Keys. Every key starts with the group's keyspace prefix from storage/keyspace.ts,
 * partitionKeyPrefix('raft', groupId) = 0x02 + uint32BE(groupId), then a one-byte ASCII tag:
 *
 *   prefix 'e' uint64BE(index)   one log entry; big-endian so key order is index order, and a
 *                                contiguous run of entries is one contiguous key range
 *   prefix 'h'                   hard state (term, vote, commit)
 *   prefix 's'                   metadata of the latest snapshot (index, term, membership)
 *   prefix 't'                   truncated state: index and term of the last entry removed from
 *                                the log (by compaction or by installing a snapshot); the log holds
 *                                exactly the entries after it
 *
 * The truncated state is separate from the snapshot metadata because a host may compact to below
 * its latest snapshot (keeping a few entries for followers that lag slightly), and the core must
 * still learn term(firstIndex - 1). Absent records mean the group is empty: hard state
 * {0, 0, 0}, snapshot {0, 0, no members}, truncated {0, 0}.
 *
 * Values. Each record starts with a format version byte (currently 1) so a later version can
 * change the layout of one record kind and still read the old one. Integers are big-endian.
 *
 *   entry          version u8 | term u64 | index u64 | type u8 | data (the rest of the value)
 *   hard state     version u8 | term u64 | vote u64 | commit u64
 *   snapshot meta  version u8 | index u64 | term u64 | voter count u32 | voters u64... |
 *                  learner count u32 | learners u64...
 *   truncated      version u8 | index u64 | term u64
 *
 * The entry repeats its index (8 bytes) so a reader can check that the value belongs under its key.
 * Decoders reject unknown versions, unknown entry types and trailing bytes with an AtollError
 * (ByteReader's INVALID_ARGUMENT); the store turns that into a corruption report.
 */
import assert from 'node:assert/strict';
import { ByteReader, ByteWriter } from '../../storage/byte-codec.js';
import { concatBytes, encodeUint64BE, prefixRange } from '../../storage/bytes.js';
import { partitionKeyPrefix } from '../../storage/keyspace.js';
import { EntryType, type Entry, type HardState, type SnapshotMeta, type VoteFloor } from '../../raft/types.js';

export const RAFT_LOG_FORMAT_VERSION = 1;

/** The tag byte after the group prefix, one per record kind (ASCII, to read well in a hex dump). */
export const raftLogKeyTags = Object.freeze({
  entry: 0x65, // 'e'
  hardState: 0x68, // 'h'
  snapshotMeta: 0x73, // 's'
  truncatedState: 0x74, // 't'
  voteFloor: 0x76, // 'v'
});

/** Index and term of the last entry no longer in the log; the log holds (index, lastIndex]. */
export interface TruncatedState {
  readonly index: number;
  readonly term: number;
}

/** The keys of one group. Built once per group: they are used on every write. */
export class RaftLogKeys {
  readonly prefix: Uint8Array;
  readonly hardState: Uint8Array;
  readonly snapshotMeta: Uint8Array;
  readonly truncatedState: Uint8Array;
  /** A replica opened empty for a move: the log position a log must reach before it votes for it (RaftConfig.voteFloor). */
  readonly voteFloor: Uint8Array;
  private readonly entryPrefix: Uint8Array;

  constructor(readonly groupId: number) {
    this.prefix = partitionKeyPrefix('raft', groupId);
    this.hardState = concatBytes(this.prefix, Uint8Array.of(raftLogKeyTags.hardState));
    this.snapshotMeta = concatBytes(this.prefix, Uint8Array.of(raftLogKeyTags.snapshotMeta));
    this.truncatedState = concatBytes(this.prefix, Uint8Array.of(raftLogKeyTags.truncatedState));
    this.voteFloor = concatBytes(this.prefix, Uint8Array.of(raftLogKeyTags.voteFloor));
    this.entryPrefix = concatBytes(this.prefix, Uint8Array.of(raftLogKeyTags.entry));
  }

  entry(index: number): Uint8Array {
    return concatBytes(this.entryPrefix, encodeUint64BE(index));
  }

  /** Every key of the group: what a host deletes (deleteRange) when the replica is removed. */
  groupRange(): { gte: Uint8Array; lt?: Uint8Array } {
    return prefixRange(this.prefix);
  }

  /**
   * What a stored key under this group's prefix is. `undefined` for a key of another group or an
   * unknown tag, which load() reports as corruption.
   */
  classify(key: Uint8Array): { kind: 'entry'; index: number } | { kind: 'hardState' | 'snapshotMeta' | 'truncatedState' | 'voteFloor' } | undefined {
    const prefixLength = this.prefix.length;
    if (key.length <= prefixLength) return undefined;
    for (let offset = 0; offset < prefixLength; offset++) if (key[offset] !== this.prefix[offset]) return undefined;
    const tag = key[prefixLength];
    const bodyLength = key.length - prefixLength - 1;
    if (tag === raftLogKeyTags.entry && bodyLength === 8) {
      const index = new DataView(key.buffer, key.byteOffset, key.byteLength).getBigUint64(prefixLength + 1, false);
      return index <= BigInt(Number.MAX_SAFE_INTEGER) ? { kind: 'entry', index: Number(index) } : undefined;
    }
    if (bodyLength !== 0) return undefined;
    if (tag === raftLogKeyTags.hardState) return { kind: 'hardState' };
    if (tag === raftLogKeyTags.snapshotMeta) return { kind: 'snapshotMeta' };
    if (tag === raftLogKeyTags.truncatedState) return { kind: 'truncatedState' };
    if (tag === raftLogKeyTags.voteFloor) return { kind: 'voteFloor' };
    return undefined;
  }
}

const versionBytes = 1;
const uint64Bytes = 8;
const entryHeaderBytes = versionBytes + uint64Bytes + uint64Bytes + 1;

export function encodeEntry(entry: Entry): Uint8Array {
  if (!(entry.type === EntryType.Normal || entry.type === EntryType.ConfChange)) assert.fail(`unknown entry type ${entry.type}`);
  return new ByteWriter(entryHeaderBytes + entry.data.length)
    .uint8(RAFT_LOG_FORMAT_VERSION)
    .uint64(entry.term)
    .uint64(entry.index)
    .uint8(entry.type)
    .raw(entry.data)
    .finish();
}

export function decodeEntry(value: Uint8Array): Entry {
  const reader = openRecord(value, 'raft log entry');
  const term = reader.uint64();
  const index = reader.uint64();
  const type = reader.uint8();
  if (type !== EntryType.Normal && type !== EntryType.ConfChange) throw reader.malformed(`unknown entry type ${type}`);
  const data = reader.raw(reader.remaining);
  reader.finish();
  return { term, index, type, data };
}

export function encodeHardState(hardState: HardState): Uint8Array {
  return new ByteWriter(versionBytes + 3 * uint64Bytes)
    .uint8(RAFT_LOG_FORMAT_VERSION)
    .uint64(hardState.term)
    .uint64(hardState.vote)
    .uint64(hardState.commit)
    .finish();
}

export function decodeHardState(value: Uint8Array): HardState {
  const reader = openRecord(value, 'raft hard state');
  const hardState = { term: reader.uint64(), vote: reader.uint64(), commit: reader.uint64() };
  reader.finish();
  return hardState;
}

export function encodeSnapshotMeta(meta: SnapshotMeta): Uint8Array {
  const { voters, learners } = meta.confState;
  const writer = new ByteWriter(versionBytes + 2 * uint64Bytes + 8 + (voters.length + learners.length) * uint64Bytes)
    .uint8(RAFT_LOG_FORMAT_VERSION)
    .uint64(meta.index)
    .uint64(meta.term);
  writeNodeIds(writer, voters);
  writeNodeIds(writer, learners);
  return writer.finish();
}

export function decodeSnapshotMeta(value: Uint8Array): SnapshotMeta {
  const reader = openRecord(value, 'raft snapshot metadata');
  const index = reader.uint64();
  const term = reader.uint64();
  const voters = readNodeIds(reader);
  const learners = readNodeIds(reader);
  reader.finish();
  return { index, term, confState: { voters, learners } };
}

export function encodeTruncatedState(truncated: TruncatedState): Uint8Array {
  return new ByteWriter(versionBytes + 2 * uint64Bytes)
    .uint8(RAFT_LOG_FORMAT_VERSION)
    .uint64(truncated.index)
    .uint64(truncated.term)
    .finish();
}

export function decodeTruncatedState(value: Uint8Array): TruncatedState {
  const reader = openRecord(value, 'raft truncated state');
  const truncated = { index: reader.uint64(), term: reader.uint64() };
  reader.finish();
  return truncated;
}

export function encodeVoteFloor(floor: VoteFloor): Uint8Array {
  return new ByteWriter(versionBytes + 2 * uint64Bytes).uint8(RAFT_LOG_FORMAT_VERSION).uint64(floor.term).uint64(floor.index).finish();
}

export function decodeVoteFloor(value: Uint8Array): VoteFloor {
  const reader = openRecord(value, 'raft vote floor');
  const floor = { term: reader.uint64(), index: reader.uint64() };
  reader.finish();
  return floor;
}

function openRecord(value: Uint8Array, what: string): ByteReader {
  const reader = new ByteReader(value, what);
  const version = reader.uint8();
  if (version !== RAFT_LOG_FORMAT_VERSION) throw reader.malformed(`unknown format version ${version}`);
  return reader;
}

function writeNodeIds(writer: ByteWriter, ids: readonly number[]): void {
  writer.uint32(ids.length);
  for (const id of ids) writer.uint64(id);
}

function readNodeIds(reader: ByteReader): number[] {
  const count = reader.uint32();
  // Each id takes 8 bytes: a count the value cannot hold is corruption, not a reason to allocate.
  if (count * uint64Bytes > reader.remaining) throw reader.malformed(`node id count ${count} exceeds the record`);
  const ids: number[] = [];
  for (let i = 0; i < count; i++) ids.push(reader.uint64());
  return ids;
}
