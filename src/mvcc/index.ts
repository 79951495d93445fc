/** The MVCC state machine of one partition, its commands and their binary form. */
export type {
  ApplyContext,
  ApplyResult,
  BatchCommand,
  Command,
  CommandType,
  CompactCommand,
  DeleteOp,
  ExpireCommand,
  ExtendOp,
  IncrementOp,
  KeyVersion,
  PutOp,
  TxnCommand,
  TxnIsolation,
  WriteOp,
  WriteResult,
} from './commands.js';
export { decodeCommand, encodeCheckedCommand, encodeCommand, writeCheckedCommand, writeCheckedWrite } from './command-codec.js';
export { maxRequestIdBytes, validateCommand, validateKeyPrefix, validateRequestId, validateWriteOp } from './validate-command.js';
export {
  defaultDedupWindow,
  MvccStore,
  type DedupStatus,
  type GetResult,
  type MvccStatus,
  type MvccStoreOptions,
  type PrefixPage,
  type PrefixReadOptions,
  type ReadOptions,
  type StorageCompactionResult,
  type StoredChange,
  type StoredChangeAt,
  type RevisionResetReason,
} from './mvcc-store.js';
export { MvccKeyLayout } from './key-layout.js';
export { KeyIndexBudget } from './key-index.js';
export { readSnapshotHeader, type SnapshotHeader } from './snapshot-format.js';
export { formatInt64, int64Max, int64Min, parseCanonicalInt64 } from './int64-text.js';
