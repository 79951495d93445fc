/**
 * How one node's single LevelDB is shared. Every key starts with a one-byte keyspace tag; per
 * partition keyspaces continue with the partition id as 4 big-endian bytes. All prefixes of one
 * kind have the same length, so no partition's prefix is a prefix of another's.
 *
 *   0x01 'node'  node-wide records (identity, cluster configuration)
 *   0x02 'raft'  + uint32BE(partitionId) + ...   a partition's Raft log, hard state, snapshot
 *   0x03 'mvcc'  + uint32BE(partitionId) + ...   a partition's MVCC state machine (mvcc/key-layout.ts)
 *   0x04 'staging' + uint32BE(partitionId) + uint32BE(seq)   chunks of a snapshot being received
 *                                                (node/snapshot/snapshot-receiver.ts); never needed after a restart
 *   0x05 'spool' + uint32BE(partitionId) + uint32BE(exportId) + uint32BE(seq)   chunks of a leader's
 *                                                held export (node/snapshot/snapshot-spool.ts); never needed after a restart
 */
import assert from 'node:assert/strict';
import { concatBytes, encodeUint32BE } from './bytes.js';

export const keyspaceTags = Object.freeze({ node: 0x01, raft: 0x02, mvcc: 0x03, staging: 0x04, spool: 0x05 });

export type PartitionKeyspace = 'raft' | 'mvcc' | 'staging' | 'spool';

export function partitionKeyPrefix(keyspace: PartitionKeyspace, partitionId: number): Uint8Array {
  assert(Number.isInteger(partitionId) && partitionId >= 0 && partitionId <= 0xffff_ffff, 'partition id out of range');
  return concatBytes(Uint8Array.of(keyspaceTags[keyspace]), encodeUint32BE(partitionId));
}

export function nodeKeyPrefix(): Uint8Array {
  return Uint8Array.of(keyspaceTags.node);
}
