/**
 * The storage API: the engine interface, the in-memory engine and byte helpers. LevelEngine lives
 * in './level-engine.js' and is imported from there, so that loading this index never loads the
 * native LevelDB binding or touches the file system.
 */
export type {
  DeleteOperation,
  IterateOptions,
  KeyRange,
  PutOperation,
  StorageEngine,
  StorageEntry,
  WriteOperation,
  WriteOptions,
} from './storage-engine.js';
export { MemoryEngine, type CrashOptions } from './memory-engine.js';
export {
  asciiBytes,
  bytesToHex,
  compareBytes,
  concatBytes,
  copyBytes,
  decodeUint32BE,
  decodeUint64BE,
  encodeUint32BE,
  encodeUint64BE,
  equalBytes,
  prefixRange,
  prefixUpperBound,
  startsWithBytes,
} from './bytes.js';
export { escapeOrdered, escapeOrderedBody, unescapeOrdered } from './ordered-escape.js';
export { ByteReader, ByteWriter } from './byte-codec.js';
export { keyspaceTags, nodeKeyPrefix, partitionKeyPrefix, type PartitionKeyspace } from './keyspace.js';
