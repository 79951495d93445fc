import { execFile, spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChaosLogger } from '../../src/chaos/fault-proxy.js';
import { cleanupStale, createTopology, NetnsError, type Topology } from '../../src/chaos/netns.js';
import { killHard, pause, processState, resume } from '../../src/chaos/process-control.js';
import { requireNetns } from './netns-env.js';

const run = promisify(execFile);
const quiet: ChaosLogger = { debug() {}, info() {}, warn() {} };

/** Probes give up after this long: a partitioned connect never completes. */
const probeTimeoutMs = 1_000;
const serverPort = 7000;

// Without namespaces a developer's run skips the topology tests with the reason printed; under
// CI=true the file fails instead (test/chaos/netns-env.ts).
const netns = await requireNetns('netns tests');

/** Waits (bounded) for a line on the child's stdout. */
function waitForLine(child: ChildProcess, line: string, timeoutMs = 5_000): Promise<void> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`no "${line}" within ${timeoutMs} ms; got ${JSON.stringify(output)}`)), timeoutMs);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.split('\n').includes(line)) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}

/** A probe client that prints `ok:<reply>`, `timeout` or `error:<code>` and exits. */
const probeScript = `
const net = require('net');
const socket = net.connect({ host: process.argv[1], port: Number(process.argv[2]) });
let reply = '';
const timer = setTimeout(() => { console.log('timeout'); process.exit(0); }, Number(process.argv[3]));
socket.on('data', (chunk) => (reply += chunk));
socket.on('end', () => { clearTimeout(timer); console.log('ok:' + reply); process.exit(0); });
socket.on('error', (error) => { clearTimeout(timer); console.log('error:' + error.code); process.exit(0); });
`;

async function probeFromNode(topology: Topology, id: number, ip: string): Promise<string> {
  const child = topology.exec(id, [process.execPath, '-e', probeScript, ip, String(serverPort), String(probeTimeoutMs)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  await new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return output.trim();
}

function probeFromHost(ip: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: ip, port: serverPort });
    let reply = '';
    const timer = setTimeout(() => {
      socket.destroy();
      resolve('timeout');
    }, probeTimeoutMs);
    socket.on('data', (chunk: Buffer) => (reply += chunk.toString()));
    socket.on('end', () => {
      clearTimeout(timer);
      resolve(`ok:${reply}`);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve(`error:${error.code}`);
    });
  });
}

async function namespacesNamed(prefix: string): Promise<string[]> {
  const { stdout } = await run('ip', ['netns', 'list']);
  return stdout
    .split('\n')
    .map((line) => line.trim().split(' ')[0] ?? '')
    .filter((name) => name.startsWith(`${prefix}-`));
}

describe.skipIf(!netns.available)('network namespace topology', () => {
  const prefix = 'atolltst';
  let topology: Topology;
  let server: ChildProcess;

  beforeAll(async () => {
    // A crashed earlier run may have left namespaces behind.
    await cleanupStale(prefix, { logger: quiet });
    topology = await createTopology({ prefix, nodeCount: 3, logger: quiet });
    server = topology.exec(
      1,
      [process.execPath, '-e', `require('net').createServer((s) => s.end('hello from 1')).listen(${serverPort}, '0.0.0.0', () => console.log('ready'))`],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await waitForLine(server, 'ready');
  });

  afterAll(async () => {
    await topology?.destroy();
  });

  it('gives each node its address and lets the harness and the other nodes reach it', async () => {
    expect(topology.nodes).toEqual([
      { id: 1, netns: 'atolltst-n1', ip: '10.203.0.11' },
      { id: 2, netns: 'atolltst-n2', ip: '10.203.0.12' },
      { id: 3, netns: 'atolltst-n3', ip: '10.203.0.13' },
    ]);
    expect(topology.hostIp).toBe('10.203.0.1');
    const [fromHost, fromTwo, fromThree] = await Promise.all([
      probeFromHost('10.203.0.11'),
      probeFromNode(topology, 2, '10.203.0.11'),
      probeFromNode(topology, 3, '10.203.0.11'),
    ]);
    expect([fromHost, fromTwo, fromThree]).toEqual(['ok:hello from 1', 'ok:hello from 1', 'ok:hello from 1']);
  });

  it('partition cuts nodes in different groups but never the harness; heal restores', async () => {
    await topology.partition([[1], [2, 3]]);
    const [fromHost, fromTwo] = await Promise.all([probeFromHost('10.203.0.11'), probeFromNode(topology, 2, '10.203.0.11')]);
    expect(fromTwo).toBe('timeout');
    expect(fromHost).toBe('ok:hello from 1');
    await topology.heal();
    expect(await probeFromNode(topology, 2, '10.203.0.11')).toBe('ok:hello from 1');
  });

  it('dropOneWay cuts one direction only; isolate cuts a node from every other node', async () => {
    await topology.dropOneWay(2, 1);
    const rulesOne = await run('ip', ['netns', 'exec', 'atolltst-n1', 'iptables', '-S', 'ATOLL']);
    const rulesTwo = await run('ip', ['netns', 'exec', 'atolltst-n2', 'iptables', '-S', 'ATOLL']);
    expect(rulesOne.stdout).toContain('-A ATOLL -s 10.203.0.12/32 -j DROP');
    expect(rulesTwo.stdout).not.toContain('DROP');
    const [fromTwo, fromThree] = await Promise.all([probeFromNode(topology, 2, '10.203.0.11'), probeFromNode(topology, 3, '10.203.0.11')]);
    expect(fromTwo).toBe('timeout');
    expect(fromThree).toBe('ok:hello from 1');

    await topology.isolate(1);
    const [isolatedFromThree, isolatedFromHost] = await Promise.all([probeFromNode(topology, 3, '10.203.0.11'), probeFromHost('10.203.0.11')]);
    expect(isolatedFromThree).toBe('timeout');
    expect(isolatedFromHost).toBe('ok:hello from 1');
    await topology.heal();
    expect(await probeFromNode(topology, 3, '10.203.0.11')).toBe('ok:hello from 1');
  });

  it('refuses a subnet already in use and leaves nothing behind', async () => {
    const attempt = createTopology({ prefix: 'atolltsu', nodeCount: 1, logger: quiet });
    await expect(attempt).rejects.toMatchObject({ code: 'SUBNET_IN_USE' });
    await expect(attempt).rejects.toBeInstanceOf(NetnsError);
    expect(await namespacesNamed('atolltsu')).toEqual([]);
  });

  it('destroy kills its processes and removes every namespace and link', async () => {
    await topology.destroy();
    expect(server.exitCode !== null || server.signalCode !== null).toBe(true);
    expect(await namespacesNamed(prefix)).toEqual([]);
    await expect(run('ip', ['link', 'show', 'dev', 'atolltst-h'])).rejects.toThrow();
    const { stdout: routes } = await run('ip', ['-4', 'route', 'show']);
    expect(routes).not.toContain('10.203.0.0/24');
    await topology.destroy();
  });
});

describe('process control', () => {
  /** A child that prints a tick every 10 ms and ignores SIGTERM, as a hung server might. */
  function startTicker(): { child: ChildProcess; ticks(): number } {
    const child = spawn(process.execPath, ['-e', `process.on('SIGTERM', () => {}); setInterval(() => process.stdout.write('.'), 10);`], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let ticks = 0;
    child.stdout?.on('data', (chunk: Buffer) => (ticks += chunk.length));
    return { child, ticks: () => ticks };
  }

  async function waitForTicks(ticks: () => number, atLeast: number): Promise<void> {
    const deadline = Date.now() + 5_000;
    while (ticks() < atLeast) {
      if (Date.now() > deadline) throw new Error(`only ${ticks()} ticks`);
      await sleep(5);
    }
  }

  it('pause freezes a process, resume thaws it, killHard kills it even when paused', async () => {
    const { child, ticks } = startTicker();
    try {
      await waitForTicks(ticks, 3);
      const pid = child.pid as number;
      await pause(pid);
      expect(await processState(pid)).toBe('stopped');
      await sleep(30); // output already in the pipe drains
      const frozenAt = ticks();
      await sleep(150);
      expect(ticks()).toBe(frozenAt);

      await resume(pid);
      expect(await processState(pid)).not.toBe('stopped');
      await waitForTicks(ticks, frozenAt + 3);

      await pause(pid);
      const status = await killHard(child);
      expect(status).toEqual({ code: null, signal: 'SIGKILL' });
      expect(await processState(pid)).toBeUndefined();
      expect(await killHard(child)).toEqual(status);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('refuses process ids that would signal a group or everything', async () => {
    await expect(pause(0)).rejects.toThrow();
    await expect(pause(-1)).rejects.toThrow();
    await expect(resume(1)).rejects.toThrow();
  });
});
