/**
 * Snapshots stream in chunks beside Raft (src/node/snapshot/snapshot-transfer.ts; issue 16, "Snapshot
 * install"). The follower's receiver takes chunks in order only, checks each as it arrives and
 * stages it on disk; a truncated, reordered, forged or unexpected stream is refused and changes
 * nothing. In a cluster, a snapshot of tens of MiB reaches a lagging follower while the bytes its
 * transfer buffers stay at most TRANSFER_WINDOW chunks, and the Raft messages carry only a ticket.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { encodeSnapshotHeader, encodeSnapshotTrailer, SnapshotEntriesWriter } from '../../src/mvcc/snapshot-format.js';
import type { HeldSnapshot } from '../../src/node/snapshot/held-snapshot.js';
import type { PartitionReplica } from '../../src/node/replica/partition-replica.js';
import type { RaftDriver } from '../../src/node/replica/raft-driver.js';
import type { GroupMessage, SnapshotChunkItem } from '../../src/node/raft-wire.js';
import { PayloadDigest, decodeSnapshotTicket } from '../../src/node/snapshot/snapshot-payload.js';
import { SnapshotReceiver } from '../../src/node/snapshot/snapshot-receiver.js';
import { SnapshotSender } from '../../src/node/snapshot/snapshot-sender.js';
import { maxSnapshotChunkBytes, TRANSFER_WINDOW, type TransferGroup } from '../../src/node/snapshot/snapshot-transfer.js';
import type { RawNode } from '../../src/raft/rawnode.js';
import { prefixRange } from '../../src/storage/bytes.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { memoryEngineKind, Partition } from '../mvcc/harness.js';
import { closedAfterEach, InProcessCluster, laggingFollower, waitFor } from './in-process-cluster.js';

const LEADER = 1;
const FOLLOWER = 2;
const GROUP = 0;

/** A follower's receiver over a memory engine, with one group whose store checks the chunks. */
async function receiverHarness(): Promise<{
  receiver: SnapshotReceiver;
  engine: MemoryEngine;
  sent: GroupMessage[];
  refusals: string[];
  group: TransferGroup;
  staged: () => Promise<number>;
  /** The group the host answers with now (a test replaces it: a replica that left and came back). */
  current: { group: TransferGroup };
}> {
  const engine = new MemoryEngine();
  const target = await Partition.create(memoryEngineKind);
  const sent: GroupMessage[] = [];
  const refusals: string[] = [];
  const group: TransferGroup = {
    id: GROUP,
    // Only what the receiver asks of the Raft core: membership, term and commit.
    raw: { isMember: (peer: number) => peer === LEADER || peer === FOLLOWER, status: () => ({ term: 2, commit: 1 }) } as unknown as RawNode,
    snapshotCheck: () => target.store.snapshotCheck(),
  };
  const current = { group };
  const receiver = new SnapshotReceiver({
    id: FOLLOWER,
    engine,
    clock: { monotonicMs: () => 0, wallMs: () => 0 },
    logger: pino({ level: 'silent' }),
    maxChunkBytes: maxSnapshotChunkBytes(),
    group: (id) => (id === GROUP ? current.group : undefined),
    send: (_peer, items) => sent.push(...items),
    refuse: (_from, _group, reason) => refusals.push(reason),
  });
  const staged = async (): Promise<number> => {
    let count = 0;
    for await (const _ of engine.iterate(prefixRange(Uint8Array.of(0x04)))) count++;
    return count;
  };
  return { receiver, engine, sent, refusals, group, staged, current };
}

/** Another receiver over the harness's engine and outboxes, with groups of its own. */
function receiverOf(h: Awaited<ReturnType<typeof receiverHarness>>, group: (id: number) => TransferGroup | undefined): SnapshotReceiver {
  return new SnapshotReceiver({
    id: FOLLOWER,
    engine: h.engine,
    clock: { monotonicMs: () => 0, wallMs: () => 0 },
    logger: pino({ level: 'silent' }),
    maxChunkBytes: maxSnapshotChunkBytes(),
    group,
    send: (_peer, items) => h.sent.push(...items),
    refuse: (_from, _group, reason) => h.refusals.push(reason),
  });
}

/** A real export (index, chunks, digest) of a partition with `keys` keys of `valueBytes` each. */
async function exportOf(keys: number, valueBytes: number): Promise<{ index: number; chunks: Uint8Array[]; digest: Uint8Array }> {
  const source = await Partition.create(memoryEngineKind);
  for (let i = 0; i < keys; i++) await source.put(`b/${i}`, 'x'.repeat(valueBytes));
  const chunks: Uint8Array[] = [];
  const digest = new PayloadDigest();
  for await (const chunk of source.store.exportSnapshot()) {
    chunks.push(chunk);
    digest.add(chunk);
  }
  return { index: source.index, chunks, digest: digest.digest() };
}

function chunkItems(exported: { index: number; chunks: Uint8Array[]; digest: Uint8Array }, overrides: Partial<SnapshotChunkItem> = {}): SnapshotChunkItem[] {
  return exported.chunks.map((data, seq) => ({
    kind: 'chunk',
    from: LEADER,
    to: FOLLOWER,
    term: 2,
    index: exported.index,
    snapTerm: 1,
    digest: exported.digest,
    seq,
    last: seq === exported.chunks.length - 1,
    data,
    ...overrides,
  }));
}

/** Lets the receiver's chained writes land. */
const drain = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 20));

const ticketOf = (exported: { chunks: Uint8Array[]; digest: Uint8Array }) => ({ digest: exported.digest, chunkCount: exported.chunks.length, byteCount: 0 });

describe('the snapshot receiver (follower side)', () => {
  it('stages an in-order stream, acknowledges each chunk once written, and hands it to the install whole', async () => {
    const h = await receiverHarness();
    const exported = await exportOf(40, 20_000);
    expect(exported.chunks.length).toBeGreaterThan(3);
    for (const item of chunkItems(exported)) h.receiver.onChunk(LEADER, GROUP, item);
    await drain();
    expect(h.refusals).toEqual([]);
    expect(await h.staged()).toBe(exported.chunks.length);
    const acks = h.sent.map((m) => m.transfer).filter((t) => t?.kind === 'ack');
    expect(acks.at(-1)).toMatchObject({ next: exported.chunks.length, refused: false });
    const staged = h.receiver.claim(GROUP, exported.index, 1, ticketOf(exported));
    expect(staged).toBeDefined();
    const read: Uint8Array[] = [];
    for await (const chunk of staged!.chunks()) read.push(chunk);
    expect(read).toEqual(exported.chunks);
    expect(h.receiver.peakBufferedBytes).toBeLessThanOrEqual(TRANSFER_WINDOW * maxSnapshotChunkBytes());
  });

  it('does not resume a transfer staged for a replica that left: the replica opened again gets the chunks again (seed 60097)', async () => {
    const h = await receiverHarness();
    const exported = await exportOf(40, 20_000);
    const items = chunkItems(exported);
    for (const item of items) h.receiver.onChunk(LEADER, GROUP, item);
    await drain();
    expect(await h.staged()).toBe(exported.chunks.length);
    // The replica leaves before installing it: its records go, staged chunks included
    // (ReplicaMoves.leave), and a later move opens a new replica of the group here.
    for await (const [key] of h.engine.iterate(prefixRange(Uint8Array.of(0x04)))) await h.engine.write([{ type: 'del', key }]);
    h.current.group = { ...h.group };
    h.sent.length = 0;
    // The leader streams the same snapshot (same transfer id) to the new replica.
    h.receiver.onChunk(LEADER, GROUP, items[0]!);
    await drain();
    const acks = h.sent.map((m) => m.transfer).filter((t) => t?.kind === 'ack');
    expect(acks.at(-1)).toMatchObject({ next: 1, refused: false });
    for (const item of items.slice(1)) h.receiver.onChunk(LEADER, GROUP, item);
    await drain();
    const staged = h.receiver.claim(GROUP, exported.index, 1, ticketOf(exported));
    expect(staged).toBeDefined();
    const read: Uint8Array[] = [];
    for await (const chunk of staged!.chunks()) read.push(chunk);
    expect(read).toEqual(exported.chunks);
  });

  it('does not ask a transfer it declined to start (at its bound) to start over, so the leader does not resend at network speed (seed 2003)', async () => {
    const h = await receiverHarness();
    const exported = await exportOf(40, 20_000);
    const others = [7, 8];
    const groups = new Map<number, TransferGroup>([[GROUP, h.group], ...others.map((id) => [id, { ...h.group, id }] as [number, TransferGroup])]);
    const receiver = receiverOf(h, (id) => groups.get(id));
    // Two transfers of other groups fill the node's bound (MAX_INCOMING_TRANSFERS).
    for (const id of others) receiver.onChunk(LEADER, id, chunkItems(exported)[0]!);
    await drain();
    expect(receiver.active).toBe(2);
    h.sent.length = 0;
    // A window of GROUP's transfer: its first chunk is declined, and the rest must not ask for chunk 0 again.
    for (const item of chunkItems(exported).slice(0, 3)) receiver.onChunk(LEADER, GROUP, item);
    await drain();
    const asked = h.sent.filter((m) => m.group === GROUP && m.transfer?.kind === 'ack');
    expect(asked).toEqual([]);
  });

  it('gives up a complete transfer its group\'s log came to cover, so the node\'s bound takes another group\'s transfer at once (seed 1836)', async () => {
    const h = await receiverHarness();
    const exported = await exportOf(40, 20_000);
    const commits = new Map<number, number>([[7, 1], [8, 1], [GROUP, 1]]);
    const groups = new Map([...commits.keys()].map((id) => [id, { ...h.group, id, raw: { isMember: () => true, status: () => ({ term: 2, commit: commits.get(id) }) } as unknown as RawNode }]));
    const receiver = receiverOf(h, (id) => groups.get(id));
    // Groups 7 and 8 stage whole snapshots: the node's bound (MAX_INCOMING_TRANSFERS) is full.
    for (const id of [7, 8]) for (const item of chunkItems(exported)) receiver.onChunk(LEADER, id, item);
    await drain();
    expect(receiver.active).toBe(2);
    receiver.tick();
    expect(receiver.active).toBe(2);
    // Both groups catch up from the log instead (their core answers the MsgSnap without claiming it).
    commits.set(7, exported.index);
    commits.set(8, exported.index + 5);
    receiver.tick();
    expect(receiver.active).toBe(0);
    await drain();
    expect(await h.staged()).toBe(0);
    // Another group's transfer starts at once.
    for (const item of chunkItems(exported)) receiver.onChunk(LEADER, GROUP, item);
    await drain();
    expect(receiver.claim(GROUP, exported.index, 1, ticketOf(exported))).toBeDefined();
  });

  it('refuses a truncated stream: nothing to install, and a timeout discards what was staged', async () => {
    const h = await receiverHarness();
    const exported = await exportOf(40, 20_000);
    const items = chunkItems(exported);
    for (const item of items.slice(0, -1)) h.receiver.onChunk(LEADER, GROUP, item);
    await drain();
    expect(h.receiver.claim(GROUP, exported.index, 1, ticketOf(exported))).toBeUndefined();
    // A ticket for data that never came (forged or after a restart) is refused the same way.
    expect(decodeSnapshotTicket(new Uint8Array(3))).toBeUndefined();
  });

  it('refuses chunks out of order, from strangers, for groups it does not hold, or of transfers it does not expect, changing nothing', async () => {
    const h = await receiverHarness();
    const exported = await exportOf(40, 20_000);
    const items = chunkItems(exported);
    // Not the first chunk of a transfer it knows: refused, asked to start over.
    h.receiver.onChunk(LEADER, GROUP, items[2]!);
    // From a node that is not a member (at an older term: a non-member leading at the replica's
    // term or newer is taken, peer-message-check.ts fromLeaderAtTerm), or for a group this node does not hold.
    h.receiver.onChunk(3, GROUP, { ...items[0]!, from: 3, term: 0 });
    h.receiver.onChunk(LEADER, 7, items[0]!);
    // Addressed to another node.
    h.receiver.onChunk(LEADER, GROUP, { ...items[0]!, to: 3 });
    await drain();
    expect(await h.staged()).toBe(0);
    expect(h.receiver.active).toBe(0);
    expect(h.refusals).toEqual([
      'snapshot chunk: for a transfer this node does not expect',
      'snapshot chunk: sender is not a member of the group',
      'snapshot chunk: for a group this node does not hold',
      'snapshot chunk: not addressed to this node',
    ]);
    // Reordered within a transfer: chunk 2 before chunk 1 is refused (not staged), 1 then 2 goes on.
    h.refusals.length = 0;
    h.receiver.onChunk(LEADER, GROUP, items[0]!);
    h.receiver.onChunk(LEADER, GROUP, items[2]!);
    await drain();
    expect(h.refusals).toEqual(['snapshot chunk: out of order']);
    expect(await h.staged()).toBe(1);
    for (const item of items.slice(1)) h.receiver.onChunk(LEADER, GROUP, item);
    await drain();
    expect(h.receiver.claim(GROUP, exported.index, 1, ticketOf(exported))).toBeDefined();
  });

  it('refuses a forged chunk or a stream whose digest does not match, and discards what it staged', async () => {
    const h = await receiverHarness();
    const exported = await exportOf(40, 20_000);
    // A well-formed chunk whose entry is garbage: the MVCC checks refuse it as it arrives.
    const entries = new SnapshotEntriesWriter();
    entries.add(new TextEncoder().encode('v-garbage'), new Uint8Array([1, 2, 3]));
    const items = chunkItems(exported);
    h.receiver.onChunk(LEADER, GROUP, items[0]!);
    h.receiver.onChunk(LEADER, GROUP, { ...items[1]!, data: entries.finish() });
    await drain();
    expect(h.refusals.at(-1)).toMatch(/neither a valid version nor a valid dedup entry/);
    expect(h.receiver.active).toBe(0);
    expect(await h.staged()).toBe(0);
    // Valid chunks whose digest is not the one the transfer names: refused at the last chunk.
    const wrongDigest = new Uint8Array(32).fill(7);
    for (const item of chunkItems(exported, { digest: wrongDigest })) h.receiver.onChunk(LEADER, GROUP, item);
    await drain();
    expect(h.refusals.at(-1)).toMatch(/do not match the snapshot digest/);
    expect(h.receiver.active).toBe(0);
    expect(await h.staged()).toBe(0);
    // A stream with the right digest but a header naming another index than the transfer.
    const header = encodeSnapshotHeader({ appliedIndex: 999, revision: 1, compactedRevision: 0, appliedTimeMs: 0 });
    const chunks = [header, encodeSnapshotTrailer(0)];
    const digest = new PayloadDigest();
    for (const chunk of chunks) digest.add(chunk);
    for (const item of chunkItems({ index: 5, chunks, digest: digest.digest() })) h.receiver.onChunk(LEADER, GROUP, item);
    await drain();
    expect(h.refusals.at(-1)).toMatch(/the data is at index 999, the transfer names 5/);
    expect(await h.staged()).toBe(0);
  });
});

describe('the snapshot sender (leader side)', () => {
  it('holds the MsgSnap until the follower acknowledged every chunk, keeps at most the window unacknowledged, and refuses strangers', async () => {
    const exported = await exportOf(40, 20_000);
    const count = exported.chunks.length;
    const sent: Array<{ peer: number; item: GroupMessage }> = [];
    const refusals: string[] = [];
    const group: TransferGroup = {
      id: GROUP,
      raw: { role: 'leader' } as unknown as RawNode,
      // The chunks as a spool hands them out: read one at a time, when sent.
      exportedSnapshot: (index, snapTerm) =>
        index === exported.index && snapTerm === 1 ? { digest: exported.digest, chunkCount: count, readChunk: async (seq) => exported.chunks[seq] } : undefined,
    };
    const sender = new SnapshotSender({
      id: LEADER,
      engine: new MemoryEngine(),
      clock: { monotonicMs: () => 0, wallMs: () => 0 },
      logger: pino({ level: 'silent' }),
      maxChunkBytes: maxSnapshotChunkBytes(),
      group: (id) => (id === GROUP ? group : undefined),
      send: (peer, items) => sent.push(...items.map((item) => ({ peer, item }))),
      refuse: (_from, _group, reason) => refusals.push(reason),
    });
    const snap = { type: 'snap' as const, from: LEADER, to: FOLLOWER, term: 2, snapshot: { index: exported.index, term: 1, confState: { voters: [1, 2, 3], learners: [] } } };
    expect(sender.onSnapMessage(GROUP, snap)).toBe(false);
    await drain();
    const chunksSent = () => sent.filter((s) => s.item.transfer?.kind === 'chunk').map((s) => (s.item.transfer as SnapshotChunkItem).seq);
    expect(chunksSent()).toEqual([...Array(Math.min(TRANSFER_WINDOW, count)).keys()]);
    const ack = (next: number, extra: object = {}) =>
      sender.onAck(FOLLOWER, GROUP, { kind: 'ack', from: FOLLOWER, to: LEADER, term: 2, index: exported.index, snapTerm: 1, digest: exported.digest, next, refused: false, ...extra });
    // An ack from another node, or naming another digest, is refused and changes nothing.
    sender.onAck(3, GROUP, { kind: 'ack', from: 3, to: LEADER, term: 2, index: exported.index, snapTerm: 1, digest: exported.digest, next: count, refused: false });
    ack(count, { digest: new Uint8Array(32) });
    expect(refusals).toHaveLength(2);
    // A refused ack (a lost chunk) rewinds to the chunk the follower wants.
    ack(1);
    ack(1, { refused: true });
    await drain();
    expect(chunksSent().slice(-TRANSFER_WINDOW)).toEqual([1, 2, 3, 4].filter((seq) => seq < count));
    expect(sent.some((s) => s.item.message?.type === 'snap')).toBe(false);
    ack(count);
    // Every chunk acknowledged: the held MsgSnap goes, and later ones pass at once.
    expect(sent.at(-1)?.item.message).toEqual(snap);
    expect(sender.onSnapMessage(GROUP, snap)).toBe(true);
  });
});

/** The length of each `big/` value missedLargeWrites writes. */
const BIG_VALUE_BYTES = 100_000;

/**
 * Starts `c` and cuts follower `lagging` off while 40 values of BIG_VALUE_BYTES (`big/0` ..
 * `big/39`) are written: it can catch up only by a snapshot of several chunks (about 256 KiB each).
 */
async function missedLargeWrites(c: InProcessCluster, lagging: number): Promise<InProcessCluster> {
  await c.start();
  await c.waitForLeader();
  c.network.cut.add(lagging);
  const value = 'v'.repeat(BIG_VALUE_BYTES);
  for (let i = 0; i < 40; i += 4) await Promise.all([0, 1, 2, 3].map((j) => c.put(`big/${i + j}`, value)));
  return c;
}

describe('a follower killed while staging a snapshot', () => {
  const clusters = closedAfterEach();
  const LAGGING = laggingFollower();
  const isStaging = (operations: readonly { key: Uint8Array }[] | 'deleteRange'): boolean =>
    operations !== 'deleteRange' && operations.some((operation) => operation.key[0] === 0x04);

  for (const mode of ['power', 'process'] as const) {
    it(`reopens with no staged chunks and catches up (${mode === 'power' ? 'power loss' : 'process kill'} at the second staging write)`, async () => {
      const c = await missedLargeWrites(clusters.add(new InProcessCluster({ snapshotEveryEntries: 10, logEntriesKeptAfterSnapshot: 5 })), LAGGING);
      const engine = c.engines.get(LAGGING)!;
      let stagingWrites = 0;
      engine.beforeWrite = (operations) => isStaging(operations) && ++stagingWrites === 2;
      c.network.cut.delete(LAGGING);
      expect(await waitFor(() => engine.dead, 10_000)).toBe(true);
      c.network.cut.add(LAGGING);
      await c.node(LAGGING).close();
      c.memory.get(LAGGING)?.crash({ keepUnsyncedBatches: mode === 'power' ? 0 : Number.MAX_SAFE_INTEGER });
      // The process kill keeps the first staged chunk on disk: open deletes it.
      await c.open(LAGGING);
      let staged = 0;
      for await (const _ of c.memory.get(LAGGING)!.iterate(prefixRange(Uint8Array.of(0x04)))) staged++;
      expect(staged).toBe(0);
      c.network.cut.delete(LAGGING);
      const caughtUp = await waitFor(() => {
        const leader = c.leaderId();
        return leader !== undefined && c.replica(LAGGING).appliedIndex >= c.replica(leader).appliedIndex;
      }, 20_000);
      expect(caughtUp).toBe(true);
      expect((await c.localValue(LAGGING, 'big/39'))?.length).toBe(BIG_VALUE_BYTES);
      expect(c.node(LAGGING).failure).toBeUndefined();
    }, 60_000);
  }
});

describe('a large snapshot streamed to a lagging follower', () => {
  const clusters = closedAfterEach();
  const LAGGING = laggingFollower();
  const VALUE_BYTES = 256 * 1024;
  const LARGE_WRITES = 96; // 24 MiB

  it('is installed while the transfer buffers at most its window, and Raft carries only the ticket', async () => {
    const c = clusters.add(new InProcessCluster({ snapshotEveryEntries: 10, logEntriesKeptAfterSnapshot: 5 }));
    let largestRaftSnapData = 0;
    let largestChunk = 0;
    let chunkBytesToLagging = 0;
    c.network.onSend = (_from, to, messages) => {
      for (const { message, transfer } of messages) {
        if (message?.type === 'snap') largestRaftSnapData = Math.max(largestRaftSnapData, message.chunk?.data.length ?? 0);
        if (transfer?.kind === 'chunk' && to === LAGGING) {
          largestChunk = Math.max(largestChunk, transfer.data.length);
          chunkBytesToLagging += transfer.data.length;
        }
      }
    };
    await c.start();
    await c.waitForLeader();
    // Exports per node within one term, sampled (a stepped-down leader drops its export and every
    // new leader exports its own; the in-process cluster sees elections while 24 MiB is written).
    const perTerm = new Map<number, { term: number; exports: number; inTerm: number; most: number }>();
    const sampleExports = (): void => {
      for (const id of [1, 2, 3]) {
        const term = c.replica(id).raw.term;
        const exports = c.replica(id).snapshotsExported;
        const last = perTerm.get(id) ?? { term, exports: 0, inTerm: 0, most: 0 };
        const inTerm = (last.term === term ? last.inTerm : 0) + exports - last.exports;
        perTerm.set(id, { term, exports, inTerm, most: Math.max(last.most, inTerm) });
      }
    };
    const sampler = setInterval(() => {
      try {
        sampleExports();
      } catch {
        clearInterval(sampler); // The cluster closed under a failed test.
      }
    }, 5);
    c.network.cut.add(LAGGING);
    const value = 'v'.repeat(VALUE_BYTES);
    for (let i = 0; i < LARGE_WRITES; i += 4) await Promise.all([0, 1, 2, 3].map((j) => c.put(`large/${i + j}`, value)));
    c.network.cut.delete(LAGGING);
    const caughtUp = await waitFor(() => {
      const leader = c.leaderId();
      return leader !== undefined && c.replica(LAGGING).appliedIndex >= c.replica(leader).appliedIndex;
    }, 40_000);
    expect(caughtUp).toBe(true);
    for (const i of [0, LARGE_WRITES / 2, LARGE_WRITES - 1]) expect((await c.localValue(LAGGING, `large/${i}`))?.length).toBe(VALUE_BYTES);
    // The driver is private to the node; the test reads its receiver's counters.
    const receiver = (c.node(LAGGING) as unknown as { driver: RaftDriver<PartitionReplica> }).driver.transfers.receiver;
    const snapshotBytes = LARGE_WRITES * VALUE_BYTES;
    console.log(
      `snapshot ${(chunkBytesToLagging / 2 ** 20).toFixed(1)} MiB in chunks of at most ${(largestChunk / 1024).toFixed(0)} KiB; ` +
        `follower buffered at most ${(receiver.peakBufferedBytes / 1024).toFixed(0)} KiB; largest Raft snapshot data ${largestRaftSnapData} bytes`,
    );
    expect(receiver.transfersCompleted).toBeGreaterThanOrEqual(1);
    expect(chunkBytesToLagging).toBeGreaterThanOrEqual(snapshotBytes);
    // Every chunk is one MVCC export chunk: snapshotChunkBytes plus at most one entry.
    expect(largestChunk).toBeLessThanOrEqual(maxSnapshotChunkBytes());
    // The bound: the sender keeps at most TRANSFER_WINDOW chunks unacknowledged, and the receiver
    // acknowledges a chunk only once it is written, so what it buffers is at most the window.
    expect(receiver.peakBufferedBytes).toBeLessThanOrEqual(TRANSFER_WINDOW * largestChunk);
    expect(receiver.peakBufferedBytes).toBeLessThan(snapshotBytes / 8);
    // Raft's MsgSnap carries the ticket only (digest and counts: 45 bytes), never the data.
    expect(largestRaftSnapData).toBeGreaterThan(0);
    expect(largestRaftSnapData).toBeLessThanOrEqual(64);
    // The leader holds no export in memory either: the export spools one chunk at a time, and the
    // sender reads chunk N from the spool when it sends it (at most one chunk per transfer). Read
    // on every node: leadership may have moved during the transfer (the balancer, the load).
    const leader = c.leaderId() as number;
    const senderOf = (id: number) => (c.node(id) as unknown as { driver: RaftDriver<PartitionReplica> }).driver.transfers.sender;
    const peakExport = Math.max(...[1, 2, 3].map((id) => heldOf(c.replica(id)).peakExportBytes));
    const peakRead = Math.max(...[1, 2, 3].map((id) => senderOf(id).peakReadBytes));
    clearInterval(sampler);
    sampleExports();
    const exports = [1, 2, 3].map((id) => c.replica(id).snapshotsExported);
    const mostInOneTerm = [1, 2, 3].map((id) => perTerm.get(id)?.most ?? 0);
    console.log(`leaders held at most ${(peakExport / 1024).toFixed(0)} KiB exporting and ${(peakRead / 1024).toFixed(0)} KiB sending; exports per node ${exports.join(', ')}, at most ${mostInOneTerm.join(', ')} in one term`);
    expect(peakExport).toBeGreaterThan(0);
    expect(peakRead).toBeGreaterThan(0);
    expect(peakExport).toBeLessThanOrEqual(maxSnapshotChunkBytes());
    expect(peakRead).toBeLessThanOrEqual(maxSnapshotChunkBytes());
    expect(peakExport + peakRead).toBeLessThan(snapshotBytes / 8);
    // Raft's requests made while an export is written name the older point: they must not start
    // another export once it is adopted (before that fix: 13 to 23 exports per node here). Counted
    // per term: CI under load saw 25 and 15 exports on two nodes over dozens of elections.
    for (const count of mostInOneTerm) expect(count).toBeLessThanOrEqual(3);
    // Released once the follower has it: the spool is deleted.
    expect(await waitFor(async () => !c.replica(leader).holdsSnapshotData && (await spoolKeys(c, leader)) === 0, 20_000)).toBe(true);
  }, 90_000);
});

/** The leader's held export (private to the replica; the test reads its counters). */
const heldOf = (replica: PartitionReplica): HeldSnapshot => (replica as unknown as { held: HeldSnapshot }).held;

/** Keys in node `id`'s spool keyspace (0x05). */
async function spoolKeys(c: InProcessCluster, id: number): Promise<number> {
  let count = 0;
  for await (const _ of c.memory.get(id)!.iterate(prefixRange(Uint8Array.of(0x05)))) count++;
  return count;
}

describe("a leader's spooled export", () => {
  const clusters = closedAfterEach();
  const LAGGING = laggingFollower();

  it('is deleted when the leader reopens after a crash, and the follower still catches up', async () => {
    const c = await missedLargeWrites(clusters.add(new InProcessCluster({ snapshotEveryEntries: 10, logEntriesKeptAfterSnapshot: 5 })), LAGGING);
    const leader = c.leaderId() as number;
    // The lagging follower dies at its first staging write, so the leader keeps its export spooled.
    const engine = c.engines.get(LAGGING)!;
    engine.beforeWrite = (operations) => operations !== 'deleteRange' && operations.some((operation) => operation.key[0] === 0x04);
    c.network.cut.delete(LAGGING);
    expect(await waitFor(() => engine.dead, 20_000)).toBe(true);
    expect(c.replica(leader).holdsSnapshotData).toBe(true);
    const spooled = await spoolKeys(c, leader);
    expect(spooled).toBeGreaterThan(3);
    // A process kill keeps every write: the spool is on disk, and open deletes it. Cut off, the
    // reopened node cannot lead, so it exports nothing before the check.
    c.network.cut.add(leader);
    await c.node(leader).close();
    c.memory.get(leader)?.crash({ keepUnsyncedBatches: Number.MAX_SAFE_INTEGER });
    await c.open(leader);
    expect(await spoolKeys(c, leader)).toBe(0);
    c.network.cut.add(LAGGING);
    await c.node(LAGGING).close();
    c.memory.get(LAGGING)?.crash({ keepUnsyncedBatches: Number.MAX_SAFE_INTEGER });
    await c.open(LAGGING);
    c.network.cut.clear();
    const caughtUp = await waitFor(() => {
      const current = c.leaderId();
      return current !== undefined && c.replica(LAGGING).appliedIndex >= c.replica(current).appliedIndex;
    }, 30_000);
    expect(caughtUp).toBe(true);
    expect((await c.localValue(LAGGING, 'big/39'))?.length).toBe(BIG_VALUE_BYTES);
  }, 60_000);
});
