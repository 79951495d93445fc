/**
 * Someone who can write a backup directory alters it (issue 33, finding 7): the SHA-256 sums in
 * the manifest detect damage, not tampering, since whoever edits a file can rewrite its sum. With
 * `--signing-key-file` (a key the operator holds), `atoll backup` signs the manifest (HMAC-SHA256)
 * and `atoll restore` refuses, with BACKUP_SIGNATURE_INVALID and nothing written:
 * - a value changed in a partition file, its size and SHA-256 rewritten in the manifest;
 * - a manifest whose signature was removed, or one signed under another key.
 * The untouched signed backup restores; a restore without the key still works, and says that only
 * the checksums were checked.
 *
 * Fast: each cluster is one in-process node behind a real gRPC server (test/cli/one-node-cluster.ts),
 * and the CLI runs in this process.
 */
import { createHash, randomBytes } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { manifestName } from '../../src/cli/backup.js';
import { runCli, startOneNodeCluster, type OneNodeCluster } from '../cli/one-node-cluster.js';

const started: OneNodeCluster[] = [];
let work: string;

async function startNode(): Promise<OneNodeCluster> {
  const one = await startOneNodeCluster('hostile-backup', 4);
  started.push(one);
  return one;
}

const cli = runCli;

/** How many keys the node holds, over every partition (what a refused restore must leave at 0). */
async function keyCount(node: OneNodeCluster): Promise<number> {
  let keys = 0;
  for (const partition of (await node.admin.clusterInfo()).partitions) {
    keys += (await node.admin.backupPage({ partition: partition.id, revision: 0, pageToken: '', limit: 1000 })).items.length;
  }
  return keys;
}

let source: OneNodeCluster;
let signed: string;
let keyFile: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'atoll-hostile-backup-'));
  keyFile = join(work, 'backup.key');
  writeFileSync(keyFile, `${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  source = await startNode();
  for (let i = 0; i < 40; i++) await source.admin.put(`b${i % 8}/k${i}`, `v${i}`);
  await source.admin.put('payroll/alice', 'salary=100');
  signed = join(work, 'signed');
  const backup = await cli(['--endpoints', source.address, 'backup', '--out', signed, '--signing-key-file', keyFile], source.token);
  expect(backup.code, backup.stderr).toBe(0);
  expect(backup.stdout).toMatch(/manifest signed/);
}, 60_000);

afterAll(async () => {
  for (const one of started.splice(0)) await one.stop();
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

/** A copy of the signed backup, altered by `tamper`. */
function copyOf(name: string, tamper: (dir: string) => void): string {
  const dir = join(work, name);
  cpSync(signed, dir, { recursive: true });
  tamper(dir);
  return dir;
}

function manifestOf(dir: string): Record<string, unknown> {
  return JSON.parse(readFileSync(join(dir, manifestName), 'utf8')) as Record<string, unknown>;
}

/** The restore of `dir` into a new node with the signing key: refused with BACKUP_SIGNATURE_INVALID, nothing written. */
async function expectRefused(dir: string, key = keyFile): Promise<string> {
  const target = await startNode();
  const restore = await cli(['--endpoints', target.address, 'restore', '--from', dir, '--signing-key-file', key], target.token);
  expect(restore.code, restore.stdout).toBe(2);
  expect(restore.stderr).toMatch(/^error BACKUP_SIGNATURE_INVALID: /m);
  expect(await keyCount(target)).toBe(0);
  return restore.stderr;
}

describe('a signed backup altered by someone who can write it', () => {
  it('refuses a changed value whose size and SHA-256 were rewritten in the manifest', async () => {
    const forged = copyOf('forged-value', (dir) => {
      const manifest = manifestOf(dir);
      for (const entry of manifest['partitions'] as Array<Record<string, unknown>>) {
        const path = join(dir, String(entry['file']));
        const text = readFileSync(path, 'utf8');
        const changed = text.replace(Buffer.from('salary=100').toString('base64'), Buffer.from('salary=999999').toString('base64'));
        if (changed === text) continue;
        writeFileSync(path, changed);
        // What an attacker does: make the checksums true to the altered file.
        entry['bytes'] = Buffer.byteLength(changed);
        entry['sha256'] = createHash('sha256').update(changed).digest('hex');
      }
      writeFileSync(join(dir, manifestName), `${JSON.stringify(manifest, null, 2)}\n`);
    });
    // The checksums alone pass it: that is why the signature is needed.
    const target = await startNode();
    const unkeyed = await cli(['--endpoints', target.address, 'restore', '--from', forged], target.token);
    expect(unkeyed.code, unkeyed.stderr).toBe(0);
    expect(unkeyed.stderr).toMatch(/only its checksums are checked, which detect damage, not tampering/);
    expect((await target.admin.get('payroll/alice')).text()).toBe('salary=999999');
    // With the key: refused, and the target untouched.
    expect(await expectRefused(forged)).toMatch(/does not match/);
  });

  it('refuses a manifest whose signature was removed, or one signed under another key', async () => {
    const stripped = copyOf('stripped', (dir) => {
      const manifest = manifestOf(dir);
      delete manifest['signature'];
      writeFileSync(join(dir, manifestName), `${JSON.stringify(manifest, null, 2)}\n`);
    });
    expect(await expectRefused(stripped)).toMatch(/not signed/);
    const otherKey = join(work, 'other.key');
    writeFileSync(otherKey, randomBytes(32).toString('base64'), { mode: 0o600 });
    expect(await expectRefused(signed, otherKey)).toMatch(/does not match/);
  });

  it('restores the untouched signed backup with its key; a short key is refused before anything is written', async () => {
    const target = await startNode();
    const restore = await cli(['--endpoints', target.address, 'restore', '--from', signed, '--signing-key-file', keyFile], target.token);
    expect(restore.code, restore.stderr).toBe(0);
    expect((await target.admin.get('payroll/alice')).text()).toBe('salary=100');
    expect(await keyCount(target)).toBe(41);
    const weak = join(work, 'weak.key');
    writeFileSync(weak, 'secret\n', { mode: 0o600 });
    const refused = await cli(['--endpoints', source.address, 'backup', '--out', join(work, 'weak-backup'), '--signing-key-file', weak], source.token);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^error INVALID_ARGUMENT: .*at least 32/m);
    expect(existsSync(join(work, 'weak-backup'))).toBe(false);
  });
});
