/**
 * Linux network namespaces for the chaos harness: one namespace per Atoll node, joined by a
 * private bridge, with iptables rules inside the node namespaces for partitions. Needs root,
 * iproute2 and iptables (`ensureIptables` installs the latter through apt-get).
 *
 * Wiring (prefix P, subnet 10.203.S.0/24, S = `subnetIndex`, 0 by default):
 *
 *   root ns                 ns "P-br"                     ns "P-nI" (one per node I = 1..N)
 *   P-h 10.203.S.1/24 ===== host ─┐
 *                                 br0 (bridge, no address)
 *                           nI ───┘ ===================== eth0 10.203.S.(10+I)/24, lo up
 *
 * - The bridge lives in its own namespace, not in the root one, so the host gains exactly one
 *   interface (P-h) and one connected route (10.203.S.0/24 dev P-h). Nothing else of the host's
 *   network is touched: no sysctl, no firewall rule, no forwarding, no default route.
 * - The harness, in the root namespace, reaches node I at 10.203.S.(10+I) through P-h. Partitions
 *   never cut the harness off: they only drop traffic between node addresses.
 * - Traffic cannot leave the machine: node namespaces have only the connected /24 route (no
 *   default route), and the bridge namespace has no addresses at all.
 * - Every name carries the prefix (namespaces "P-br", "P-nI"; the host link "P-h"), so
 *   `cleanupStale(P)` can remove a crashed run's leftovers. Deleting the host link and the
 *   namespaces removes every veth with them.
 * - Nodes can reach the harness at 10.203.S.1 too, so a FaultProxy listening there (listenHost
 *   = topology.hostIp) can sit on node-to-node links in this topology as well as on loopback.
 * - Two live topologies need different `subnetIndex` values: a subnet the host already routes is
 *   refused (SUBNET_IN_USE) rather than shadowed.
 * - Partition rules are DROP rules in an `ATOLL` chain hooked into each node's INPUT chain:
 *   packets from a cut-off node are silently lost on arrival, so a sender sees timeouts, as in a
 *   real partition, rather than immediate errors.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { constants as fsConstants } from 'node:fs';
import { access } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ChaosLogger } from './fault-proxy.js';
import { killHard } from './process-control.js';

export const netnsLimits = Object.freeze({
  maxNodeCount: 64,
  /** Interface names are at most 15 bytes; "P-h" and "P-nI" must fit with room to spare. */
  maxPrefixLength: 8,
  commandTimeoutMs: 10_000,
  aptTimeoutMs: 300_000,
  maxCommandOutputBytes: 1024 * 1024,
  /** Bounded wait for namespaces and links to disappear after deletion (the kernel frees them lazily). */
  cleanupWaitMs: 5_000,
  cleanupPollMs: 20,
});
assert.ok(netnsLimits.maxNodeCount + 10 < 255, 'node addresses must fit in the /24');
assert.ok(netnsLimits.maxPrefixLength + '-n'.length + String(netnsLimits.maxNodeCount).length <= 15);

/** Stable error codes; never renamed or reused. */
export type NetnsErrorCode = 'NETNS_UNAVAILABLE' | 'COMMAND_FAILED' | 'SUBNET_IN_USE' | 'TOPOLOGY_EXISTS' | 'CLEANUP_INCOMPLETE';

export class NetnsError extends Error {
  override readonly name = 'NetnsError';
  constructor(
    readonly code: NetnsErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

export type NetnsAvailability = { readonly available: true } | { readonly available: false; readonly reason: string };

export interface TopologyOptions {
  /** Lower-case letters and digits, starting with a letter, at most 8 characters. */
  readonly prefix: string;
  readonly nodeCount: number;
  /** The third octet S of the subnet 10.203.S.0/24; 0 by default. */
  readonly subnetIndex?: number;
  readonly logger?: ChaosLogger;
}

export interface TopologyNode {
  /** 1-based, like Atoll node ids. */
  readonly id: number;
  readonly netns: string;
  readonly ip: string;
}

export interface Topology {
  readonly prefix: string;
  /** The harness's own address on the subnet (in the root namespace). */
  readonly hostIp: string;
  /** CIDR of the private subnet. */
  readonly subnet: string;
  readonly nodes: readonly TopologyNode[];
  /** Spawns argv inside the node's namespace; the child's pid is the program's own (ip execs it). */
  exec(id: number, argv: readonly string[], options?: SpawnOptions): ChildProcess;
  /**
   * Replaces all rules: nodes in different groups cannot reach each other (both directions).
   * Nodes named in no group keep reaching everyone, which makes bridge-shaped partial partitions.
   */
  partition(groups: readonly (readonly number[])[]): Promise<void>;
  /** Cuts one node off from every other node (the harness still reaches it). */
  isolate(id: number): Promise<void>;
  /** Adds a rule: packets from `from` are lost on arrival at `to`; the other direction still flows. */
  dropOneWay(from: number, to: number): Promise<void>;
  /** Removes every rule. */
  heal(): Promise<void>;
  /** Kills the processes started by exec, removes every namespace and link. Idempotent. */
  destroy(): Promise<void>;
}

const stderrLogger: ChaosLogger = {
  debug() {},
  info(fields, message) {
    process.stderr.write(`[atoll chaos] ${message} ${JSON.stringify(fields)}\n`);
  },
  warn(fields, message) {
    process.stderr.write(`[atoll chaos] WARN ${message} ${JSON.stringify(fields)}\n`);
  },
};

// ------------------------------------------------------------------ commands

interface CommandResult {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

interface CommandOptions {
  readonly input?: string;
  readonly timeoutMs?: number;
  readonly env?: NodeJS.ProcessEnv;
}

/** Runs a command to completion (bounded in time and output); never throws for a non-zero exit. */
function runCommand(argv: readonly string[], options: CommandOptions = {}): Promise<CommandResult> {
  const [file, ...args] = argv;
  assert.ok(file !== undefined, 'empty command');
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'], env: options.env ?? process.env });
    const output = { stdout: '', stderr: '' };
    const collect = (key: 'stdout' | 'stderr') => (chunk: Buffer) => {
      if (output[key].length < netnsLimits.maxCommandOutputBytes) output[key] += chunk.toString('utf8');
    };
    child.stdout.on('data', collect('stdout'));
    child.stderr.on('data', collect('stderr'));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? netnsLimits.commandTimeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      resolve({ code: null, stdout: output.stdout, stderr: `${output.stderr}${error.message}` });
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, ...output });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(options.input ?? '');
  });
}

/** Runs a command and throws COMMAND_FAILED unless it exits 0. */
async function mustRun(argv: readonly string[], options: CommandOptions = {}): Promise<string> {
  const result = await runCommand(argv, options);
  if (result.code !== 0) {
    throw new NetnsError('COMMAND_FAILED', `${argv.join(' ')} failed (exit ${result.code}): ${result.stderr.trim()}`, {
      argv: [...argv],
      exitCode: result.code,
      stderr: result.stderr,
    });
  }
  return result.stdout;
}

/** Finds a program on PATH or in the sbin folders (root's tools live there; PATH may lack them). */
async function findExecutable(name: string): Promise<string | undefined> {
  const pathDirs = (process.env['PATH'] ?? '').split(path.delimiter).filter((dir) => dir !== '');
  for (const dir of [...pathDirs, '/usr/local/sbin', '/usr/sbin', '/sbin', '/usr/bin', '/bin']) {
    const candidate = path.join(dir, name);
    try {
      await access(candidate, fsConstants.X_OK);
      return candidate;
    } catch {
      // Not here; try the next folder.
    }
  }
  return undefined;
}

interface Tools {
  readonly ip: string;
  readonly iptablesRestore: string;
}

async function requireTools(): Promise<Tools> {
  const ip = await findExecutable('ip');
  const iptablesRestore = await findExecutable('iptables-restore');
  if (ip === undefined) throw new NetnsError('NETNS_UNAVAILABLE', 'iproute2 (ip) is not installed');
  if (iptablesRestore === undefined) throw new NetnsError('NETNS_UNAVAILABLE', 'iptables is not installed; call ensureIptables()');
  return { ip, iptablesRestore };
}

function isRoot(): boolean {
  return process.platform === 'linux' && process.getuid?.() === 0;
}

// ------------------------------------------------------------------ detection and installation

/** Checks, without changing anything lasting, whether namespaces and iptables inside them work. */
export async function detectNetns(): Promise<NetnsAvailability> {
  if (process.platform !== 'linux') return { available: false, reason: `network namespaces need Linux, not ${process.platform}` };
  if (!isRoot()) return { available: false, reason: 'network namespaces need root' };
  const ip = await findExecutable('ip');
  if (ip === undefined) return { available: false, reason: 'iproute2 (ip) is not installed' };
  const iptables = await findExecutable('iptables');
  if (iptables === undefined || (await findExecutable('iptables-restore')) === undefined) {
    return { available: false, reason: 'iptables is not installed (ensureIptables() installs it)' };
  }
  const probe = `atollprobe-${process.pid}`;
  const added = await runCommand([ip, 'netns', 'add', probe]);
  if (added.code !== 0) return { available: false, reason: `ip netns add failed: ${added.stderr.trim()}` };
  try {
    const listed = await runCommand([ip, 'netns', 'exec', probe, iptables, '-S']);
    if (listed.code !== 0) return { available: false, reason: `iptables inside a namespace failed: ${listed.stderr.trim()}` };
    return { available: true };
  } finally {
    await runCommand([ip, 'netns', 'del', probe]);
  }
}

/**
 * Makes sure iptables is installed, installing it with apt-get when it is missing and we are
 * root. Returns whether it installed anything. Throws NETNS_UNAVAILABLE when it cannot.
 */
export async function ensureIptables(options: { readonly logger?: ChaosLogger } = {}): Promise<{ installed: boolean }> {
  const logger = options.logger ?? stderrLogger;
  if ((await findExecutable('iptables')) !== undefined && (await findExecutable('iptables-restore')) !== undefined) {
    return { installed: false };
  }
  if (!isRoot()) throw new NetnsError('NETNS_UNAVAILABLE', 'iptables is missing and installing it needs root');
  const aptGet = await findExecutable('apt-get');
  if (aptGet === undefined) throw new NetnsError('NETNS_UNAVAILABLE', 'iptables is missing and apt-get is not available to install it');
  logger.warn({ command: 'apt-get install -y --no-install-recommends iptables' }, 'iptables is missing; installing it with apt-get');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const install = [aptGet, 'install', '-y', '--no-install-recommends', 'iptables'];
  let result = await runCommand(install, { env, timeoutMs: netnsLimits.aptTimeoutMs });
  if (result.code !== 0) {
    // A fresh machine may have no package lists yet.
    logger.warn({ command: 'apt-get update' }, 'apt-get install failed; updating package lists and retrying');
    await runCommand([aptGet, 'update'], { env, timeoutMs: netnsLimits.aptTimeoutMs });
    result = await runCommand(install, { env, timeoutMs: netnsLimits.aptTimeoutMs });
  }
  if (result.code !== 0 || (await findExecutable('iptables-restore')) === undefined) {
    throw new NetnsError('NETNS_UNAVAILABLE', `installing iptables failed: ${result.stderr.trim().slice(-500)}`);
  }
  logger.info({ package: 'iptables' }, 'iptables installed');
  return { installed: true };
}

// ------------------------------------------------------------------ names and addresses

function assertValidPrefix(prefix: string): void {
  assert.ok(
    new RegExp(`^[a-z][a-z0-9]{0,${netnsLimits.maxPrefixLength - 1}}$`).test(prefix),
    `prefix must be lower-case letters and digits, start with a letter, at most ${netnsLimits.maxPrefixLength} long: ${JSON.stringify(prefix)}`,
  );
}

const bridgeNamespaceOf = (prefix: string): string => `${prefix}-br`;
const nodeNamespaceOf = (prefix: string, id: number): string => `${prefix}-n${id}`;
const hostLinkOf = (prefix: string): string => `${prefix}-h`;
const subnetBaseOf = (subnetIndex: number): string => `10.203.${subnetIndex}`;

function ipv4ToNumber(address: string): number {
  const parts = address.split('.').map(Number);
  assert.ok(parts.length === 4 && parts.every((part) => Number.isInteger(part) && part >= 0 && part <= 255), `bad IPv4 address ${address}`);
  return (((parts[0] as number) << 24) | ((parts[1] as number) << 16) | ((parts[2] as number) << 8) | (parts[3] as number)) >>> 0;
}

/** The inclusive address range of a CIDR (a bare address is a /32). */
function rangeOf(cidr: string): readonly [number, number] {
  const [address, bits = '32'] = cidr.split('/');
  const prefixLength = Number(bits);
  const size = 2 ** (32 - prefixLength);
  const start = Math.floor(ipv4ToNumber(address as string) / size) * size;
  return [start, start + size - 1];
}

function overlaps(a: readonly [number, number], b: readonly [number, number]): boolean {
  return a[0] <= b[1] && b[0] <= a[1];
}

/**
 * Refuses a subnet that the host already uses, by address or by route (the default route aside):
 * our more specific route would otherwise shadow part of the host's real network.
 */
async function assertSubnetFree(ip: string, subnet: string): Promise<void> {
  const ours = rangeOf(subnet);
  const addresses = JSON.parse(await mustRun([ip, '-j', '-4', 'addr', 'show'])) as { ifname: string; addr_info?: { local: string; prefixlen: number }[] }[];
  for (const link of addresses) {
    for (const info of link.addr_info ?? []) {
      if (overlaps(ours, rangeOf(`${info.local}/${info.prefixlen}`))) {
        throw new NetnsError('SUBNET_IN_USE', `${subnet} overlaps ${info.local}/${info.prefixlen} on ${link.ifname}`, { subnet });
      }
    }
  }
  const routes = JSON.parse(await mustRun([ip, '-j', '-4', 'route', 'show', 'table', 'all'])) as { dst: string; dev?: string; type?: string }[];
  for (const route of routes) {
    if (route.dst === 'default' || !/^\d+\.\d+\.\d+\.\d+(\/\d+)?$/.test(route.dst)) continue;
    // The local table holds the host's own addresses (checked above) and the loopback range.
    if (route.type === 'local' || route.type === 'broadcast') continue;
    if (overlaps(ours, rangeOf(route.dst))) {
      throw new NetnsError('SUBNET_IN_USE', `${subnet} overlaps the host route ${route.dst} (dev ${route.dev ?? '?'})`, { subnet });
    }
  }
}

// ------------------------------------------------------------------ stale cleanup

async function listNamespaces(ip: string): Promise<string[]> {
  const output = await mustRun([ip, 'netns', 'list']);
  // Lines look like "name" or "name (id: 3)".
  return output
    .split('\n')
    .map((line) => line.trim().split(' ')[0] ?? '')
    .filter((name) => name !== '');
}

async function linkExists(ip: string, name: string): Promise<boolean> {
  return (await runCommand([ip, 'link', 'show', 'dev', name])).code === 0;
}

function ownedBy(prefix: string, namespace: string): boolean {
  return namespace.startsWith(`${prefix}-`);
}

/** Kills every process still inside the namespace (left by a crashed run) so it can be freed. */
async function killNamespaceProcesses(ip: string, namespace: string): Promise<void> {
  const result = await runCommand([ip, 'netns', 'pids', namespace]);
  const pids = result.stdout
    .split('\n')
    .map((line) => Number(line.trim()))
    .filter((pid) => Number.isInteger(pid) && pid > 1 && pid !== process.pid);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

async function waitUntil(condition: () => Promise<boolean>): Promise<boolean> {
  const deadline = Date.now() + netnsLimits.cleanupWaitMs;
  for (;;) {
    if (await condition()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(netnsLimits.cleanupPollMs);
  }
}

/**
 * Removes every namespace and host link named with this prefix, killing processes still inside
 * those namespaces. Returns what it removed; throws CLEANUP_INCOMPLETE if something remains.
 */
export async function cleanupStale(prefix: string, options: { readonly logger?: ChaosLogger } = {}): Promise<{ removed: string[] }> {
  assertValidPrefix(prefix);
  const logger = options.logger ?? stderrLogger;
  const ip = await findExecutable('ip');
  if (ip === undefined) return { removed: [] };
  const removed: string[] = [];
  const hostLink = hostLinkOf(prefix);
  // Deleting one end of a veth deletes the other, so the host link goes first and takes its
  // bridge-side peer with it.
  if (await linkExists(ip, hostLink)) {
    await runCommand([ip, 'link', 'del', 'dev', hostLink]);
    removed.push(hostLink);
  }
  for (const namespace of (await listNamespaces(ip)).filter((name) => ownedBy(prefix, name))) {
    await killNamespaceProcesses(ip, namespace);
    await runCommand([ip, 'netns', 'del', namespace]);
    removed.push(namespace);
  }
  const gone = await waitUntil(async () => !(await linkExists(ip, hostLink)) && !(await listNamespaces(ip)).some((name) => ownedBy(prefix, name)));
  if (!gone) {
    const left = (await listNamespaces(ip)).filter((name) => ownedBy(prefix, name));
    throw new NetnsError('CLEANUP_INCOMPLETE', `could not remove everything named ${prefix}-*: ${left.join(', ') || hostLink}`, { left });
  }
  if (removed.length > 0) logger.info({ prefix, removed }, 'removed network namespaces and links');
  return { removed };
}

// ------------------------------------------------------------------ topology

/**
 * Builds the topology described at the top of this file. On any failure it removes whatever it
 * had created and rethrows. Refuses (TOPOLOGY_EXISTS) when names with this prefix already exist:
 * call `cleanupStale(prefix)` first to clear a crashed run.
 */
export async function createTopology(options: TopologyOptions): Promise<Topology> {
  const { prefix, nodeCount } = options;
  const subnetIndex = options.subnetIndex ?? 0;
  assertValidPrefix(prefix);
  assert.ok(Number.isInteger(nodeCount) && nodeCount >= 1 && nodeCount <= netnsLimits.maxNodeCount, `nodeCount must be in [1, ${netnsLimits.maxNodeCount}]`);
  assert.ok(Number.isInteger(subnetIndex) && subnetIndex >= 0 && subnetIndex <= 255, 'subnetIndex must be in [0, 255]');
  if (!isRoot()) throw new NetnsError('NETNS_UNAVAILABLE', 'network namespaces need root on Linux');
  const tools = await requireTools();
  const logger = options.logger ?? stderrLogger;

  const existing = (await listNamespaces(tools.ip)).filter((name) => ownedBy(prefix, name));
  if (existing.length > 0 || (await linkExists(tools.ip, hostLinkOf(prefix)))) {
    throw new NetnsError('TOPOLOGY_EXISTS', `names with prefix ${prefix} already exist (${existing.join(', ')}); call cleanupStale(${JSON.stringify(prefix)})`);
  }
  const base = subnetBaseOf(subnetIndex);
  const subnet = `${base}.0/24`;
  await assertSubnetFree(tools.ip, subnet);

  const nodes: TopologyNode[] = [];
  for (let id = 1; id <= nodeCount; id++) nodes.push({ id, netns: nodeNamespaceOf(prefix, id), ip: `${base}.${10 + id}` });
  const topology = new NetnsTopology(prefix, `${base}.1`, subnet, nodes, tools, logger);
  try {
    await buildTopology(tools.ip, prefix, topology.hostIp, nodes);
    for (const node of nodes) await topology.installChain(node);
  } catch (error) {
    await cleanupStale(prefix, { logger }).catch((cleanupError: unknown) => {
      logger.warn({ prefix, err: String(cleanupError) }, 'cleanup after a failed createTopology was incomplete');
    });
    throw error;
  }
  logger.info({ prefix, subnet, nodes: nodes.map((node) => `${node.id}=${node.ip}`) }, 'network namespaces created');
  return topology;
}

async function buildTopology(ip: string, prefix: string, hostIp: string, nodes: readonly TopologyNode[]): Promise<void> {
  const bridgeNs = bridgeNamespaceOf(prefix);
  const hostLink = hostLinkOf(prefix);
  await mustRun([ip, 'netns', 'add', bridgeNs]);
  await mustRun([ip, '-n', bridgeNs, 'link', 'set', 'lo', 'up']);
  // No spanning tree and no forward delay: a port forwards as soon as it is up.
  await mustRun([ip, '-n', bridgeNs, 'link', 'add', 'br0', 'type', 'bridge', 'stp_state', '0', 'forward_delay', '0']);
  await mustRun([ip, '-n', bridgeNs, 'link', 'set', 'br0', 'up']);

  await mustRun([ip, 'link', 'add', hostLink, 'type', 'veth', 'peer', 'name', 'host', 'netns', bridgeNs]);
  await mustRun([ip, '-n', bridgeNs, 'link', 'set', 'host', 'master', 'br0', 'up']);
  await mustRun([ip, 'addr', 'add', `${hostIp}/24`, 'dev', hostLink]);
  await mustRun([ip, 'link', 'set', hostLink, 'up']);

  for (const node of nodes) {
    const port = `n${node.id}`;
    await mustRun([ip, 'netns', 'add', node.netns]);
    await mustRun([ip, '-n', bridgeNs, 'link', 'add', port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', node.netns]);
    await mustRun([ip, '-n', bridgeNs, 'link', 'set', port, 'master', 'br0', 'up']);
    await mustRun([ip, '-n', node.netns, 'link', 'set', 'lo', 'up']);
    await mustRun([ip, '-n', node.netns, 'addr', 'add', `${node.ip}/24`, 'dev', 'eth0']);
    await mustRun([ip, '-n', node.netns, 'link', 'set', 'eth0', 'up']);
  }
}

/** A directed cut: packets from `from` are dropped on arrival at `to`. */
const cutKey = (from: number, to: number): string => `${from}>${to}`;

class NetnsTopology implements Topology {
  private readonly children = new Set<ChildProcess>();
  // Invariant: `cuts` holds the directed cuts the rules should express; `applied` holds, per node,
  // the source addresses its ATOLL chain drops right now.
  private readonly cuts = new Set<string>();
  private readonly applied = new Map<number, string>();
  private destroying: Promise<void> | undefined;

  constructor(
    readonly prefix: string,
    readonly hostIp: string,
    readonly subnet: string,
    readonly nodes: readonly TopologyNode[],
    private readonly tools: Tools,
    private readonly logger: ChaosLogger,
  ) {}

  exec(id: number, argv: readonly string[], options: SpawnOptions = {}): ChildProcess {
    assert.equal(this.destroying, undefined, 'exec on a destroyed topology');
    assert.ok(argv.length > 0, 'exec needs a program');
    const node = this.nodeOf(id);
    const child = spawn(this.tools.ip, ['netns', 'exec', node.netns, ...argv], options);
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    child.once('error', () => this.children.delete(child));
    return child;
  }

  async partition(groups: readonly (readonly number[])[]): Promise<void> {
    const seen = new Set<number>();
    for (const group of groups) {
      for (const id of group) {
        this.nodeOf(id);
        assert.ok(!seen.has(id), `node ${id} appears in two partition groups`);
        seen.add(id);
      }
    }
    this.cuts.clear();
    for (const [index, group] of groups.entries()) {
      for (const other of groups.slice(index + 1)) {
        for (const a of group) {
          for (const b of other) {
            this.cuts.add(cutKey(a, b));
            this.cuts.add(cutKey(b, a));
          }
        }
      }
    }
    this.logger.info({ prefix: this.prefix, groups }, 'partition');
    await this.applyCuts();
  }

  isolate(id: number): Promise<void> {
    this.nodeOf(id);
    return this.partition([[id], this.nodes.filter((node) => node.id !== id).map((node) => node.id)]);
  }

  async dropOneWay(from: number, to: number): Promise<void> {
    this.nodeOf(from);
    this.nodeOf(to);
    assert.notEqual(from, to, 'a node cannot be cut from itself');
    this.cuts.add(cutKey(from, to));
    this.logger.info({ prefix: this.prefix, from, to }, 'one-way drop');
    await this.applyCuts();
  }

  async heal(): Promise<void> {
    this.cuts.clear();
    this.logger.info({ prefix: this.prefix }, 'heal');
    await this.applyCuts();
  }

  destroy(): Promise<void> {
    this.destroying ??= this.destroyNow();
    return this.destroying;
  }

  /** @internal Creates the empty ATOLL chain and hooks it into INPUT. */
  async installChain(node: TopologyNode): Promise<void> {
    await this.restoreRules(node, ['*filter', ':ATOLL - [0:0]', '-A INPUT -j ATOLL', 'COMMIT', '']);
    this.applied.set(node.id, '');
  }

  private async applyCuts(): Promise<void> {
    assert.equal(this.destroying, undefined, 'rules changed on a destroyed topology');
    // One atomic iptables-restore per node whose rules changed; unchanged nodes are left alone.
    await Promise.all(
      this.nodes.map(async (node) => {
        const sources = this.nodes.filter((other) => this.cuts.has(cutKey(other.id, node.id))).map((other) => other.ip);
        const signature = sources.join(',');
        if (this.applied.get(node.id) === signature) return;
        const rules = sources.map((source) => `-A ATOLL -s ${source}/32 -j DROP`);
        await this.restoreRules(node, ['*filter', '-F ATOLL', ...rules, 'COMMIT', '']);
        this.applied.set(node.id, signature);
      }),
    );
  }

  private async restoreRules(node: TopologyNode, lines: readonly string[]): Promise<void> {
    await mustRun([this.tools.ip, 'netns', 'exec', node.netns, this.tools.iptablesRestore, '--noflush'], { input: lines.join('\n') });
  }

  private async destroyNow(): Promise<void> {
    const kills = [...this.children].map((child) =>
      killHard(child).catch((error: unknown) => this.logger.warn({ pid: child.pid, err: String(error) }, 'a namespace process did not exit')),
    );
    await Promise.all(kills);
    await cleanupStale(this.prefix, { logger: this.logger });
  }

  private nodeOf(id: number): TopologyNode {
    const node = this.nodes.find((candidate) => candidate.id === id);
    assert.ok(node !== undefined, `no node ${id} in topology ${this.prefix}`);
    return node;
  }
}
