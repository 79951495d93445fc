/**
 * A backup restores into a cluster of any shape (issue 32, defect 5): `atoll backup` after
 * `atoll cluster split` (and after a split and merges) writes a manifest that records each
 * partition's hash range, `atoll restore` accepts it and writes every key where the TARGET's own
 * partition table (its split or merged ranges, not the initial equal table) puts it:
 * - into a fresh cluster of the same initial partition count;
 * - into a cluster of another partition count;
 * - into a cluster that was itself split; and a backup taken after a split and a merge;
 * - a manifest whose ranges leave a gap, overlap, or a key filed under a range that does not own
 *   it is refused with BACKUP_DAMAGED and the target is not touched;
 * - a version-1 manifest (before ranges were recorded) still restores.
 *
 * Fast: each "cluster" is one in-process AtollNode (MemoryEngine, replication factor 1, with
 * authentication) behind a real gRPC server on loopback, and the CLI runs in this process.
 * Routing is the same code on any node count: the restore writes with ordinary puts, which the
 * client routes by the target's ClusterInfo ranges.
 */
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestName, type Manifest } from '../../src/cli/backup.js';
import { run } from '../../src/cli/run.js';
import { AtollClient, type AtollClientOptions } from '../../src/client/index.js';
import { bucketOf } from '../../src/keys/bucket.js';
import { bucketHash } from '../../src/keys/bucket-hash.js';
import { RangeTable } from '../../src/keys/partition-table.js';
import { tenantTag } from '../../src/keys/tenant-keys.js';
import { runCli, startOneNodeCluster, type OneNodeCluster } from './one-node-cluster.js';

interface BackupRecord {
  t: string;
  k: string;
  v: string;
  e: number;
}

const opened: OneNodeCluster[] = [];
let work: string;

async function startCluster(partitions: number): Promise<OneNodeCluster> {
  const cluster = await startOneNodeCluster('backup-any-shape', partitions);
  opened.push(cluster);
  return cluster;
}

const cli = runCli;

function readBackup(dir: string): { manifest: Manifest; records: BackupRecord[]; byFile: Map<string, BackupRecord[]> } {
  const manifest = JSON.parse(readFileSync(join(dir, manifestName), 'utf8')) as Manifest;
  const byFile = new Map<string, BackupRecord[]>();
  for (const entry of manifest.partitions) {
    byFile.set(entry.file, readFileSync(join(dir, entry.file), 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as BackupRecord));
  }
  return { manifest, records: [...byFile.values()].flat(), byFile };
}

const recordId = (record: BackupRecord): string => `${record.t}\u0001${record.k}\u0001${record.v}`;
const hashOf = (tenant: string, key: string): number => bucketHash(bucketOf(`${tenant === 'default' ? '' : tenantTag(tenant)}${key}`));

/** The cluster's partition table as it knows it now (its split and merged ranges). */
async function tableOf(cluster: OneNodeCluster): Promise<RangeTable> {
  const info = await cluster.admin.clusterInfo();
  return RangeTable.of(info.partitions.map((partition) => ({ id: partition.id, start: partition.rangeStart, end: partition.rangeEnd })));
}

/**
 * Every key of the target sits in the partition its own table names: reads each partition at its
 * replica (the MVCC store of that partition, not a routed read) and checks each key's hash is in
 * the partition's range, and that together they are exactly `expected`.
 */
async function expectPlacedByTable(target: OneNodeCluster, expected: readonly BackupRecord[]): Promise<void> {
  const table = await tableOf(target);
  const seen: BackupRecord[] = [];
  for (const range of table.ranges) {
    let revision = 0;
    let pageToken = '';
    // Bounded by the partition's keys: each page moves the token on or ends.
    do {
      const page = await target.admin.backupPage({ partition: range.id, revision, pageToken, limit: 1000 });
      for (const item of page.items) {
        const hash = hashOf(item.tenant, item.key);
        expect(hash >= range.start && hash < range.end, `${item.tenant}/${item.key} in partition ${range.id} [${range.start}, ${range.end})`).toBe(true);
        seen.push({ t: item.tenant, k: item.key, v: Buffer.from(item.value).toString('base64'), e: item.expiresAtMs });
      }
      revision = page.revision;
      pageToken = page.nextPageToken;
    } while (pageToken !== '');
  }
  expect(seen.map(recordId).sort()).toEqual(expected.map(recordId).sort());
  // And a routed read through a fresh client finds every default-tenant key.
  const fresh = new AtollClient({ endpoints: [target.address], token: target.token, defaultTimeoutMs: 10_000 });
  try {
    for (const record of expected.filter((each) => each.t === 'default').slice(0, 60)) {
      expect((await fresh.get(record.k)).text(), record.k).toBe(Buffer.from(record.v, 'base64').toString());
    }
  } finally {
    fresh.close();
  }
}

/** Rewrites a backup's manifest (after `change`), keeping each entry's size and SHA-256 true to its file. */
function rewriteManifest(dir: string, change: (manifest: Record<string, unknown>) => void): void {
  const manifest = JSON.parse(readFileSync(join(dir, manifestName), 'utf8')) as Record<string, unknown>;
  change(manifest);
  for (const entry of manifest['partitions'] as Array<Record<string, unknown> | null>) {
    if (entry === null) continue;
    const bytes = readFileSync(join(dir, String(entry['file'])));
    entry['bytes'] = bytes.length;
    entry['sha256'] = createHash('sha256').update(bytes).digest('hex');
    entry['keys'] = bytes.toString('utf8').split('\n').filter((line) => line !== '').length;
  }
  writeFileSync(join(dir, manifestName), `${JSON.stringify(manifest, null, 2)}\n`);
}

const SOURCE_PARTITIONS = 4;
let source: OneNodeCluster;
let afterSplit: string;
let written: BackupRecord[];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'atoll-backup-any-shape-'));
  source = await startCluster(SOURCE_PARTITIONS);
  const acmeToken = String((await source.admin.authCall('CreateToken', { tenant: 'acme', role: 'readwrite', name: 'acme' }))['token']);
  const acme = new AtollClient({ endpoints: [source.address], token: acmeToken, defaultTimeoutMs: 10_000 });
  written = [];
  try {
    // 300 keys in 60 buckets (every partition, both sides of any split point), two tenants.
    for (let i = 0; i < 240; i++) {
      await source.admin.put(`b${i % 48}/k${i}`, `v${i}`);
      written.push({ t: 'default', k: `b${i % 48}/k${i}`, v: Buffer.from(`v${i}`).toString('base64'), e: 0 });
    }
    for (let i = 0; i < 60; i++) {
      await acme.put(`a${i % 12}/k${i}`, `acme${i}`);
      written.push({ t: 'acme', k: `a${i % 12}/k${i}`, v: Buffer.from(`acme${i}`).toString('base64'), e: 0 });
    }
  } finally {
    acme.close();
  }
  // Partition 0 splits, then the new partition splits again: 6 ranges for 4 initial partitions.
  const split = await source.admin.splitPartition(0, { timeoutMs: 10_000 });
  await source.admin.splitPartition(split.newPartition, { timeoutMs: 10_000 });
  expect((await tableOf(source)).size).toBe(SOURCE_PARTITIONS + 2);
  afterSplit = join(work, 'after-split');
  const backup = await cli(['--endpoints', source.address, 'backup', '--out', afterSplit], source.token);
  expect(backup.code, backup.stderr).toBe(0);
}, 60_000);

afterAll(async () => {
  for (const cluster of opened.splice(0)) await cluster.stop();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('a backup restores into a cluster of any shape', () => {
  it('records every range of the split table it was taken from, each key inside its range', async () => {
    const { manifest, records, byFile } = readBackup(afterSplit);
    expect(manifest.partitions).toHaveLength(SOURCE_PARTITIONS + 2);
    const table = await tableOf(source);
    const recorded = manifest.partitions.map((entry) => ({ id: entry.id, start: entry.start, end: entry.end }));
    expect(RangeTable.of(recorded).ranges).toEqual(table.ranges);
    for (const entry of manifest.partitions) {
      const range = table.rangeOf(entry.id)!;
      for (const record of byFile.get(entry.file)!) {
        const hash = hashOf(record.t, record.k);
        expect(hash >= range.start && hash < range.end).toBe(true);
      }
    }
    expect(records.map(recordId).sort()).toEqual(written.map(recordId).sort());
  });

  it('is readable by its owner only: the directory it made 0700, every file 0600 (issue 33)', () => {
    expect(statSync(afterSplit).mode & 0o777).toBe(0o700);
    const files = readdirSync(afterSplit);
    expect(files.length).toBe(SOURCE_PARTITIONS + 2 + 1);
    for (const name of files) expect({ name, mode: statSync(join(afterSplit, name)).mode & 0o777 }).toEqual({ name, mode: 0o600 });
  });

  it('(a) restores into a fresh cluster of the same initial partition count', async () => {
    const target = await startCluster(SOURCE_PARTITIONS);
    const restore = await cli(['restore', '--from', afterSplit, '--addresses', target.address], target.token);
    expect(restore.stderr).not.toMatch(/^error /m);
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stdout).toContain(`restored ${written.length} keys`);
    await expectPlacedByTable(target, written);
  });

  it('(b) restores into a cluster of another partition count', async () => {
    const target = await startCluster(3);
    const restore = await cli(['restore', '--from', afterSplit, '--addresses', target.address], target.token);
    expect(restore.code, restore.stderr).toBe(0);
    await expectPlacedByTable(target, written);
  });

  it('(c) restores into a cluster that was itself split, by the target\'s own ranges', async () => {
    const target = await startCluster(2);
    // Split where the source never did: partition 1, then partition 0 twice.
    await target.admin.splitPartition(1, { timeoutMs: 10_000 });
    const split = await target.admin.splitPartition(0, { timeoutMs: 10_000 });
    await target.admin.splitPartition(split.newPartition, { timeoutMs: 10_000 });
    expect((await tableOf(target)).size).toBe(5);
    const restore = await cli(['restore', '--from', afterSplit, '--addresses', target.address], target.token);
    expect(restore.code, restore.stderr).toBe(0);
    await expectPlacedByTable(target, written);
  });

  it('restores a backup taken after a split and merges, into a split cluster', async () => {
    // The source's partition 0 joins its split-off right neighbour again (only a split-off
    // partition can be merged away); its other split-off stays: 5 ranges for 4 initial partitions.
    await source.admin.mergePartition(0, { timeoutMs: 10_000 });
    expect((await tableOf(source)).size).toBe(SOURCE_PARTITIONS + 1);
    const dir = join(work, 'after-merge');
    const backup = await cli(['--endpoints', source.address, 'backup', '--out', dir], source.token);
    expect(backup.code, backup.stderr).toBe(0);
    expect(readBackup(dir).manifest.partitions).toHaveLength(SOURCE_PARTITIONS + 1);
    const target = await startCluster(SOURCE_PARTITIONS);
    await target.admin.splitPartition(2, { timeoutMs: 10_000 });
    const restore = await cli(['restore', '--from', dir, '--addresses', target.address], target.token);
    expect(restore.code, restore.stderr).toBe(0);
    await expectPlacedByTable(target, written);
  });

  it('refuses a manifest whose ranges leave a gap or overlap, or a key filed under a range that does not own it, and writes nothing', async () => {
    const target = await startCluster(SOURCE_PARTITIONS);
    const refused = async (name: string, change: (manifest: Record<string, unknown>, dir: string) => void, pattern: RegExp): Promise<void> => {
      const dir = join(work, name);
      cpSync(afterSplit, dir, { recursive: true });
      rewriteManifest(dir, (manifest) => change(manifest, dir));
      const result = await cli(['restore', '--from', dir, '--addresses', target.address], target.token);
      expect(result.stderr, name).toMatch(pattern);
      expect(result.code, name).toBe(2);
    };
    const entries = (manifest: Record<string, unknown>): Array<Record<string, unknown>> => manifest['partitions'] as Array<Record<string, unknown>>;
    // A gap: one partition's entry (and its file) left out.
    await refused('gap', (manifest) => {
      manifest['partitions'] = entries(manifest).filter((entry) => entry['id'] !== 1);
    }, /^error BACKUP_DAMAGED: manifest\.json: the partitions' hash ranges do not cover \[0, 2\^32\) exactly once: .*does not continue/m);
    // An overlap: one range's end moved past its neighbour's start.
    await refused('overlap', (manifest) => {
      const sorted = [...entries(manifest)].sort((a, b) => Number(a['start']) - Number(b['start']));
      sorted[0]!['end'] = Number(sorted[1]!['start']) + 1;
    }, /^error BACKUP_DAMAGED: manifest\.json: the partitions' hash ranges do not cover \[0, 2\^32\) exactly once: .*does not continue/m);
    // Two partitions' files swapped (the manifest's sizes and hashes rewritten to match): every
    // check of the bytes passes, but the keys are outside their entries' ranges.
    await refused('swapped', (manifest, dir) => {
      const list = entries(manifest).filter((entry) => Number(entry['keys']) > 0);
      const [first, second] = [join(dir, String(list[0]!['file'])), join(dir, String(list[1]!['file']))];
      const [a, b] = [readFileSync(first), readFileSync(second)];
      writeFileSync(first, b);
      writeFileSync(second, a);
    }, /^error BACKUP_DAMAGED: .*partition-\d+\.jsonl:1: key ".*" hashes to \d+, outside partition \d+'s range \[\d+, \d+\)/m);
    // Not a bucket hash this version knows: the ranges mean nothing.
    await refused('hash', (manifest) => {
      (manifest['cluster'] as Record<string, unknown>)['hashFunction'] = 'sha1';
    }, /^error BACKUP_DAMAGED: manifest\.json: cluster\.hashFunction "sha1" is not a bucket hash this build knows/m);
    // An entry that is not an object is refused, not a crash.
    await refused('null-entry', (manifest) => {
      manifest['partitions'] = [...entries(manifest), null];
    }, /^error BACKUP_DAMAGED: manifest\.json: a partition entry is not an object/m);
    // A version-1 manifest taken after a split (as the old build wrote it) records no ranges: it
    // cannot be checked for a missing partition, and is refused with the reason.
    await refused('version-1-split', (manifest) => {
      manifest['version'] = 1;
      for (const entry of entries(manifest)) {
        delete entry['start'];
        delete entry['end'];
      }
    }, /^error BACKUP_DAMAGED: manifest\.json: 6 partition entries for 4 partitions \(a version-1 backup records no ranges/m);
    expect((await target.admin.backupPage({ partition: 0, revision: 0, pageToken: '', limit: 1 })).items).toEqual([]);
    for (let partition = 0; partition < SOURCE_PARTITIONS; partition++) {
      expect((await target.admin.backupPage({ partition, revision: 0, pageToken: '', limit: 1 })).items, `partition ${partition}`).toEqual([]);
    }
  });

  it('starts a backup over when the table changes while it runs, and gives up with UNAVAILABLE when it keeps changing', async () => {
    const moving = await startCluster(2);
    const keys: BackupRecord[] = [];
    for (let i = 0; i < 120; i++) {
      await moving.admin.put(`m${i % 40}/k${i}`, `m${i}`);
      keys.push({ t: 'default', k: `m${i % 40}/k${i}`, v: Buffer.from(`m${i}`).toString('base64'), e: 0 });
    }
    // Splits the widest partition of the cluster's table (it holds several buckets).
    const splitWidest = async (): Promise<void> => {
      const widest = [...(await tableOf(moving)).ranges].sort((a, b) => b.end - b.start - (a.end - a.start))[0]!;
      await moving.admin.splitPartition(widest.id, { timeoutMs: 10_000 });
    };
    /** The CLI's client, whose first backup page of each attempt (up to `splits` of them) first splits a partition. */
    const splittingClient = (splits: number) => {
      let left = splits;
      return (options: AtollClientOptions): AtollClient => {
        const client = new AtollClient(options);
        const backupPage = client.backupPage.bind(client);
        client.backupPage = async (request, callOptions) => {
          if (request.revision === 0 && request.pageToken === '' && left > 0 && request.partition === 0) {
            left--;
            await splitWidest();
          }
          return backupPage(request, callOptions);
        };
        return client;
      };
    };
    const backup = async (dir: string, splits: number): Promise<{ code: number; stderr: string }> => {
      let stderr = '';
      const code = await run(['--endpoints', moving.address, 'backup', '--out', dir, '--concurrency', '1'], {
        stdout: () => undefined,
        stderr: (text) => (stderr += text),
        env: { ATOLL_TOKEN: moving.token },
        createClient: splittingClient(splits),
      });
      return { code, stderr };
    };
    // One split during the first attempt: the second attempt reads the new table, and the
    // manifest records exactly the table its files were read under.
    const once = await backup(join(work, 'moving-once'), 1);
    expect(once.code, once.stderr).toBe(0);
    expect(once.stderr).toMatch(/the partition table changed while the backup ran .*: starting over/);
    const { manifest, records } = readBackup(join(work, 'moving-once'));
    expect(manifest.partitions.map((entry) => ({ id: entry.id, start: entry.start, end: entry.end }))).toEqual((await tableOf(moving)).ranges);
    expect(records.map(recordId).sort()).toEqual(keys.map(recordId).sort());
    const target = await startCluster(3);
    const restore = await cli(['restore', '--from', join(work, 'moving-once'), '--addresses', target.address], target.token);
    expect(restore.code, restore.stderr).toBe(0);
    await expectPlacedByTable(target, keys);
    // A split during every attempt: the backup gives up, and leaves no manifest.
    const always = await backup(join(work, 'moving-always'), 3);
    expect(always.stderr).toMatch(/^error UNAVAILABLE: the partition table changed during each of 3 attempts/m);
    expect(always.code).toBe(2);
    expect(existsSync(join(work, 'moving-always', manifestName))).toBe(false);
  });

  it('still restores a version-1 backup (no ranges: the equal table of its partition count)', async () => {
    const fresh = await startCluster(SOURCE_PARTITIONS);
    for (const record of written.filter((each) => each.t === 'default')) await fresh.admin.put(record.k, Buffer.from(record.v, 'base64'));
    const dir = join(work, 'version-1');
    const backup = await cli(['--endpoints', fresh.address, 'backup', '--out', dir], fresh.token);
    expect(backup.code, backup.stderr).toBe(0);
    // As a build before ranges wrote it: version 1, entries without start and end.
    rewriteManifest(dir, (manifest) => {
      manifest['version'] = 1;
      for (const entry of manifest['partitions'] as Array<Record<string, unknown>>) {
        delete entry['start'];
        delete entry['end'];
      }
    });
    const target = await startCluster(2);
    await target.admin.splitPartition(0, { timeoutMs: 10_000 });
    const restore = await cli(['restore', '--from', dir, '--addresses', target.address], target.token);
    expect(restore.code, restore.stderr).toBe(0);
    await expectPlacedByTable(target, written.filter((each) => each.t === 'default'));
  });
});
