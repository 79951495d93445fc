/**
 * Input checks for commands. The proposer calls validateCommand before a command enters the Raft
 * log, so bad input gets a clear error and never reaches the state machine; apply() runs it again
 * on every entry, because a log entry may come from an older or newer node. It throws
 * AtollErrors only (never asserts): everything here can be caused by a caller.
 */
import { AtollError } from '../errors.js';
import { isWellFormedUtf16, utf8ByteLength } from '../keys/utf8.js';
import { validateKey } from '../keys/validate-key.js';
import { defaultLimits, type Limits } from '../limits.js';
import type { Command, WriteOp } from './commands.js';
import { int64Max, int64Min } from './int64-text.js';

function invalid(message: string, details?: Record<string, unknown>): AtollError {
  return new AtollError('INVALID_ARGUMENT', message, details);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

export function validateRevisionNumber(value: unknown, name: string): asserts value is number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw invalid(`${name} must be a non-negative integer`, { [name]: value });
  }
}

function validateTtl(ttlMs: unknown, limits: Limits): void {
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs) || ttlMs < limits.minTtlMs || ttlMs > limits.maxTtlMs) {
    throw invalid(`ttlMs must be an integer in [${limits.minTtlMs}, ${limits.maxTtlMs}]`, { ttlMs });
  }
}

function validateValue(value: unknown, name: string, limits: Limits): asserts value is Uint8Array {
  if (!(value instanceof Uint8Array)) throw invalid(`${name} must be bytes (a Uint8Array)`);
  if (value.length > limits.maxValueBytes) {
    throw new AtollError('VALUE_TOO_LARGE', `${name} must be at most ${limits.maxValueBytes} bytes, got ${value.length}`, {
      valueBytes: value.length,
      maxValueBytes: limits.maxValueBytes,
    });
  }
}

function validateOptionalFlag(value: unknown, name: string): void {
  if (value !== undefined && typeof value !== 'boolean') throw invalid(`${name} must be a boolean`);
}

/** A prefix to scan or to read in a transaction: any well-formed text of at most maxKeyBytes. */
export function validateKeyPrefix(prefix: unknown, limits: Limits = defaultLimits): asserts prefix is string {
  if (typeof prefix !== 'string') throw invalid('a key prefix must be a string');
  if (!isWellFormedUtf16(prefix)) throw invalid('a key prefix must be well-formed UTF-8 (it contains a lone surrogate)');
  const prefixBytes = utf8ByteLength(prefix);
  if (prefixBytes > limits.maxKeyBytes) {
    throw new AtollError('KEY_TOO_LARGE', `a key prefix must be at most ${limits.maxKeyBytes} UTF-8 bytes, got ${prefixBytes}`, {
      keyBytes: prefixBytes,
      maxKeyBytes: limits.maxKeyBytes,
    });
  }
}

/** The key and value bytes a write carries, for the batch size limit. */
function writeBytes(op: WriteOp): number {
  const keyBytes = utf8ByteLength(op.key);
  if (op.type === 'put') return keyBytes + op.value.length + (op.ifValue?.length ?? 0);
  if (op.type === 'delete') return keyBytes + (op.ifValue?.length ?? 0);
  return keyBytes;
}

/**
 * `keysChecked`: the caller already checked the keys (the request's one validation,
 * src/tenancy/check-operation.ts, checks each key as it maps it into the caller's tenant), so only
 * the rest is checked here.
 */
export function validateWriteOp(op: unknown, limits: Limits = defaultLimits, keysChecked = false): asserts op is WriteOp {
  if (!isRecord(op)) throw invalid('a write must be an object');
  if (!keysChecked) validateKey(op.key);
  switch (op.type) {
    case 'put':
      validatePut(op, limits);
      return;
    case 'delete':
      if (op.ifModRevision !== undefined) validateRevisionNumber(op.ifModRevision, 'ifModRevision');
      if (op.ifValue !== undefined) validateValue(op.ifValue, 'ifValue', limits);
      validateOptionalFlag(op.returnPrevious, 'returnPrevious');
      return;
    case 'increment':
      if (typeof op.delta !== 'bigint' || op.delta < int64Min || op.delta > int64Max) {
        throw invalid('delta must be a signed 64-bit integer (a bigint)', { delta: String(op.delta) });
      }
      if (op.ttlMs !== undefined) validateTtl(op.ttlMs, limits);
      return;
    case 'extend':
      validateTtl(op.ttlMs, limits);
      return;
    default:
      throw invalid(`unknown write type ${JSON.stringify(op.type)}`);
  }
}

function validatePut(op: Record<string, unknown>, limits: Limits): void {
  validateValue(op.value, 'value', limits);
  for (const flag of ['keepTtl', 'ifAbsent', 'ifPresent', 'returnPrevious']) validateOptionalFlag(op[flag], flag);
  if (op.ttlMs !== undefined) validateTtl(op.ttlMs, limits);
  if (op.ttlMs !== undefined && op.keepTtl === true) throw invalid('a put takes ttlMs or keepTtl, not both');
  if (op.ifModRevision !== undefined) validateRevisionNumber(op.ifModRevision, 'ifModRevision');
  if (op.ifValue !== undefined) validateValue(op.ifValue, 'ifValue', limits);
  if (op.lease !== undefined) validateLeaseId(op.lease);
  if (op.ifFence !== undefined) validateFence(op.ifFence);
  const otherConditions = op.ifPresent === true || op.ifModRevision !== undefined || op.ifValue !== undefined;
  if (op.ifAbsent === true && otherConditions) {
    throw invalid('ifAbsent cannot be combined with ifPresent, ifModRevision or ifValue (use ifModRevision: 0 for "absent")');
  }
}

function validateWrites(writes: unknown, limits: Limits, allowEmpty: boolean, keysChecked: boolean): asserts writes is WriteOp[] {
  if (!Array.isArray(writes) || (writes.length === 0 && !allowEmpty)) throw invalid('a batch or transaction needs at least one write');
  if (writes.length > limits.maxBatchOps) {
    throw new AtollError('RESOURCE_EXHAUSTED', `a batch or transaction has at most ${limits.maxBatchOps} writes, got ${writes.length}`, {
      writes: writes.length,
      maxBatchOps: limits.maxBatchOps,
    });
  }
  const keys = new Set<string>();
  let totalBytes = 0;
  for (const write of writes) {
    validateWriteOp(write, limits, keysChecked);
    // Two writes to one key at one revision would need two versions at the same revision.
    if (keys.has(write.key)) throw invalid('a batch or transaction writes each key at most once', { key: write.key });
    keys.add(write.key);
    totalBytes += writeBytes(write);
  }
  if (totalBytes > limits.maxBatchBytes) {
    throw new AtollError('RESOURCE_EXHAUSTED', `a batch or transaction carries at most ${limits.maxBatchBytes} bytes, got ${totalBytes}`, {
      batchBytes: totalBytes,
      maxBatchBytes: limits.maxBatchBytes,
    });
  }
}

function validateList(values: unknown, name: string, maxCount: number): asserts values is unknown[] {
  if (!Array.isArray(values)) throw invalid(`${name} must be an array`);
  if (values.length > maxCount) {
    throw new AtollError('RESOURCE_EXHAUSTED', `a transaction declares at most ${maxCount} ${name}, got ${values.length}`);
  }
}

/** A fencing token (a lock's granting revision): a positive safe integer. */
export function validateFence(fence: unknown): asserts fence is number {
  if (typeof fence !== 'number' || !Number.isSafeInteger(fence) || fence < 1) throw invalid('a fencing token must be a positive integer (the lock\'s token)', { ifFence: fence });
}

/** A lease's local id (the index of its grant entry): a positive safe integer. */
export function validateLeaseId(lease: unknown): asserts lease is number {
  if (typeof lease !== 'number' || !Number.isSafeInteger(lease) || lease < 1) throw invalid('a lease id must be a positive integer', { lease });
}

/** A request id is at most this many UTF-8 bytes: enough for a UUID or a client id and a counter. */
export const maxRequestIdBytes = 64;

/**
 * Checks a request id (ApplyContext.requestId): text of 1 to maxRequestIdBytes UTF-8 bytes with
 * no lone surrogate (so it has exactly one stored form). The node calls it before proposing;
 * apply() checks again and fails the entry with INVALID_ARGUMENT for a bad one.
 */
export function validateRequestId(requestId: unknown): asserts requestId is string {
  if (typeof requestId !== 'string') throw invalid('a request id must be a string');
  if (!isWellFormedUtf16(requestId)) throw invalid('a request id must be well-formed UTF-8 (it contains a lone surrogate)');
  const requestIdBytes = utf8ByteLength(requestId);
  if (requestIdBytes < 1 || requestIdBytes > maxRequestIdBytes) {
    throw invalid(`a request id must be 1 to ${maxRequestIdBytes} UTF-8 bytes, got ${requestIdBytes}`, {
      requestIdBytes,
      maxRequestIdBytes,
    });
  }
}

/**
 * Throws an AtollError describing the first problem with the command, if any. `keysChecked`: the
 * keys it names were checked already (see validateWriteOp); a transaction's prefixes still are.
 */
export function validateCommand(command: unknown, limits: Limits = defaultLimits, keysChecked = false): asserts command is Command {
  if (!isRecord(command)) throw invalid('a command must be an object');
  switch (command.type) {
    case 'batch':
      validateWrites(command.writes, limits, false, keysChecked);
      return;
    case 'txn':
      validateRevisionNumber(command.snapshotRevision, 'snapshotRevision');
      if (command.isolation !== 'snapshot' && command.isolation !== 'serializable') {
        throw invalid('isolation must be "snapshot" or "serializable"');
      }
      validateList(command.readKeys, 'readKeys', limits.maxTxnReadKeys);
      if (!keysChecked) command.readKeys.forEach((key) => validateKey(key));
      validateList(command.readPrefixes, 'readPrefixes', limits.maxTxnReadPrefixes);
      command.readPrefixes.forEach((prefix) => validateKeyPrefix(prefix, limits));
      // A transaction with a note may write nothing: it records a script's outcome under its
      // request id (a rolled-back or read-only script), so a resend answers the same.
      validateWrites(command.writes, limits, command.note !== undefined, keysChecked);
      if (command.snapshotTimeMs !== undefined) validateRevisionNumber(command.snapshotTimeMs, 'snapshotTimeMs');
      if (command.note !== undefined) {
        if (!(command.note instanceof Uint8Array)) throw invalid('note must be bytes');
        if (command.note.length > limits.maxTxnNoteBytes) {
          throw new AtollError('RESOURCE_EXHAUSTED', `a transaction note is at most ${limits.maxTxnNoteBytes} bytes`, {
            noteBytes: command.note.length,
            maxNoteBytes: limits.maxTxnNoteBytes,
          });
        }
      }
      return;
    case 'compact':
      validateRevisionNumber(command.belowRevision, 'belowRevision');
      return;
    case 'expire': {
      if (!Array.isArray(command.keys) || command.keys.length === 0) throw invalid('an expire command names at least one key');
      if (command.keys.length > limits.maxBatchOps) {
        throw new AtollError('RESOURCE_EXHAUSTED', `an expire command names at most ${limits.maxBatchOps} keys, got ${command.keys.length}`);
      }
      const keys = new Set<string>();
      for (const key of command.keys) {
        validateKey(key);
        // One tombstone per key at the entry's revision.
        if (keys.has(key)) throw invalid('an expire command names each key at most once', { key });
        keys.add(key);
      }
      return;
    }
    case 'leaseGrant':
      validateKey(command.key);
      validateTtl(command.ttlMs, limits);
      return;
    case 'leaseRevoke':
      validateLeaseId(command.lease);
      validateOptionalFlag(command.expired, 'expired');
      return;
    default:
      validateWriteOp(command, limits, keysChecked);
  }
}
