/**
 * An order-preserving, self-delimiting encoding of arbitrary bytes, so a variable-length field
 * can be followed by more key material without two fields ever being confused (the idea of
 * FoundationDB's tuple layer byte strings, with a two-byte terminator).
 *
 *   encode(x) = x with every 0x00 replaced by 0x00 0xFF, followed by 0x00 0x01
 *
 * Properties the storage layouts rely on:
 * - Order: encode(a) < encode(b) byte-wise exactly when a < b byte-wise, and that stays true
 *   whatever bytes follow each encoding (a proper prefix sorts first because the terminator's
 *   0x01 is below the 0xFF that an escaped 0x00 continues with, and below no real byte: a real
 *   0x00 is always escaped).
 * - Delimiting: the pair 0x00 0x01 occurs only as the terminator, so the end of the field is found
 *   without a length, and fields that follow cannot be mistaken for part of it.
 * - Prefixes: escapeOrderedBody(p) (without the terminator) is a byte prefix of encode(x) exactly
 *   when p is a byte prefix of x, so "all x starting with p" is one contiguous key range.
 */
import assert from 'node:assert/strict';

const escapeByte = 0x00;
const escapedZeroFollower = 0xff;
const terminatorFollower = 0x01;

/** The escaped bytes without the terminator: a prefix of every encoding of an extension of x. */
export function escapeOrderedBody(bytes: Uint8Array): Uint8Array {
  let zeroCount = 0;
  for (const byte of bytes) if (byte === escapeByte) zeroCount++;
  const escaped = new Uint8Array(bytes.length + zeroCount);
  let offset = 0;
  for (const byte of bytes) {
    escaped[offset++] = byte;
    if (byte === escapeByte) escaped[offset++] = escapedZeroFollower;
  }
  return escaped;
}

/** The full self-delimiting encoding: the escaped body and the 0x00 0x01 terminator. */
export function escapeOrdered(bytes: Uint8Array): Uint8Array {
  const body = escapeOrderedBody(bytes);
  const encoded = new Uint8Array(body.length + 2);
  encoded.set(body, 0);
  encoded[body.length] = escapeByte;
  encoded[body.length + 1] = terminatorFollower;
  return encoded;
}

/**
 * Decodes one escaped field starting at `offset`; returns the bytes and the offset just past the
 * terminator. Asserts on malformed input: these bytes were written by escapeOrdered, so anything
 * else is storage corruption or a bug.
 */
export function unescapeOrdered(encoded: Uint8Array, offset = 0): { bytes: Uint8Array; nextOffset: number } {
  const decoded: number[] = [];
  let index = offset;
  for (;;) {
    assert(index < encoded.length, 'escaped field has no terminator');
    const byte = encoded[index]!;
    if (byte !== escapeByte) {
      decoded.push(byte);
      index++;
      continue;
    }
    const follower = encoded[index + 1];
    if (follower === terminatorFollower) return { bytes: Uint8Array.from(decoded), nextOffset: index + 2 };
    assert.equal(follower, escapedZeroFollower, 'escaped field has a stray 0x00');
    decoded.push(escapeByte);
    index += 2;
  }
}
