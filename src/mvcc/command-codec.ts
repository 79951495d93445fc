/**
 * The binary form of a command, as stored in a Raft log entry and forwarded between nodes.
 * Compact and deterministic: values are raw bytes, integers big-endian, text UTF-8 with a uint32
 * byte length, optional fields announced by a flags field so absent ones cost nothing.
 *
 *   command   = formatVersion uint8 (1), op
 *   op        = tag uint8, body
 *     put       1  flags uint16, key, value bytes, [ttlMs u64], [ifModRevision u64], [ifValue bytes]
 *                  [lease u64], [ifFence u64]
 *                  flags: 1 ttlMs, 2 keepTtl, 4 ifAbsent, 8 ifPresent, 16 ifModRevision,
 *                         32 ifValue, 64 returnPrevious, 128 lease, 256 ifFence
 *     delete    2  flags uint8, key, [ifModRevision u64], [ifValue bytes]
 *                  flags: 1 ifModRevision, 2 ifValue, 4 returnPrevious
 *     increment 3  flags uint8 (1 ttlMs), key, delta int64, [ttlMs u64]
 *     extend    4  key, ttlMs u64
 *     batch     5  count uint32, count × write op (tag and body)
 *     txn       6  snapshotRevision u64, isolation uint8 (0 snapshot, 1 serializable),
 *                  count uint32, count × key, count uint32, count × prefix text,
 *                  count uint32, count × write op, flags uint8 (1 note, 2 snapshotTimeMs),
 *                  [note bytes], [snapshotTimeMs u64]
 *     compact   7  belowRevision u64
 *     expire    8  count uint32, count × key
 *     leaseGrant  9  key, ttlMs u64
 *     leaseRevoke 10 lease u64, expired uint8 (0 or 1)
 *
 * encodeCommand runs validateCommand first, so nothing malformed is ever encoded into the log.
 * decodeCommand checks structure only (it throws INVALID_ARGUMENT for malformed bytes); limits
 * and key rules are checked by validateCommand, which apply() runs on every entry.
 */
import assert from 'node:assert/strict';
import { defaultLimits, type Limits } from '../limits.js';
import { ByteReader, ByteWriter } from '../storage/byte-codec.js';
import type { Command, TxnIsolation, WriteOp } from './commands.js';
import { validateCommand } from './validate-command.js';

const formatVersion = 1;

const tags = { put: 1, delete: 2, increment: 3, extend: 4, batch: 5, txn: 6, compact: 7, expire: 8, leaseGrant: 9, leaseRevoke: 10 } as const;
const txnFlags = { note: 1, snapshotTimeMs: 2 };

const putFlags = { ttlMs: 1, keepTtl: 2, ifAbsent: 4, ifPresent: 8, ifModRevision: 16, ifValue: 32, returnPrevious: 64, lease: 128, ifFence: 256 };
const deleteFlags = { ifModRevision: 1, ifValue: 2, returnPrevious: 4 };
const incrementFlags = { ttlMs: 1 };
const isolations: readonly TxnIsolation[] = ['snapshot', 'serializable'];

/** Encodes a command; throws the AtollError validateCommand throws for an invalid one. */
export function encodeCommand(command: Command, limits: Limits = defaultLimits): Uint8Array {
  validateCommand(command, limits);
  return encodeCheckedCommand(command);
}

/**
 * Encodes a command built from a request that passed its one validation (the node's executor, for a
 * checked operation: src/api/checked-operation.ts), where every rule of validateCommand was checked
 * before the request was routed. Anything else goes through encodeCommand.
 */
export function encodeCheckedCommand(command: Command): Uint8Array {
  const writer = new ByteWriter();
  writeCheckedCommand(writer, command);
  return writer.finish();
}

export function decodeCommand(bytes: Uint8Array): Command {
  const reader = new ByteReader(bytes, 'command');
  const version = reader.uint8();
  if (version !== formatVersion) throw reader.malformed(`unknown command format version ${version}`);
  const command = readCommand(reader);
  reader.finish();
  return command;
}

/**
 * encodeCheckedCommand's bytes, written where `writer` stands (a log entry's payload writes its
 * header first). Key text goes in with ByteWriter.text: validateCommand (or a request's one
 * validation) has rejected lone surrogates, which TextEncoder would silently replace.
 */
export function writeCheckedCommand(writer: ByteWriter, command: Command): void {
  switch (command.type) {
    case 'batch':
      writer.uint8(formatVersion).uint8(tags.batch);
      writeWrites(writer, command.writes);
      return;
    case 'txn':
      writer.uint8(formatVersion).uint8(tags.txn).uint64(command.snapshotRevision);
      writer.uint8(isolations.indexOf(command.isolation));
      writer.uint32(command.readKeys.length);
      for (const key of command.readKeys) writer.text(key);
      writer.uint32(command.readPrefixes.length);
      for (const prefix of command.readPrefixes) writer.text(prefix);
      writeWrites(writer, command.writes);
      writer.uint8((command.note === undefined ? 0 : txnFlags.note) | (command.snapshotTimeMs === undefined ? 0 : txnFlags.snapshotTimeMs));
      if (command.note !== undefined) writer.bytes(command.note);
      if (command.snapshotTimeMs !== undefined) writer.uint64(command.snapshotTimeMs);
      return;
    case 'compact':
      writer.uint8(formatVersion).uint8(tags.compact).uint64(command.belowRevision);
      return;
    case 'expire':
      writer.uint8(formatVersion).uint8(tags.expire).uint32(command.keys.length);
      for (const key of command.keys) writer.text(key);
      return;
    case 'leaseGrant':
      writer.uint8(formatVersion).uint8(tags.leaseGrant);
      writer.text(command.key);
      writer.uint64(command.ttlMs);
      return;
    case 'leaseRevoke':
      writer.uint8(formatVersion).uint8(tags.leaseRevoke).uint64(command.lease).uint8(command.expired ? 1 : 0);
      return;
    default:
      writeCheckedWrite(writer, command, true);
  }
}

function writeWrites(writer: ByteWriter, writes: WriteOp[]): void {
  writer.uint32(writes.length);
  for (const write of writes) writeCheckedWrite(writer, write);
}

/**
 * A write's bytes, written where `writer` stands. `whole`: the write is the whole command (a put's,
 * a delete's, an increment's or an extend's), so the format version comes first: the bytes
 * writeCheckedCommand writes for it, which a log entry writes after its header without the
 * command's dispatch (encodeCommandEntry, src/node/replica/partition-replica.ts).
 */
export function writeCheckedWrite(writer: ByteWriter, op: WriteOp, whole = false): void {
  if (whole) writer.uint8(formatVersion);
  switch (op.type) {
    case 'put': {
      let flags = 0;
      if (op.ttlMs !== undefined) flags |= putFlags.ttlMs;
      if (op.keepTtl === true) flags |= putFlags.keepTtl;
      if (op.ifAbsent === true) flags |= putFlags.ifAbsent;
      if (op.ifPresent === true) flags |= putFlags.ifPresent;
      if (op.ifModRevision !== undefined) flags |= putFlags.ifModRevision;
      if (op.ifValue !== undefined) flags |= putFlags.ifValue;
      if (op.returnPrevious === true) flags |= putFlags.returnPrevious;
      if (op.lease !== undefined) flags |= putFlags.lease;
      if (op.ifFence !== undefined) flags |= putFlags.ifFence;
      writer.uint8(tags.put).uint16(flags);
      writer.text(op.key);
      writer.bytes(op.value);
      if (op.ttlMs !== undefined) writer.uint64(op.ttlMs);
      if (op.ifModRevision !== undefined) writer.uint64(op.ifModRevision);
      if (op.ifValue !== undefined) writer.bytes(op.ifValue);
      if (op.lease !== undefined) writer.uint64(op.lease);
      if (op.ifFence !== undefined) writer.uint64(op.ifFence);
      return;
    }
    case 'delete': {
      let flags = 0;
      if (op.ifModRevision !== undefined) flags |= deleteFlags.ifModRevision;
      if (op.ifValue !== undefined) flags |= deleteFlags.ifValue;
      if (op.returnPrevious === true) flags |= deleteFlags.returnPrevious;
      writer.uint8(tags.delete).uint8(flags);
      writer.text(op.key);
      if (op.ifModRevision !== undefined) writer.uint64(op.ifModRevision);
      if (op.ifValue !== undefined) writer.bytes(op.ifValue);
      return;
    }
    case 'increment':
      writer.uint8(tags.increment).uint8(op.ttlMs === undefined ? 0 : incrementFlags.ttlMs);
      writer.text(op.key);
      writer.int64(op.delta);
      if (op.ttlMs !== undefined) writer.uint64(op.ttlMs);
      return;
    case 'extend':
      writer.uint8(tags.extend);
      writer.text(op.key);
      writer.uint64(op.ttlMs);
      return;
    default:
      assert.fail(`cannot encode write op ${(op as { type: unknown }).type}`);
  }
}

function readCommand(reader: ByteReader): Command {
  const tag = reader.uint8();
  switch (tag) {
    case tags.batch:
      return { type: 'batch', writes: readWrites(reader) };
    case tags.txn: {
      const snapshotRevision = reader.uint64();
      const isolation = isolations[reader.uint8()];
      if (isolation === undefined) throw reader.malformed('unknown transaction isolation');
      const readKeys = readTexts(reader);
      const readPrefixes = readTexts(reader);
      const writes = readWrites(reader);
      const flags = reader.uint8();
      checkFlags(reader, flags, txnFlags);
      const base = { type: 'txn' as const, snapshotRevision, isolation, readKeys, readPrefixes, writes };
      const note = (flags & txnFlags.note) !== 0 ? reader.bytes() : undefined;
      const snapshotTimeMs = (flags & txnFlags.snapshotTimeMs) !== 0 ? reader.uint64() : undefined;
      return { ...base, ...(note !== undefined && { note }), ...(snapshotTimeMs !== undefined && { snapshotTimeMs }) };
    }
    case tags.compact:
      return { type: 'compact', belowRevision: reader.uint64() };
    case tags.expire:
      return { type: 'expire', keys: readTexts(reader) };
    case tags.leaseGrant: {
      const key = reader.text();
      return { type: 'leaseGrant', key, ttlMs: reader.uint64() };
    }
    case tags.leaseRevoke: {
      const lease = reader.uint64();
      const expired = reader.uint8();
      if (expired > 1) throw reader.malformed('a lease revocation is expired (1) or not (0)');
      return { type: 'leaseRevoke', lease, expired: expired === 1 };
    }
    default:
      return readWriteBody(reader, tag);
  }
}

function readTexts(reader: ByteReader): string[] {
  const count = reader.uint32();
  const texts: string[] = [];
  // Each text consumes at least its 4-byte length, so malformed counts fail on running out.
  for (let index = 0; index < count; index++) texts.push(reader.text());
  return texts;
}

function readWrites(reader: ByteReader): WriteOp[] {
  const count = reader.uint32();
  const writes: WriteOp[] = [];
  for (let index = 0; index < count; index++) writes.push(readWriteBody(reader, reader.uint8()));
  return writes;
}

function checkFlags(reader: ByteReader, flags: number, known: Record<string, number>): void {
  const allKnown = Object.values(known).reduce((all, flag) => all | flag, 0);
  if ((flags & ~allKnown) !== 0) throw reader.malformed(`unknown flags ${flags}`);
}

function readWriteBody(reader: ByteReader, tag: number): WriteOp {
  switch (tag) {
    case tags.put: {
      const flags = reader.uint16();
      checkFlags(reader, flags, putFlags);
      const key = reader.text();
      const value = reader.bytes();
      const ttlMs = flags & putFlags.ttlMs ? reader.uint64() : undefined;
      const ifModRevision = flags & putFlags.ifModRevision ? reader.uint64() : undefined;
      const ifValue = flags & putFlags.ifValue ? reader.bytes() : undefined;
      const lease = flags & putFlags.lease ? reader.uint64() : undefined;
      const ifFence = flags & putFlags.ifFence ? reader.uint64() : undefined;
      return {
        type: 'put',
        key,
        value,
        ...(ttlMs !== undefined && { ttlMs }),
        ...(flags & putFlags.keepTtl && { keepTtl: true }),
        ...(flags & putFlags.ifAbsent && { ifAbsent: true }),
        ...(flags & putFlags.ifPresent && { ifPresent: true }),
        ...(ifModRevision !== undefined && { ifModRevision }),
        ...(ifValue !== undefined && { ifValue }),
        ...(flags & putFlags.returnPrevious && { returnPrevious: true }),
        ...(lease !== undefined && { lease }),
        ...(ifFence !== undefined && { ifFence }),
      };
    }
    case tags.delete: {
      const flags = reader.uint8();
      checkFlags(reader, flags, deleteFlags);
      const key = reader.text();
      const ifModRevision = flags & deleteFlags.ifModRevision ? reader.uint64() : undefined;
      const ifValue = flags & deleteFlags.ifValue ? reader.bytes() : undefined;
      return {
        type: 'delete',
        key,
        ...(ifModRevision !== undefined && { ifModRevision }),
        ...(ifValue !== undefined && { ifValue }),
        ...(flags & deleteFlags.returnPrevious && { returnPrevious: true }),
      };
    }
    case tags.increment: {
      const flags = reader.uint8();
      checkFlags(reader, flags, incrementFlags);
      const key = reader.text();
      const delta = reader.int64();
      const ttlMs = flags & incrementFlags.ttlMs ? reader.uint64() : undefined;
      return { type: 'increment', key, delta, ...(ttlMs !== undefined && { ttlMs }) };
    }
    case tags.extend: {
      const key = reader.text();
      return { type: 'extend', key, ttlMs: reader.uint64() };
    }
    default:
      throw reader.malformed(`unknown operation tag ${tag}`);
  }
}
