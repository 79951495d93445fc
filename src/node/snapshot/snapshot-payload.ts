/**
 * The snapshot payload a leader sends a follower (one job: its framing and checks): the MVCC
 * export's chunks, digested chunk by chunk (PayloadDigest). The chunks themselves travel outside
 * Raft (snapshot-transfer.ts); the Raft snapshot's data is only a ticket naming them (version 3:
 * digest, chunk count, byte count). The older whole-payload framing (version 2: frameChunks,
 * unframeChunks) is kept for tools and tests that hold a snapshot in memory.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { AtollError } from '../../errors.js';
import type { MvccStore } from '../../mvcc/index.js';
import { readSnapshotHeader } from '../../mvcc/snapshot-format.js';
import type { Snapshot } from '../../raft/types.js';

/**
 * A state-machine snapshot travels as: payload version u8 (2) | SHA-256 of the rest (32 bytes) |
 * length-prefixed MVCC export chunks. The checksum and every chunk are checked before anything is
 * installed (unframeChunks, checkSnapshotPayload), so a corrupt or forged payload changes nothing.
 */
const SNAPSHOT_PAYLOAD_VERSION = 2;
const SNAPSHOT_DIGEST_BYTES = 32;

/** The framing of one chunk in a payload's body: its length, big-endian u32. */
function chunkLengthPrefix(chunk: Uint8Array): Uint8Array {
  const prefix = new Uint8Array(4);
  new DataView(prefix.buffer).setUint32(0, chunk.length, false);
  return prefix;
}

/**
 * A payload's body digest, fed chunk by chunk (an export hashes each chunk as it is read, so
 * framing a large snapshot does not hash it all in one synchronous step).
 */
export class PayloadDigest {
  private readonly hash = createHash('sha256');

  add(chunk: Uint8Array): void {
    this.hash.update(chunkLengthPrefix(chunk)).update(chunk);
  }

  digest(): Uint8Array {
    return this.hash.digest();
  }
}

/**
 * Frames chunks into one payload, copying each chunk once (a snapshot may be tens of MiB).
 * `digest`, when given, is PayloadDigest's digest of exactly these chunks.
 */
export function frameChunks(chunks: readonly Uint8Array[], digest?: Uint8Array): Uint8Array {
  const bodyStart = 1 + SNAPSHOT_DIGEST_BYTES;
  const payload = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length + 4, bodyStart));
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  let offset = bodyStart;
  for (const chunk of chunks) {
    view.setUint32(offset, chunk.length, false);
    payload.set(chunk, offset + 4);
    offset += 4 + chunk.length;
  }
  payload[0] = SNAPSHOT_PAYLOAD_VERSION;
  payload.set(digest ?? createHash('sha256').update(payload.subarray(bodyStart)).digest(), 1);
  return payload;
}

/**
 * The chunks of a snapshot payload, as views into `data` (no copies: the caller must not change
 * it); throws INVALID_ARGUMENT for a bad version, checksum or framing.
 */
export function unframeChunks(data: Uint8Array): Uint8Array[] {
  if (data.length < 1 + SNAPSHOT_DIGEST_BYTES || data[0] !== SNAPSHOT_PAYLOAD_VERSION) {
    throw new AtollError('INVALID_ARGUMENT', `malformed snapshot payload: not version ${SNAPSHOT_PAYLOAD_VERSION} or too short`);
  }
  const body = data.subarray(1 + SNAPSHOT_DIGEST_BYTES);
  const digest = createHash('sha256').update(body).digest();
  if (!timingSafeEqual(digest, data.subarray(1, 1 + SNAPSHOT_DIGEST_BYTES))) throw new AtollError('INVALID_ARGUMENT', 'malformed snapshot payload: checksum mismatch');
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const chunks: Uint8Array[] = [];
  // Each step consumes 4 bytes and a length within the body: at most body.length / 4 steps.
  for (let offset = 0; offset < body.length; ) {
    if (offset + 4 > body.length) throw new AtollError('INVALID_ARGUMENT', 'malformed snapshot payload: truncated chunk length');
    const length = view.getUint32(offset, false);
    if (offset + 4 + length > body.length) throw new AtollError('INVALID_ARGUMENT', 'malformed snapshot payload: truncated chunk');
    chunks.push(body.subarray(offset + 4, offset + 4 + length));
    offset += 4 + length;
  }
  return chunks;
}

/**
 * Why a snapshot from the leader must not be installed, or undefined: its checksum and framing,
 * that it describes the index its metadata names, and everything the store's import checks
 * (MvccStore.checkSnapshot), all before the Raft core adopts it.
 */
export function snapshotPayloadRefusal(snapshot: Snapshot, mvcc: Pick<MvccStore, 'checkSnapshot'>): string | undefined {
  const checked = checkedSnapshotChunks(snapshot, mvcc);
  return typeof checked === 'string' ? checked : undefined;
}

/** The checked chunks of a snapshot from the leader, or why it must not be installed. */
export function checkedSnapshotChunks(snapshot: Snapshot, mvcc: Pick<MvccStore, 'checkSnapshot'>): Uint8Array[] | string {
  try {
    const chunks = unframeChunks(snapshot.data);
    if (chunks.length === 0) return 'malformed snapshot payload: no chunks';
    const header = readSnapshotHeader(chunks[0] as Uint8Array);
    if (header.appliedIndex !== snapshot.meta.index) return `snapshot data is at index ${header.appliedIndex}, its metadata says ${snapshot.meta.index}`;
    mvcc.checkSnapshot(chunks);
    return chunks;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** The Raft snapshot's data when its chunks travel outside Raft (snapshot-transfer.ts). */
export interface SnapshotTicket {
  /** PayloadDigest of the chunks. */
  readonly digest: Uint8Array;
  readonly chunkCount: number;
  readonly byteCount: number;
}

const SNAPSHOT_TICKET_VERSION = 3;
const SNAPSHOT_TICKET_BYTES = 1 + SNAPSHOT_DIGEST_BYTES + 4 + 8;

/** Ticket: version u8 (3) | digest (32) | chunk count u32 | byte count u64. */
export function encodeSnapshotTicket(ticket: SnapshotTicket): Uint8Array {
  const bytes = new Uint8Array(SNAPSHOT_TICKET_BYTES);
  const view = new DataView(bytes.buffer);
  bytes[0] = SNAPSHOT_TICKET_VERSION;
  bytes.set(ticket.digest, 1);
  view.setUint32(1 + SNAPSHOT_DIGEST_BYTES, ticket.chunkCount, false);
  view.setBigUint64(5 + SNAPSHOT_DIGEST_BYTES, BigInt(ticket.byteCount), false);
  return bytes;
}

/** The ticket in a Raft snapshot's data, or undefined when it is not one (forged, or version 2). */
export function decodeSnapshotTicket(data: Uint8Array): SnapshotTicket | undefined {
  if (data.length !== SNAPSHOT_TICKET_BYTES || data[0] !== SNAPSHOT_TICKET_VERSION) return undefined;
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const byteCount = view.getBigUint64(5 + SNAPSHOT_DIGEST_BYTES, false);
  if (byteCount > BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  return { digest: data.slice(1, 1 + SNAPSHOT_DIGEST_BYTES), chunkCount: view.getUint32(1 + SNAPSHOT_DIGEST_BYTES, false), byteCount: Number(byteCount) };
}
