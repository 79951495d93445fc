/**
 * Where a leader keeps the chunks of the export it holds for lagging followers (one job: those
 * keys): keyspace 0x05 (storage/keyspace.ts), partition id, export id, then the chunk's sequence
 * number, all big-endian, so an export's chunks read back in order and exports never share keys.
 * held-snapshot.ts writes them while exporting and deletes them on release; the sender
 * (snapshot-sender.ts) reads chunk N when it sends it. A spool is never needed after a restart (the
 * leader exports again when Raft asks), so opening a replica deletes any a crash left behind.
 */
import { concatBytes, encodeUint32BE, prefixRange } from '../../storage/bytes.js';
import { partitionKeyPrefix } from '../../storage/keyspace.js';
import type { StorageEngine, WriteOperation } from '../../storage/storage-engine.js';

/** Keys deleted per write when a spool goes (a bounded batch beside the loop). */
export const SPOOL_DELETE_BATCH = 256;

export function spoolKey(partition: number, exportId: number, seq: number): Uint8Array {
  return concatBytes(partitionKeyPrefix('spool', partition), encodeUint32BE(exportId), encodeUint32BE(seq));
}

/** Every spool key of `partition`, of any export. */
export function spoolRange(partition: number): ReturnType<typeof prefixRange> {
  return prefixRange(partitionKeyPrefix('spool', partition));
}

/** Deletes chunks 0..count-1 of export `exportId` in bounded, unsynced batches. */
export async function deleteSpool(engine: StorageEngine, partition: number, exportId: number, count: number): Promise<void> {
  for (let from = 0; from < count; from += SPOOL_DELETE_BATCH) {
    const ops: WriteOperation[] = [];
    for (let seq = from; seq < Math.min(count, from + SPOOL_DELETE_BATCH); seq++) ops.push({ type: 'del', key: spoolKey(partition, exportId, seq) });
    await engine.write(ops);
  }
}

/**
 * Deletes every spooled chunk of `partition` (at open: a crash left an export behind), in bounded
 * batches, reading one chunk at a time (the first one left: it names the export and where its
 * chunks go on); returns how many keys it deleted. Each round deletes at least the key it read.
 */
export async function deleteLeftoverSpools(engine: StorageEngine, partition: number): Promise<number> {
  const prefixBytes = partitionKeyPrefix('spool', partition).length;
  let deleted = 0;
  for (;;) {
    let first: Uint8Array | undefined;
    for await (const [key] of engine.iterate({ ...spoolRange(partition), limit: 1 })) first = key;
    if (first === undefined) return deleted;
    const view = new DataView(first.buffer, first.byteOffset, first.byteLength);
    const exportId = view.getUint32(prefixBytes);
    const seq = view.getUint32(prefixBytes + 4);
    const ops: WriteOperation[] = [{ type: 'del', key: first }];
    for (let next = seq + 1; next < seq + SPOOL_DELETE_BATCH && next <= 0xffff_ffff; next++) ops.push({ type: 'del', key: spoolKey(partition, exportId, next) });
    await engine.write(ops);
    deleted += ops.length;
  }
}
