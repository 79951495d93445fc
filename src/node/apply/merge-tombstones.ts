/**
 * Merged-away range starts, kept on the node's disk (issue 19, docs/architecture.md "Partition
 * merges", "Ids after a merge"): a partition merged into its left neighbour stops being a range
 * start forever, and its id is never used again. The merge batch (merge-apply.ts) writes
 * `0x01 "merged-start" 0x00` + uint32BE(start) → uint32BE(the partition it was merged into), so a
 * restarted node's routing table (range-routing.ts) refuses that start even when a peer that has
 * not learned the merge still reports it. Nodes that never hosted the merged partitions learn the
 * tombstones from PARTITION_MOVED answers and peers' ClusterInfo (memory only; a restart learns
 * them again the same way).
 */
import { asciiBytes, concatBytes, decodeUint32BE, encodeUint32BE, prefixRange } from '../../storage/bytes.js';
import { nodeKeyPrefix } from '../../storage/keyspace.js';
import type { StorageEngine, WriteOperation } from '../../storage/storage-engine.js';

const TOMBSTONE_PREFIX = concatBytes(nodeKeyPrefix(), asciiBytes('merged-start'), Uint8Array.of(0));

/** At most this many tombstones are read at start (each is one merge: far more than a cluster makes). */
const MAX_TOMBSTONES = 1_000_000;

export function tombstoneOps(start: number, into: number): WriteOperation[] {
  return [{ type: 'put', key: concatBytes(TOMBSTONE_PREFIX, encodeUint32BE(start)), value: encodeUint32BE(into) }];
}

/** Every merged-away start on this node's disk, with the partition it was merged into. */
export async function loadTombstones(engine: StorageEngine): Promise<Array<{ readonly start: number; readonly into: number }>> {
  const found: Array<{ start: number; into: number }> = [];
  for await (const [key, value] of engine.iterate(prefixRange(TOMBSTONE_PREFIX))) {
    if (key.length !== TOMBSTONE_PREFIX.length + 4 || value.length !== 4) throw new Error(`malformed merged-start record (${key.length}-byte key, ${value.length}-byte value)`);
    found.push({ start: decodeUint32BE(key, TOMBSTONE_PREFIX.length), into: decodeUint32BE(value) });
    if (found.length > MAX_TOMBSTONES) throw new Error(`more than ${MAX_TOMBSTONES} merged-start records`);
  }
  return found;
}
