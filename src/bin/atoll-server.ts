#!/usr/bin/env node
/**
 * atoll-server: one Atoll node. The entry parses the flags (server-flags.ts: flags override
 * environment variables, ATOLL_*, which override defaults) and wires the server together: the admin
 * port, the node with its peer transport (src/peer/), the client gRPC services (src/server/), the
 * peer port and the etcd API (src/etcd/). Logs are pino JSON (pretty on a TTY). SIGTERM/SIGINT shut
 * down gracefully: stop accepting, finish in-flight requests, flush, close LevelDB.
 */
import { setFlagsFromString } from 'node:v8';
import type * as grpc from '@grpc/grpc-js';
import { pino, type Logger } from 'pino';
import { isAtollError } from '../errors.js';
import type { AtollNode } from '../node/atoll-node.js';
import type { JoinedCluster } from '../node/node-config.js';
import { checkGrantable } from '../node/service/node-access.js';
import { loadPeerSecrets, type LoadedPeerSecrets } from '../node/peers/peer-secret.js';
import { openGrpcNode } from '../peer/grpc-node.js';
import type { PeerTransport } from '../peer/grpc-peer-transport.js';
import { fetchClusterToJoin, joinedClusterOf } from '../peer/join.js';
import { peerServiceHandlers, requirePeerSecret } from '../peer/peer-service.js';
import { AdminServer } from '../server/admin-server.js';
import { tenantMetricsAccess, type TenantMetricsMode } from '../server/admin-auth.js';
import { clusterServiceHandlers } from '../server/cluster-service.js';
import { addClientServices, createGrpcServer } from '../server/grpc-server.js';
import { listenGated } from '../server/client-listener.js';
import { FailedAuths } from '../node/service/failed-auths.js';
import { limits } from '../limits.js';
import { PrometheusNodeMetrics } from '../server/node-metrics.js';
import { addStatusPage, ownNodeStatus } from '../server/status-page.js';
import { startEtcdListener, type EtcdListener } from '../etcd/etcd-server.js';
import { TenantGrant } from '../api/tenant-grant.js';
import { clusterServiceDefinition, peerServiceDefinition } from '../wire/protos.js';
import { parsePeers, parseServerFlags } from './server-flags.js';

// In-flight client calls get this long; peers' long-lived Raft streams never end by themselves.
const SHUTDOWN_GRACE_MS = 1_500;

/** The exit code of a node that learned it was removed from the cluster (its peers refuse it). */
const REMOVED_EXIT_CODE = 4;

function makeLogger(id: number): Logger {
  const level = process.env['ATOLL_LOG_LEVEL'] ?? 'info';
  if (process.stdout.isTTY && process.env['ATOLL_LOG_FORMAT'] !== 'json') {
    return pino({ level, base: { node: id }, transport: { target: 'pino-pretty', options: { colorize: true } } });
  }
  return pino({ level, base: { node: id } });
}

async function main(): Promise<void> {
  const { options, id, peers, dial, listen, joinAddresses, zone, bucketHash, watchLimits, adminListen, adminAddresses, tls, bugs, adminToken, fail } = parseServerFlags();
  // Before the node allocates: V8 reads the factor at every full collection (docs/performance.md,
  // "Memory": under a mixed load V8's own factor kept 210-235 MB of heap for 60-100 MB live).
  if (options.heapGrowthPercent > 0) setFlagsFromString(`--heap-growing-percent=${options.heapGrowthPercent}`);

  let peerSecrets!: LoadedPeerSecrets;
  try {
    peerSecrets = loadPeerSecrets({ value: process.env['ATOLL_PEER_SECRET'], file: options.peerSecretFile, dataDir: options.dataDir, nodeCount: joinAddresses.length > 0 ? 2 : peers.size });
  } catch (error) {
    fail(`error: ${(error as Error).message}`);
  }

  const logger = makeLogger(id);
  // The admin port opens first, so /livez answers while a large node opens its storage; /readyz
  // says 503 until the node serves and every partition it hosts knows its leader.
  const metrics = new PrometheusNodeMetrics();
  let openedNode: AtollNode | undefined;
  let peerTransport: PeerTransport | undefined;
  let serving = false;
  const nodeServing = (): boolean => serving && openedNode !== undefined && openedNode.failure === undefined;
  const admin = new AdminServer({
    registry: metrics.registry,
    view: () => openedNode?.metricsView() ?? { nodeId: id, tasksQueued: 0, partitions: [], reachable: [] },
    serving: nodeServing,
    logger,
    tenantMetrics: { registry: metrics.tenantRegistry, access: tenantMetricsAccess(options.tenantMetrics as TenantMetricsMode, () => openedNode) },
  });
  addStatusPage(admin, {
    node: () => openedNode,
    serving: nodeServing,
    // Over the peer port with the peer secret: the viewer's token never leaves this node.
    peerStatus: (peer, deadlineMs) => (peerTransport === undefined ? Promise.reject(new Error('the node is starting')) : peerTransport.nodeStatus(peer, deadlineMs)),
  });
  if (adminListen !== undefined) {
    const bound = await admin.listen(adminListen);
    logger.info({ adminListen, adminPort: bound.port }, 'atoll admin port listening (/ status page, /metrics, /livez, /readyz)');
  }
  logger.info({ origin: peerSecrets.origin, secrets: peerSecrets.secrets.length, ...(options.peerSecretFile !== undefined && { peerSecretFile: options.peerSecretFile }) }, 'peer secret loaded');
  let joined: JoinedCluster | undefined;
  const peerAddressMap = new Map(tls.peerPort.addresses);
  if (joinAddresses.length > 0) {
    try {
      const info = await fetchClusterToJoin({ addresses: joinAddresses, peerSecret: peerSecrets.secrets[0] as string, credentials: tls.peerChannelCredentials, timeoutMs: 60_000, logger });
      joined = joinedClusterOf(info, { id, clientAddress: listen, peerAddress: tls.peerPort.listen, zone });
    } catch (error) {
      logger.error({ err: error instanceof Error ? error.message : String(error) }, 'could not join the cluster');
      logger.flush?.();
      return fail(`error: ${(error as Error).message}`);
    }
    for (const member of joined.members) {
      if (member.id !== id) peers.set(member.id, member.clientAddress);
      if (member.peerAddress !== '') peerAddressMap.set(member.id, member.peerAddress);
    }
    logger.info({ clusterId: joined.clusterId, members: joined.members.map((member) => member.id) }, 'joining a running cluster: waiting for `atoll cluster add-node` to move replicas here');
  }
  // A data directory of another cluster, or flags that contradict its cluster descriptor: one line
  // naming the flag, the recorded value and the given one (src/node/cluster/cluster-descriptor.ts).
  // Until the server can shut down (below), a fatal stop is caught by the check after it.
  let stopOnFatal = (): void => undefined;
  let stopOnRemoved = (): void => undefined;
  const tenantGrant = etcdTenantGrant(options as { etcdTenant?: string }, adminToken, logger, fail);
  // Shared by the node's authentication and the client port's listener (client-listener.ts).
  const failedAuths = new FailedAuths({ ...limits, maxFailedAuthsPerSource: options.maxFailedAuthsPerSource });
  const opened = await openGrpcNode({
    ...(adminToken !== undefined && { adminToken }),
    failedAuths,
    ...(tenantGrant !== undefined && { tenantGrants: [tenantGrant] }),
    id,
    peers,
    dataDir: options.dataDir,
    partitions: joined?.partitions ?? options.partitions,
    ...(bucketHash !== undefined && joined === undefined && { bucketHash }),
    replicationFactor: joined?.replicationFactor ?? options.replicationFactor,
    ...(joined !== undefined && { joined }),
    ...(zone !== '' && { zone }),
    // Recorded in the cluster descriptor (the advertised peer ports, never --dial's proxies).
    peerAddresses: peerAddressMap,
    tickMs: options.tickMs,
    electionTicks: options.electionTicks,
    readMode: options.readMode,
    coalesceRaftMessages: options.coalesceRaftMessages,
    retentionRevisions: options.retentionRevisions,
    snapshotEveryEntries: options.snapshotEvery,
    // Off unless a threshold is given (auto-split.ts).
    autoSplit: {
      ...(options.autoSplitKeys !== undefined && { maxKeys: options.autoSplitKeys }),
      ...(options.autoSplitRps !== undefined && { maxRequestsPerSecond: options.autoSplitRps }),
      pauseMs: options.autoSplitPauseMs,
    },
    cacheBytes: options.cacheMb * 1024 * 1024,
    keyIndexBytes: options.keyIndexMb * 1024 * 1024,
    raftLogMemoryBytes: options.raftLogMb * 1024 * 1024,
    maxValueBytes: options.maxValueBytes,
    maxTokensPerTenant: options.maxTokensPerTenant,
    limits: { ...watchLimits, maxScriptsPerNode: options.maxScriptsPerNode, maxScriptsPerTenant: options.maxScriptsPerTenant, scriptCpuMsPerSecond: options.scriptCpuMsPerSecond, maxFailedAuthsPerSource: options.maxFailedAuthsPerSource },
    // Peers are dialled at their peer ports; --dial overrides (a harness's fault proxies).
    dialAddresses: new Map([...peerAddressMap, ...dial]),
    peerCredentials: tls.peerChannelCredentials,
    peerSecrets: peerSecrets.secrets,
    testBugs: { readsWithoutQuorum: bugs.includes('reads-without-quorum'), ackBeforeCommit: bugs.includes('ack-before-commit'), noDedup: bugs.includes('no-dedup'), tornTransactions: bugs.includes('torn-transactions') },
    adminAddresses,
    logger,
  }, metrics, () => {
    // The node stopped on a fatal error (and closes itself): the process exits with 1. Told at
    // once, so no timer polls for it (a 200 ms watchdog woke every idle server 5 times a second).
    process.exitCode = 1;
    stopOnFatal();
  }, () => stopOnRemoved()).catch((error: unknown) => {
    if (!isAtollError(error) || error.code !== 'CLUSTER_MISMATCH') throw error;
    logger.error({ code: error.code, ...error.details }, error.message);
    logger.flush?.();
    return fail(`error: ${error.message}`);
  });
  const { node, transport } = opened;
  metrics.attach(node);
  metrics.attachFailedAuths(failedAuths);
  openedNode = node;
  peerTransport = transport;
  const server = createGrpcServer();
  const services = addClientServices(server, node, logger, { auth: node, metrics });
  // Peer (and the Cluster service peers ask for leaders) are served only on the peer port, and
  // every call there must carry the peer secret: no client credential can ever reach Peer.
  const peerServer = createGrpcServer();
  peerServer.addService(clusterServiceDefinition, requirePeerSecret(node, clusterServiceHandlers(node, logger), logger));
  peerServer.addService(peerServiceDefinition, peerServiceHandlers(node, transport, logger, () => ownNodeStatus(node, nodeServing())));
  const bind = (target: grpc.Server, address: string, credentials: grpc.ServerCredentials): Promise<number> =>
    new Promise<number>((resolve, reject) => {
      target.bindAsync(address, credentials, (error, boundPort) => (error ? reject(error) : resolve(boundPort)));
    });
  const clientListener = await listenGated(server, listen, tls.clientCredentials, failedAuths, logger);
  const port = clientListener.port;
  const peerPort = await bind(peerServer, tls.peerPort.listen, tls.peerPort.credentials);
  const plaintextPeers = tls.summary.clientTls && !tls.summary.peerTls;
  logger[plaintextPeers ? 'warn' : 'info']({ peerListen: tls.peerPort.listen, peerPort, ...tls.summary }, plaintextPeers ? 'atoll peer port listening WITHOUT TLS (--peer-cert, --peer-key, --peer-ca)' : 'atoll peer port listening');
  logger.info({ listen, port, dataDir: options.dataDir, partitions: joined?.partitions ?? options.partitions, peers: Object.fromEntries(peers) }, 'atoll node listening');
  const etcdListen = (options as { etcdListen?: string }).etcdListen;
  let etcd: EtcdListener | undefined;
  if (etcdListen !== undefined && etcdListen !== '') {
    const { clusterId } = await node.clusterInfo({ deadlineMs: Date.now() + 10_000 }, { partitions: [] });
    const etcdAddresses = (options as { etcdAddresses?: string }).etcdAddresses;
    etcd = await startEtcdListener(node, logger, {
      nodeId: id,
      listen: etcdListen,
      clientAddress: listen,
      clusterId: clusterId ?? '',
      credentials: tls.clientCredentials,
      ...(etcdAddresses !== undefined && etcdAddresses !== '' && { addresses: parsePeers(etcdAddresses) }),
      ...(tenantGrant !== undefined && { tenantGrant }),
      gate: failedAuths,
    });
    logger.info({ etcdListen, etcdPort: etcd.port, ...(tenantGrant !== undefined && { etcdTenant: tenantGrant.tenant }) }, 'etcd API listening (etcdctl --endpoints)');
  }
  serving = true;

  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    serving = false;
    services.setServing(false);
    etcd?.server.forceShutdown();
    etcd?.close();
    clientListener.close();
    const force = setTimeout(() => server.forceShutdown(), SHUTDOWN_GRACE_MS);
    force.unref();
    server.tryShutdown(() => {
      clearTimeout(force);
      // The peer port stayed open while clients drained: their writes needed followers' answers.
      peerServer.forceShutdown();
      void admin.close();
      node
        .close()
        .then(() => {
          logger.info('stopped');
          logger.flush?.();
          process.exit(process.exitCode ?? 0);
        })
        .catch((error: unknown) => {
          logger.error({ err: error }, 'error while closing');
          process.exit(1);
        });
    });
  };
  // No request may crash a node: a promise rejection nobody handled is a bug to log loudly, and
  // the node keeps serving (its loop and storage are unaffected by a stray request promise).
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'unhandled promise rejection (a bug); the node keeps running');
  });
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
  stopOnFatal = () => shutdown('fatal');
  if (node.failure) shutdown('fatal');
  // A removed member's peers refuse it: it stops, with its own exit code (README, "Growing and
  // healing a cluster"). Told by the node (onRemoved), so no timer polls for it.
  stopOnRemoved = () => {
    process.exitCode = REMOVED_EXIT_CODE;
    shutdown('removed from the cluster');
  };
  if (node.removedFromCluster) stopOnRemoved();
}

main().catch((error: unknown) => {
  console.error(`atoll-server: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});

/** The etcd port's default tenant (--etcd-tenant): a grant the node honours for its token-less calls. */
function etcdTenantGrant(options: { etcdTenant?: string }, adminToken: string | undefined, logger: Logger, fail: (message: string) => never): TenantGrant | undefined {
  const tenant = options.etcdTenant;
  if (tenant === undefined || tenant === '') return undefined;
  try {
    checkGrantable(tenant);
  } catch (error) {
    fail(`error: --etcd-tenant: ${(error as Error).message}`);
  }
  if (adminToken === undefined) logger.warn({ etcdTenant: tenant }, '--etcd-tenant has no effect without authentication: every call is the default tenant\'s');
  return new TenantGrant(tenant);
}
