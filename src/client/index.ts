/** The Atoll client: AtollClient, its option and result types, and its error type. */
export {
  AtollClient,
  type AtollClientOptions,
  type BeginTransactionOptions,
  type ScriptOptions,
  type ScriptResult,
  type TransactionOptions,
  type TransactionOutcome,
  type ClientLogger,
  type ClusterInfo,
  type DeleteOptions,
  type GetOptions,
  type IncrementOptions,
  type PrefixOptions,
  type PutOptions,
  type RegisterOptions,
  type WriteCallOptions,
  type ReadOptions,
  type ScanOptions,
  type WatchItem,
  type WatchOptions,
} from './atoll-client.js';
export type { WatchEvent } from '../api/node-api.js';
export type { CallOptions } from './call-options.js';
export { newRequestId } from './request-id.js';
export { Lease, type LeaseTransport } from './lease.js';
export { acquireLock, defaultLockBucket, defaultLockTtlMs, type HeldLock, type LockClient, type LockOptions } from './lock.js';
export { AtollClientError, isAtollClientError, type AtollClientErrorOptions, type LeaderHint } from './client-error.js';
export type { ValueInput } from './client-input.js';
export type {
  DeleteResult,
  ExistsResult,
  ExtendResult,
  GetResult,
  IncrementResult,
  KeyEntry,
  PrefixPage,
  PutResult,
} from './results.js';
export { Transaction, type CommitOptions, type CommitResult, type TxnDeleteOptions, type TxnPutOptions } from './transaction.js';
export {
  maxCounterShards,
  ShardedCounter,
  type ShardedCounterOptions,
  type ShardedIncrementOptions,
  type ShardedIncrementResult,
  type ShardedReadOptions,
} from './sharded-counter.js';
