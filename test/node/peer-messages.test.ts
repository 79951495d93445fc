/**
 * What a node accepts from a peer: messages from members of the group only, content the Raft core
 * can step without tripping an assertion, and snapshots that are checked whole before anything is
 * deleted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeSnapshotHeader, encodeSnapshotTrailer, SnapshotEntriesWriter } from '../../src/mvcc/snapshot-format.js';
import type { MvccStore } from '../../src/mvcc/mvcc-store.js';
import type { AtollNode } from '../../src/node/atoll-node.js';
import { openGrpcNode } from '../../src/peer/grpc-node.js';
import { frameChunks, PayloadDigest, snapshotPayloadRefusal, unframeChunks } from '../../src/node/replica/partition-replica.js';
import { refusalOf } from '../../src/node/peers/peer-message-check.js';
import type { GroupMessage } from '../../src/node/raft-wire.js';
import { EntryType, type Message } from '../../src/raft/types.js';
import { memoryEngineKind, Partition } from '../mvcc/harness.js';

const context = { lastIndex: 10 };
const entry = (index: number, term: number) => ({ index, term, type: EntryType.Normal, data: new Uint8Array(0) });

describe('refusalOf (content the Raft core would assert on)', () => {
  it('lets ordinary messages through', () => {
    expect(refusalOf({ type: 'app', from: 2, to: 1, term: 3, index: 4, logTerm: 2, entries: [entry(5, 2), entry(6, 3)], commit: 5 }, context)).toBeUndefined();
    expect(refusalOf({ type: 'heartbeat', from: 2, to: 1, term: 3, commit: 999 }, context)).toBeUndefined();
    expect(refusalOf({ type: 'appResp', from: 2, to: 1, term: 3, index: 10 }, context)).toBeUndefined();
    const snapshot = { index: 7, term: 2, confState: { voters: [1, 2, 3], learners: [] } };
    expect(refusalOf({ type: 'snap', from: 2, to: 1, term: 3, snapshot, chunk: { offset: 0, data: new Uint8Array(1), last: true } }, context)).toBeUndefined();
  });

  it('refuses entries that do not follow the index or whose terms go back or run ahead', () => {
    expect(refusalOf({ type: 'app', from: 2, to: 1, term: 3, index: 4, logTerm: 2, entries: [entry(6, 2)] }, context)).toMatch(/contiguous/);
    expect(refusalOf({ type: 'app', from: 2, to: 1, term: 3, index: 4, logTerm: 2, entries: [entry(5, 3), entry(6, 2)] }, context)).toMatch(/term/);
    expect(refusalOf({ type: 'app', from: 2, to: 1, term: 3, index: 4, logTerm: 2, entries: [entry(5, 4)] }, context)).toMatch(/term/);
  });

  it('refuses snapshots without metadata or chunk, at index 0, or naming what is not a node id; accepts ids it does not know', () => {
    const chunk = { offset: 0, data: new Uint8Array(1), last: true };
    expect(refusalOf({ type: 'snap', from: 2, to: 1, term: 3 }, context)).toMatch(/without/);
    expect(refusalOf({ type: 'snap', from: 2, to: 1, term: 3, snapshot: { index: 0, term: 1, confState: { voters: [1], learners: [] } }, chunk }, context)).toMatch(/range/);
    // Node 9 left (or joined) the cluster outside what this node knows: a snapshot may name it.
    expect(refusalOf({ type: 'snap', from: 2, to: 1, term: 3, snapshot: { index: 5, term: 1, confState: { voters: [1, 9], learners: [] } }, chunk }, context)).toBeUndefined();
    expect(refusalOf({ type: 'snap', from: 2, to: 1, term: 3, snapshot: { index: 5, term: 1, confState: { voters: [1, 0], learners: [] } }, chunk }, context)).toMatch(/not a node id/);
    expect(refusalOf({ type: 'snap', from: 2, to: 1, term: 3, snapshot: { index: 5, term: 1, confState: { voters: [1], learners: [2.5] } }, chunk }, context)).toMatch(/not a node id/);
    const many = Array.from({ length: 65 }, (_, i) => i + 1);
    expect(refusalOf({ type: 'snap', from: 2, to: 1, term: 3, snapshot: { index: 5, term: 1, confState: { voters: many, learners: [] } }, chunk }, context)).toMatch(/too many/);
    expect(refusalOf({ type: 'snap', from: 2, to: 1, term: 3, snapshot: { index: 5, term: 1, confState: { voters: [], learners: [] } }, chunk }, context)).toMatch(/no voters/);
  });

  it('refuses acknowledgements of entries the leader does not have, and out-of-range numbers', () => {
    expect(refusalOf({ type: 'appResp', from: 2, to: 1, term: 3, index: 11 }, context)).toMatch(/does not have/);
    expect(refusalOf({ type: 'heartbeat', from: 2, to: 1, term: 2 ** 60 }, context)).toMatch(/term/);
  });
});

describe('snapshot payloads', () => {
  async function exported(): Promise<{ source: Partition; chunks: Uint8Array[] }> {
    const source = await Partition.create(memoryEngineKind);
    for (let i = 0; i < 5; i++) await source.put(`b/${i}`, `v${i}`);
    const chunks: Uint8Array[] = [];
    for await (const chunk of source.store.exportSnapshot()) chunks.push(chunk);
    return { source, chunks };
  }

  it('carry a checksum: a flipped byte, a wrong index or a bad entry is refused before installing', async () => {
    const { source, chunks } = await exported();
    const target = await Partition.create(memoryEngineKind);
    const meta = { index: source.index, term: 1, confState: { voters: [1], learners: [] } };
    const payload = frameChunks(chunks);
    expect(unframeChunks(payload)).toEqual(chunks);
    // An export's digest, fed chunk by chunk, frames the same payload.
    const digest = new PayloadDigest();
    for (const chunk of chunks) digest.add(chunk);
    expect(frameChunks(chunks, digest.digest())).toEqual(payload);
    expect(snapshotPayloadRefusal({ meta, data: payload }, target.store)).toBeUndefined();
    const flipped = payload.slice();
    flipped[flipped.length - 3]! ^= 1;
    expect(snapshotPayloadRefusal({ meta, data: flipped }, target.store)).toMatch(/checksum mismatch/);
    expect(snapshotPayloadRefusal({ meta: { ...meta, index: meta.index + 1 }, data: payload }, target.store)).toMatch(/metadata says/);
    expect(snapshotPayloadRefusal({ meta, data: new Uint8Array([1, 2, 3]) }, target.store)).toMatch(/malformed snapshot payload/);
    // A correct checksum over a forged entry (only a holder of the secret could send it).
    const forged = forgedSnapshot(meta.index);
    expect(snapshotPayloadRefusal({ meta, data: frameChunks(forged) }, target.store)).toMatch(/neither a valid version nor a valid dedup entry/);
  });

  it('a malformed snapshot changes nothing in the store (it used to wipe the partition first)', async () => {
    const target = await Partition.create(memoryEngineKind);
    await target.put('keep/me', 'intact');
    await expect(target.store.importSnapshot(forgedSnapshot(100))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(target.store.needsSnapshot).toBe(false);
    expect(await target.value('keep/me')).toBe('intact');
  });
});

/** A well-framed snapshot whose one entry is garbage. */
function forgedSnapshot(appliedIndex: number): Uint8Array[] {
  const entries = new SnapshotEntriesWriter();
  entries.add(new TextEncoder().encode('v-garbage'), new Uint8Array([1, 2, 3]));
  return [encodeSnapshotHeader({ appliedIndex, revision: 5, compactedRevision: 0 }), entries.finish(), encodeSnapshotTrailer(1)];
}

describe('a node drops peer messages from non-members of the group (a leader\'s excepted)', () => {
  // Four nodes, three replicas: partition 0 lives on nodes 1, 2 and 3, never on 4.
  let node: AtollNode;
  let dataDir: string;
  type Internals = {
    enqueue(task: () => void): void;
    stepMessages(from: number, messages: GroupMessage[]): void;
    groups: Map<number, { raw: { status(): { term: number } } }>;
  };
  // The node's Raft driver (src/node/replica/raft-driver.ts) steps peer messages and owns the groups.
  const internals = (): Internals => (node as unknown as { driver: Internals }).driver;
  const termOf = (partition: number): number => internals().groups.get(partition)!.raw.status().term;
  const step = async (from: number, message: Message): Promise<void> => {
    await new Promise<void>((resolve) => internals().enqueue(() => {
      internals().stepMessages(from, [{ group: 0, message }]);
      resolve();
    }));
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'atoll-peer-messages-'));
    node = (await openGrpcNode({
      id: 1,
      peers: new Map([1, 2, 3, 4].map((id) => [id, `127.0.0.1:${1 + id}`])),
      dataDir,
      partitions: 4,
      replicationFactor: 3,
      tickMs: 60_000,
      electionTicks: 10,
      retentionRevisions: 1000,
      snapshotEveryEntries: 1000,
      peerSecrets: ['s'.repeat(32)],
      logger: pino({ level: 'silent' }),
    })).node;
  });
  afterAll(async () => {
    await node.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('a higher-term vote request from node 4 changes nothing; a leader\'s heartbeat from it is stepped, as is one from member 2', async () => {
    const before = termOf(0);
    const refusedBefore = node.refusedPeerMessageCount;
    // A vote request from a node the group's configuration does not name is refused: a removed or
    // foreign node must not disrupt the group.
    await step(4, { type: 'vote', from: 4, to: 1, term: before + 5, index: 100, logTerm: before + 5 });
    expect(termOf(0)).toBe(before);
    expect(node.refusedPeerMessageCount).toBe(refusedBefore + 1);
    // Content the core would assert on is refused even from a member.
    await step(2, { type: 'app', from: 2, to: 1, term: before + 5, index: 0, logTerm: 0, entries: [entry(7, 1)] });
    expect(termOf(0)).toBe(before);
    expect(node.refusedPeerMessageCount).toBe(refusedBefore + 2);
    // A leader's message at a newer term from a cluster member the configuration does not name
    // yet is stepped (peer-message-check.ts, fromLeaderAtTerm): a replica that missed the move that
    // added that node must follow it to catch up (the whole-node simulator's seed 17).
    await step(4, { type: 'heartbeat', from: 4, to: 1, term: before + 5, commit: 0 });
    expect(termOf(0)).toBe(before + 5);
    expect(node.refusedPeerMessageCount).toBe(refusedBefore + 2);
    await step(2, { type: 'heartbeat', from: 2, to: 1, term: before + 6, commit: 0 });
    expect(termOf(0)).toBe(before + 6);
  });
});
