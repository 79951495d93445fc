/**
 * An outsider tests guesses of a weak peer secret offline against the cluster id (issue 33,
 * finding 6). ClusterInfo answers the id without a token, with the public fields it was derived
 * from (partition count, replication factor, hash, members and their addresses). The version-1 id
 * was an unsalted SHA-256 of the secret and those fields, so one hash per guess confirmed a secret.
 * On a real three-node cluster with authentication and an operator-set weak secret:
 * - every founding node answers the same id (they agree with no new flag);
 * - the id is not the version-1 hash of the right secret and the public fields (an attacker whose
 *   dictionary holds the secret learns nothing from one cheap hash);
 * - it is the keyed derivation, whose key is scrypt of the secret: every guess costs that scrypt.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clusterIdKeyCost, deriveClusterId } from '../../src/node/cluster/cluster-descriptor.js';
import { newToken } from '../../src/tenancy/token.js';
import { LocalCluster } from '../integration/local-cluster.js';

const root = resolve(import.meta.dirname, '../..');
/** What an operator might choose: long enough for the 16-character minimum, and in any dictionary. */
const weakSecret = 'password-password';

interface PublicClusterInfo {
  clusterId: string;
  partitionCount: number;
  replicationFactor: number;
  hashFunction: string;
  nodes: Array<{ id: number; address: string }>;
}

/** ClusterInfo from a node's client port, as anyone may ask it: no token, a connection of its own. */
function publicClusterInfo(address: string): Promise<PublicClusterInfo> {
  const definition = protoLoader.loadSync(['atoll/v1/cluster.proto'], { includeDirs: [join(root, 'proto')], longs: Number, defaults: true, oneofs: true });
  type ClusterClient = grpc.Client & { clusterInfo(request: object, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, info: PublicClusterInfo) => void): void };
  const pkg = grpc.loadPackageDefinition(definition) as unknown as { atoll: { v1: { Cluster: new (a: string, c: grpc.ChannelCredentials, o: object) => ClusterClient } } };
  const client = new pkg.atoll.v1.Cluster(address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
  return new Promise((resolveInfo, reject) => {
    client.clusterInfo({}, { deadline: Date.now() + 5_000 }, (error, info) => {
      client.close();
      if (error) reject(error);
      else resolveInfo(info);
    });
  });
}

/** The creation flags as the id was derived from them, rebuilt from public fields only. */
function publicFlags(info: PublicClusterInfo): string {
  const members = [...info.nodes].sort((a, b) => a.id - b.id).map((node) => [node.id, node.address]);
  return JSON.stringify({ partitionCount: info.partitionCount, replicationFactor: info.replicationFactor, hashFunction: info.hashFunction, members });
}

describe('the cluster id an outsider reads', () => {
  let cluster: LocalCluster;
  const savedSecret = process.env['ATOLL_PEER_SECRET'];

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atoll-hostile-cluster-id-'));
    const file = join(dir, 'admin-token');
    writeFileSync(file, `${newToken()}\n`, { mode: 0o600 });
    // The operator sets the secret itself (ATOLL_PEER_SECRET wins over the harness's secret file).
    process.env['ATOLL_PEER_SECRET'] = weakSecret;
    try {
      cluster = await LocalCluster.start({ partitions: 4, extraArgs: ['--admin-token-file', file] });
    } finally {
      if (savedSecret === undefined) delete process.env['ATOLL_PEER_SECRET'];
      else process.env['ATOLL_PEER_SECRET'] = savedSecret;
    }
  }, 60_000);

  afterAll(async () => {
    await cluster?.stop();
  });

  it('is the same on every founding node, and cannot be checked against a guess of the secret with one cheap hash', async () => {
    const infos = await Promise.all(cluster.endpoints.map((address) => publicClusterInfo(address)));
    const ids = infos.map((info) => info.clusterId);
    expect(ids[0]).toMatch(/^[0-9a-f]{32}$/);
    expect(new Set(ids).size).toBe(1);
    const info = infos[0]!;
    const flags = publicFlags(info);
    // The attacker's offline test of the right guess, as the version-1 derivation allowed it.
    const unsalted = createHash('sha256').update(`atoll-cluster-id/v1\n${weakSecret}\n${flags}`, 'utf8').digest('hex').slice(0, 32);
    console.log(`hostile-cluster-id: public id ${info.clusterId}; unsalted SHA-256 of the right guess ${unsalted}`);
    expect(info.clusterId, 'the public id is the unsalted hash of the secret and public fields').not.toBe(unsalted);

    // It is the keyed derivation: each guess must pay scrypt with at least 32 MiB.
    expect(clusterIdKeyCost.N * clusterIdKeyCost.r * 128).toBeGreaterThanOrEqual(32 * 1024 * 1024);
    const members = [...info.nodes].sort((a, b) => a.id - b.id).map((node) => ({ id: node.id, clientAddress: node.address, peerAddress: '' }));
    const creation = { partitionCount: info.partitionCount, replicationFactor: info.replicationFactor, hashFunction: info.hashFunction as 'murmur3_32', members };
    expect(deriveClusterId(weakSecret, creation)).toBe(info.clusterId);
    const startedMs = performance.now();
    expect(deriveClusterId(randomBytes(16).toString('hex'), creation)).not.toBe(info.clusterId);
    console.log(`hostile-cluster-id: one guess costs ${(performance.now() - startedMs).toFixed(0)} ms here (the unsalted hash: about a microsecond)`);
  });
});
