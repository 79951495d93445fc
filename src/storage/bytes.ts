/**
 * Byte helpers for ordered keys. Storage orders keys byte-wise lexicographically (LevelDB's
 * default comparator), so every multi-part key is built from encodings whose byte order is the
 * order we want: fixed-width big-endian integers, escaped byte strings (ordered-escape.ts).
 */
import assert from 'node:assert/strict';

/** Byte-wise lexicographic comparison: negative, zero or positive, like LevelDB's comparator. */
export function compareBytes(left: Uint8Array, right: Uint8Array): number {
  const sharedLength = Math.min(left.length, right.length);
  for (let index = 0; index < sharedLength; index++) {
    const difference = left[index]! - right[index]!;
    if (difference !== 0) return difference;
  }
  return left.length - right.length;
}

export function equalBytes(left: Uint8Array, right: Uint8Array): boolean {
  return left.length === right.length && compareBytes(left, right) === 0;
}

export function startsWithBytes(bytes: Uint8Array, prefix: Uint8Array): boolean {
  if (prefix.length > bytes.length) return false;
  for (let index = 0; index < prefix.length; index++) {
    if (bytes[index] !== prefix[index]) return false;
  }
  return true;
}

export function concatBytes(...parts: Uint8Array[]): Uint8Array {
  let totalLength = 0;
  for (const part of parts) totalLength += part.length;
  const joined = new Uint8Array(totalLength);
  let offset = 0;
  for (const part of parts) {
    joined.set(part, offset);
    offset += part.length;
  }
  return joined;
}

/** ASCII text as bytes, for readable fixed tags in storage keys. */
export function asciiBytes(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    assert(code < 0x80, 'asciiBytes takes ASCII text only');
    bytes[index] = code;
  }
  return bytes;
}

const maxUint64 = (1n << 64n) - 1n;

/** An unsigned 64-bit integer as 8 big-endian bytes, so byte order is numeric order. */
export function encodeUint64BE(value: number | bigint): Uint8Array {
  if (typeof value === 'number') {
    // The common case without a BigInt or a DataView: two uint32 halves, big-endian.
    assert(Number.isSafeInteger(value) && value >= 0, 'uint64 must be a safe non-negative integer');
    const bytes = new Uint8Array(8);
    const high = Math.floor(value / 0x1_0000_0000);
    const low = value >>> 0;
    bytes[0] = high >>> 24;
    bytes[1] = (high >>> 16) & 0xff;
    bytes[2] = (high >>> 8) & 0xff;
    bytes[3] = high & 0xff;
    bytes[4] = low >>> 24;
    bytes[5] = (low >>> 16) & 0xff;
    bytes[6] = (low >>> 8) & 0xff;
    bytes[7] = low & 0xff;
    return bytes;
  }
  const big = BigInt(value);
  assert(big >= 0n && big <= maxUint64, 'uint64 out of range');
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigUint64(0, big, false);
  return bytes;
}

/** Reads 8 big-endian bytes as a number; asserts the value is a safe integer. */
export function decodeUint64BE(bytes: Uint8Array, offset = 0): number {
  assert(offset + 8 <= bytes.length, 'decodeUint64BE needs 8 bytes');
  const big = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigUint64(offset, false);
  assert(big <= BigInt(Number.MAX_SAFE_INTEGER), 'uint64 value exceeds Number.MAX_SAFE_INTEGER');
  return Number(big);
}

export function encodeUint32BE(value: number): Uint8Array {
  assert(Number.isInteger(value) && value >= 0 && value <= 0xffff_ffff, 'uint32 out of range');
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, value, false);
  return bytes;
}

export function decodeUint32BE(bytes: Uint8Array, offset = 0): number {
  assert(offset + 4 <= bytes.length, 'decodeUint32BE needs 4 bytes');
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(offset, false);
}

/**
 * The smallest key greater than every key that starts with `prefix`, for use as an exclusive
 * upper bound (`lt`). Undefined when no such key exists (the prefix is empty or all 0xFF), which
 * means "no upper bound".
 */
export function prefixUpperBound(prefix: Uint8Array): Uint8Array | undefined {
  for (let index = prefix.length - 1; index >= 0; index--) {
    if (prefix[index] !== 0xff) {
      const bound = prefix.slice(0, index + 1);
      bound[index]! += 1;
      return bound;
    }
  }
  return undefined;
}

/** The range of keys that start with `prefix`, in the shape iterate() takes. */
export function prefixRange(prefix: Uint8Array): { gte: Uint8Array; lt?: Uint8Array } {
  const lt = prefixUpperBound(prefix);
  return lt === undefined ? { gte: prefix } : { gte: prefix, lt };
}

/** A copy that owns its memory, so later writes to the source cannot change stored bytes. */
export function copyBytes(bytes: Uint8Array): Uint8Array {
  return new Uint8Array(bytes);
}

export function bytesToHex(bytes: Uint8Array): string {
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return hex;
}
