/**
 * Peers present the cluster id with the peer secret (metadata `atoll-cluster-id`), and a node
 * refuses a peer of another cluster with CLUSTER_MISMATCH and one clear log line (rate-limited).
 * A call without an id (a node older than cluster descriptors, during a rolling upgrade) is still
 * admitted by its secret alone. A real node on LevelDB, its peer port served as atoll-server does.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AtollNode } from '../../src/node/atoll-node.js';
import { openGrpcNode } from '../../src/peer/grpc-node.js';
import { PeerTransport } from '../../src/peer/grpc-peer-transport.js';
import { peerServiceHandlers, requirePeerSecret } from '../../src/peer/peer-service.js';
import { clusterServiceHandlers } from '../../src/server/cluster-service.js';
import { createGrpcServer } from '../../src/server/grpc-server.js';
import { clusterServiceDefinition, peerServiceDefinition } from '../../src/wire/protos.js';

const SECRET = 'h'.repeat(43);
const lines: Array<{ msg?: string; peerClusterId?: string }> = [];
const logger = pino(
  { level: 'warn' },
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as { msg?: string });
      done();
    },
  }),
);

describe('the cluster id in the peer handshake', () => {
  let dataDir: string;
  let node: AtollNode;
  let server: grpc.Server;
  let peerAddress: string;
  const transports: PeerTransport[] = [];

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'atoll-cluster-id-'));
    const opened = await openGrpcNode({
      id: 1,
      peers: new Map([[1, '127.0.0.1:7651']]),
      dataDir,
      partitions: 2,
      replicationFactor: 1,
      tickMs: 20,
      electionTicks: 5,
      retentionRevisions: 100,
      snapshotEveryEntries: 1_000,
      peerSecrets: [SECRET],
      logger,
    });
    node = opened.node;
    server = createGrpcServer();
    server.addService(clusterServiceDefinition, requirePeerSecret(node, clusterServiceHandlers(node, logger), logger));
    server.addService(peerServiceDefinition, peerServiceHandlers(node, opened.transport, logger));
    const port = await new Promise<number>((resolve, reject) => {
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound)));
    });
    peerAddress = `127.0.0.1:${port}`;
  });

  afterAll(async () => {
    for (const transport of transports) transport.close();
    server?.forceShutdown();
    await node?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Node 2's transport to node 1's peer port, presenting `clusterId` (none: undefined). */
  function caller(clusterId: string | undefined): PeerTransport {
    const events = { onMessages: () => undefined, onPeerUnreachable: () => undefined };
    const transport = new PeerTransport(2, new Map([[1, peerAddress]]), events, pino({ level: 'silent' }), SECRET, undefined, clusterId);
    transports.push(transport);
    return transport;
  }

  it('admits a peer of the same cluster, and one that presents no id (older nodes)', async () => {
    const own = node.descriptor.clusterId;
    expect(own).toMatch(/^[0-9a-f]{32}$/);
    const info = await caller(own).clusterInfo(1, Date.now() + 5_000);
    expect(info).toMatchObject({ nodeId: 1, clusterId: own, hashFunction: 'murmur3_32' });
    await expect(caller(undefined).clusterInfo(1, Date.now() + 5_000)).resolves.toMatchObject({ nodeId: 1 });
  });

  it('refuses a peer of another cluster with CLUSTER_MISMATCH naming both ids, and says so once in the log', async () => {
    const foreign = 'f'.repeat(32);
    for (let attempt = 0; attempt < 3; attempt++) {
      const error = await caller(foreign).clusterInfo(1, Date.now() + 5_000).then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toMatchObject({ code: 'CLUSTER_MISMATCH' });
      expect((error as Error).message).toContain(node.descriptor.clusterId);
      expect((error as Error).message).toContain(foreign);
    }
    const refused = lines.filter((line) => line.msg?.startsWith('refused a peer of another cluster'));
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({ peerClusterId: foreign });
  });
});
