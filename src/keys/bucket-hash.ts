/**
 * The bucket hash: 32-bit FNV-1a over the bucket's UTF-8 bytes.
 *
 *   hash = 2166136261                      (0x811c9dc5, the FNV-1a 32-bit offset basis)
 *   for each byte b of utf8(bucket):
 *     hash = hash XOR b
 *     hash = (hash * 16777619) mod 2^32    (0x01000193, the FNV 32-bit prime)
 *
 * The result is an unsigned integer in [0, 2^32). Test vectors (also checked in the tests so the
 * function can never change silently): "" → 2166136261, "a" → 3826002220, "services" → 3647643189,
 * "foobar" → 3214735720 (0xbf9cf968, a published FNV-1a vector).
 *
 * This function is part of the routing contract with clients: changing it moves every key.
 */
import { encodeUtf8 } from './utf8.js';

export const fnvOffsetBasis32 = 0x811c9dc5;
export const fnvPrime32 = 0x01000193;

/** The size of the hash space: hashes are integers in [0, hashSpaceSize). */
export const hashSpaceSize = 2 ** 32;

export function fnv1a32(bytes: Uint8Array): number {
  let hash = fnvOffsetBasis32;
  for (const byte of bytes) {
    hash ^= byte;
    // Math.imul multiplies as 32-bit integers, which is exactly multiplication mod 2^32.
    hash = Math.imul(hash, fnvPrime32);
  }
  return hash >>> 0;
}

/** The routing hash of a bucket name. */
export function bucketHash(bucket: string): number {
  return fnv1a32(encodeUtf8(bucket));
}
