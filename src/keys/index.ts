/** The key model: validation, buckets, routing, structured keys and prefix scopes. */
export { validateKey } from './validate-key.js';
export { bucketOf, bucketSeparator } from './bucket.js';
export {
  bucketHash,
  bucketHashNames,
  defaultBucketHash,
  fnv1a32,
  fnvOffsetBasis32,
  fnvPrime32,
  hashSpaceSize,
  isBucketHashName,
  legacyBucketHash,
  murmur3_32,
  parseBucketHashName,
  type BucketHashName,
} from './bucket-hash.js';
export {
  partitionOf,
  partitionOfBucket,
  partitionOfHash,
  partitionTable,
  validatePartitionCount,
  type PartitionRange,
} from './partition-table.js';
export { keyOf, keyPrefixOf, parseKey, partEscape, partSeparator, type ParsedKey } from './structured-key.js';
export { prefixBucket, type PrefixScope } from './prefix-bucket.js';
export { decodeUtf8, encodeUtf8, isWellFormedUtf16, utf8ByteLength } from './utf8.js';
