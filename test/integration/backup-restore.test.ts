/**
 * Online backup and restore (issue 20), on real three-node clusters with authentication:
 * - `atoll backup` under a bounded write load records one revision per partition, and the backup
 *   holds exactly the acknowledged writes at or below it: every write acknowledged before the
 *   backup started, no write the partition acknowledged above it, nothing never written;
 * - a damaged backup (one changed character) is refused with BACKUP_DAMAGED and exit 2 before
 *   anything is written: the target stays empty;
 * - `atoll restore` seeds a fresh cluster with the same keys, values and (remaining) TTLs, every
 *   tenant's keys in its tenant; a second restore into it is refused (RESTORE_TARGET_NOT_EMPTY);
 * - a tenant admin token backs up its own tenant's keys only;
 * - a backup taken after a split of the three-node source restores into a one-node cluster of
 *   another partition count that was itself split (issue 32, defect 5; the in-process cases are
 *   in test/cli/backup-any-shape.test.ts).
 */
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient } from '../../src/client/index.js';
import { manifestName, type Manifest } from '../../src/cli/backup.js';
import { run } from '../../src/cli/run.js';
import { partitionOf } from '../../src/keys/partition-table.js';
import { newToken } from '../../src/tenancy/token.js';
import { runAtollBinary } from '../cli/atoll-binary.js';
import { LocalCluster } from './local-cluster.js';

const PARTITIONS = 4;
const LOAD_MAX_WRITES = 3_000;

interface Record {
  t: string;
  k: string;
  v: string;
  e: number;
}

let work: string;
let source: LocalCluster;
let target: LocalCluster;
const sourceToken = newToken();
const targetToken = newToken();
let admin: AtollClient;
let targetAdmin: AtollClient;
let acmeAdminToken: string;

async function startCluster(token: string): Promise<LocalCluster> {
  const file = join(work, `admin-token-${token.slice(-6)}`);
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  return LocalCluster.start({ partitions: PARTITIONS, extraArgs: ['--admin-token-file', file] });
}

/** Runs the CLI in this process (faster than spawning): exit code, stdout and stderr. */
async function cli(argv: string[], token: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env: { ATOLL_TOKEN: token } });
  return { code, stdout, stderr };
}

function readBackup(dir: string): { manifest: Manifest; records: Record[] } {
  const manifest = JSON.parse(readFileSync(join(dir, manifestName), 'utf8')) as Manifest;
  const records: Record[] = [];
  for (const entry of manifest.partitions) {
    for (const line of readFileSync(join(dir, entry.file), 'utf8').split('\n')) if (line !== '') records.push(JSON.parse(line) as Record);
  }
  return { manifest, records };
}

const recordId = (record: Record): string => `${record.t}\u0001${record.k}\u0001${record.v}`;

/** Whether a cluster holds any key the admin can see, through the backup RPC itself. */
async function holdsKeys(client: AtollClient): Promise<boolean> {
  for (let partition = 0; partition < PARTITIONS; partition++) {
    const page = await client.backupPage({ partition, revision: 0, pageToken: '', limit: 1 });
    if (page.items.length > 0) return true;
  }
  return false;
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'atoll-backup-test-'));
  [source, target] = await Promise.all([startCluster(sourceToken), startCluster(targetToken)]);
  admin = new AtollClient({ endpoints: source.endpoints, token: sourceToken, defaultTimeoutMs: 10_000 });
  targetAdmin = new AtollClient({ endpoints: target.endpoints, token: targetToken, defaultTimeoutMs: 10_000 });
}, 60_000);

afterAll(async () => {
  admin?.close();
  targetAdmin?.close();
  await Promise.all([source?.stop(), target?.stop()]);
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

describe('backup and restore', () => {
  it('backs up under load exactly the acknowledged writes at each partition revision, and restores them into a fresh cluster', async () => {
    // Tenants: acme (an admin token, for its own backup) and globex (a readwrite token).
    acmeAdminToken = String((await admin.authCall('CreateToken', { tenant: 'acme', role: 'admin', name: 'acme-admin' }))['token']);
    const globexToken = String((await admin.authCall('CreateToken', { tenant: 'globex', role: 'readwrite', name: 'globex' }))['token']);
    const acme = new AtollClient({ endpoints: source.endpoints, token: acmeAdminToken });
    const globex = new AtollClient({ endpoints: source.endpoints, token: globexToken });
    try {
      for (let i = 0; i < 20; i++) await acme.put(`orders/${i}`, `acme-${i}`);
      for (let i = 0; i < 10; i++) await globex.put(`orders/${i}`, `globex-${i}`);
      // Default tenant (the cluster admin's): plain, overwritten, deleted, binary, with a TTL.
      for (let i = 0; i < 100; i++) await admin.put(`pre/${i}`, `value-${i}`);
      await admin.put('pre/over', 'first');
      await admin.put('pre/over', 'second');
      await admin.put('pre/gone', 'soon deleted');
      await admin.delete('pre/gone');
      await admin.put('pre/binary', new Uint8Array([0, 255, 1, 2]));
      const ttl = await admin.put('pre/ttl', 'expires later', { ttlMs: 600_000 });
      expect(ttl.applied).toBe(true);
    } finally {
      acme.close();
      globex.close();
    }

    // A bounded write load of unique keys, running until the backup ends.
    const acked: Array<{ key: string; value: string; revision: number; ackedAtMs: number }> = [];
    let stop = false;
    let next = 0;
    const writer = async (): Promise<void> => {
      // Bounded: LOAD_MAX_WRITES in all, and it stops when the backup ends.
      while (!stop && next < LOAD_MAX_WRITES) {
        const i = next++;
        const key = `load-${i % 16}/k${i}`;
        const value = `v${i}`;
        const result = await admin.put(key, value);
        acked.push({ key, value, revision: result.revision, ackedAtMs: Date.now() });
      }
    };
    const writers = Array.from({ length: 4 }, writer);
    // Let the load run a little before and during the backup.
    const loadStart = Date.now();
    while (acked.length < 100 && Date.now() - loadStart < 10_000) await new Promise((resolve) => setTimeout(resolve, 20));
    const backupStartMs = Date.now();
    const backupDir = join(work, 'full');
    const backup = await cli(['--endpoints', source.endpoints.join(','), 'backup', '--out', backupDir], sourceToken);
    stop = true;
    await Promise.all(writers);
    expect(backup.stderr).toMatch(/backup: partition \d+ done at revision \d+/);
    expect(backup.code, backup.stderr).toBe(0);

    const { manifest, records } = readBackup(backupDir);
    expect(manifest.partitions).toHaveLength(PARTITIONS);
    expect(manifest.tenant).toBeNull();
    expect(manifest.tenants).toEqual(['acme', 'default', 'globex']);
    const revisionOf = new Map(manifest.partitions.map((entry) => [entry.id, entry.revision]));
    const byKey = new Map(records.filter((record) => record.t === 'default').map((record) => [record.k, record]));
    // Exactly the load writes at or below their partition's backup revision (each key is written once).
    let before = 0;
    let after = 0;
    for (const write of acked) {
      const backedUp = write.revision <= (revisionOf.get(partitionOf(write.key, PARTITIONS)) as number);
      if (write.ackedAtMs < backupStartMs) expect(backedUp, `${write.key} was acknowledged before the backup started`).toBe(true);
      if (backedUp) {
        before++;
        expect(Buffer.from(byKey.get(write.key)?.v ?? '', 'base64').toString()).toBe(write.value);
      } else {
        after++;
        expect(byKey.has(write.key), `${write.key} was acknowledged above its partition's backup revision`).toBe(false);
      }
    }
    expect(before).toBeGreaterThanOrEqual(100);
    // Nothing that was never written: every default-tenant key is a preloaded or acknowledged one.
    const loadKeys = new Set(acked.map((write) => write.key));
    for (const key of byKey.keys()) expect(key.startsWith('pre/') || loadKeys.has(key), key).toBe(true);
    expect(byKey.size).toBe(before + 100 + 3);
    expect(Buffer.from(byKey.get('pre/over')!.v, 'base64').toString()).toBe('second');
    expect(byKey.has('pre/gone')).toBe(false);
    expect([...Buffer.from(byKey.get('pre/binary')!.v, 'base64')]).toEqual([0, 255, 1, 2]);
    expect(byKey.get('pre/ttl')!.e).toBeGreaterThan(Date.now() + 500_000);
    expect(records.filter((record) => record.t === 'acme')).toHaveLength(20);
    expect(records.filter((record) => record.t === 'globex')).toHaveLength(10);
    expect(records.some((record) => record.t === 'system')).toBe(false);
    console.log(`backup: ${before} load writes at or below the backup revisions, ${after} above`);

    // A damaged copy (one base64 character changed: still valid JSON) is refused before any write.
    const damagedDir = join(work, 'damaged');
    cpSync(backupDir, damagedDir, { recursive: true });
    const largest = [...manifest.partitions].sort((a, b) => b.bytes - a.bytes)[0]!;
    const path = join(damagedDir, largest.file);
    const text = readFileSync(path, 'utf8');
    const at = text.indexOf('"v":"') + 5;
    writeFileSync(path, text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1));
    const refused = await runAtollBinary(['--endpoints', target.endpoints.join(','), 'restore', '--from', damagedDir], { env: { ATOLL_TOKEN: targetToken }, timeoutMs: 30_000 });
    expect(refused.stderr).toMatch(/^error BACKUP_DAMAGED: .*SHA-256 [0-9a-f]{64} does not match/);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(await holdsKeys(targetAdmin)).toBe(false);

    // The restore: every record, in its tenant, with its remaining TTL.
    const restore = await cli(['restore', '--from', backupDir, '--addresses', target.endpoints.join(',')], targetToken);
    expect(restore.code, restore.stderr).toBe(0);
    expect(restore.stderr).toMatch(/restore: .* verified/);
    expect(restore.stdout).toContain(`restored ${records.length} keys`);
    const check = await cli(['--endpoints', target.endpoints.join(','), 'backup', '--out', join(work, 'check')], targetToken);
    expect(check.code, check.stderr).toBe(0);
    const restored = readBackup(join(work, 'check')).records;
    expect(restored.map(recordId).sort()).toEqual(records.map(recordId).sort());
    const restoredTtl = restored.find((record) => record.t === 'default' && record.k === 'pre/ttl')!;
    expect(Math.abs(restoredTtl.e - byKey.get('pre/ttl')!.e)).toBeLessThan(10_000);
    expect(restored.filter((record) => record.e !== 0)).toHaveLength(1);
    // The temporary tenant tokens of the restore are revoked.
    const tokens = (await targetAdmin.authCall('ListTokens'))['tokens'] as Array<{ name: string; revoked: boolean }>;
    expect(tokens.filter((token) => token.name === 'atoll-restore').every((token) => token.revoked)).toBe(true);

    // A second restore into the now non-empty cluster is refused, and changes nothing.
    const again = await runAtollBinary(['--endpoints', target.endpoints.join(','), 'restore', '--from', backupDir], { env: { ATOLL_TOKEN: targetToken }, timeoutMs: 30_000 });
    expect(again.stderr).toMatch(/^error RESTORE_TARGET_NOT_EMPTY: /m);
    expect(again.code).toBe(2);
  }, 90_000);

  it('a tenant admin token backs up its own tenant only', async () => {
    const dir = join(work, 'acme');
    const result = await cli(['--endpoints', source.endpoints.join(','), 'backup', '--out', dir], acmeAdminToken);
    expect(result.code, result.stderr).toBe(0);
    const { manifest, records } = readBackup(dir);
    expect(manifest.tenant).toBe('acme');
    expect(manifest.tenants).toEqual(['acme']);
    expect(records).toHaveLength(20);
    expect(records.every((record) => record.t === 'acme' && record.k.startsWith('orders/'))).toBe(true);
    expect(new Set(records.map((record) => Buffer.from(record.v, 'base64').toString()))).toEqual(new Set(Array.from({ length: 20 }, (_, i) => `acme-${i}`)));
    // A crafted page token resuming in another tenant's keys is refused.
    const acme = new AtollClient({ endpoints: source.endpoints, token: acmeAdminToken });
    try {
      const first = await acme.backupPage({ partition: 0, revision: 0, pageToken: '', limit: 1 });
      const forged = Buffer.from('\u0000globex\u0000orders/1', 'utf8').toString('base64url');
      await expect(acme.backupPage({ partition: 0, revision: first.revision, pageToken: forged, limit: 10 })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    } finally {
      acme.close();
    }
    // The default tenant's admin (its tag is empty) sees no other tenant's keys.
    const defaultAdmin = String((await admin.authCall('CreateToken', { tenant: 'default', role: 'admin', name: 'default-admin' }))['token']);
    const own = await cli(['--endpoints', source.endpoints.join(','), 'backup', '--out', join(work, 'default')], defaultAdmin);
    expect(own.code, own.stderr).toBe(0);
    const defaultBackup = readBackup(join(work, 'default'));
    expect(defaultBackup.manifest.tenants).toEqual(['default']);
    expect(defaultBackup.records.length).toBeGreaterThan(100);
    // A readwrite token may not back up at all.
    const writer = String((await admin.authCall('CreateToken', { tenant: 'acme', role: 'readwrite', name: 'acme-rw' }))['token']);
    const denied = await cli(['--endpoints', source.endpoints.join(','), 'backup', '--out', join(work, 'denied')], writer);
    expect(denied.stderr).toMatch(/^error PERMISSION_DENIED: /);
    expect(denied.code).toBe(2);
  }, 60_000);

  it('a backup after a split restores into a one-node cluster of another partition count, itself split', async () => {
    const split = await admin.splitPartition(1, { timeoutMs: 20_000 });
    const dir = join(work, 'after-split');
    const backup = await cli(['--endpoints', source.endpoints.join(','), 'backup', '--out', dir], sourceToken);
    expect(backup.code, backup.stderr).toBe(0);
    const { manifest, records } = readBackup(dir);
    expect(manifest.version).toBe(2);
    expect(manifest.partitions.map((entry) => entry.id)).toContain(split.newPartition);
    expect(manifest.partitions).toHaveLength(PARTITIONS + 1);
    const smallToken = newToken();
    const file = join(work, 'admin-token-small');
    writeFileSync(file, `${smallToken}\n`, { mode: 0o600 });
    const small = await LocalCluster.start({ nodes: 1, partitions: 3, extraArgs: ['--admin-token-file', file, '--replication-factor', '1'] });
    const smallAdmin = new AtollClient({ endpoints: small.endpoints, token: smallToken, defaultTimeoutMs: 10_000 });
    try {
      // An empty partition splits at its range's midpoint.
      await smallAdmin.splitPartition(0, { timeoutMs: 20_000 });
      expect((await smallAdmin.clusterInfo()).partitions).toHaveLength(4);
      const restore = await cli(['restore', '--from', dir, '--addresses', small.endpoints.join(',')], smallToken);
      expect(restore.code, restore.stderr).toBe(0);
      expect(restore.stdout).toContain(`restored ${records.length} keys`);
      const check = await cli(['--endpoints', small.endpoints.join(','), 'backup', '--out', join(work, 'small-check')], smallToken);
      expect(check.code, check.stderr).toBe(0);
      const restored = readBackup(join(work, 'small-check'));
      expect(restored.manifest.partitions).toHaveLength(4);
      expect(restored.records.map(recordId).sort()).toEqual(records.map(recordId).sort());
    } finally {
      smallAdmin.close();
      await small.stop();
    }
  }, 60_000);

  it('CLI usage errors print error CODE: message and exit 2', async () => {
    const missing = await runAtollBinary(['backup']);
    expect(missing.stderr).toMatch(/^error INVALID_ARGUMENT: .*--out/);
    expect(missing.code).toBe(2);
    const noManifest = await runAtollBinary(['restore', '--from', work]);
    expect(noManifest.stderr).toMatch(/^error BACKUP_DAMAGED: cannot read .*manifest\.json/);
    expect(noManifest.code).toBe(2);
    const notEmpty = await runAtollBinary(['backup', '--out', work]);
    expect(notEmpty.stderr).toMatch(/^error INVALID_ARGUMENT: --out .* is not an empty directory/);
    expect(notEmpty.code).toBe(2);
    expect(readdirSync(work).length).toBeGreaterThan(0);
  });
});
