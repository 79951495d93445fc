/**
 * `npm start` (scripts/start-cluster.mjs, which `npm start` runs after building): three nodes on
 * ATOLL_BASE_PORT and up with their data in ATOLL_DATA, "atoll: cluster ready", put and get
 * through the CLI, and Ctrl-C (SIGINT to the whole process group, as a terminal sends it) stops
 * every node cleanly; started again on the same data, the cluster still holds the key. A healthy
 * start prints no warning (issue 34): not the nodes' failed streams to peers still starting, and,
 * with ATOLL_CERTS, not Node's DEP0123 (an IP address as the TLS server name).
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { portSlot } from '../../src/chaos/local-cluster.js';

const root = resolve(import.meta.dirname, '../..');
const dataRoot = mkdtempSync(join(tmpdir(), 'atoll-start-'));
const started: ChildProcess[] = [];

afterAll(() => {
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try {
        process.kill(-child.pid, 'SIGKILL'); // its whole process group: the script and its nodes
      } catch {
        // Already gone.
      }
    }
  }
  rmSync(dataRoot, { recursive: true, force: true });
});

function portFree(port: number): Promise<boolean> {
  return new Promise((resolvePort) => {
    const server = createServer();
    server.once('error', () => resolvePort(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolvePort(true)));
  });
}

/**
 * A base port whose three client, peer (+100), etcd (+300) and admin (+1000) ports are all free,
 * from this worker's slot of ports (portSlot: other test files pick theirs elsewhere).
 */
async function freeBasePort(): Promise<number> {
  const { low, high } = portSlot();
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = low + Math.floor(Math.random() * (high - low - 1_003));
    const ports = [0, 1, 2, 100, 101, 102, 300, 301, 302, 1000, 1001, 1002].map((offset) => base + offset);
    if ((await Promise.all(ports.map(portFree))).every(Boolean)) return base;
  }
  throw new Error('no free base port');
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolveProbe) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolveProbe(false);
    });
    socket.once('error', () => resolveProbe(true));
  });
}

interface Started {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

/** Starts the script in its own process group and waits (bounded) for "atoll: cluster ready". */
async function startCluster(base: number, env: Record<string, string> = {}): Promise<Started> {
  const child = spawn(process.execPath, [join(root, 'scripts/start-cluster.mjs')], {
    env: { ...process.env, ATOLL_DATA: dataRoot, ATOLL_BASE_PORT: String(base), ATOLL_PARTITIONS: '8', ATOLL_LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  started.push(child);
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // 'close', not 'exit': 'exit' may come before the last output is read from the pipes (seen once:
  // the script printed "atoll: cluster stopped" and exited 0, and the test had not read the line yet).
  const exited = new Promise<number | null>((resolveExit) => child.once('close', (code) => resolveExit(code)));
  const deadline = Date.now() + 45_000;
  while (!output.includes('atoll: cluster ready')) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no "atoll: cluster ready"; output:\n${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { child, output: () => output, exited };
}

/** No line at warn level or above from a node (pino JSON, levels 40-60), no Node warning. */
function expectNoWarnings(cluster: Started): void {
  expect(cluster.output()).not.toMatch(/"level":[456]0/);
  expect(cluster.output()).not.toMatch(/Warning|DEP0/);
}

/** Ctrl-C: SIGINT to the script's process group; it must exit 0 within 15 s with every port closed. */
async function ctrlC(cluster: Started, base: number): Promise<void> {
  process.kill(-(cluster.child.pid as number), 'SIGINT');
  const code = await Promise.race([cluster.exited, new Promise<string>((r) => setTimeout(() => r('still running after 15 s'), 15_000))]);
  expect(code, cluster.output()).toBe(0);
  expect(cluster.output()).toContain('atoll: cluster stopped');
  expect(cluster.output()).not.toMatch(/exited \(|not ready|unhandled/);
  for (const offset of [0, 1, 2, 100, 101, 102, 1000, 1001, 1002]) expect(await refused(base + offset), `port ${base + offset} still open`).toBe(true);
}

function cli(base: number, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const endpoints = [0, 1, 2].map((offset) => `127.0.0.1:${base + offset}`).join(',');
  const result = spawnSync(process.execPath, [join(root, 'dist/src/cli/atoll.js'), '--endpoints', endpoints, ...args], { encoding: 'utf8', timeout: 20_000 });
  return { status: result.status, stdout: result.stdout.trim(), stderr: result.stderr.trim() };
}

describe('npm start (scripts/start-cluster.mjs)', () => {
  it('starts three nodes, serves the CLI, stops cleanly on Ctrl-C and keeps the data for the next start', async () => {
    const base = await freeBasePort();
    const first = await startCluster(base);
    for (const id of [1, 2, 3]) expect(first.output()).toContain(`atoll: node ${id} client address 127.0.0.1:${base + id - 1}, etcd API 127.0.0.1:${base + 300 + id - 1}, admin http://127.0.0.1:${base + 1000 + id - 1}`);
    // The printed admin URLs answer: every node is ready and serves its metrics.
    for (const id of [1, 2, 3]) {
      const admin = `http://127.0.0.1:${base + 1000 + id - 1}`;
      expect((await fetch(`${admin}/readyz`, { signal: AbortSignal.timeout(5_000) })).status).toBe(200);
      expect(await (await fetch(`${admin}/metrics`, { signal: AbortSignal.timeout(5_000) })).text()).toContain('# TYPE atoll_partition_is_leader gauge');
    }
    expect(first.output()).toMatch(/atoll: cluster ready \(8 partitions on 3 nodes, /);
    expectNoWarnings(first);
    expect(existsSync(join(dataRoot, 'peer-secret'))).toBe(true);
    expect(cli(base, ['put', 'hello', 'world'])).toMatchObject({ status: 0 });
    expect(cli(base, ['get', 'hello'])).toMatchObject({ status: 0, stdout: 'world' });
    await ctrlC(first, base);

    const second = await startCluster(base);
    expect(cli(base, ['get', 'hello'])).toMatchObject({ status: 0, stdout: 'world' });
    await ctrlC(second, base);
  }, 60_000);

  it('with ATOLL_CERTS: TLS clients and peers, and still no warning', async () => {
    const certs = join(dataRoot, 'certs');
    execFileSync('bash', [join(root, 'scripts/dev-certs.sh'), certs], { stdio: 'pipe' });
    const base = await freeBasePort();
    rmSync(join(dataRoot, 'node1'), { recursive: true, force: true });
    rmSync(join(dataRoot, 'node2'), { recursive: true, force: true });
    rmSync(join(dataRoot, 'node3'), { recursive: true, force: true });
    const cluster = await startCluster(base, { ATOLL_CERTS: certs });
    expect(cluster.output()).toContain(`export ATOLL_TLS_CA=${join(certs, 'ca.pem')}`);
    expect(cli(base, ['--tls-ca', join(certs, 'ca.pem'), 'put', 'tls', 'yes'])).toMatchObject({ status: 0, stderr: '' });
    expectNoWarnings(cluster);
    await ctrlC(cluster, base);
  }, 30_000);
});
