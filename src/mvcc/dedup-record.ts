/**
 * The stored form of one deduplicated result: the value of a dedup queue entry (key-layout.ts,
 * P 'q' uint64BE(index)). A retry of the request gets exactly this result back, so it keeps
 * everything ApplyResult reports except what belongs to the retrying entry (its index).
 *
 *   entry    = formatVersion uint8 (2), requestId text, createdBeforeMs u64, result
 *              (format version 1, still read: no createdBeforeMs, which then counts as 0)
 *   createdBeforeMs = the newest creation time among the timestamped request ids (request-id.ts)
 *              recorded before this entry, by apply order; 0 when none. The entry that is oldest
 *              in the window thus carries the partition's expiry mark (dedup-table.ts).
 *   result   = revision u64, flags uint8 (1 applied, 2 error, 4 note), [error], count uint32, count × write,
 *              [note bytes]
 *   error    = code text, message text, details text (JSON, bigints as decimal text; "" for none)
 *   write    = type uint8 (1 put, 2 delete, 3 increment, 4 extend), key text, flags uint8,
 *              [current version], [previous version], [counter int64]
 *              flags: 1 conditionHeld, 2 current, 4 previous, 8 previous is null (absent key),
 *                     16 deleted is reported, 32 deleted, 64 counter
 *   version  = flags uint8 (1 expiry), value bytes, createRevision u64, modRevision u64,
 *              version u64, [expiresAtMs u64]
 *
 * A version's key is not stored: it is always the write's key (asserted when encoding).
 *
 * Decoding checks everything a snapshot from another node could get wrong and throws
 * INVALID_ARGUMENT (ByteReader's malformed) for bad bytes; the store asserts instead when the
 * bytes come from its own engine, where they mean corruption.
 */
import assert from 'node:assert/strict';
import { AtollError, atollErrorCodes, type AtollErrorCode } from '../errors.js';
import { ByteReader, ByteWriter } from '../storage/byte-codec.js';
import type { KeyVersion, WriteOp, WriteResult } from './commands.js';
import { validateRequestId } from './validate-command.js';

/** The version this code writes; it reads 1 and 2. */
const formatVersion = 2;

const resultFlags = { applied: 1, error: 2, note: 4 };
const writeFlags = { conditionHeld: 1, current: 2, previous: 4, previousNull: 8, deletedReported: 16, deleted: 32, counter: 64 };
const versionFlags = { expiry: 1 };
const writeTypes: readonly WriteOp['type'][] = ['put', 'delete', 'increment', 'extend'];

/** What a retry of a recorded request gets back. */
export interface RecordedResult {
  readonly revision: number;
  readonly applied: boolean;
  readonly error?: AtollError;
  readonly writes: WriteResult[];
  /** A transaction's note (TxnCommand.note). */
  readonly note?: Uint8Array;
}

export interface DedupEntry {
  readonly requestId: string;
  /** The newest creation time among timestamped ids recorded before this entry (0: none). */
  readonly createdBeforeMs: number;
  readonly result: RecordedResult;
}

export function encodeDedupEntry(entry: DedupEntry): Uint8Array {
  const writer = new ByteWriter();
  writer.uint8(formatVersion).text(entry.requestId).uint64(entry.createdBeforeMs);
  const { result } = entry;
  writer.uint64(result.revision);
  writer.uint8(
    (result.applied ? resultFlags.applied : 0) | (result.error !== undefined ? resultFlags.error : 0) | (result.note !== undefined ? resultFlags.note : 0),
  );
  if (result.error !== undefined) writeError(writer, result.error);
  writer.uint32(result.writes.length);
  for (const write of result.writes) writeWrite(writer, write);
  if (result.note !== undefined) writer.bytes(result.note);
  return writer.finish();
}

function writeError(writer: ByteWriter, error: AtollError): void {
  writer.text(error.code).text(error.message);
  writer.text(error.details === undefined ? '' : JSON.stringify(error.details, jsonBigint));
}

/** JSON has no bigint: details carry them as decimal text, as the errors that build them do. */
function jsonBigint(_name: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

function writeWrite(writer: ByteWriter, write: WriteResult): void {
  let flags = write.conditionHeld ? writeFlags.conditionHeld : 0;
  if (write.current !== undefined) flags |= writeFlags.current;
  if (write.previous !== undefined) flags |= write.previous === null ? writeFlags.previousNull : writeFlags.previous;
  if (write.deleted !== undefined) flags |= writeFlags.deletedReported | (write.deleted ? writeFlags.deleted : 0);
  if (write.counter !== undefined) flags |= writeFlags.counter;
  writer.uint8(writeTypes.indexOf(write.type) + 1).text(write.key).uint8(flags);
  if (write.current !== undefined) writeVersion(writer, write.key, write.current);
  if (write.previous !== undefined && write.previous !== null) writeVersion(writer, write.key, write.previous);
  if (write.counter !== undefined) writer.int64(write.counter);
}

function writeVersion(writer: ByteWriter, key: string, version: KeyVersion): void {
  assert.equal(version.key, key, "a write result's versions belong to its key");
  writer.uint8(version.expiresAtMs === undefined ? 0 : versionFlags.expiry);
  writer.bytes(version.value).uint64(version.createRevision).uint64(version.modRevision).uint64(version.version);
  if (version.expiresAtMs !== undefined) writer.uint64(version.expiresAtMs);
}

/** Decodes an entry; throws INVALID_ARGUMENT for malformed bytes. */
export function decodeDedupEntry(bytes: Uint8Array): DedupEntry {
  const reader = new ByteReader(bytes, 'dedup entry');
  const { requestId, createdBeforeMs } = readEntryHead(reader);
  const revision = reader.uint64();
  const flags = reader.uint8();
  checkFlags(reader, flags, resultFlags);
  const error = (flags & resultFlags.error) !== 0 ? readError(reader) : undefined;
  const count = reader.uint32();
  const writes: WriteResult[] = [];
  // Each write takes at least 6 bytes, so a malformed count fails on running out of input.
  for (let index = 0; index < count; index++) writes.push(readWrite(reader));
  const note = (flags & resultFlags.note) !== 0 ? reader.bytes() : undefined;
  reader.finish();
  const applied = (flags & resultFlags.applied) !== 0;
  return {
    requestId,
    createdBeforeMs,
    result: { revision, applied, writes, ...(error !== undefined && { error }), ...(note !== undefined && { note }) },
  };
}

/** Only the request id of an entry, without decoding its result (for removing evicted entries). */
export function readDedupEntryRequestId(bytes: Uint8Array): string {
  return readEntryHead(new ByteReader(bytes, 'dedup entry')).requestId;
}

/** Only the request id and createdBeforeMs of an entry, without decoding its result. */
export function readDedupEntryHead(bytes: Uint8Array): { readonly requestId: string; readonly createdBeforeMs: number } {
  return readEntryHead(new ByteReader(bytes, 'dedup entry'));
}

function readEntryHead(reader: ByteReader): { requestId: string; createdBeforeMs: number } {
  const version = reader.uint8();
  if (version !== 1 && version !== formatVersion) throw reader.malformed(`unknown dedup entry format version ${version}`);
  const requestId = reader.text();
  try {
    validateRequestId(requestId);
  } catch {
    throw reader.malformed('invalid request id');
  }
  return { requestId, createdBeforeMs: version === 1 ? 0 : reader.uint64() };
}

function checkFlags(reader: ByteReader, flags: number, known: Record<string, number>): void {
  const allKnown = Object.values(known).reduce((all, flag) => all | flag, 0);
  if ((flags & ~allKnown) !== 0) throw reader.malformed(`unknown flags ${flags}`);
}

function readError(reader: ByteReader): AtollError {
  const code = reader.text();
  if (!(atollErrorCodes as readonly string[]).includes(code)) throw reader.malformed(`unknown error code ${code}`);
  const message = reader.text();
  const detailsText = reader.text();
  if (detailsText === '') return new AtollError(code as AtollErrorCode, message);
  let details: unknown;
  try {
    details = JSON.parse(detailsText);
  } catch {
    throw reader.malformed('error details are not JSON');
  }
  if (typeof details !== 'object' || details === null || Array.isArray(details)) throw reader.malformed('error details are not an object');
  return new AtollError(code as AtollErrorCode, message, details as Record<string, unknown>);
}

function readWrite(reader: ByteReader): WriteResult {
  const type = writeTypes[reader.uint8() - 1];
  if (type === undefined) throw reader.malformed('unknown write type');
  const key = reader.text();
  const flags = reader.uint8();
  checkFlags(reader, flags, writeFlags);
  if ((flags & writeFlags.previous) !== 0 && (flags & writeFlags.previousNull) !== 0) throw reader.malformed('previous is both present and null');
  if ((flags & writeFlags.deleted) !== 0 && (flags & writeFlags.deletedReported) === 0) throw reader.malformed('deleted without its flag');
  const current = (flags & writeFlags.current) !== 0 ? readVersion(reader, key) : undefined;
  const previous =
    (flags & writeFlags.previous) !== 0 ? readVersion(reader, key) : (flags & writeFlags.previousNull) !== 0 ? null : undefined;
  const counter = (flags & writeFlags.counter) !== 0 ? reader.int64() : undefined;
  return {
    type,
    key,
    conditionHeld: (flags & writeFlags.conditionHeld) !== 0,
    ...(current !== undefined && { current }),
    ...(previous !== undefined && { previous }),
    ...((flags & writeFlags.deletedReported) !== 0 && { deleted: (flags & writeFlags.deleted) !== 0 }),
    ...(counter !== undefined && { counter }),
  };
}

function readVersion(reader: ByteReader, key: string): KeyVersion {
  const flags = reader.uint8();
  checkFlags(reader, flags, versionFlags);
  const value = reader.bytes();
  const createRevision = reader.uint64();
  const modRevision = reader.uint64();
  const version = reader.uint64();
  const base = { key, value, createRevision, modRevision, version };
  return (flags & versionFlags.expiry) !== 0 ? { ...base, expiresAtMs: reader.uint64() } : base;
}
