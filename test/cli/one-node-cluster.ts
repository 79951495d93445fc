/**
 * A "cluster" of one in-process AtollNode (MemoryEngine, replication factor 1, authentication on)
 * behind a real gRPC server on loopback, and the CLI run in this process: fast enough to start one
 * per case (backup and restore tests).
 */
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { freePort } from '../../src/chaos/local-cluster.js';
import { run } from '../../src/cli/run.js';
import { AtollClient } from '../../src/client/index.js';
import { AtollNode } from '../../src/node/atoll-node.js';
import { newToken } from '../../src/tenancy/token.js';
import { Rng } from '../../src/raft/rng.js';
import { addClientServices, createGrpcServer } from '../../src/server/grpc-server.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { expectAllLed, loneNodeConfig, silentTransport } from '../node/in-process-cluster.js';

/** One node holding every partition, served over gRPC with authentication. */
export interface OneNodeCluster {
  readonly address: string;
  /** The cluster admin token. */
  readonly token: string;
  readonly node: AtollNode;
  readonly admin: AtollClient;
  stop(): Promise<void>;
}

/** Starts one (`name` tells its logs and data apart) and waits until it leads every partition. */
export async function startOneNodeCluster(name: string, partitions: number): Promise<OneNodeCluster> {
  const port = await freePort();
  const address = `127.0.0.1:${port}`;
  const token = newToken();
  const node = await AtollNode.open(
    loneNodeConfig(`${name}-${port}`, { partitions, peers: new Map([[1, address]]), tickMs: 10, electionTicks: 5, retentionRevisions: 100_000, snapshotEveryEntries: 100_000, adminToken: token }),
    { transport: () => silentTransport(), engine: new MemoryEngine(), random: new Rng(port) },
  );
  const server = createGrpcServer();
  addClientServices(server, node, pino({ level: 'silent' }), { auth: node });
  await new Promise<void>((resolve, reject) => server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (error) => (error ? reject(error) : resolve())));
  // Bounded: a node alone elects itself within a few ticks.
  await expectAllLed(node, 5_000);
  const admin = new AtollClient({ endpoints: [address], token, defaultTimeoutMs: 10_000 });
  return {
    address,
    token,
    node,
    admin,
    stop: async () => {
      admin.close();
      server.forceShutdown();
      await node.close();
    },
  };
}

/** Runs the CLI in this process with `token` (ATOLL_TOKEN): exit code, stdout and stderr. */
export async function runCli(argv: string[], token: string): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await run(argv, { stdout: (text) => (stdout += text), stderr: (text) => (stderr += text), env: { ATOLL_TOKEN: token } });
  return { code, stdout, stderr };
}
