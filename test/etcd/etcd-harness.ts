/**
 * Test support for comparing Atoll's etcd port with a real etcd: finds Debian's `etcd` and
 * `etcdctl` (packages etcd-server and etcd-client; .ci/run installs them), starts one etcd for a
 * test file, runs etcdctl against an endpoint, and masks what must differ (ids, times).
 *
 * Without the binaries a developer's run skips with the reason printed; a CI run (CI set) fails.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/chaos/local-cluster.js';

export interface EtcdTools {
  readonly available: boolean;
  readonly reason?: string;
}

function onPath(binary: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${binary}`], { encoding: 'utf8' }).status === 0;
}

/** Whether etcd and etcdctl are installed; throws under CI when they are not. */
export function requireEtcdTools(suite: string): EtcdTools {
  const missing = ['etcd', 'etcdctl'].filter((binary) => !onPath(binary));
  if (missing.length === 0) return { available: true };
  const reason = `${missing.join(' and ')} not installed (apt-get install -y etcd-server etcd-client)`;
  if (process.env['CI']) throw new Error(`${suite}: etcd's tools are required when CI is set, and ${reason}`);
  console.warn(`${suite} skipped: ${reason}`);
  return { available: false, reason };
}

export interface EtcdctlResult {
  readonly stdout: string;
  /** stderr without clientv3's JSON log lines (retry warnings). */
  readonly stderr: string;
  readonly status: number | null;
}

/** Runs etcdctl (API v3) against one endpoint, bounded in time. */
export function etcdctl(endpoint: string, args: readonly string[], input?: string): Promise<EtcdctlResult> {
  return new Promise((resolve, reject) => {
    const child = spawn('etcdctl', [`--endpoints=${endpoint}`, '--command-timeout=5s', ...args], {
      env: { ...process.env, ETCDCTL_API: '3' },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.on('error', reject);
    child.on('close', (status) => {
      clearTimeout(timer);
      resolve({ stdout, stderr: stderr.split('\n').filter((line) => !line.startsWith('{"level"')).join('\n'), status });
    });
    if (input !== undefined) {
      // A command that exits before reading its input must not fail the test with EPIPE.
      child.stdin?.on('error', () => undefined);
      child.stdin?.end(input);
    }
  });
}

/**
 * Runs `etcdctl watch ...` until its output contains `until` (or 10 s pass), then stops it:
 * no fixed sleep, the watch ends as soon as the expected event was printed.
 */
export function etcdctlWatch(endpoint: string, args: readonly string[], until: (stdout: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('etcdctl', [`--endpoints=${endpoint}`, 'watch', ...args], { env: { ...process.env, ETCDCTL_API: '3' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const done = (): void => {
      clearTimeout(timer);
      child.kill('SIGTERM');
    };
    const timer = setTimeout(done, 10_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (until(output)) done();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString('utf8').split('\n').filter((line) => line !== '' && !line.startsWith('{"level"')).join('\n');
      if (text !== '') onData(Buffer.from(`${text}\n`));
    });
    child.on('error', reject);
    child.on('close', () => resolve(output));
  });
}

/** One real etcd for a test file, on free loopback ports, in a temporary data directory. */
export class RealEtcd {
  private constructor(
    readonly endpoint: string,
    private readonly process: ChildProcess,
    private readonly dataDir: string,
  ) {}

  static async start(): Promise<RealEtcd> {
    const clientPort = await freePort();
    const peerPort = await freePort();
    const dataDir = mkdtempSync(join(tmpdir(), 'atoll-real-etcd-'));
    const client = `http://127.0.0.1:${clientPort}`;
    const peer = `http://127.0.0.1:${peerPort}`;
    const child = spawn(
      'etcd',
      ['--name', 'real', '--data-dir', join(dataDir, 'data'), '--listen-client-urls', client, '--advertise-client-urls', client, '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer, '--initial-cluster', `real=${peer}`, '--log-level', 'error'],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const etcd = new RealEtcd(`127.0.0.1:${clientPort}`, child, dataDir);
    const startedAt = Date.now();
    // Ready once it answers a linearizable read; bounded.
    for (;;) {
      const health = await etcdctl(etcd.endpoint, ['--dial-timeout=500ms', 'get', 'ready-probe']);
      if (health.status === 0) return etcd;
      if (Date.now() - startedAt > 20_000 || child.exitCode !== null) {
        await etcd.stop();
        throw new Error(`etcd did not start: ${health.stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  async stop(): Promise<void> {
    if (this.process.exitCode === null) {
      const exited = new Promise((resolve) => this.process.once('exit', resolve));
      this.process.kill('SIGKILL');
      await exited;
    }
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/**
 * Masks what differs between two systems by design: lease ids (renamed L1, L2, ... in order of
 * appearance), cluster and member ids and raft terms (dropped), and durations.
 */
export class Masker {
  private readonly leases = new Map<string, string>();

  text(output: string): string {
    return output
      .replace(/lease ([0-9a-f]{1,16})\b/g, (_match, id: string) => `lease ${this.lease(id.replace(/^0+/, ''))}`)
      .replace(/^([0-9a-f]{16})$/gm, (_match, id: string) => this.lease(id.replace(/^0+/, '')))
      .replace(/remaining\(\d+s\)/g, 'remaining(Ns)')
      .replace(/took = [0-9.]+[µm]?s/g, 'took = T');
  }

  lease(id: string): string {
    const known = this.leases.get(id);
    if (known !== undefined) return known;
    const name = `L${this.leases.size + 1}`;
    this.leases.set(id, name);
    return name;
  }

  /**
   * A JSON answer with revisions made relative to `base` and ids masked; header revisions also
   * less `headerShift` (writes one side makes that the other does not, such as Atoll's Compact).
   */
  json(output: string, base: number, headerShift = 0): unknown {
    const relative = new Set(['revision', 'create_revision', 'mod_revision', 'compact_revision']);
    const masked = new Set(['cluster_id', 'member_id', 'raft_term']);
    const walk = (value: unknown, key?: string): unknown => {
      if (Array.isArray(value)) return value.map((item) => walk(item));
      if (value !== null && typeof value === 'object') {
        const entries = Object.entries(value).filter(([name]) => !masked.has(name));
        return Object.fromEntries(entries.map(([name, inner]) => [name, name === 'header' ? walkHeader(inner as Record<string, unknown>) : walk(inner, name)]));
      }
      if (key === 'lease' && typeof value === 'number') return this.lease(value.toString(16));
      if (key !== undefined && relative.has(key) && typeof value === 'number' && value > 0) return value - base;
      return value;
    };
    const walkHeader = (header: Record<string, unknown>): unknown => {
      const walked = walk(header) as Record<string, unknown>;
      if (typeof header['revision'] === 'number') walked['revision'] = header['revision'] - base - headerShift;
      return walked;
    };
    return walk(JSON.parse(output));
  }
}

/**
 * A long-running etcdctl (`lock`, `elect`, `watch`): its output as it comes, a wait for a line
 * (bounded, no fixed sleep), and a stop by signal that resolves with everything it printed.
 */
export class EtcdctlProcess {
  private output = '';
  private readonly exited: Promise<number | null>;
  private readonly waiters = new Set<() => void>();
  exitCode: number | null | undefined;

  constructor(endpoint: string, args: readonly string[]) {
    const child = spawn('etcdctl', [`--endpoints=${endpoint}`, ...args], { env: { ...process.env, ETCDCTL_API: '3' }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const onData = (chunk: Buffer): void => {
      this.output += chunk.toString('utf8');
      for (const waiter of this.waiters) waiter();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => {
      const lines = chunk.toString('utf8').split('\n').filter((line) => line !== '');
      // etcd's client logs its retries as JSON: kept apart (the newest 20) for a failure's message.
      this.clientLog.push(...lines.filter((line) => line.startsWith('{"level"')));
      this.clientLog.splice(0, Math.max(0, this.clientLog.length - 20));
      const text = lines.filter((line) => !line.startsWith('{"level"')).join('\n');
      if (text !== '') onData(Buffer.from(`${text}\n`));
    });
    this.exited = new Promise((resolve) => {
      child.on('close', (code) => {
        this.exitCode = code;
        for (const waiter of this.waiters) waiter();
        resolve(code);
      });
      child.on('error', () => resolve(null));
    });
  }

  private readonly child: ChildProcess;
  /** The newest JSON log lines of etcd's client (its retries and warnings), for diagnostics. */
  readonly clientLog: string[] = [];

  get stdout(): string {
    return this.output;
  }

  /** Resolves once the output satisfies `until`; rejects after `ms` or when etcdctl exits first. */
  waitFor(until: (output: string) => boolean, ms = 15_000): Promise<string> {
    return new Promise((resolve, reject) => {
      const check = (): void => {
        if (until(this.output)) {
          finish();
          resolve(this.output);
        } else if (this.exitCode !== undefined) {
          finish();
          reject(new Error(`etcdctl exited (${String(this.exitCode)}) before the expected output; it printed: ${this.output}`));
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`etcdctl did not print the expected output within ${ms} ms; it printed: ${this.output}`));
      }, ms);
      const finish = (): void => {
        clearTimeout(timer);
        this.waiters.delete(check);
      };
      this.waiters.add(check);
      check();
    });
  }

  /** Resolves with the exit code once etcdctl ends by itself (bounded). */
  async ended(ms = 15_000): Promise<number | null> {
    const timer = setTimeout(() => this.child.kill('SIGKILL'), ms);
    try {
      return await this.exited;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Sends `signal` (etcdctl unlocks or resigns on SIGINT/SIGTERM) and waits for it to end. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<string> {
    if (this.exitCode === undefined) this.child.kill(signal);
    await this.ended();
    return this.output;
  }
}
