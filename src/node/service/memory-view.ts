/**
 * What the node's memory goes to, by consumer, for the metrics scrape (atoll_memory_*_bytes) and
 * docs/operations.md's table of bounds: each consumer's current bytes (an estimate from its own
 * accounting, or LevelDB's) and the limit that bounds it. O(hosted partitions) plus the engine's
 * buffered keys; no I/O.
 */
import type { VersionCache } from '../../mvcc/version-cache.js';
import type { StorageEngine } from '../../storage/storage-engine.js';
import { NODE_DEFAULTS, type AtollNodeConfig } from '../node-config.js';
import type { PartitionReplica } from '../replica/partition-replica.js';

export interface MemoryConsumer {
  /** Label value: version_cache, key_index, raft_log, dedup, watch, write_behind, leveldb. */
  readonly consumer: string;
  readonly bytes: number;
  /** The bound, when the consumer has one in bytes. */
  readonly limitBytes?: number;
}

export function memoryView(
  replicas: Iterable<PartitionReplica>,
  cache: VersionCache,
  engine: StorageEngine,
  config: AtollNodeConfig,
  watch?: { readonly heldBytes: number; readonly limitBytes: number },
): MemoryConsumer[] {
  let keyIndex = 0;
  let raftLog = 0;
  let dedup = 0;
  for (const replica of replicas) {
    keyIndex += replica.mvcc.keyIndexStatus().bytes;
    raftLog += replica.storage.memoryBytes;
    dedup += replica.mvcc.dedupMemory().bytes;
  }
  const cacheStats = cache.stats();
  const consumers: MemoryConsumer[] = [
    { consumer: 'version_cache', bytes: cacheStats.bytes, limitBytes: cacheStats.maxBytes },
    { consumer: 'key_index', bytes: keyIndex, limitBytes: config.keyIndexBytes ?? NODE_DEFAULTS.keyIndexBytes },
    { consumer: 'raft_log', bytes: raftLog, limitBytes: config.raftLogMemoryBytes ?? NODE_DEFAULTS.raftLogMemoryBytes },
    { consumer: 'dedup', bytes: dedup },
    // Bytes held for watch clients until their transport wrote them (src/watch/watch-memory.ts).
    ...(watch === undefined ? [] : [{ consumer: 'watch', bytes: watch.heldBytes, limitBytes: watch.limitBytes }]),
  ];
  return [...consumers, ...(engine.memoryUsage?.() ?? [])];
}
