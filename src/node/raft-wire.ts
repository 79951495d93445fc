/**
 * Binary form of batched Raft messages between two nodes: one frame carries messages for many
 * groups (partitions), so the node loop sends one frame per peer per iteration. Decoding checks
 * every field; a malformed frame is an operating error (a bad peer), never a crash.
 *
 * Frame: version u8 | count u32 | count x (group u32 | message). A frame of no messages is the
 * node heartbeat (liveness.ts): it only says the sending node is alive.
 * Message: type u8 | from u32 | to u32 | term u64 | presence u16 | present fields in bit order.
 * Node-level batches of commit notices and acknowledgements (replica/node-batch.ts; codes BATCH_COMMITS,
 * BATCH_ACKS, sent only when the node coalesces; group 0) and snapshot transfer items
 * (snapshot-transfer.ts) travel in the same frames, outside any Raft message, under their own type
 * codes (TRANSFER_CHUNK, TRANSFER_ACK):
 *   chunk: code u8 | from u32 | to u32 | term u64 | index u64 | snapTerm u64 | digest (32) |
 *          seq u32 | last u8 | data (u32 length + bytes)
 *   ack:   code u8 | from u32 | to u32 | term u64 | index u64 | snapTerm u64 | digest (32) |
 *          next u32 | refused u8
 */
import { AtollError } from '../errors.js';
import { ByteReader, ByteWriter } from '../storage/byte-codec.js';
import { EntryType, type Entry, type Message, type MessageType, type SnapshotMeta } from '../raft/types.js';

const FRAME_VERSION = 1;

const MESSAGE_TYPES: readonly MessageType[] = [
  'app',
  'appResp',
  'vote',
  'voteResp',
  'preVote',
  'preVoteResp',
  'heartbeat',
  'heartbeatResp',
  'snap',
  'snapResp',
  'timeoutNow',
  'readIndex',
  'readIndexResp',
  'commit',
];
const TYPE_CODES = new Map(MESSAGE_TYPES.map((type, code) => [type, code]));

const enum Field {
  LogTerm = 1 << 0,
  Index = 1 << 1,
  Entries = 1 << 2,
  Commit = 1 << 3,
  Reject = 1 << 4,
  RejectHint = 1 << 5,
  Snapshot = 1 << 6,
  Chunk = 1 << 7,
  Offset = 1 << 8,
  ReadSeq = 1 << 9,
  LeaseTick = 1 << 10,
  Quiesce = 1 << 11,
  Force = 1 << 12,
  Context = 1 << 13,
  CommitOnly = 1 << 14,
}

/** One item of a frame: a Raft message for a group, a snapshot transfer item (below), or a node-level batch (replica/node-batch.ts). */
export type GroupMessage = RaftGroupMessage | TransferGroupMessage | BatchGroupMessage;

export interface RaftGroupMessage {
  readonly group: number;
  readonly message: Message;
  readonly transfer?: undefined;
  readonly batch?: undefined;
}

export interface TransferGroupMessage {
  readonly group: number;
  readonly transfer: SnapshotTransferItem;
  readonly message?: undefined;
  readonly batch?: undefined;
}

/** Many groups' commit notices or acknowledgements to one peer (replica/node-batch.ts); `group` is 0. */
export interface BatchGroupMessage {
  readonly group: number;
  readonly batch: NodeBatch;
  readonly message?: undefined;
  readonly transfer?: undefined;
}

/** What names one snapshot transfer: its leader and term, the snapshot, and its payload digest. */
export interface TransferId {
  readonly from: number;
  readonly to: number;
  /** The leader's term when it sent the item. */
  readonly term: number;
  /** The snapshot's index and term (its Raft metadata). */
  readonly index: number;
  readonly snapTerm: number;
  /** SHA-256 of the payload (snapshot-payload.ts PayloadDigest), checked after the last chunk. */
  readonly digest: Uint8Array;
}

/** One chunk of a snapshot's payload, leader to follower (one MVCC export chunk). */
export interface SnapshotChunkItem extends TransferId {
  readonly kind: 'chunk';
  /** 0, 1, 2, ...: the chunk's place in the payload. */
  readonly seq: number;
  readonly last: boolean;
  readonly data: Uint8Array;
}

/** The follower's answer: every chunk below `next` is written (or `refused`: start again at next). */
export interface SnapshotAckItem extends TransferId {
  readonly kind: 'ack';
  readonly next: number;
  readonly refused: boolean;
}

export type SnapshotTransferItem = SnapshotChunkItem | SnapshotAckItem;

const TRANSFER_CHUNK = 0x40;
const TRANSFER_ACK = 0x41;
export const TRANSFER_DIGEST_BYTES = 32;

/** Node-level batches (replica/node-batch.ts): many groups' commit notices or acknowledgements to one peer. */
export type NodeBatchKind = 'commits' | 'acks';

export interface NodeBatchItem {
  readonly group: number;
  readonly term: number;
  readonly index: number;
  /** 'commits' only: the leader's term of the entry at `index`. */
  readonly logTerm: number;
  readonly commit: number;
}

export interface NodeBatch {
  readonly kind: NodeBatchKind;
  readonly from: number;
  readonly to: number;
  readonly items: readonly NodeBatchItem[];
}

const BATCH_COMMITS = 0x42;
const BATCH_ACKS = 0x43;
/** Items one batch may carry (a node hosts far fewer groups; a larger count is a forged frame). */
const MAX_BATCH_ITEMS = 1 << 20;

/** code u8 | from u32 | to u32 | count u32 | count x (group u32 | term u64 | index u64 | [logTerm u64: commits] | commit u64). */
function writeBatch(writer: ByteWriter, batch: NodeBatch): void {
  const commits = batch.kind === 'commits';
  writer.uint8(commits ? BATCH_COMMITS : BATCH_ACKS).uint32(batch.from).uint32(batch.to).uint32(batch.items.length);
  for (const item of batch.items) {
    writer.uint32(item.group).uint64(item.term).uint64(item.index);
    if (commits) writer.uint64(item.logTerm);
    writer.uint64(item.commit);
  }
}

function readBatch(reader: ByteReader, code: number): NodeBatch {
  const commits = code === BATCH_COMMITS;
  const from = reader.uint32();
  const to = reader.uint32();
  const count = reader.uint32();
  if (count === 0 || count > MAX_BATCH_ITEMS) throw new AtollError('INVALID_ARGUMENT', `a node batch of ${count} items`);
  const items: NodeBatchItem[] = [];
  for (let i = 0; i < count; i++) {
    const group = reader.uint32();
    const term = reader.uint64();
    const index = reader.uint64();
    const logTerm = commits ? reader.uint64() : 0;
    items.push({ group, term, index, logTerm, commit: reader.uint64() });
  }
  return { kind: commits ? 'commits' : 'acks', from, to, items };
}

export function encodeRaftFrame(messages: readonly GroupMessage[]): Uint8Array {
  const writer = new ByteWriter(64 + messages.length * 64);
  writer.uint8(FRAME_VERSION).uint32(messages.length);
  for (const item of messages) {
    writer.uint32(item.group);
    if (item.transfer !== undefined) writeTransfer(writer, item.transfer);
    else if (item.batch !== undefined) writeBatch(writer, item.batch);
    else writeMessage(writer, item.message);
  }
  return writer.finish();
}

export function decodeRaftFrame(bytes: Uint8Array): GroupMessage[] {
  const reader = new ByteReader(bytes, 'raft frame');
  const version = reader.uint8();
  if (version !== FRAME_VERSION) throw new AtollError('INVALID_ARGUMENT', `unsupported raft frame version ${version}`);
  const count = reader.uint32();
  const out: GroupMessage[] = [];
  for (let i = 0; i < count; i++) {
    const group = reader.uint32();
    const code = reader.uint8();
    if (code === TRANSFER_CHUNK || code === TRANSFER_ACK) out.push({ group, transfer: readTransfer(reader, code) });
    else if (code === BATCH_COMMITS || code === BATCH_ACKS) out.push({ group, batch: readBatch(reader, code) });
    else out.push({ group, message: readMessage(reader, code) });
  }
  reader.finish();
  return out;
}

function writeMessage(writer: ByteWriter, m: Message): void {
  const code = TYPE_CODES.get(m.type);
  if (code === undefined) throw new AtollError('INTERNAL', `unknown raft message type ${m.type}`);
  let presence = 0;
  if (m.logTerm !== undefined) presence |= Field.LogTerm;
  if (m.index !== undefined) presence |= Field.Index;
  if (m.entries !== undefined && m.entries.length > 0) presence |= Field.Entries;
  if (m.commit !== undefined) presence |= Field.Commit;
  if (m.reject) presence |= Field.Reject;
  if (m.rejectHint !== undefined) presence |= Field.RejectHint;
  if (m.snapshot !== undefined) presence |= Field.Snapshot;
  if (m.chunk !== undefined) presence |= Field.Chunk;
  if (m.offset !== undefined) presence |= Field.Offset;
  if (m.readSeq !== undefined) presence |= Field.ReadSeq;
  if (m.leaseTick !== undefined) presence |= Field.LeaseTick;
  if (m.quiesce !== undefined) presence |= Field.Quiesce;
  if (m.force) presence |= Field.Force;
  if (m.commitOnly) presence |= Field.CommitOnly;
  if (m.context !== undefined) presence |= Field.Context;
  writer.uint8(code).uint32(m.from).uint32(m.to).uint64(m.term).uint16(presence);
  if (presence & Field.LogTerm) writer.uint64(m.logTerm as number);
  if (presence & Field.Index) writer.uint64(m.index as number);
  if (presence & Field.Entries) {
    const entries = m.entries as readonly Entry[];
    writer.uint32(entries.length);
    for (const entry of entries) writer.uint64(entry.term).uint64(entry.index).uint8(entry.type).bytes(entry.data);
  }
  if (presence & Field.Commit) writer.uint64(m.commit as number);
  if (presence & Field.RejectHint) writer.uint64(m.rejectHint as number);
  if (presence & Field.Snapshot) writeSnapshotMeta(writer, m.snapshot as SnapshotMeta);
  if (presence & Field.Chunk) {
    const chunk = m.chunk as NonNullable<Message['chunk']>;
    writer.uint64(chunk.offset).uint8(chunk.last ? 1 : 0).bytes(chunk.data);
  }
  if (presence & Field.Offset) writer.uint64(m.offset as number);
  if (presence & Field.ReadSeq) writer.uint64(m.readSeq as number);
  // Lease ticks may be negative infinity in no message, but are plain counters: encode as u64.
  if (presence & Field.LeaseTick) writer.uint64(m.leaseTick as number);
  if (presence & Field.Quiesce) writer.uint8(m.quiesce ? 1 : 0);
  if (presence & Field.Context) writer.text(m.context as string);
}

function readMessage(reader: ByteReader, code: number): Message {
  const type = MESSAGE_TYPES[code];
  if (type === undefined) throw new AtollError('INVALID_ARGUMENT', `unknown raft message type code ${code}`);
  const from = reader.uint32();
  const to = reader.uint32();
  const term = reader.uint64();
  const presence = reader.uint16();
  const m: { -readonly [K in keyof Message]: Message[K] } = { type, from, to, term };
  if (presence & Field.LogTerm) m.logTerm = reader.uint64();
  if (presence & Field.Index) m.index = reader.uint64();
  if (presence & Field.Entries) {
    const count = reader.uint32();
    const entries: Entry[] = [];
    for (let i = 0; i < count; i++) {
      const entryTerm = reader.uint64();
      const index = reader.uint64();
      const entryType = reader.uint8();
      if (entryType !== EntryType.Normal && entryType !== EntryType.ConfChange) {
        throw new AtollError('INVALID_ARGUMENT', `unknown entry type ${entryType}`);
      }
      // A copy: the frame arrives in a buffer grpc-js may carve from a shared 8 KiB pool slab, and
      // an entry lives in the log mirror for thousands of entries, so a view would keep whole
      // slabs (and every other message in them) alive; under a long preload that was hundreds of MiB.
      entries.push({ term: entryTerm, index, type: entryType, data: new Uint8Array(reader.bytes()) });
    }
    m.entries = entries;
  }
  if (presence & Field.Commit) m.commit = reader.uint64();
  if (presence & Field.Reject) m.reject = true;
  if (presence & Field.RejectHint) m.rejectHint = reader.uint64();
  if (presence & Field.Snapshot) m.snapshot = readSnapshotMeta(reader);
  if (presence & Field.Chunk) {
    const offset = reader.uint64();
    const last = reader.uint8() === 1;
    m.chunk = { offset, last, data: reader.bytes() };
  }
  if (presence & Field.Offset) m.offset = reader.uint64();
  if (presence & Field.ReadSeq) m.readSeq = reader.uint64();
  if (presence & Field.LeaseTick) m.leaseTick = reader.uint64();
  if (presence & Field.Quiesce) m.quiesce = reader.uint8() === 1;
  if (presence & Field.Force) m.force = true;
  if (presence & Field.CommitOnly) m.commitOnly = true;
  if (presence & Field.Context) m.context = reader.text();
  return m;
}

function writeSnapshotMeta(writer: ByteWriter, meta: SnapshotMeta): void {
  writer.uint64(meta.index).uint64(meta.term);
  writer.uint32(meta.confState.voters.length);
  for (const id of meta.confState.voters) writer.uint32(id);
  writer.uint32(meta.confState.learners.length);
  for (const id of meta.confState.learners) writer.uint32(id);
}

function readSnapshotMeta(reader: ByteReader): SnapshotMeta {
  const index = reader.uint64();
  const term = reader.uint64();
  const voters: number[] = [];
  for (let i = reader.uint32(); i > 0; i--) voters.push(reader.uint32());
  const learners: number[] = [];
  for (let i = reader.uint32(); i > 0; i--) learners.push(reader.uint32());
  return { index, term, confState: { voters, learners } };
}

function writeTransfer(writer: ByteWriter, item: SnapshotTransferItem): void {
  if (item.digest.length !== TRANSFER_DIGEST_BYTES) throw new AtollError('INTERNAL', 'a snapshot transfer digest must be 32 bytes');
  writer.uint8(item.kind === 'chunk' ? TRANSFER_CHUNK : TRANSFER_ACK).uint32(item.from).uint32(item.to).uint64(item.term);
  writer.uint64(item.index).uint64(item.snapTerm).raw(item.digest);
  if (item.kind === 'chunk') writer.uint32(item.seq).uint8(item.last ? 1 : 0).bytes(item.data);
  else writer.uint32(item.next).uint8(item.refused ? 1 : 0);
}

function readTransfer(reader: ByteReader, code: number): SnapshotTransferItem {
  const from = reader.uint32();
  const to = reader.uint32();
  const term = reader.uint64();
  const index = reader.uint64();
  const snapTerm = reader.uint64();
  // Copies (raw slices; the data below too), like entries: the frame may be a shared pool slab.
  const digest = reader.raw(TRANSFER_DIGEST_BYTES);
  const id = { from, to, term, index, snapTerm, digest };
  if (code === TRANSFER_CHUNK) {
    const seq = reader.uint32();
    const last = reader.uint8() === 1;
    return { kind: 'chunk', ...id, seq, last, data: new Uint8Array(reader.bytes()) };
  }
  const next = reader.uint32();
  return { kind: 'ack', ...id, next, refused: reader.uint8() === 1 };
}
