/**
 * atoll-server's flags: the command line and its ATOLL_* environment variables (flags override
 * the environment, which overrides defaults), checked so that a wrong one stops the server with one
 * clear line before it opens anything. What the entry (atoll-server.ts) wires the node from.
 */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError } from 'commander';
import { limits, makeLimits, type Limits } from '../limits.js';
import { NODE_DEFAULTS } from '../node/atoll-node.js';
import { AUTO_SPLIT_DEFAULTS } from '../node/cluster/auto-split.js';
import { defaultAdminAddress, defaultAdminListen } from '../server/admin-server.js';
import { tenantMetricsModes, type TenantMetricsMode } from '../server/admin-auth.js';
import { planServerTls, type ServerTlsPlan } from '../server/server-tls.js';
import { bucketHashNames, defaultBucketHash, parseBucketHashName, type BucketHashName } from '../keys/bucket-hash.js';

/** --heap-growth-percent's default: the next full collection comes at 1.5 times the live heap. */
const DEFAULT_HEAP_GROWTH_PERCENT = 50;

function integer(name: string, min: number) {
  return (text: string): number => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < min) throw new InvalidArgumentError(`${name} must be an integer >= ${min}`);
    return value;
  };
}

/** --tenant-metrics: who sees the atoll_tenant_* series of /metrics (admin-auth.ts). */
function tenantMetricsMode(text: string): TenantMetricsMode {
  const mode = tenantMetricsModes.find((known) => known === text);
  if (mode === undefined) throw new InvalidArgumentError(`--tenant-metrics must be ${tenantMetricsModes.join(', ')}`);
  return mode;
}

/** --read-mode: 'lease' or 'safe' (src/node/replica/read-barrier.ts). */
function readMode(text: string): 'safe' | 'lease' {
  if (text !== 'safe' && text !== 'lease') throw new InvalidArgumentError('--read-mode must be lease or safe');
  return text;
}

/** An id=host:port,... list (--peers, --dial, --peer-addresses, --admin-addresses, --etcd-addresses). */
export function parsePeers(text: string): Map<number, string> {
  const peers = new Map<number, string>();
  for (const part of text.split(',').map((p) => p.trim()).filter(Boolean)) {
    const match = /^(\d+)=(.+:\d+)$/.exec(part);
    if (!match) throw new InvalidArgumentError(`peer "${part}" must look like id=host:port`);
    const id = Number(match[1]);
    if (id < 1 || peers.has(id)) throw new InvalidArgumentError(`peer id ${match[1]} must be positive and unique`);
    peers.set(id, match[2] as string);
  }
  if (peers.size === 0) throw new InvalidArgumentError('--peers needs at least one id=host:port');
  return peers;
}

/** The flags as commander parsed them (and the environment's values, which skip its parsers). */
export interface ServerOptions {
  id?: number;
  listen?: string;
  peers?: string;
  join?: string;
  zone?: string;
  dataDir: string;
  partitions: number;
  bucketHash?: string;
  replicationFactor: number;
  tickMs: number;
  electionTicks: number;
  readMode: 'safe' | 'lease';
  coalesceRaftMessages: boolean;
  retentionRevisions: number;
  snapshotEvery: number;
  autoSplitKeys?: number;
  autoSplitRps?: number;
  autoSplitPauseMs: number;
  cacheMb: number;
  keyIndexMb: number;
  raftLogMb: number;
  heapGrowthPercent: number;
  maxValueBytes: number;
  maxTokensPerTenant: number;
  watchMemoryMb: number;
  watchTenantMb: number;
  watchConnectionMb: number;
  watchStreamMb: number;
  watchStallMs: number;
  maxScriptsPerNode: number;
  maxScriptsPerTenant: number;
  scriptCpuMsPerSecond: number;
  maxFailedAuthsPerSource: number;
  unsafeTestBug?: string[];
  dial?: string;
  tlsCert?: string;
  tlsKey?: string;
  tlsClientCa?: string;
  peerAddresses?: string;
  peerListen?: string;
  peerCert?: string;
  peerKey?: string;
  peerCa?: string;
  peerSecretFile?: string;
  adminListen?: string;
  adminAddresses?: string;
  tenantMetrics: string;
}

/** The flags, checked, and what follows from them. */
export interface ServerFlags {
  readonly options: ServerOptions;
  readonly id: number;
  /** Every node's client address by id; a joining node's holds only itself (src/peer/join.ts). */
  readonly peers: Map<number, string>;
  /** --dial: peers reached through other addresses. */
  readonly dial: ReadonlyMap<number, string>;
  /** The client gRPC address to bind. */
  readonly listen: string;
  /** --join: members' peer ports; empty when the node founds or restarts a cluster. */
  readonly joinAddresses: readonly string[];
  readonly zone: string;
  readonly bucketHash: BucketHashName | undefined;
  readonly watchLimits: Partial<Limits>;
  /** The admin HTTP address to bind; undefined: --admin-listen none. */
  readonly adminListen: string | undefined;
  readonly adminAddresses: ReadonlyMap<number, string>;
  readonly tls: ServerTlsPlan;
  readonly bugs: readonly string[];
  /** The cluster admin token (--admin-token-file or ATOLL_ADMIN_TOKEN); undefined: authentication off. */
  readonly adminToken: string | undefined;
  /** Stops the process with one line on stderr and exit code 1, as a wrong flag does. */
  readonly fail: (message: string) => never;
}

/** Parses and checks atoll-server's flags (`argv` as process.argv); a wrong one exits the process with 1. */
export function parseServerFlags(argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): ServerFlags {
  const program = new Command('atoll-server')
    .description('Run one Atoll node')
    .option('--id <n>', 'this node id (ATOLL_ID)', integer('--id', 1), env['ATOLL_ID'] ? Number(env['ATOLL_ID']) : undefined)
    .option('--listen <host:port>', 'client gRPC address to bind (ATOLL_LISTEN; default this node\'s --peers entry)', env['ATOLL_LISTEN'])
    .option('--join <list>', 'join a running cluster: members\' PEER ports as host:port,... (ATOLL_JOIN); the node starts empty, learns the cluster from them, and waits for `atoll cluster add-node`; needs --listen and the cluster\'s --peer-secret-file', env['ATOLL_JOIN'])
    .option('--zone <label>', 'this node\'s zone (rack, availability zone; ATOLL_ZONE): recorded in the member table, and a partition\'s replicas spread over zones; at most 64 of A-Z a-z 0-9 . _ -', env['ATOLL_ZONE'])
    .option('--peers <list>', 'all nodes\' client addresses as id=host:port,... including this one (ATOLL_PEERS); each node\'s peer port is its port + 100 unless --peer-addresses says otherwise', env['ATOLL_PEERS'])
    .option('--peer-secret-file <file>', 'the cluster peer secret(s), one a line, the first sent, all accepted; created at first start when missing, the same file for every node (ATOLL_PEER_SECRET_FILE, or the secret itself in ATOLL_PEER_SECRET); kept in the data directory afterwards', env['ATOLL_PEER_SECRET_FILE'])
    .option('--data-dir <dir>', 'LevelDB directory (ATOLL_DATA_DIR)', env['ATOLL_DATA_DIR'] ?? './data')
    .option('--partitions <n>', 'partitions, fixed when the cluster is created (ATOLL_PARTITIONS)', integer('--partitions', 1), Number(env['ATOLL_PARTITIONS'] ?? NODE_DEFAULTS.partitions))
    .option('--bucket-hash <name>', `the bucket hash a NEW cluster routes keys by: ${bucketHashNames.join(' | ')} (ATOLL_BUCKET_HASH; default ${defaultBucketHash}); recorded in the data directory at the first start and fixed after it`, env['ATOLL_BUCKET_HASH'])
    .option('--replication-factor <n>', 'replicas per partition (ATOLL_REPLICATION_FACTOR)', integer('--replication-factor', 1), Number(env['ATOLL_REPLICATION_FACTOR'] ?? NODE_DEFAULTS.replicationFactor))
    .option('--tick-ms <n>', 'Raft tick length in ms (ATOLL_TICK_MS)', integer('--tick-ms', 5), Number(env['ATOLL_TICK_MS'] ?? NODE_DEFAULTS.tickMs))
    .option('--election-ticks <n>', 'election timeout in ticks (ATOLL_ELECTION_TICKS)', integer('--election-ticks', 3), Number(env['ATOLL_ELECTION_TICKS'] ?? NODE_DEFAULTS.electionTicks))
    .option('--read-mode <mode>', 'linearizable reads: lease (default; the leader answers alone while its lease holds, else a ReadIndex round) | safe (a ReadIndex heartbeat round for every read batch) (ATOLL_READ_MODE)', readMode, env['ATOLL_READ_MODE'] ?? 'lease')
    .option('--retention-revisions <n>', 'revisions of history kept per partition (ATOLL_RETENTION_REVISIONS)', integer('--retention-revisions', 1), Number(env['ATOLL_RETENTION_REVISIONS'] ?? NODE_DEFAULTS.retentionRevisions))
    .option('--max-value-bytes <n>', 'largest value a write may carry, at most 3 MiB (ATOLL_MAX_VALUE_BYTES)', integer('--max-value-bytes', 1), Number(env['ATOLL_MAX_VALUE_BYTES'] ?? 1024 * 1024))
    .option('--dial <list>', 'reach some peers through other addresses, id=host:port,... (a test harness\'s fault proxies)', env['ATOLL_DIAL'])
    .option('--unsafe-test-bug <name...>', 'plant a defect for a negative control: reads-without-quorum | ack-before-commit | no-dedup | torn-transactions (needs ATOLL_ALLOW_TEST_BUGS=1)')
    .option('--admin-token-file <file>', 'enable authentication: the cluster admin token (atoll auth new-admin-token) is in this file; the same on every node (ATOLL_ADMIN_TOKEN_FILE, or the token itself in ATOLL_ADMIN_TOKEN)', env['ATOLL_ADMIN_TOKEN_FILE'])
    .option('--max-tokens-per-tenant <n>', 'tokens a tenant admin may create for its tenant, revoked ones included (ATOLL_MAX_TOKENS_PER_TENANT)', integer('--max-tokens-per-tenant', 1), Number(env['ATOLL_MAX_TOKENS_PER_TENANT'] ?? limits.maxTokensPerTenant))
    .option('--max-scripts-per-node <n>', `scripts running at this node at once, all tenants; more wait in line (ATOLL_MAX_SCRIPTS_PER_NODE; default ${limits.maxScriptsPerNode})`, integer('--max-scripts-per-node', 1), Number(env['ATOLL_MAX_SCRIPTS_PER_NODE'] ?? limits.maxScriptsPerNode))
    .option('--max-scripts-per-tenant <n>', `scripts one tenant runs at this node at once; more wait in line (ATOLL_MAX_SCRIPTS_PER_TENANT; default ${limits.maxScriptsPerTenant})`, integer('--max-scripts-per-tenant', 1), Number(env['ATOLL_MAX_SCRIPTS_PER_TENANT'] ?? limits.maxScriptsPerTenant))
    .option('--script-cpu-ms-per-second <n>', `script time one tenant may use at this node, ms per second, from a budget of ${limits.scriptCpuBurstMs} ms; scripts are refused with RESOURCE_EXHAUSTED while it is spent (ATOLL_SCRIPT_CPU_MS_PER_SECOND; default ${limits.scriptCpuMsPerSecond})`, integer('--script-cpu-ms-per-second', 1), Number(env['ATOLL_SCRIPT_CPU_MS_PER_SECOND'] ?? limits.scriptCpuMsPerSecond))
    .option('--max-failed-auths-per-source <n>', `failed authentications (unknown or revoked tokens) one source address may make in ${limits.failedAuthSourceWindowMs / 1000} s before its new client connections are closed at accept for the rest of that time (ATOLL_MAX_FAILED_AUTHS_PER_SOURCE; default ${limits.maxFailedAuthsPerSource})`, integer('--max-failed-auths-per-source', 1), Number(env['ATOLL_MAX_FAILED_AUTHS_PER_SOURCE'] ?? limits.maxFailedAuthsPerSource))
    .option('--cache-mb <n>', 'memory for the newest versions of recently used keys, in MiB; 0 turns the cache off (ATOLL_CACHE_MB)', integer('--cache-mb', 0), Number(env['ATOLL_CACHE_MB'] ?? NODE_DEFAULTS.cacheBytes / 1024 / 1024))
    .option('--key-index-mb <n>', 'memory for the key indexes, one budget all partitions share, in MiB; a partition whose index finds no room reads LevelDB instead (ATOLL_KEY_INDEX_MB)', integer('--key-index-mb', 0), Number(env['ATOLL_KEY_INDEX_MB'] ?? NODE_DEFAULTS.keyIndexBytes / 1024 / 1024))
    .option('--raft-log-mb <n>', 'memory for Raft log entries of all partitions, in MiB; older entries are read from LevelDB (ATOLL_RAFT_LOG_MB)', integer('--raft-log-mb', 0), Number(env['ATOLL_RAFT_LOG_MB'] ?? NODE_DEFAULTS.raftLogMemoryBytes / 1024 / 1024))
    .option('--auto-split-keys <n>', 'split a partition this node leads once it stores more than N keys (live or deleted); off when unset (ATOLL_AUTO_SPLIT_KEYS)', integer('--auto-split-keys', 1), env['ATOLL_AUTO_SPLIT_KEYS'] ? Number(env['ATOLL_AUTO_SPLIT_KEYS']) : undefined)
    .option('--auto-split-rps <n>', 'split a partition this node leads once it serves more than N requests per second (decayed rate); off when unset (ATOLL_AUTO_SPLIT_RPS)', integer('--auto-split-rps', 1), env['ATOLL_AUTO_SPLIT_RPS'] ? Number(env['ATOLL_AUTO_SPLIT_RPS']) : undefined)
    .option('--auto-split-pause-ms <n>', `least time between two automatic splits this node starts (ATOLL_AUTO_SPLIT_PAUSE_MS; default ${AUTO_SPLIT_DEFAULTS.pauseMs})`, integer('--auto-split-pause-ms', 0), Number(env['ATOLL_AUTO_SPLIT_PAUSE_MS'] ?? AUTO_SPLIT_DEFAULTS.pauseMs))
    .option('--etcd-listen <host:port>', 'also serve etcd\'s v3 gRPC API here, so etcdctl and etcd\'s clients work against Atoll (ATOLL_ETCD_LISTEN; off when unset; docs/etcd-api.md)', env['ATOLL_ETCD_LISTEN'])
    .option('--etcd-tenant <name>', 'on a cluster with authentication, etcd calls without a token act as this tenant (ATOLL_ETCD_TENANT; default: a token is required; docs/etcd-api.md)', env['ATOLL_ETCD_TENANT'])
    .option('--etcd-addresses <list>', 'every node\'s etcd address as id=host:port,... for etcd\'s MemberList (ATOLL_ETCD_ADDRESSES; default: each node\'s client port plus this node\'s offset)', env['ATOLL_ETCD_ADDRESSES'])
    .option('--heap-growth-percent <n>', `how far V8 lets the JavaScript heap grow past what survived its last full collection, in percent; 0 leaves V8's own factor (up to 300%) (ATOLL_HEAP_GROWTH_PERCENT; default ${DEFAULT_HEAP_GROWTH_PERCENT}; docs/operations.md, "Memory")`, integer('--heap-growth-percent', 0), Number(env['ATOLL_HEAP_GROWTH_PERCENT'] ?? DEFAULT_HEAP_GROWTH_PERCENT))
    .option('--watch-memory-mb <n>', `bytes this node holds for watch clients at most, in MiB: history read for watchers and messages not yet written to their connections; a watch is refused (RESOURCE_EXHAUSTED) while it is full (ATOLL_WATCH_MEMORY_MB; default ${limits.watchNodeBytes / 1024 / 1024})`, integer('--watch-memory-mb', 1), Number(env['ATOLL_WATCH_MEMORY_MB'] ?? limits.watchNodeBytes / 1024 / 1024))
    .option('--watch-tenant-mb <n>', `the same for one tenant (ATOLL_WATCH_TENANT_MB; default ${limits.watchTenantBytes / 1024 / 1024})`, integer('--watch-tenant-mb', 1), Number(env['ATOLL_WATCH_TENANT_MB'] ?? limits.watchTenantBytes / 1024 / 1024))
    .option('--watch-connection-mb <n>', `the same for one client connection (ATOLL_WATCH_CONNECTION_MB; default ${limits.watchConnectionBytes / 1024 / 1024})`, integer('--watch-connection-mb', 1), Number(env['ATOLL_WATCH_CONNECTION_MB'] ?? limits.watchConnectionBytes / 1024 / 1024))
    .option('--watch-stream-mb <n>', `the same for one HTTP/2 stream (a KV.Watch call, or a KV.Stream with its watches); at least 5, one read of history (ATOLL_WATCH_STREAM_MB; default ${limits.watchStreamBytes / 1024 / 1024})`, integer('--watch-stream-mb', 1), Number(env['ATOLL_WATCH_STREAM_MB'] ?? limits.watchStreamBytes / 1024 / 1024))
    .option('--watch-stall-ms <n>', `a watch stream that gets none of its queued bytes written for this long is closed (RST_STREAM), and its connection too if the stream does not close; a watcher that waits this long for room ends with WATCH_OVERFLOW (ATOLL_WATCH_STALL_MS; default ${limits.watchStallMs})`, integer('--watch-stall-ms', 100), Number(env['ATOLL_WATCH_STALL_MS'] ?? limits.watchStallMs))
    .option('--coalesce-raft-messages', 'send every group\'s commit notices to a peer as one node-level item per frame, and every group\'s acknowledgements to a leader\'s node as one (issue 35; off by default; experimental); upgrade EVERY node first, then turn it on node by node: an older node refuses a frame carrying these items (ATOLL_COALESCE_RAFT_MESSAGES=1; docs/operations.md)', env['ATOLL_COALESCE_RAFT_MESSAGES'] === '1')
    .option('--snapshot-every <n>', 'applied entries between snapshots (ATOLL_SNAPSHOT_EVERY)', integer('--snapshot-every', 10), Number(env['ATOLL_SNAPSHOT_EVERY'] ?? NODE_DEFAULTS.snapshotEveryEntries))
    // Node-to-node traffic always has a port of its own (docs/security.md, "Peers" and "TLS").
    .option('--tls-cert <file>', 'serve the client port over TLS with this PEM certificate chain (ATOLL_TLS_CERT)', env['ATOLL_TLS_CERT'])
    .option('--tls-key <file>', 'the PEM private key of --tls-cert (ATOLL_TLS_KEY)', env['ATOLL_TLS_KEY'])
    .option('--tls-client-ca <file>', 'require client certificates signed by this PEM CA (ATOLL_TLS_CLIENT_CA)', env['ATOLL_TLS_CLIENT_CA'])
    .option('--peer-addresses <list>', 'every node\'s peer port as id=host:port,... (ATOLL_PEER_ADDRESSES; default each --peers address with its port + 100)', env['ATOLL_PEER_ADDRESSES'])
    .option('--peer-listen <host:port>', 'peer port address to bind (ATOLL_PEER_LISTEN; default this node\'s --peer-addresses entry, else --listen with its port + 100)', env['ATOLL_PEER_LISTEN'])
    .option('--peer-cert <file>', 'peer mutual TLS: this node\'s PEM certificate, presented to peers both ways (ATOLL_PEER_CERT)', env['ATOLL_PEER_CERT'])
    .option('--peer-key <file>', 'the PEM private key of --peer-cert (ATOLL_PEER_KEY)', env['ATOLL_PEER_KEY'])
    .option('--peer-ca <file>', 'the PEM CA every peer certificate must chain to (ATOLL_PEER_CA)', env['ATOLL_PEER_CA'])
    .option('--admin-listen <host:port>', 'admin HTTP address to bind: Prometheus /metrics, /livez, /readyz, the status page; "none" turns it off (ATOLL_ADMIN_LISTEN; default 127.0.0.1 with --listen\'s port + 1000: probes and scrapes from other hosts need an address named here, such as 0.0.0.0:8001)', env['ATOLL_ADMIN_LISTEN'])
    .option('--tenant-metrics <mode>', 'who sees the per-tenant series of /metrics (atoll_tenant_*, which name tenants and their usage): off (default) | admin-token (a scrape that sends the cluster admin token as its bearer token) | on (every scrape) (ATOLL_TENANT_METRICS)', tenantMetricsMode, env['ATOLL_TENANT_METRICS'] ?? 'off')
    .option('--admin-addresses <list>', 'every node\'s admin address as id=host:port,..., listed in ClusterInfo (ATOLL_ADMIN_ADDRESSES; default each --peers address with its port + 1000)', env['ATOLL_ADMIN_ADDRESSES'])
    .parse(argv);
  const options = program.opts<ServerOptions>();
  if (options.id === undefined) program.error('error: --id (or ATOLL_ID) is required');
  if (options.heapGrowthPercent > 1000) program.error('error: --heap-growth-percent must be at most 1000');
  const joinAddresses = (options.join ?? '').split(',').map((address) => address.trim()).filter((address) => address !== '');
  if (!options.peers && joinAddresses.length === 0) program.error('error: --peers (or ATOLL_PEERS) is required, or --join to join a running cluster');
  const zone = options.zone ?? '';
  if (zone.length > 64 || !/^[A-Za-z0-9._-]*$/.test(zone)) program.error('error: --zone must be at most 64 of A-Z a-z 0-9 . _ -');
  if (joinAddresses.length > 0 && !options.listen) program.error('error: --join needs --listen (this node\'s client address, as the cluster will dial it)');
  const id = options.id as number;
  let peers = new Map<number, string>();
  try {
    // A joining node knows only itself until a member tells it the rest (src/peer/join.ts).
    peers = options.peers ? parsePeers(options.peers) : new Map([[id, options.listen as string]]);
  } catch (error) {
    program.error(`error: ${(error as Error).message}`);
  }
  let dial = new Map<number, string>();
  try {
    if (options.dial) dial = parsePeers(options.dial);
  } catch (error) {
    program.error(`error: --dial: ${(error as Error).message}`);
  }
  const listen = options.listen ?? peers.get(id);
  if (!listen) program.error(`error: --peers has no address for node ${id} and --listen is not set`);
  let peerAddresses: Map<number, string> | undefined;
  try {
    if (options.peerAddresses) peerAddresses = parsePeers(options.peerAddresses);
  } catch (error) {
    program.error(`error: --peer-addresses: ${(error as Error).message}`);
  }
  const adminListen = options.adminListen === 'none' ? undefined : (options.adminListen ?? defaultAdminListen(listen as string));
  if (adminListen !== undefined && !/^(\[[0-9a-fA-F:.]+\]|[^\s:]+):\d{1,5}$/.test(adminListen)) program.error('error: --admin-listen must look like host:port (or be "none")');
  let adminAddresses = new Map([...peers].map(([peer, address]) => [peer, defaultAdminAddress(address)]));
  // This node's own entry: what it binds, when that is a concrete address; '' when it has none.
  if (adminListen === undefined) adminAddresses.set(id, '');
  else if (options.adminListen !== undefined && !/^(0\.0\.0\.0|\[::\]|::):/.test(adminListen)) adminAddresses.set(id, adminListen);
  try {
    if (options.adminAddresses) adminAddresses = new Map([...adminAddresses, ...parsePeers(options.adminAddresses)]);
  } catch (error) {
    program.error(`error: --admin-addresses: ${(error as Error).message}`);
  }
  let tls!: ServerTlsPlan;
  try {
    tls = planServerTls(options, { id, peers, listen: listen as string, peerAddresses, peerListen: options.peerListen });
  } catch (error) {
    program.error(`error: ${(error as Error).message}`);
  }
  const bugs = options.unsafeTestBug ?? [];
  if (!['', '0', '1', undefined].includes(env['ATOLL_COALESCE_RAFT_MESSAGES'])) program.error('error: ATOLL_COALESCE_RAFT_MESSAGES must be 1 (on) or 0 (off)');
  if (bugs.length > 0 && env['ATOLL_ALLOW_TEST_BUGS'] !== '1') program.error('error: --unsafe-test-bug needs ATOLL_ALLOW_TEST_BUGS=1 (it makes the node incorrect on purpose)');
  for (const bug of bugs) if (!['reads-without-quorum', 'ack-before-commit', 'no-dedup', 'torn-transactions'].includes(bug)) program.error(`error: unknown test bug ${bug}`);
  if (options.readMode !== 'safe' && options.readMode !== 'lease') program.error('error: --read-mode (ATOLL_READ_MODE) must be lease or safe');
  // The environment's value skips commander's parser.
  if (!(tenantMetricsModes as readonly string[]).includes(options.tenantMetrics)) program.error(`error: --tenant-metrics (ATOLL_TENANT_METRICS) must be ${tenantMetricsModes.join(', ')}`);
  // The environment's values skip commander's parsers: checked here, so a typo is one clear line.
  for (const [flag, value, min] of [['--auto-split-keys', options.autoSplitKeys, 1], ['--auto-split-rps', options.autoSplitRps, 1], ['--auto-split-pause-ms', options.autoSplitPauseMs, 0]] as const) {
    if (value !== undefined && (!Number.isSafeInteger(value) || value < min)) program.error(`error: ${flag} (or its ATOLL_ variable) must be an integer >= ${min}`);
  }
  if (options.maxValueBytes > 3 * 1024 * 1024) program.error('error: --max-value-bytes must be at most 3145728 (3 MiB): a write must fit in one 4 MiB gRPC message');
  for (const [flag, value] of [['--max-scripts-per-node', options.maxScriptsPerNode], ['--max-scripts-per-tenant', options.maxScriptsPerTenant], ['--script-cpu-ms-per-second', options.scriptCpuMsPerSecond], ['--max-failed-auths-per-source', options.maxFailedAuthsPerSource]] as const) {
    if (!Number.isSafeInteger(value) || value < 1) program.error(`error: ${flag} (or its ATOLL_ variable) must be an integer >= 1`);
  }
  if (options.maxScriptsPerTenant > options.maxScriptsPerNode) program.error('error: --max-scripts-per-tenant must be at most --max-scripts-per-node');
  let bucketHash: BucketHashName | undefined;
  try {
    if (options.bucketHash !== undefined && options.bucketHash !== '') bucketHash = parseBucketHashName(options.bucketHash, '--bucket-hash');
  } catch (error) {
    program.error(`error: ${(error as Error).message}`);
  }
  // The watch memory bounds, checked against each other (limits.ts) so a wrong combination is one clear line.
  let watchLimits: Partial<Limits> = {};
  try {
    const mebibytes = (value: number, flag: string): number => {
      if (!Number.isSafeInteger(value) || value < 1 || value > 1024 * 1024) throw new Error(`${flag} (or its ATOLL_ variable) must be an integer from 1 to 1048576`);
      return value * 1024 * 1024;
    };
    if (!Number.isSafeInteger(options.watchStallMs) || options.watchStallMs < 100 || options.watchStallMs > limits.maxCallTimeoutMs) throw new Error(`--watch-stall-ms (or ATOLL_WATCH_STALL_MS) must be an integer from 100 to ${limits.maxCallTimeoutMs}`);
    watchLimits = {
      watchNodeBytes: mebibytes(options.watchMemoryMb, '--watch-memory-mb'),
      watchTenantBytes: mebibytes(options.watchTenantMb, '--watch-tenant-mb'),
      watchConnectionBytes: mebibytes(options.watchConnectionMb, '--watch-connection-mb'),
      watchStreamBytes: mebibytes(options.watchStreamMb, '--watch-stream-mb'),
      watchStallMs: options.watchStallMs,
    };
    makeLimits(watchLimits);
  } catch (error) {
    program.error(`error: watch memory flags: ${(error as Error).message} (--watch-stream-mb, --watch-connection-mb, --watch-tenant-mb and --watch-memory-mb set watchStreamBytes, watchConnectionBytes, watchTenantBytes and watchNodeBytes)`);
  }
  if (joinAddresses.length === 0 && options.replicationFactor > peers.size) program.error(`error: replication factor ${options.replicationFactor} exceeds ${peers.size} nodes`);

  let adminToken = env['ATOLL_ADMIN_TOKEN'];
  const adminTokenFile = (options as { adminTokenFile?: string }).adminTokenFile;
  if (adminTokenFile !== undefined) {
    try {
      adminToken = readFileSync(adminTokenFile, 'utf8').trim();
    } catch (error) {
      program.error(`error: --admin-token-file: ${(error as Error).message}`);
    }
  }
  if (adminToken !== undefined && !/^atk_[A-Za-z0-9_-]{43}$/.test(adminToken)) {
    program.error('error: the admin token must look like atk_ followed by 43 base64url characters: make one with `atoll auth new-admin-token`');
  }

  return { options, id, peers, dial, listen: listen as string, joinAddresses, zone, bucketHash, watchLimits, adminListen, adminAddresses, tls, bugs, adminToken, fail: (message) => program.error(message) };
}
