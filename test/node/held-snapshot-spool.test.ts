/**
 * The leader's held export lives in its spool (src/node/snapshot/held-snapshot.ts, snapshot-spool.ts), not
 * in memory: export() writes each chunk as the MVCC export yields it, the sender reads chunk N
 * when it sends it, release deletes the spool, and a failed spool write gives the export up
 * leaving nothing behind. Deterministic: one memory engine, a fake Raft core and log storage.
 */
import { describe, expect, it } from 'vitest';
import { HeldSnapshot } from '../../src/node/snapshot/held-snapshot.js';
import type { PersistentLogStorage } from '../../src/node/raftlog/raft-log-store.js';
import { decodeSnapshotTicket } from '../../src/node/snapshot/snapshot-payload.js';
import { deleteLeftoverSpools, spoolKey } from '../../src/node/snapshot/snapshot-spool.js';
import { maxSnapshotChunkBytes } from '../../src/node/snapshot/snapshot-transfer.js';
import type { RawNode } from '../../src/raft/rawnode.js';
import type { SnapshotMeta } from '../../src/raft/types.js';
import { prefixRange } from '../../src/storage/bytes.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import type { WriteOperation } from '../../src/storage/storage-engine.js';
import { memoryEngineKind, Partition } from '../mvcc/harness.js';

const GROUP = 7;

async function harness(writeFails?: (operations: WriteOperation[]) => boolean) {
  const source = await Partition.create(memoryEngineKind);
  for (let i = 0; i < 30; i++) await source.put(`b/${i}`, 'x'.repeat(30_000));
  const engine = new MemoryEngine();
  const write = engine.write.bind(engine);
  engine.write = async (operations, options) => {
    if (writeFails?.(operations)) throw new Error('injected spool write failure');
    return write(operations, options);
  };
  let recorded: SnapshotMeta = { index: 0, term: 0, confState: { voters: [1], learners: [] } };
  const storage = { snapshotMeta: () => recorded, term: () => 1 } as unknown as PersistentLogStorage;
  const raw = { status: () => ({ role: 'leader', confState: { voters: [1], learners: [] }, progress: new Map(), lastIndex: source.index }) } as unknown as RawNode;
  const held = new HeldSnapshot({ id: GROUP, nodeId: 1, raw, mvcc: source.store, storage, nowMs: () => 0, maxEntriesWhileHeld: 10_000, engine });
  const spooled = async (): Promise<number> => {
    let count = 0;
    for await (const _ of engine.iterate(prefixRange(Uint8Array.of(0x05)))) count++;
    return count;
  };
  const expected: Uint8Array[] = [];
  for await (const chunk of source.store.exportSnapshot()) expected.push(chunk);
  return { source, engine, held, spooled, expected, record: (meta: SnapshotMeta) => (recorded = meta) };
}

describe("the leader's spooled export", () => {
  it('spools every chunk before offering the ticket, holds one chunk at a time, and reads chunks back from the engine', async () => {
    const h = await harness();
    const snapshot = await h.held.export();
    expect(snapshot).toBeDefined();
    const ticket = decodeSnapshotTicket(snapshot!.data)!;
    expect(ticket.chunkCount).toBe(h.expected.length);
    expect(h.expected.length).toBeGreaterThan(3);
    expect(await h.spooled()).toBe(h.expected.length);
    expect(h.held.peakExportBytes).toBeLessThanOrEqual(maxSnapshotChunkBytes());
    expect(h.held.adopt(snapshot!, false)).toBe(true);
    h.record(snapshot!.meta);
    const exported = h.held.exportedFor(snapshot!.meta.index, snapshot!.meta.term)!;
    expect(exported.chunkCount).toBe(h.expected.length);
    for (let seq = 0; seq < exported.chunkCount; seq++) expect(await exported.readChunk(seq)).toEqual(h.expected[seq]);
    expect(await exported.readChunk(exported.chunkCount)).toBeUndefined();
    // Released: reads find nothing at once, and the keys go beside the loop.
    h.held.drop();
    expect(await exported.readChunk(0)).toBeUndefined();
    await h.held.spoolDeleted();
    expect(await h.spooled()).toBe(0);
  });

  it("clears the request Raft made during the export once it is adopted (no second export)", async () => {
    const h = await harness();
    const exporting = h.held.export();
    // Raft asks meanwhile, for the point recorded before: not held yet, so it is wanted again.
    expect(() => h.held.data({ index: 0, term: 0, confState: { voters: [1], learners: [] } })).toThrow();
    expect(h.held.wanted).toBe(true);
    const snapshot = (await exporting)!;
    expect(h.held.adopt(snapshot, false)).toBe(true);
    h.record(snapshot.meta);
    expect(h.held.wanted).toBe(false);
    expect(h.held.data(snapshot.meta)).toEqual(snapshot.data);
  });

  it('gives the export up when a spool write fails, leaving no spool behind', async () => {
    let writes = 0;
    const h = await harness((operations) => operations.some((operation) => operation.key[0] === 0x05 && operation.type === 'put') && ++writes === 3);
    await expect(h.held.export()).rejects.toThrow(/injected spool write failure/);
    expect(h.held.holds).toBe(false);
    await h.held.spoolDeleted();
    expect(await h.spooled()).toBe(0);
  });

  it('a refused adoption releases the new spool; opening deletes leftovers in bounded batches', async () => {
    const h = await harness();
    const snapshot = (await h.held.export())!;
    expect(h.held.adopt(snapshot, true)).toBe(false); // An install from the leader overtook it.
    await h.held.spoolDeleted();
    expect(await h.spooled()).toBe(0);
    // A crash's leftovers: two exports' chunks, more than one delete batch.
    const ops: WriteOperation[] = [];
    for (let seq = 0; seq < 600; seq++) ops.push({ type: 'put', key: spoolKey(GROUP, 3, seq), value: Uint8Array.of(1) });
    for (let seq = 0; seq < 5; seq++) ops.push({ type: 'put', key: spoolKey(GROUP, 9, seq), value: Uint8Array.of(1) });
    ops.push({ type: 'put', key: spoolKey(GROUP + 1, 1, 0), value: Uint8Array.of(1) });
    await h.engine.write(ops);
    expect(await deleteLeftoverSpools(h.engine, GROUP)).toBeGreaterThanOrEqual(605);
    expect(await h.spooled()).toBe(1); // Only the other group's key remains.
  });
});
