/**
 * Client-side checks of what a caller passes, so mistakes fail at once with a clear error instead
 * of a round trip. The server checks everything again: these are a convenience, not a guard.
 */
import { AtollError } from '../errors.js';
import { prefixBucket } from '../keys/prefix-bucket.js';
import { validateKey } from '../keys/validate-key.js';
import { limits } from '../limits.js';
import type { Consistency } from '../api/node-api.js';

const utf8Encoder = new TextEncoder();
const int64Min = -(2n ** 63n);
const int64Max = 2n ** 63n - 1n;

/** A value as the API accepts it: text (stored as UTF-8) or raw bytes. */
export type ValueInput = string | Uint8Array;

export function checkKey(key: unknown): string {
  validateKey(key);
  return key;
}

/** The bucket a prefix scan reads (and so the partition it routes to). */
export function checkPrefix(prefix: unknown): { prefix: string; bucket: string } {
  if (typeof prefix !== 'string') throw new AtollError('INVALID_ARGUMENT', `a prefix must be a string, got ${typeof prefix}`);
  return { prefix, bucket: prefixBucket(prefix).bucket };
}

/**
 * The largest value any server could accept: one write must fit in one gRPC message with its key
 * and framing. A cluster may configure a smaller limit (the node's --max-value-bytes); the client
 * cannot know it, so by default it only refuses what can never fit and leaves the rest to the node.
 */
export const largestWireValueBytes = limits.maxMessageBytes - limits.maxKeyBytes - limits.messageOverheadBytes;

export function valueBytes(value: unknown, name: string, maxValueBytes: number): Uint8Array {
  let bytes: Uint8Array;
  if (typeof value === 'string') bytes = utf8Encoder.encode(value);
  else if (value instanceof Uint8Array) bytes = value;
  else throw new AtollError('INVALID_ARGUMENT', `${name} must be a string or a Uint8Array, got ${value === null ? 'null' : typeof value}`);
  if (bytes.length > maxValueBytes) {
    throw new AtollError('VALUE_TOO_LARGE', `${name} must be at most ${maxValueBytes} bytes, got ${bytes.length}`, {
      valueBytes: bytes.length,
      maxValueBytes,
    });
  }
  return bytes;
}

export function checkRevision(revision: unknown, name: string): number {
  if (typeof revision !== 'number' || !Number.isSafeInteger(revision) || revision < 0) {
    throw new AtollError('INVALID_ARGUMENT', `${name} must be a non-negative integer, got ${String(revision)}`);
  }
  return revision;
}

export function checkTtlMs(ttlMs: unknown, name = 'ttlMs'): number {
  if (typeof ttlMs !== 'number' || !Number.isSafeInteger(ttlMs) || ttlMs < limits.minTtlMs || ttlMs > limits.maxTtlMs) {
    throw new AtollError('INVALID_ARGUMENT', `${name} must be an integer number of milliseconds in [${limits.minTtlMs}, ${limits.maxTtlMs}], got ${String(ttlMs)}`);
  }
  return ttlMs;
}

export function checkDelta(delta: unknown): bigint {
  let value: bigint;
  if (typeof delta === 'bigint') value = delta;
  else if (typeof delta === 'number' && Number.isSafeInteger(delta)) value = BigInt(delta);
  else throw new AtollError('INVALID_ARGUMENT', `delta must be an integer (a safe-integer number or a bigint), got ${String(delta)}`);
  if (value < int64Min || value > int64Max) throw new AtollError('INVALID_ARGUMENT', 'delta must fit in a signed 64-bit integer');
  return value;
}

export function checkLimit(limit: unknown, name = 'limit'): number {
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > limits.maxPageSize) {
    throw new AtollError('INVALID_ARGUMENT', `${name} must be an integer in [1, ${limits.maxPageSize}], got ${String(limit)}`);
  }
  return limit;
}

export function checkConsistency(consistency: unknown): Consistency | undefined {
  if (consistency === undefined || consistency === 'linearizable' || consistency === 'stale') return consistency;
  throw new AtollError('INVALID_ARGUMENT', `consistency must be 'linearizable' or 'stale', got ${String(consistency)}`);
}

export function checkNodeId(nodeId: unknown, name: string): number {
  if (typeof nodeId !== 'number' || !Number.isInteger(nodeId) || nodeId < 0 || nodeId > 0xffff_ffff) {
    throw new AtollError('INVALID_ARGUMENT', `${name} must be a non-negative 32-bit integer, got ${String(nodeId)}`);
  }
  return nodeId;
}
