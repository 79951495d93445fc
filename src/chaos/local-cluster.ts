/**
 * Spawns real atoll-server processes (from dist/, so `npm run build` must have run: `npm test`
 * does) on free loopback ports with temporary data directories, for integration tests and the
 * fault-injection harness.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { AtollClient } from '../client/index.js';
import { channelCredentialsOf, type TlsClientOptions } from '../wire/tls-credentials.js';
import { FaultProxy } from './fault-proxy.js';
import type { Topology } from './netns.js';

/** The repository root, from src/chaos (vitest) or dist/src/chaos (compiled). */
export function packageRoot(): string {
  let dir = import.meta.dirname;
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'proto'))) return dir;
    dir = resolve(dir, '..');
  }
  throw new Error(`cannot find the package root above ${import.meta.dirname}`);
}

export interface ClusterInfoMessage {
  nodeId: string | number;
  partitions: Array<{ id: number; leader: string | number; replicas: number[]; term: string | number; rangeStart?: string | number; rangeEnd?: string | number }>;
  nodes: Array<{ id: number; address: string; reachable: boolean; adminAddress?: string }>;
  /** Range starts merged away (absent from servers older than merges). */
  mergedStarts?: Array<{ start: number; into: number }>;
}

const clusterDefinition = protoLoader.loadSync(['atoll/v1/cluster.proto'], {
  includeDirs: [join(packageRoot(), 'proto')],
  longs: String,
  defaults: true,
  oneofs: true,
});
type ClusterClientType = grpc.Client & { clusterInfo: (request: object, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, info: ClusterInfoMessage) => void) => void };
const ClusterClient = (grpc.loadPackageDefinition(clusterDefinition) as unknown as { atoll: { v1: { Cluster: new (address: string, credentials: grpc.ChannelCredentials) => ClusterClientType } } }).atoll.v1.Cluster;

const serverMain = join(packageRoot(), 'dist/src/bin/atoll-server.js');

/**
 * A free port below the kernel's ephemeral range (32768+). Ports handed out by "listen on 0" come
 * from that range, and a node dialling a peer that is not up yet can be given the very same port
 * as its own source port, taking it before the peer binds it.
 */
/**
 * Ports this process handed out. A probe only shows that nothing listens yet, so without this a
 * cluster whose nodes have not bound their ports could be given one of them twice (CI: two nodes'
 * addresses equal, every node refused the member table and exited; Prometheus saw no target up).
 */
const handedOut = new Set<number>();

/** Ports 20000-31999, in this many slots of this many ports: one slot per test worker. */
const PORT_SLOTS = 8;
const PORT_SLOT_SIZE = 1_500;

/**
 * The ports this process may hand out, [low, high). Under vitest each worker (VITEST_POOL_ID) has a
 * slot of its own: two test files running at once could otherwise both find one port free before
 * either's child bound it (the suite saw a node of `npm start`'s test fail with EADDRINUSE on a
 * port another file's cluster had probed and then bound). Outside vitest, the whole range.
 */
export function portSlot(): { readonly low: number; readonly high: number } {
  const pool = Number(process.env['VITEST_POOL_ID']);
  if (!Number.isInteger(pool) || pool < 1) return { low: 20_000, high: 20_000 + PORT_SLOTS * PORT_SLOT_SIZE };
  const low = 20_000 + ((pool - 1) % PORT_SLOTS) * PORT_SLOT_SIZE;
  return { low, high: low + PORT_SLOT_SIZE };
}

export async function freePort(): Promise<number> {
  const { low, high } = portSlot();
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(port)) continue;
    const ok = await new Promise<boolean>((resolvePort) => {
      const server = createServer();
      server.once('error', () => resolvePort(false));
      server.listen(port, '127.0.0.1', () => server.close(() => resolvePort(true)));
    });
    if (ok) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free port found');
}

export interface LocalClusterOptions {
  nodes?: number;
  partitions?: number;
  tickMs?: number;
  snapshotEvery?: number;
  retentionRevisions?: number;
  maxValueBytes?: number;
  /** Extra server flags for every node (e.g. a test-only bug for a negative control). */
  extraArgs?: string[];
  /** Extra environment variables for every node (ATOLL_* settings). */
  env?: Record<string, string>;
  logLevel?: string;
  /** Run each node in its own network namespace (so the nemesis can partition them). */
  topology?: Topology;
  /** Route every node-to-node connection through a TCP fault proxy (loopback only). */
  linkProxies?: boolean;
  /** Client TLS and peer mutual TLS on a separate peer port (docs/security.md, "TLS"). */
  tls?: LocalClusterTls;
  /** Serve etcd's API on a port of each node's own (`etcdAddresses`; docs/etcd-api.md). */
  etcd?: boolean;
}

/** Certificates as scripts/dev-certs.sh lays them out. */
export interface LocalClusterTls {
  /** Node N serves nodeN.pem to clients and nodeN-peer.pem to peers; clients trust ca.pem. */
  readonly certsDir: string;
  /** Nodes require client certificates from ca.pem; the harness's own clients present client.pem. */
  readonly requireClientCertificates?: boolean;
}

export class LocalCluster {
  readonly processes = new Map<number, ChildProcess>();
  readonly addresses = new Map<number, string>();
  /** Each node's peer port (node-to-node traffic always has a port of its own). */
  readonly peerAddresses = new Map<number, string>();
  /** Each node's admin HTTP address (Prometheus /metrics, /livez, /readyz). */
  readonly adminAddresses = new Map<number, string>();
  /** Each node's etcd API address, when the cluster was started with `etcd`. */
  readonly etcdAddresses = new Map<number, string>();
  readonly dataRoot: string;
  private logs = new Map<number, string[]>();

  private constructor(readonly options: Required<LocalClusterOptions>) {
    this.dataRoot = mkdtempSync(join(tmpdir(), 'atoll-it-'));
  }

  static async start(options: LocalClusterOptions = {}): Promise<LocalCluster> {
    const cluster = new LocalCluster({ nodes: 3, partitions: 8, tickMs: 50, snapshotEvery: 10_000, retentionRevisions: 100_000, maxValueBytes: 1024 * 1024, extraArgs: [], logLevel: 'warn', ...options } as Required<LocalClusterOptions>);
    const topology = cluster.options.topology;
    for (let id = 1; id <= cluster.options.nodes; id++) {
      const ip = topology?.nodes.find((node) => node.id === id)?.ip;
      cluster.addresses.set(id, ip ? `${ip}:7100` : `127.0.0.1:${await freePort()}`);
      cluster.peerAddresses.set(id, ip ? `${ip}:7101` : `127.0.0.1:${await freePort()}`);
      cluster.adminAddresses.set(id, ip ? `${ip}:8100` : `127.0.0.1:${await freePort()}`);
      if (cluster.options.etcd === true) cluster.etcdAddresses.set(id, ip ? `${ip}:7400` : `127.0.0.1:${await freePort()}`);
    }
    if (cluster.options.linkProxies && !topology) await cluster.startLinkProxies();
    for (let id = 1; id <= cluster.options.nodes; id++) cluster.startNode(id);
    try {
      await cluster.waitReady();
    } catch (error) {
      await cluster.stop(); // Never leave processes behind.
      throw error;
    }
    return cluster;
  }

  /** Directed links "from>to": node `from` dials node `to` through this proxy. */
  readonly linkProxies = new Map<string, FaultProxy>();

  private async startLinkProxies(): Promise<void> {
    for (const [from] of this.addresses) {
      for (const [to, address] of this.peerAddresses) {
        if (from === to) continue;
        const [targetHost, targetPort] = address.split(':') as [string, string];
        this.linkProxies.set(`${from}>${to}`, await FaultProxy.start({ listenHost: '127.0.0.1', targetHost, targetPort: Number(targetPort) }));
      }
    }
  }

  linkProxy(from: number, to: number): FaultProxy | undefined {
    return this.linkProxies.get(`${from}>${to}`);
  }

  /** --dial for node `id`: its peers through the proxies, when there are proxies. */
  private dialFlag(id: number): string[] {
    if (this.linkProxies.size === 0) return [];
    // Nodes that joined later have no proxies: they are dialled directly.
    const dial = [...this.addresses.keys()].filter((peer) => peer !== id && this.linkProxy(id, peer) !== undefined).map((peer) => `${peer}=127.0.0.1:${this.linkProxy(id, peer)?.port}`);
    return dial.length === 0 ? [] : ['--dial', dial.join(',')];
  }

  /** The TLS flags of node `id`: its certificates, the peer port addresses and the CAs. */
  private tlsFlags(id: number): string[] {
    const tls = this.options.tls;
    if (!tls) return [];
    const file = (name: string): string => join(tls.certsDir, name);
    return [
      ...['--tls-cert', file(`node${id}.pem`), '--tls-key', file(`node${id}-key.pem`)],
      ...(tls.requireClientCertificates === true ? ['--tls-client-ca', file('ca.pem')] : []),
      ...['--peer-cert', file(`node${id}-peer.pem`), '--peer-key', file(`node${id}-peer-key.pem`), '--peer-ca', file('peer-ca.pem')],
    ];
  }

  /** What the harness's clients use: the CA, and client.pem when the nodes require a certificate. */
  clientTls(): TlsClientOptions | undefined {
    const tls = this.options.tls;
    if (!tls) return undefined;
    const file = (name: string): Buffer => readFileSync(join(tls.certsDir, name));
    return { ca: file('ca.pem'), ...(tls.requireClientCertificates === true && { cert: file('client.pem'), key: file('client-key.pem') }) };
  }

  get endpoints(): string[] {
    return [...this.addresses.values()];
  }

  peersFlag(): string {
    return [...this.addresses].map(([id, address]) => `${id}=${address}`).join(',');
  }

  /** The file every node shares the cluster peer secret through (the first node to start creates it). */
  get peerSecretFile(): string {
    return join(this.dataRoot, 'peer-secret');
  }

  /** The secret peers present to each other (the first line of peerSecretFile that is not a comment). */
  peerSecret(): string {
    const line = readFileSync(this.peerSecretFile, 'utf8').split('\n').map((text) => text.trim()).find((text) => text !== '' && !text.startsWith('#'));
    if (line === undefined) throw new Error(`no peer secret in ${this.peerSecretFile}`);
    return line;
  }

  /** Nodes started with --join (startJoiner): restarted with --join too. */
  private readonly joiners = new Set<number>();
  /** Nodes removed for good (retire): never started again, no longer in addresses. */
  private readonly retired = new Set<number>();
  /** The founding nodes' member flags as they were created with (freezeFoundingFlags). */
  private founding: { peers: string; peerAddresses: string; adminAddresses: string } | undefined;

  /**
   * From now on the founding nodes restart with the --peers, --peer-addresses and --admin-addresses
   * they were created with, whatever joins or leaves: a node that has not yet applied a member
   * table change checks --peers against its recorded members (cluster-descriptor.ts).
   */
  freezeFoundingFlags(): void {
    this.founding ??= {
      peers: this.peersFlag(),
      peerAddresses: [...this.peerAddresses].map(([peer, address]) => `${peer}=${address}`).join(','),
      adminAddresses: [...this.adminAddresses].map(([peer, address]) => `${peer}=${address}`).join(','),
    };
  }

  /**
   * Starts node `id` empty with --join (its peers: the other nodes' peer ports), as an operator
   * starts a node before `atoll cluster add-node`; in its own namespace when the topology has one
   * for it. Returns its client and peer addresses (ChangeMember add needs them).
   */
  async startJoiner(id: number): Promise<{ address: string; peerAddress: string }> {
    if (this.addresses.has(id) || this.retired.has(id)) throw new Error(`node ${id} exists or existed already`);
    this.freezeFoundingFlags();
    const ip = this.options.topology?.nodes.find((node) => node.id === id)?.ip;
    const address = ip ? `${ip}:7100` : `127.0.0.1:${await freePort()}`;
    const peerAddress = ip ? `${ip}:7101` : `127.0.0.1:${await freePort()}`;
    this.joiners.add(id);
    this.addresses.set(id, address);
    this.peerAddresses.set(id, peerAddress);
    this.startNode(id);
    return { address, peerAddress };
  }

  /**
   * Stops node `id` for good (kill -9; it was removed, or its disk is gone): it leaves addresses,
   * so nothing restarts it. `wipe` deletes its data directory, as a lost disk.
   */
  async retire(id: number, wipe: boolean): Promise<void> {
    this.retired.add(id);
    await this.kill(id);
    this.addresses.delete(id);
    this.peerAddresses.delete(id);
    this.adminAddresses.delete(id);
    if (wipe) rmSync(join(this.dataRoot, `node${id}`), { recursive: true, force: true });
  }

  isRetired(id: number): boolean {
    return this.retired.has(id);
  }

  private joinerArgv(id: number): string[] {
    const join_ = [...this.peerAddresses].filter(([peer]) => peer !== id).map(([, address]) => address).join(',');
    return [
      ...['--id', String(id), '--listen', this.addresses.get(id) as string, '--peer-listen', this.peerAddresses.get(id) as string, '--admin-listen', 'none'],
      ...['--join', join_, '--peer-secret-file', this.peerSecretFile, '--data-dir', join(this.dataRoot, `node${id}`)],
    ];
  }

  startNode(id: number): void {
    if (this.retired.has(id)) return;
    const founding = this.founding;
    const members = this.joiners.has(id)
      ? this.joinerArgv(id)
      : [
          ...['--id', String(id), '--peers', founding?.peers ?? this.peersFlag(), '--data-dir', join(this.dataRoot, `node${id}`)],
          ...['--peer-addresses', founding?.peerAddresses ?? [...this.peerAddresses].map(([peer, address]) => `${peer}=${address}`).join(','), '--peer-secret-file', this.peerSecretFile],
          ...['--admin-listen', this.adminAddresses.get(id) as string, '--admin-addresses', founding?.adminAddresses ?? [...this.adminAddresses].map(([peer, address]) => `${peer}=${address}`).join(',')],
          ...['--partitions', String(this.options.partitions)],
        ];
    const argv = [
      process.execPath,
      serverMain,
      ...members,
      ...['--tick-ms', String(this.options.tickMs)],
      ...['--snapshot-every', String(this.options.snapshotEvery), '--retention-revisions', String(this.options.retentionRevisions)],
      ...['--max-value-bytes', String(this.options.maxValueBytes)],
      ...this.dialFlag(id),
      ...this.tlsFlags(id),
      ...(this.etcdAddresses.has(id) ? ['--etcd-listen', this.etcdAddresses.get(id) as string, '--etcd-addresses', [...this.etcdAddresses].map(([peer, address]) => `${peer}=${address}`).join(',')] : []),
      ...this.options.extraArgs,
    ];
    const spawnOptions: SpawnOptions = {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        ...this.options.env,
        // ATOLL_CHAOS_LOG_LEVEL (with ATOLL_CHAOS_LOG_DIR) raises the nodes' level to debug a run.
        ATOLL_LOG_LEVEL: process.env['ATOLL_CHAOS_LOG_LEVEL'] ?? this.options.logLevel,
        ATOLL_LOG_FORMAT: 'json',
        // A planted defect is a deliberate choice of the caller (a negative control).
        ...(this.options.extraArgs.includes('--unsafe-test-bug') ? { ATOLL_ALLOW_TEST_BUGS: '1' } : {}),
      },
    };
    const topology = this.options.topology;
    const child = topology ? topology.exec(id, argv, spawnOptions) : spawn(argv[0] as string, argv.slice(1), spawnOptions);
    const log: string[] = [];
    this.logs.set(id, log);
    const logDir = process.env['ATOLL_CHAOS_LOG_DIR'];
    const keep = (chunk: Buffer): void => {
      const text = chunk.toString();
      // A node reports a bug it survived (an unhandled rejection): the run must still fail.
      if (text.includes('unhandled promise rejection')) this.bugReports.push({ id, line: text.slice(0, 2_000) });
      log.push(text);
      if (log.length > 200) log.shift();
      // Every line of every node, for a debugging run (the in-memory log keeps only the last 200 chunks).
      if (logDir !== undefined) appendFileSync(join(logDir, `node-${id}.log`), text);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    child.on('exit', (code, signal) => {
      log.push(`[node ${id} exited: ${signal ?? code}]\n`);
      // Still registered means nobody killed or stopped it: the node died by itself.
      if (this.processes.get(id) === child) {
        this.processes.delete(id);
        this.crashes.push({ id, code, signal, log: log.slice(-20).join('') });
      }
    });
    this.processes.set(id, child);
  }

  /** kill -9: no shutdown, no flush. */
  async kill(id: number): Promise<void> {
    const child = this.processes.get(id);
    if (!child) return;
    this.processes.delete(id);
    if (child.exitCode !== null || child.signalCode !== null) return; // It already died on its own.
    const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
    child.kill('SIGKILL');
    await exited;
  }

  /** Bugs nodes logged and survived, such as an unhandled promise rejection. */
  readonly bugReports: Array<{ id: number; line: string }> = [];

  /** Nodes that exited without being asked to (a crash): id and the tail of their log. */
  readonly crashes: Array<{ id: number; code: number | null; signal: string | null; log: string }> = [];

  async stopNode(id: number, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
    const child = this.processes.get(id);
    if (!child) return null;
    this.processes.delete(id);
    const exited = new Promise<number | null>((resolveExit) => child.once('exit', (code) => resolveExit(code)));
    child.kill(signal);
    return exited;
  }

  pidOf(id: number): number | undefined {
    return this.processes.get(id)?.pid;
  }

  isRunning(id: number): boolean {
    return this.processes.has(id);
  }

  logOf(id: number): string {
    return (this.logs.get(id) ?? []).join('');
  }

  client(endpoints = this.endpoints): AtollClient {
    const tls = this.clientTls();
    return new AtollClient({ endpoints, defaultTimeoutMs: 5_000, ...(tls !== undefined && { tls }) });
  }

  /** ClusterInfo from one specific node (the client library may answer from any node). */
  clusterInfoOf(id: number, timeoutMs = 1_000): Promise<ClusterInfoMessage> {
    const client = new ClusterClient(this.addresses.get(id) as string, channelCredentialsOf(this.clientTls()));
    return new Promise<ClusterInfoMessage>((resolveInfo, reject) => {
      client.clusterInfo({}, { deadline: Date.now() + timeoutMs }, (error: grpc.ServiceError | null, info: ClusterInfoMessage) => {
        client.close();
        if (error) reject(error);
        else resolveInfo(info);
      });
    });
  }

  /** Waits until every running node reports a leader for every partition. */
  async waitReady(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    // What the last round found wrong, node by node (an error from an earlier round is not kept:
    // it would hide why the last rounds were not ready).
    let lastError = '';
    while (Date.now() < deadline) {
      const problems: string[] = [];
      for (const id of this.processes.keys()) {
        try {
          const info = await this.clusterInfoOf(id);
          const leaderless = info.partitions.filter((p) => Number(p.leader) === 0).map((p) => p.id);
          if (Number(info.nodeId) !== id) problems.push(`node ${id}: answered as node ${info.nodeId}`);
          else if (leaderless.length > 0) problems.push(`node ${id}: no leader known for partitions ${leaderless.slice(0, 8).join(',')}`);
        } catch (error) {
          problems.push(`node ${id}: ${error instanceof Error ? error.message : String(error)}`);
        }
      }
      if (problems.length === 0) return;
      lastError = problems.join('; ');
      await new Promise((r) => setTimeout(r, 100));
    }
    const logs = [...this.logs.keys()].map((id) => `--- node ${id} (${this.addresses.get(id)})\n${this.logOf(id)}`).join('\n');
    throw new Error(`cluster not ready within ${timeoutMs} ms: ${lastError}\n${logs}`);
  }

  async stop(): Promise<void> {
    // A node that died by itself is a finding even when the test passed: say why, for the next reader.
    for (const crash of this.crashes) process.stderr.write(`[atoll local cluster] node ${crash.id} died by itself (${crash.signal ?? crash.code}); its last output:\n${crash.log}\n`);
    await Promise.all([...this.processes.keys()].map((id) => this.kill(id)));
    await Promise.all([...this.linkProxies.values()].map((proxy) => proxy.close()));
    rmSync(this.dataRoot, { recursive: true, force: true });
  }
}
