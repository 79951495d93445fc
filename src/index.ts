/**
 * Atoll's public API: the client, the key model a client needs (structured keys, buckets,
 * partition routing), the error type and codes, and the data types they speak.
 */
export * from './client/index.js';
export {
  bucketHash,
  bucketHashNames,
  bucketOf,
  defaultBucketHash,
  keyOf,
  keyPrefixOf,
  parseKey,
  partitionOf,
  partitionOfBucket,
  partitionTable,
  prefixBucket,
  validateKey,
  type BucketHashName,
  type ParsedKey,
  type PartitionRange,
  type PrefixScope,
} from './keys/index.js';
export { AtollError, atollErrorCodes, grpcStatusOfCode, isAtollError, type AtollErrorCode, type GrpcStatusName } from './errors.js';
export type { ClusterInfoResponse, Consistency, KeyRecord, NodeInfo, PartitionInfo } from './api/node-api.js';
