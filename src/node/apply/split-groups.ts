/**
 * Finds the partitions splits created on this node's disk (ids at or past the initial partition
 * count, split-entry.ts), so a restarted node opens them like the others. It seeks from one id to
 * the next group's first Raft key (0x02 + uint32BE(id), storage/keyspace.ts), so it reads one key
 * per group, never a group's log; bounded by the partition count limit.
 */
import { limits } from '../../limits.js';
import { decodeUint32BE } from '../../storage/bytes.js';
import { keyspaceTags, partitionKeyPrefix } from '../../storage/keyspace.js';
import type { StorageEngine } from '../../storage/storage-engine.js';

export async function splitGroupsOnDisk(engine: StorageEngine, initialPartitions: number): Promise<number[]> {
  const found: number[] = [];
  let next = initialPartitions;
  const end = Uint8Array.of(keyspaceTags.raft + 1);
  while (next <= 0xffff_ffff && found.length < limits.maxPartitionCount) {
    let id: number | undefined;
    for await (const [key] of engine.iterate({ gte: partitionKeyPrefix('raft', next), lt: end, limit: 1 })) id = decodeUint32BE(key, 1);
    if (id === undefined) break;
    found.push(id);
    next = id + 1;
  }
  return found;
}
