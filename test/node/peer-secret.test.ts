/** The cluster peer secret: parsing and rotation, the constant-time check, the file and its copy. */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createPeerSecretFile,
  loadPeerSecrets,
  newPeerSecret,
  parsePeerSecrets,
  PeerSecretCheck,
  peerSecretDataFileName,
} from '../../src/node/peers/peer-secret.js';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'atoll-peer-secret-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const a = 'a'.repeat(20);
const b = 'b'.repeat(20);

describe('parsePeerSecrets', () => {
  it('reads one secret a line, current first, skipping comments and blank lines', () => {
    expect(parsePeerSecrets(`# comment\n${a}\n\n  ${b}  \n${a}\n`, 'f')).toEqual([a, b]);
    expect(parsePeerSecrets(`${b},${a}`, 'ATOLL_PEER_SECRET', { commas: true })).toEqual([b, a]);
  });

  it('refuses an empty file, short, spaced or too many secrets, naming the source', () => {
    expect(() => parsePeerSecrets('# nothing\n', '--peer-secret-file x')).toThrow(/^--peer-secret-file x: no peer secret/);
    expect(() => parsePeerSecrets('short', 'f')).toThrow(/16 to 256 characters/);
    expect(() => parsePeerSecrets(`${a} ${b}`, 'f')).toThrow(/without spaces/);
    const many = Array.from({ length: 9 }, (_, i) => `${String(i)}${a}`).join('\n');
    expect(() => parsePeerSecrets(many, 'f')).toThrow(/at most 8/);
  });
});

describe('PeerSecretCheck', () => {
  it('accepts every configured secret and nothing else, whatever its length or type', () => {
    const check = new PeerSecretCheck([a, b]);
    expect(check.matches(a)).toBe(true);
    expect(check.matches(b)).toBe(true);
    expect(check.matches(`${a}x`)).toBe(false);
    expect(check.matches(a.slice(1))).toBe(false);
    expect(check.matches('')).toBe(false);
    expect(check.matches(undefined)).toBe(false);
    expect(check.matches(Buffer.from(a))).toBe(false);
    expect(check.matches('z'.repeat(10_000))).toBe(false);
  });

  it('after rotation, the old and new secrets both work until the old one is removed', () => {
    const old = newPeerSecret();
    const next = newPeerSecret();
    expect(new PeerSecretCheck(parsePeerSecrets(`${old}\n${next}`, 'f')).matches(next)).toBe(true);
    expect(new PeerSecretCheck(parsePeerSecrets(`${next}\n${old}`, 'f')).matches(old)).toBe(true);
    expect(new PeerSecretCheck(parsePeerSecrets(next, 'f')).matches(old)).toBe(false);
  });
});

describe('the secret file', () => {
  it('an existing file wins: creating returns what it holds and leaves no temporary file', () => {
    const dir = tempDir();
    const path = join(dir, 'secret');
    expect(createPeerSecretFile(path, [a])).toEqual([a]);
    expect(createPeerSecretFile(path, [b])).toEqual([a]);
    expect(readdirSync(dir)).toEqual(['secret']);
  });

  it('several processes creating the same file at once all end up with one secret', async () => {
    const dir = tempDir();
    const path = join(dir, 'shared', 'secret');
    const module = resolve('dist/src/node/peers/peer-secret.js');
    expect(existsSync(module), 'run npm run build first').toBe(true);
    const script = `import { loadPeerSecrets } from ${JSON.stringify(module)};
      const [file, dataDir] = process.argv.slice(1);
      process.stdout.write(JSON.stringify(loadPeerSecrets({ file, dataDir, nodeCount: 3 })));`;
    const runs = Array.from({ length: 6 }, (_, i) =>
      new Promise<{ secrets: string[]; origin: string }>((resolveRun, reject) => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script, path, join(dir, `node${i}`)], { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '';
        let err = '';
        child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
        child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
        child.on('exit', (code) => (code === 0 ? resolveRun(JSON.parse(out) as { secrets: string[]; origin: string }) : reject(new Error(err))));
      }),
    );
    const results = await Promise.all(runs);
    const winner = parsePeerSecrets(readFileSync(path, 'utf8'), 'f');
    expect(winner).toHaveLength(1);
    for (const result of results) expect(result.secrets).toEqual(winner);
    expect(results.filter((result) => result.origin === 'created').length).toBeGreaterThanOrEqual(1);
    // Each node keeps a copy, and no temporary file is left behind.
    for (let i = 0; i < 6; i++) expect(parsePeerSecrets(readFileSync(join(dir, `node${i}`, peerSecretDataFileName), 'utf8'), 'copy')).toEqual(winner);
    expect(readdirSync(join(dir, 'shared'))).toEqual(['secret']);
  }, 30_000);

  it('later starts need no flag: the data directory copy is used, and follows the file when it changes', () => {
    const dir = tempDir();
    const file = join(dir, 'secret');
    const dataDir = join(dir, 'data');
    writeFileSync(file, `${a}\n`);
    expect(loadPeerSecrets({ file, dataDir, nodeCount: 3 })).toEqual({ secrets: [a], origin: 'file' });
    expect(loadPeerSecrets({ dataDir, nodeCount: 3 })).toEqual({ secrets: [a], origin: 'data-dir' });
    writeFileSync(file, `${b}\n${a}\n`);
    expect(loadPeerSecrets({ file, dataDir, nodeCount: 3 }).secrets).toEqual([b, a]);
    expect(loadPeerSecrets({ dataDir, nodeCount: 3 }).secrets).toEqual([b, a]);
    // A lost shared file is recreated from the copy, not replaced by a new secret.
    rmSync(file);
    expect(loadPeerSecrets({ file, dataDir, nodeCount: 3 })).toEqual({ secrets: [b, a], origin: 'data-dir' });
    expect(parsePeerSecrets(readFileSync(file, 'utf8'), 'f')).toEqual([b, a]);
    // The environment wins over everything.
    expect(loadPeerSecrets({ value: `${b},${a}`, file, dataDir, nodeCount: 3 })).toEqual({ secrets: [b, a], origin: 'environment' });
  });

  it('refuses to start, naming the flag, when it has no secret and cannot make one', () => {
    const dir = tempDir();
    expect(() => loadPeerSecrets({ dataDir: join(dir, 'data'), nodeCount: 3 })).toThrow(/^no peer secret: give every node the same --peer-secret-file/);
    // A one-node cluster has nobody to agree with: it makes its own.
    expect(loadPeerSecrets({ dataDir: join(dir, 'solo'), nodeCount: 1 }).origin).toBe('created');
    // A path that cannot be created (its "directory" is a file), as a read-only mount would be.
    const blocker = join(dir, 'blocker');
    writeFileSync(blocker, 'not a directory');
    expect(() => loadPeerSecrets({ file: join(blocker, 'secret'), dataDir: join(dir, 'data2'), nodeCount: 3 })).toThrow(
      /^no peer secret: --peer-secret-file .*blocker\/secret does not exist and cannot be created \((EEXIST|ENOTDIR)\); give every node/,
    );
    expect(() => loadPeerSecrets({ file: join(dir, 'bad'), value: 'short', dataDir: join(dir, 'data3'), nodeCount: 3 })).toThrow(/ATOLL_PEER_SECRET/);
  });
});

describe('atoll-server without a peer secret', () => {
  it('refuses to start a node of a multi-node cluster with one line naming the flag', () => {
    const dir = tempDir();
    const result = spawnSync(
      process.execPath,
      [resolve('dist/src/bin/atoll-server.js'), '--id', '1', '--peers', '1=127.0.0.1:7001,2=127.0.0.1:7002', '--replication-factor', '2', '--data-dir', join(dir, 'data')],
      { encoding: 'utf8', timeout: 20_000, env: { ...process.env, ATOLL_PEER_SECRET: '', ATOLL_PEER_SECRET_FILE: '', ATOLL_LOG_LEVEL: 'error' } },
    );
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^error: no peer secret: give every node the same --peer-secret-file FILE/)]);
  });
});
