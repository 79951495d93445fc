/**
 * The bucket hashes. A cluster names its hash once, at creation (its descriptor,
 * src/node/cluster/cluster-descriptor.ts, and ClusterInfo.hash_function), and every router, replica and
 * client uses the one it names: changing a cluster's hash would move every key.
 *
 * "murmur3_32" (new clusters): MurmurHash3 x86_32 with seed 0 over the bucket's UTF-8 bytes.
 *   Chosen because it has full avalanche (its final mix, fmix32, makes every input bit flip each
 *   output bit with probability close to 1/2, and range partitioning reads the TOP bits, which
 *   FNV-1a barely moves when only the last byte changes: `user1`, `user2`... land together), it is
 *   32 bits like the old hash (the partition table is unchanged), it is simple to write in any
 *   language from the published reference (Guava, Python's mmh3 and others ship it), and it has
 *   published test vectors:
 *     murmur3_32("", 0) = 0, murmur3_32("hello", 0) = 0x248bfa47 (613153351),
 *     murmur3_32("The quick brown fox jumps over the lazy dog", 0) = 0x2e4ff723 (776992547).
 *   Algorithm, all arithmetic mod 2^32 (c1 = 0xcc9e2d51, c2 = 0x1b873593):
 *     h = seed
 *     for each whole 4-byte block k (little-endian):
 *       k = rotl(k * c1, 15) * c2;  h = rotl(h ^ k, 13) * 5 + 0xe6546b64
 *     the 1..3 tail bytes t (little-endian): k = rotl(t * c1, 15) * c2;  h = h ^ k
 *     h = h ^ byteLength;  then fmix32: h ^= h >>> 16; h *= 0x85ebca6b; h ^= h >>> 13;
 *                                       h *= 0xc2b2ae35; h ^= h >>> 16
 *
 * "fnv1a32" (clusters created before the descriptor existed keep it): 32-bit FNV-1a.
 *   hash = 2166136261 (offset basis); for each byte b: hash = (hash XOR b) * 16777619 mod 2^32.
 *   Vectors: "" → 2166136261, "a" → 3826002220, "services" → 3647643189, "foobar" → 3214735720.
 *
 * Both return an unsigned integer in [0, 2^32). The tests pin every vector above so neither
 * function can change silently.
 */
import { AtollError } from '../errors.js';
import { encodeUtf8Transient } from './utf8.js';

export const fnvOffsetBasis32 = 0x811c9dc5;
export const fnvPrime32 = 0x01000193;

/** The size of the hash space: hashes are integers in [0, hashSpaceSize). */
export const hashSpaceSize = 2 ** 32;

/** The names a cluster may give its bucket hash (ClusterInfo.hash_function). */
export const bucketHashNames = ['murmur3_32', 'fnv1a32'] as const;
export type BucketHashName = (typeof bucketHashNames)[number];
/** What a new cluster uses. */
export const defaultBucketHash: BucketHashName = 'murmur3_32';
/** What a data directory written before cluster descriptors existed used, and keeps. */
export const legacyBucketHash: BucketHashName = 'fnv1a32';

export function fnv1a32(bytes: Uint8Array): number {
  let hash = fnvOffsetBasis32;
  for (const byte of bytes) {
    hash ^= byte;
    // Math.imul multiplies as 32-bit integers, which is exactly multiplication mod 2^32.
    hash = Math.imul(hash, fnvPrime32);
  }
  return hash >>> 0;
}

const murmurC1 = 0xcc9e2d51;
const murmurC2 = 0x1b873593;

function rotl32(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function murmurScramble(k: number): number {
  return Math.imul(rotl32(Math.imul(k, murmurC1), 15), murmurC2);
}

/** MurmurHash3 x86_32 (see the file comment). */
export function murmur3_32(bytes: Uint8Array, seed = 0): number {
  let h = seed | 0;
  const blocks = bytes.length - (bytes.length % 4);
  for (let i = 0; i < blocks; i += 4) {
    const k = (bytes[i] as number) | ((bytes[i + 1] as number) << 8) | ((bytes[i + 2] as number) << 16) | ((bytes[i + 3] as number) << 24);
    h ^= murmurScramble(k);
    h = (Math.imul(rotl32(h, 13), 5) + 0xe6546b64) | 0;
  }
  const tailLength = bytes.length - blocks;
  if (tailLength > 0) {
    let tail = 0;
    for (let i = tailLength - 1; i >= 0; i--) tail = (tail << 8) | (bytes[blocks + i] as number);
    h ^= murmurScramble(tail);
  }
  h ^= bytes.length;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Whether `name` is a bucket hash this code knows. */
export function isBucketHashName(name: unknown): name is BucketHashName {
  return typeof name === 'string' && (bucketHashNames as readonly string[]).includes(name);
}

/** `name` as a bucket hash; an unknown name is INVALID_ARGUMENT naming `source` and the known ones. */
export function parseBucketHashName(name: unknown, source = 'the bucket hash'): BucketHashName {
  if (isBucketHashName(name)) return name;
  throw unknownBucketHash(name, source);
}

function unknownBucketHash(name: unknown, source: string): AtollError {
  const shown = typeof name === 'string' ? JSON.stringify(name.slice(0, 64)) : typeof name;
  return new AtollError('INVALID_ARGUMENT', `${source}: unknown bucket hash ${shown}; this version knows ${bucketHashNames.join(', ')}`, {
    hashFunction: typeof name === 'string' ? name.slice(0, 64) : '',
  });
}

const hashScratch = new Uint8Array(3 * 1024);

/** The routing hash of a bucket name under the cluster's hash (default: a new cluster's). */
export function bucketHash(bucket: string, hash: BucketHashName = defaultBucketHash): number {
  // The hashes read the bytes once and keep nothing: one scratch buffer serves every call.
  const bytes = encodeUtf8Transient(bucket, hashScratch);
  if (hash === 'murmur3_32') return murmur3_32(bytes);
  if (hash === 'fnv1a32') return fnv1a32(bytes);
  // Only a name that skipped parseBucketHashName (a cast) gets here: never guess a route.
  throw unknownBucketHash(hash, 'the bucket hash');
}
