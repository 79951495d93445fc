/**
 * The cluster identity end to end, with the built atoll-server (npm run build) on one node: the
 * first start records a descriptor, `atoll cluster status` shows the cluster id and hash, and a
 * restart is refused, with one line naming the flag, the recorded value and the given one, when
 * --partitions or --id contradict it or the data directory is another cluster's (other secret);
 * a restart with the same flags serves the same data.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AtollClient } from '../../src/index.js';
import { runAtollBinary } from '../cli/atoll-binary.js';

const serverMain = resolve(import.meta.dirname, '../../dist/src/bin/atoll-server.js');
// Ports 7651 (client) and 7751 (peer) are this test's.
const ADDRESS = '127.0.0.1:7651';
const SECRET = 'i'.repeat(43);

interface Run {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; stderr: string; stdout: string }>;
  readonly listening: Promise<boolean>;
}

function startServer(dataDir: string, flags: { id?: number; partitions?: number; secret?: string } = {}): Run {
  const id = flags.id ?? 1;
  const args = [serverMain, '--id', String(id), '--peers', `${id}=${ADDRESS}`, '--data-dir', dataDir, '--partitions', String(flags.partitions ?? 4)];
  args.push('--replication-factor', '1', '--admin-listen', 'none', '--tick-ms', '20');
  const env = { PATH: process.env['PATH'] ?? '', ATOLL_LOG_FORMAT: 'json', ATOLL_LOG_LEVEL: 'info', ATOLL_PEER_SECRET: flags.secret ?? SECRET };
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let announce: (listening: boolean) => void = () => undefined;
  const listening = new Promise<boolean>((resolveListening) => {
    announce = resolveListening;
  });
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
    if (stdout.includes('atoll node listening')) announce(true);
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<{ code: number | null; stderr: string; stdout: string }>((resolveExit) => {
    child.on('close', (code) => {
      announce(false);
      resolveExit({ code, stderr, stdout });
    });
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  void exited.then(() => clearTimeout(timer));
  return { child, exited, listening };
}

/** Starts a server expected to refuse: resolves with its stderr once it has exited. */
async function refusedStart(dataDir: string, flags: { id?: number; partitions?: number; secret?: string }): Promise<string> {
  const run = startServer(dataDir, flags);
  expect(await run.listening).toBe(false);
  const { code, stderr } = await run.exited;
  expect(code).not.toBe(0);
  return stderr;
}

describe('atoll-server and its cluster descriptor', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'atoll-identity-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('records the cluster, shows it in cluster status, refuses contradicting restarts and serves the same data after a matching one', async () => {
    expect(existsSync(serverMain), 'run npm run build first').toBe(true);
    const first = startServer(dataDir);
    expect(await first.listening).toBe(true);
    const client = new AtollClient({ endpoints: [ADDRESS] });
    let clusterId: string;
    try {
      await client.put('user42/name', 'Ada', { timeoutMs: 10_000 });
      const info = await client.clusterInfo();
      expect(info.hashFunction).toBe('murmur3_32');
      clusterId = info.clusterId as string;
      expect(clusterId).toMatch(/^[0-9a-f]{32}$/);
    } finally {
      client.close();
    }
    const status = await runAtollBinary(['--endpoints', ADDRESS, 'cluster', 'status']);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(`cluster ${clusterId}, hash murmur3_32`);
    const statusJson = await runAtollBinary(['--endpoints', ADDRESS, '--json', 'cluster', 'status']);
    expect(JSON.parse(statusJson.stdout)).toMatchObject({ clusterId, hashFunction: 'murmur3_32' });
    first.child.kill('SIGTERM');
    expect((await first.exited).code).toBe(0);

    const partitions = await refusedStart(dataDir, { partitions: 8 });
    expect(partitions).toContain(`error: --partitions: this data directory (${dataDir}) belongs to cluster ${clusterId}, created with 4 partitions; --partitions is 8`);
    expect(partitions).not.toMatch(/\n\s+at /);
    const id = await refusedStart(dataDir, { id: 2 });
    expect(id).toContain(`error: --id: this data directory (${dataDir}) belongs to cluster ${clusterId} as node 1; --id is 2`);
    const other = await refusedStart(dataDir, { secret: 'x'.repeat(43) });
    expect(other).toContain(`belongs to cluster ${clusterId}, whose peer secrets share none with this node's`);

    const again = startServer(dataDir);
    expect(await again.listening).toBe(true);
    const reader = new AtollClient({ endpoints: [ADDRESS] });
    try {
      expect((await reader.get('user42/name', { timeoutMs: 10_000 })).text()).toBe('Ada');
      expect((await reader.clusterInfo()).clusterId).toBe(clusterId);
    } finally {
      reader.close();
      again.child.kill('SIGTERM');
      await again.exited;
    }
  });
});
