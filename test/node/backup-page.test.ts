/**
 * Cluster.BackupPage at a node (AtollNode.backupPage): pages of a partition's live keys all at the
 * first page's revision while writes go on, bounded in keys and bytes, and bad requests refused
 * with INVALID_ARGUMENT without changing anything.
 */
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { AtollNode } from '../../src/node/atoll-node.js';
import type { BackupItem, BackupPageResponse } from '../../src/api/node-api.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { closedAfterEach, expectAllLed, InProcessCluster, loneNodeConfig, silentTransport } from './in-process-cluster.js';

const context = (): { deadlineMs: number } => ({ deadlineMs: Date.now() + 5_000 });
const text = (bytes: Uint8Array): string => Buffer.from(bytes).toString('utf8');

const opened = closedAfterEach();

async function openNode(): Promise<AtollNode> {
  const opened = await AtollNode.open(
    loneNodeConfig('backup-page', { tickMs: 10, electionTicks: 5, retentionRevisions: 100_000, snapshotEveryEntries: 100_000 }),
    { transport: () => silentTransport(), engine: new MemoryEngine(), random: new Rng(5) },
  );
  // Bounded: the single node elects itself within a few ticks.
  await expectAllLed(opened, 2_000);
  return opened;
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AtollError) return error.code;
    throw error;
  }
  return 'no error';
}

describe('backup pages at a node', () => {
  it('pages a partition at one revision while writes go on, each page bounded in keys and bytes', async () => {
    const node = opened.add(await openNode());
    const big = 'x'.repeat(300 * 1024);
    const expected = new Map<string, string>();
    for (let i = 0; i < 200; i++) {
      const key = `b${i % 7}/k${String(i).padStart(3, '0')}`;
      const value = i < 40 ? `${big}${i}` : `v${i}`;
      await node.put({ key, value: new TextEncoder().encode(value) }, context());
      expected.set(key, value);
    }
    await node.put({ key: 'gone/k', value: new TextEncoder().encode('x') }, context());
    await node.delete({ key: 'gone/k' }, context());

    const pages: BackupPageResponse[] = [];
    let revision = 0;
    let pageToken = '';
    let writes = 0;
    // Bounded: 200 keys in pages of at least one key.
    for (let i = 0; i < 300; i++) {
      const page = await node.backupPage({ partition: 0, revision, pageToken, limit: 16 }, context());
      pages.push(page);
      revision = page.revision;
      pageToken = page.nextPageToken;
      // Writes between pages: overwrites, new keys and deletes, all above the backup's revision.
      await node.put({ key: `b${i % 7}/k000`, value: new TextEncoder().encode(`changed ${i}`) }, context());
      await node.put({ key: `b${i % 7}/new${i}`, value: new TextEncoder().encode('new') }, context());
      await node.delete({ key: `b${(i + 3) % 7}/k${String(150 + (i % 50)).padStart(3, '0')}` }, context());
      writes += 3;
      if (pageToken === '') break;
    }
    expect(pageToken).toBe('');
    expect(writes).toBeGreaterThan(3);
    expect(pages.length).toBeGreaterThan(200 / 16);
    const items: BackupItem[] = pages.flatMap((page) => page.items);
    // Every page is at the first page's revision, and together they are the state at it.
    expect(new Set(pages.map((page) => page.revision))).toEqual(new Set([revision]));
    expect(new Map(items.map((item) => [item.key, text(item.value)]))).toEqual(expected);
    expect(items.map((item) => item.key)).toEqual([...expected.keys()].sort());
    expect(items.every((item) => item.tenant === 'default' && item.expiresAtMs === 0 && item.modRevision <= revision)).toBe(true);
    for (const page of pages) {
      expect(page.items.length).toBeLessThanOrEqual(16);
      const bytes = page.items.reduce((sum, item) => sum + item.key.length * 3 + item.value.length + 64, 0);
      // Invariant (kv-executor.ts backupPage): under backupPageBytes unless one item alone.
      expect(page.items.length === 1 || bytes <= 1024 * 1024, `a page of ${bytes} bytes`).toBe(true);
    }
    // The 300 KiB values made the byte bound cut pages short of the key limit.
    expect(pages.some((page) => page.items.length < 16 && page.nextPageToken !== '')).toBe(true);
  });

  it('refuses bad requests with INVALID_ARGUMENT and changes nothing', async () => {
    const node = opened.add(await openNode());
    await node.put({ key: 'a/k', value: new TextEncoder().encode('v') }, context());
    const first = await node.backupPage({ partition: 0, revision: 0, pageToken: '', limit: 1 }, context());
    expect(first.items.map((item) => item.key)).toEqual(['a/k']);
    const info = await node.clusterInfo(context());
    expect(await codeOf(node.backupPage({ partition: 1, revision: 0, pageToken: '', limit: 1 }, context()))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(node.backupPage({ partition: 0, revision: first.revision, pageToken: 'not base64url!', limit: 1 }, context()))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(node.backupPage({ partition: 0, revision: 0, pageToken: Buffer.from('a/k').toString('base64url'), limit: 1 }, context()))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(node.backupPage({ partition: 0, revision: first.revision + 1_000, pageToken: '', limit: 1 }, context()))).toBe('FUTURE_REVISION');
    expect((await node.clusterInfo(context())).partitions[0]!.revision).toBe(info.partitions[0]!.revision);
  });

  it('is served by the leader only: a follower answers NOT_LEADER naming the leader', async () => {
    const cluster = new InProcessCluster({ snapshotEveryEntries: 10_000, logEntriesKeptAfterSnapshot: 100 });
    await cluster.start();
    try {
      await cluster.put('a/k', 'v');
      const leader = await cluster.waitForLeader();
      const follower = [1, 2, 3].find((id) => id !== leader)!;
      let refusal: unknown;
      try {
        await cluster.node(follower).backupPage({ partition: 0, revision: 0, pageToken: '', limit: 10 }, context());
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toBeInstanceOf(AtollError);
      expect((refusal as AtollError).code).toBe('NOT_LEADER');
      expect((refusal as AtollError).details?.['leaderHint']).toMatchObject({ nodeId: leader });
      const page = await cluster.node(leader).backupPage({ partition: 0, revision: 0, pageToken: '', limit: 10 }, context());
      expect(page.items.map((item) => `${item.key}=${text(item.value)}`)).toEqual(['a/k=v']);
    } finally {
      await cluster.close();
    }
  });
});
