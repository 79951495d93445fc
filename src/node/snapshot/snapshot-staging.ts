/**
 * Where a follower keeps the chunks of a snapshot it is receiving (one job: those keys): keyspace
 * 0x04 (storage/keyspace.ts), partition id, then the chunk's sequence number, big-endian, so a
 * partition's chunks read back in order. Staged chunks are never needed after a restart (the
 * transfer starts again), so open deletes them (stagedDeleteOps).
 */
import { concatBytes, encodeUint32BE, equalBytes, prefixRange } from '../../storage/bytes.js';
import { partitionKeyPrefix } from '../../storage/keyspace.js';
import type { StorageEngine, WriteOperation } from '../../storage/storage-engine.js';

export function stagingKey(partition: number, seq: number): Uint8Array {
  return concatBytes(partitionKeyPrefix('staging', partition), encodeUint32BE(seq));
}

/** Deletes of chunks 0..count-1 of `partition` (a discarded or finished transfer). */
export function stagedChunkDeletes(partition: number, count: number): WriteOperation[] {
  const ops: WriteOperation[] = [];
  for (let seq = 0; seq < count; seq++) ops.push({ type: 'del', key: stagingKey(partition, seq) });
  return ops;
}

/**
 * The staged chunks 0..count-1 of `partition`, read one at a time as the import consumes them
 * (the engine's iterator: never all of them in memory). A missing chunk is a broken invariant
 * (the receiver hands over only complete transfers): it throws, and the import's caller stops.
 */
export async function* readStagedChunks(engine: StorageEngine, partition: number, count: number): AsyncIterable<Uint8Array> {
  let expected = 0;
  for await (const [key, value] of engine.iterate({ gte: stagingKey(partition, 0), lt: stagingKey(partition, count) })) {
    if (!equalBytes(key, stagingKey(partition, expected))) throw new Error(`partition ${partition}: staged snapshot chunk ${expected} is missing`);
    expected++;
    yield value;
  }
  if (expected !== count) throw new Error(`partition ${partition}: ${count - expected} staged snapshot chunks are missing`);
}

/** Deletes of every staged chunk of `partition` (at open: a crash left a transfer behind). */
export async function stagedDeleteOps(engine: StorageEngine, partition: number): Promise<WriteOperation[]> {
  const ops: WriteOperation[] = [];
  // At most one transfer's chunks per partition (the receiver discards one before staging another).
  for await (const [key] of engine.iterate(prefixRange(partitionKeyPrefix('staging', partition)))) ops.push({ type: 'del', key });
  return ops;
}
