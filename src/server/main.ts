#!/usr/bin/env node
/**
 * atoll-server: one Atoll node. Flags override environment variables (ATOLL_*), which override
 * defaults. Logs are pino JSON (pretty on a TTY). SIGTERM/SIGINT shut down gracefully: stop
 * accepting, finish in-flight requests, flush, close LevelDB.
 */
import * as grpc from '@grpc/grpc-js';
import { Command, InvalidArgumentError } from 'commander';
import { pino, type Logger } from 'pino';
import { AtollNode, NODE_DEFAULTS } from '../node/atoll-node.js';
import { addClientServices, createGrpcServer } from './grpc-server.js';
import { peerServiceDefinition } from './protos.js';

// In-flight client calls get this long; peers' long-lived Raft streams never end by themselves.
const SHUTDOWN_GRACE_MS = 1_500;

function integer(name: string, min: number) {
  return (text: string): number => {
    const value = Number(text);
    if (!Number.isInteger(value) || value < min) throw new InvalidArgumentError(`${name} must be an integer >= ${min}`);
    return value;
  };
}

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

function makeLogger(id: number): Logger {
  const level = process.env['ATOLL_LOG_LEVEL'] ?? 'info';
  if (process.stdout.isTTY && process.env['ATOLL_LOG_FORMAT'] !== 'json') {
    return pino({ level, base: { node: id }, transport: { target: 'pino-pretty', options: { colorize: true } } });
  }
  return pino({ level, base: { node: id } });
}

async function main(): Promise<void> {
  const env = process.env;
  const program = new Command('atoll-server')
    .description('Run one Atoll node')
    .option('--id <n>', 'this node id (ATOLL_ID)', integer('--id', 1), env['ATOLL_ID'] ? Number(env['ATOLL_ID']) : undefined)
    .option('--listen <host:port>', 'client and peer gRPC address to bind (ATOLL_LISTEN)', env['ATOLL_LISTEN'])
    .option('--peers <list>', 'all nodes as id=host:port,... including this one (ATOLL_PEERS)', env['ATOLL_PEERS'])
    .option('--data-dir <dir>', 'LevelDB directory (ATOLL_DATA_DIR)', env['ATOLL_DATA_DIR'] ?? './data')
    .option('--partitions <n>', 'partitions, fixed when the cluster is created (ATOLL_PARTITIONS)', integer('--partitions', 1), Number(env['ATOLL_PARTITIONS'] ?? NODE_DEFAULTS.partitions))
    .option('--replication-factor <n>', 'replicas per partition (ATOLL_REPLICATION_FACTOR)', integer('--replication-factor', 1), Number(env['ATOLL_REPLICATION_FACTOR'] ?? NODE_DEFAULTS.replicationFactor))
    .option('--tick-ms <n>', 'Raft tick length in ms (ATOLL_TICK_MS)', integer('--tick-ms', 5), Number(env['ATOLL_TICK_MS'] ?? NODE_DEFAULTS.tickMs))
    .option('--election-ticks <n>', 'election timeout in ticks (ATOLL_ELECTION_TICKS)', integer('--election-ticks', 3), Number(env['ATOLL_ELECTION_TICKS'] ?? NODE_DEFAULTS.electionTicks))
    .option('--retention-revisions <n>', 'revisions of history kept per partition (ATOLL_RETENTION_REVISIONS)', integer('--retention-revisions', 1), Number(env['ATOLL_RETENTION_REVISIONS'] ?? NODE_DEFAULTS.retentionRevisions))
    .option('--max-value-bytes <n>', 'largest value a write may carry, at most 3 MiB (ATOLL_MAX_VALUE_BYTES)', integer('--max-value-bytes', 1), Number(env['ATOLL_MAX_VALUE_BYTES'] ?? 1024 * 1024))
    .option('--dial <list>', 'reach some peers through other addresses, id=host:port,... (a test harness\'s fault proxies)', env['ATOLL_DIAL'])
    .option('--unsafe-test-bug <name...>', 'plant a defect for a negative control: reads-without-quorum | ack-before-commit | no-dedup | torn-transactions (needs ATOLL_ALLOW_TEST_BUGS=1)')
    .option('--snapshot-every <n>', 'applied entries between snapshots (ATOLL_SNAPSHOT_EVERY)', integer('--snapshot-every', 10), Number(env['ATOLL_SNAPSHOT_EVERY'] ?? NODE_DEFAULTS.snapshotEveryEntries))
    .parse();
  const options = program.opts<{
    id?: number;
    listen?: string;
    peers?: string;
    dataDir: string;
    partitions: number;
    replicationFactor: number;
    tickMs: number;
    electionTicks: number;
    retentionRevisions: number;
    snapshotEvery: number;
    maxValueBytes: number;
    unsafeTestBug?: string[];
    dial?: string;
  }>();
  if (options.id === undefined) program.error('error: --id (or ATOLL_ID) is required');
  if (!options.peers) program.error('error: --peers (or ATOLL_PEERS) is required');
  const id = options.id as number;
  let peers = new Map<number, string>();
  try {
    peers = parsePeers(options.peers as string);
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
  const bugs = options.unsafeTestBug ?? [];
  if (bugs.length > 0 && env['ATOLL_ALLOW_TEST_BUGS'] !== '1') program.error('error: --unsafe-test-bug needs ATOLL_ALLOW_TEST_BUGS=1 (it makes the node incorrect on purpose)');
  for (const bug of bugs) if (!['reads-without-quorum', 'ack-before-commit', 'no-dedup', 'torn-transactions'].includes(bug)) program.error(`error: unknown test bug ${bug}`);
  if (options.maxValueBytes > 3 * 1024 * 1024) program.error('error: --max-value-bytes must be at most 3145728 (3 MiB): a write must fit in one 4 MiB gRPC message');
  if (options.replicationFactor > peers.size) program.error(`error: replication factor ${options.replicationFactor} exceeds ${peers.size} nodes`);

  const logger = makeLogger(id);
  const node = await AtollNode.open({
    id,
    peers,
    dataDir: options.dataDir,
    partitions: options.partitions,
    replicationFactor: options.replicationFactor,
    tickMs: options.tickMs,
    electionTicks: options.electionTicks,
    retentionRevisions: options.retentionRevisions,
    snapshotEveryEntries: options.snapshotEvery,
    maxValueBytes: options.maxValueBytes,
    dialAddresses: dial,
    testBugs: { readsWithoutQuorum: bugs.includes('reads-without-quorum'), ackBeforeCommit: bugs.includes('ack-before-commit'), noDedup: bugs.includes('no-dedup'), tornTransactions: bugs.includes('torn-transactions') },
    logger,
  });
  const server = createGrpcServer();
  const services = addClientServices(server, node, logger);
  server.addService(peerServiceDefinition, node.peerHandlers());
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(listen as string, grpc.ServerCredentials.createInsecure(), (error, boundPort) => (error ? reject(error) : resolve(boundPort)));
  });
  logger.info({ listen, port, dataDir: options.dataDir, partitions: options.partitions, peers: Object.fromEntries(peers) }, 'atoll node listening');

  let stopping = false;
  const shutdown = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    services.setServing(false);
    const force = setTimeout(() => server.forceShutdown(), SHUTDOWN_GRACE_MS);
    force.unref();
    server.tryShutdown(() => {
      clearTimeout(force);
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
  const watchdog = setInterval(() => {
    if (node.failure) shutdown('fatal');
  }, 200);
  watchdog.unref();
}

main().catch((error: unknown) => {
  console.error(`atoll-server: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
