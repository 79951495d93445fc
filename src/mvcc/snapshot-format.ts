/**
 * The chunks of a partition snapshot, as MvccStore.exportSnapshot yields them and
 * importSnapshot takes them. A snapshot is a header chunk, any number of entry chunks, then a
 * trailer chunk:
 *
 *   chunk   = formatVersion uint8 (3, 2 or 1), kind uint8, body
 *   header  kind 1: appliedIndex u64, revision u64, compactedRevision u64,
 *                   [appliedTimeMs u64: format version 3 on]
 *   entries kind 2: count uint32, count × (key bytes, value bytes)
 *   trailer kind 3: entryCount u64 (all entries in all entry chunks, to detect truncation)
 *
 * Entry keys are relative to the partition prefix, so a snapshot can be installed under another
 * prefix. The header comes first so the receiver knows the snapshot's applied index before it
 * reads any data; the importer still writes the meta records last.
 *
 * Versions. Every chunk of one snapshot carries the same format version.
 * - 1: entries are versions only ('v' keys, version-record.ts).
 * - 2 (written since request deduplication): entries are also the live dedup queue entries
 *   ('q' keys, dedup-record.ts), in key order, so before the versions. The dedup records ('r'
 *   keys) are not sent: the importer rebuilds them from the queue entries, which name their ids.
 *   The chunk layout is unchanged; the version tells an older node, which would reject the 'q'
 *   entries, why it cannot install the snapshot. Version 1 snapshots are still accepted.
 *   The queue entries carry their own format version (dedup-record.ts): 2 since request id expiry
 *   (each stores createdBeforeMs, from which the importer rebuilds the expiry mark); a node that
 *   reads only entry version 1 refuses such a snapshot as malformed.
 * - 3 (written since the replicated partition clock): the header also carries the partition's
 *   applied time (MvccStore.appliedTimeMs), so the clock survives a snapshot install. A version 1
 *   or 2 header has none: the importer starts the clock at 0 (the next entry sets it).
 * - 4 (written since leases): entries also carry the lease records ('l' keys, lease-table.ts),
 *   in key order, so first. The chunk layout is unchanged; a version 1 to 3 snapshot has no
 *   leases and is still accepted (the partition then has none).
 * - 5 (written only by a partition whose range is data, i.e. after a split; issue 19): the
 *   header also carries the partition's hash range, start u64 and end u64, after the applied
 *   time, so a replica that installs the snapshot owns the same range. A partition that never
 *   split still writes version 4 (older nodes keep reading its snapshots).
 * - 6 (written only by a partition frozen for a merge, merge-entry.ts): the header carries the
 *   range (as in 5) and then the freeze, into u64 (the left partition's id) and index u64 (the
 *   freeze entry's), so a replica that installs a snapshot taken after the freeze is frozen too.
 */
import { ByteReader, ByteWriter } from '../storage/byte-codec.js';

/** The version this code writes. */
export const snapshotFormatVersion = 4;
/** The version a partition whose range is data writes (its header carries the range). */
export const rangeSnapshotFormatVersion = 5;
/** The version a partition frozen for a merge writes (its header carries the range and the freeze). */
export const freezeSnapshotFormatVersion = 6;
/** The versions this code reads. */
const readableFormatVersions: readonly number[] = [1, 2, 3, 4, 5, 6];
const formatVersion = snapshotFormatVersion;
const kinds = { header: 1, entries: 2, trailer: 3 } as const;

export interface SnapshotHeader {
  readonly appliedIndex: number;
  readonly revision: number;
  readonly compactedRevision: number;
  /**
   * The partition's replicated clock at appliedIndex (Unix epoch ms): the time of the last entry
   * applied, never lower than any before it. Absent (read as 0) in format versions 1 and 2.
   */
  readonly appliedTimeMs?: number;
  /** The partition's hash range [start, end) (format version 5 on; absent: its equal-table range). */
  readonly range?: { readonly start: number; readonly end: number };
  /** The merge freeze (format version 6, which always carries the range too): frozen into `into` at `index`. */
  readonly freeze?: { readonly into: number; readonly index: number };
}

export type SnapshotChunk = { readonly formatVersion: number } & (
  | { readonly kind: 'header'; readonly header: SnapshotHeader }
  | { readonly kind: 'entries'; readonly entries: Array<[key: Uint8Array, value: Uint8Array]> }
  | { readonly kind: 'trailer'; readonly entryCount: number }
);

/** The format version of every chunk of a snapshot with this header. */
export function snapshotVersionOf(header: SnapshotHeader): number {
  if (header.freeze !== undefined) return freezeSnapshotFormatVersion;
  return header.range === undefined ? formatVersion : rangeSnapshotFormatVersion;
}

export function encodeSnapshotHeader(header: SnapshotHeader): Uint8Array {
  const writer = new ByteWriter(48)
    .uint8(snapshotVersionOf(header))
    .uint8(kinds.header)
    .uint64(header.appliedIndex)
    .uint64(header.revision)
    .uint64(header.compactedRevision)
    .uint64(header.appliedTimeMs ?? 0);
  if (header.freeze !== undefined && header.range === undefined) throw new RangeError('the snapshot of a frozen partition carries its range');
  if (header.range !== undefined) writer.uint64(header.range.start).uint64(header.range.end);
  if (header.freeze !== undefined) writer.uint64(header.freeze.into).uint64(header.freeze.index);
  return writer.finish();
}

export function encodeSnapshotTrailer(entryCount: number, version: number = formatVersion): Uint8Array {
  return new ByteWriter(16).uint8(version).uint8(kinds.trailer).uint64(entryCount).finish();
}

/** Accumulates entries into one chunk; the caller cuts it when byteLength reaches its bound. */
export class SnapshotEntriesWriter {
  private readonly entries: Array<[Uint8Array, Uint8Array]> = [];
  private bytes = 0;

  constructor(private readonly version: number = formatVersion) {}

  get count(): number {
    return this.entries.length;
  }

  get byteLength(): number {
    return this.bytes;
  }

  add(key: Uint8Array, value: Uint8Array): void {
    this.entries.push([key, value]);
    this.bytes += 8 + key.length + value.length;
  }

  finish(): Uint8Array {
    const writer = new ByteWriter(this.bytes + 8).uint8(this.version).uint8(kinds.entries).uint32(this.entries.length);
    for (const [key, value] of this.entries) writer.bytes(key).bytes(value);
    return writer.finish();
  }
}

/** Decodes one chunk; throws INVALID_ARGUMENT for malformed bytes. */
export function decodeSnapshotChunk(chunk: Uint8Array): SnapshotChunk {
  const reader = new ByteReader(chunk, 'snapshot chunk');
  const version = reader.uint8();
  if (!readableFormatVersions.includes(version)) throw reader.malformed(`unknown snapshot format version ${version}`);
  const kind = reader.uint8();
  let decoded: SnapshotChunk;
  switch (kind) {
    case kinds.header:
      decoded = {
        formatVersion: version,
        kind: 'header',
        header: {
          appliedIndex: reader.uint64(),
          revision: reader.uint64(),
          compactedRevision: reader.uint64(),
          ...(version >= 3 && { appliedTimeMs: reader.uint64() }),
          ...(version >= 5 && { range: readRange(reader) }),
          ...(version >= 6 && { freeze: readFreeze(reader) }),
        },
      };
      break;
    case kinds.entries: {
      const count = reader.uint32();
      const entries: Array<[Uint8Array, Uint8Array]> = [];
      for (let index = 0; index < count; index++) entries.push([reader.bytes(), reader.bytes()]);
      decoded = { formatVersion: version, kind: 'entries', entries };
      break;
    }
    case kinds.trailer:
      decoded = { formatVersion: version, kind: 'trailer', entryCount: reader.uint64() };
      break;
    default:
      throw reader.malformed(`unknown snapshot chunk kind ${kind}`);
  }
  reader.finish();
  return decoded;
}

/** The header of a snapshot, from its first chunk: what a Raft snapshot message needs up front. */
export function readSnapshotHeader(firstChunk: Uint8Array): SnapshotHeader {
  const decoded = decodeSnapshotChunk(firstChunk);
  if (decoded.kind !== 'header') throw new ByteReader(firstChunk, 'snapshot').malformed('the first chunk is not a header');
  return decoded.header;
}

function readFreeze(reader: ByteReader): { into: number; index: number } {
  const into = reader.uint64();
  const index = reader.uint64();
  if (!(into < 2 ** 32 && index >= 1)) throw reader.malformed(`bad merge freeze (into ${into}, index ${index})`);
  return { into, index };
}

function readRange(reader: ByteReader): { start: number; end: number } {
  const start = reader.uint64();
  const end = reader.uint64();
  if (!(start < end && end <= 2 ** 32)) throw reader.malformed(`bad partition range [${start}, ${end})`);
  return { start, end };
}
