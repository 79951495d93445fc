/**
 * TLS with real atoll-server processes (docs/security.md, "TLS"), certificates made by
 * scripts/dev-certs.sh in temporary directories: one set for the cluster, one from other CAs
 * altogether (the "foreign" set). What must hold:
 * - a client that trusts the cluster's CA is served; a plaintext client, one trusting another CA
 *   and one trusting only the system CAs are refused;
 * - Peer is not served on the client port, and the peer port refuses every certificate that does
 *   not chain to the peer CA (none, a client certificate, a foreign node certificate);
 * - a node whose peer certificate comes from another CA cannot join: it learns no leader and its
 *   peers report it unreachable, while the same node with its own certificate catches up;
 * - with --tls-client-ca a client without a certificate (or with a foreign one) is refused, and the
 *   health probe and the CLI work with the flags.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkNodeHealth } from '../../src/cli/health.js';
import { run } from '../../src/cli/run.js';
import { AtollClient, type AtollClientOptions } from '../../src/index.js';
import { channelCredentialsOf, type TlsClientOptions } from '../../src/wire/tls-credentials.js';
import { clusterServiceDefinition, peerServiceDefinition } from '../../src/wire/protos.js';
import { LocalCluster } from '../integration/local-cluster.js';

const devCerts = resolve(import.meta.dirname, '../../scripts/dev-certs.sh');
/** Long enough for several election timeouts at the harness's 50 ms ticks. */
const SHUT_OUT_OBSERVATION_MS = 3_000;

let certsDir: string;
let foreignDir: string;
/** Client TLS with peer mutual TLS, three nodes. */
let cluster: LocalCluster;
/** One node that also requires client certificates. */
let strictNode: LocalCluster;

function pem(dir: string, name: string): Buffer {
  return readFileSync(join(dir, name));
}

beforeAll(async () => {
  certsDir = mkdtempSync(join(tmpdir(), 'atoll-certs-'));
  foreignDir = mkdtempSync(join(tmpdir(), 'atoll-foreign-certs-'));
  execFileSync('bash', [devCerts, certsDir], { stdio: 'pipe' });
  execFileSync('bash', [devCerts, foreignDir], { stdio: 'pipe' });
  // Both at once: starting processes is most of this file's time.
  [cluster, strictNode] = await Promise.all([
    LocalCluster.start({ partitions: 4, tls: { certsDir } }),
    LocalCluster.start({ nodes: 1, partitions: 2, tls: { certsDir, requireClientCertificates: true }, extraArgs: ['--replication-factor', '1'] }),
  ]);
}, 60_000);

afterAll(async () => {
  await Promise.all([cluster?.stop(), strictNode?.stop()]);
  rmSync(certsDir, { recursive: true, force: true });
  rmSync(foreignDir, { recursive: true, force: true });
});

/** One Cluster.ClusterInfo or Peer.Forward call on a bare channel; resolves to the gRPC status code. */
function statusOf(address: string, credentials: grpc.ChannelCredentials, method: 'ClusterInfo' | 'Forward', peerSecret?: string): Promise<{ code: grpc.status; details: string }> {
  const definition = method === 'ClusterInfo' ? clusterServiceDefinition : peerServiceDefinition;
  const { path, requestSerialize, responseDeserialize } = definition[method] as grpc.MethodDefinition<unknown, unknown>;
  const client = new grpc.Client(address, credentials);
  const metadata = new grpc.Metadata();
  if (peerSecret !== undefined) metadata.set('atoll-peer-secret', peerSecret);
  return new Promise((resolveStatus) => {
    client.makeUnaryRequest(path, requestSerialize, responseDeserialize, {}, metadata, { deadline: Date.now() + 3_000 }, (error) => {
      client.close();
      resolveStatus({ code: error?.code ?? grpc.status.OK, details: error?.details ?? '' });
    });
  });
}

/** A put through a client with these options: resolves to the error code, or 'OK'. */
async function putOutcome(options: AtollClientOptions): Promise<string> {
  const client = new AtollClient({ defaultTimeoutMs: 2_000, maxAttempts: 3, ...options });
  try {
    await client.put('tls/probe', 'x');
    return 'OK';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  } finally {
    client.close();
  }
}

describe('a TLS cluster with peer mutual TLS', () => {
  it('serves a client that trusts its CA, and the CLI with --tls-ca', async () => {
    const client = cluster.client();
    try {
      await client.put('tls/a', 'served over TLS');
      expect((await client.get('tls/a')).text()).toBe('served over TLS');
    } finally {
      client.close();
    }
    let stdout = '';
    const io = { stdout: (text: string) => (stdout += text), stderr: () => undefined, env: {} };
    expect(await run(['--endpoints', cluster.endpoints.join(','), '--tls-ca', join(certsDir, 'ca.pem'), 'get', 'tls/a'], io)).toBe(0);
    expect(stdout).toBe('served over TLS\n');
  });

  it('refuses a plaintext client, a client trusting another CA and one trusting only the system CAs', async () => {
    const endpoints = cluster.endpoints;
    expect(await putOutcome({ endpoints })).toBe('UNAVAILABLE');
    expect(await putOutcome({ endpoints, tls: { ca: pem(foreignDir, 'ca.pem') } })).toBe('UNAVAILABLE');
    expect(await putOutcome({ endpoints, tls: {} })).toBe('UNAVAILABLE');
    // The same calls with the right CA succeed: the refusals above are the certificate's doing.
    expect(await putOutcome({ endpoints, tls: { ca: pem(certsDir, 'ca.pem') } })).toBe('OK');
  });

  it('serves Peer only on the peer port, and only to certificates from the peer CA', async () => {
    const clientPort = cluster.addresses.get(1) as string;
    const peerPort = cluster.peerAddresses.get(1) as string;
    const trustingClientCa = channelCredentialsOf({ ca: pem(certsDir, 'ca.pem') });
    expect((await statusOf(clientPort, trustingClientCa, 'Forward')).code).toBe(grpc.status.UNIMPLEMENTED);

    const peerCredentials = (dir: string, name?: string): grpc.ChannelCredentials => {
      const tls: TlsClientOptions = { ca: pem(certsDir, 'peer-ca.pem'), ...(name !== undefined && { cert: pem(dir, `${name}.pem`), key: pem(dir, `${name}-key.pem`) }) };
      return channelCredentialsOf(tls);
    };
    for (const [what, credentials] of [
      ['no certificate', peerCredentials(certsDir)],
      ['a client certificate', peerCredentials(certsDir, 'client')],
      ['a foreign node certificate', peerCredentials(foreignDir, 'node2-peer')],
    ] as const) {
      expect({ what, code: (await statusOf(peerPort, credentials, 'ClusterInfo')).code }).toEqual({ what, code: grpc.status.UNAVAILABLE });
    }
    // Positive control: a node's own peer certificate and the peer secret get an answer; the
    // certificate alone does not (mutual TLS adds to the secret, it does not replace it).
    expect((await statusOf(peerPort, peerCredentials(certsDir, 'node2-peer'), 'ClusterInfo')).code).toBe(grpc.status.UNAUTHENTICATED);
    expect((await statusOf(peerPort, peerCredentials(certsDir, 'node2-peer'), 'ClusterInfo', cluster.peerSecret())).code).toBe(grpc.status.OK);
  });

  it('shuts out a node whose peer certificate comes from another CA, and takes it back with its own', async () => {
    const ownCert = join(certsDir, 'node3-peer.pem.own');
    const ownKey = join(certsDir, 'node3-peer-key.pem.own');
    copyFileSync(join(certsDir, 'node3-peer.pem'), ownCert);
    copyFileSync(join(certsDir, 'node3-peer-key.pem'), ownKey);
    await cluster.kill(3);
    rmSync(join(cluster.dataRoot, 'node3'), { recursive: true, force: true });
    copyFileSync(join(foreignDir, 'node3-peer.pem'), join(certsDir, 'node3-peer.pem'));
    copyFileSync(join(foreignDir, 'node3-peer-key.pem'), join(certsDir, 'node3-peer-key.pem'));
    cluster.startNode(3);

    const client = cluster.client([cluster.addresses.get(1) as string, cluster.addresses.get(2) as string]);
    try {
      await client.put('tls/while-shut-out', 'v');
      // Node 3 is up (it answers its clients) but hears no leader: no peer accepts it.
      await expect.poll(() => cluster.clusterInfoOf(3).then(() => true, (error: Error) => error.message), { timeout: 20_000, interval: 200 }).toBe(true);
      const until = Date.now() + SHUT_OUT_OBSERVATION_MS;
      while (Date.now() < until) {
        const seen = await cluster.clusterInfoOf(3, 2_000);
        expect(seen.partitions.map((p) => Number(p.leader))).toEqual(seen.partitions.map(() => 0));
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(cluster.isRunning(3)).toBe(true);
      const fromNode1 = await cluster.clusterInfoOf(1);
      expect(fromNode1.nodes.find((node) => node.id === 3)?.reachable).toBe(false);
      expect(fromNode1.partitions.every((p) => Number(p.leader) !== 3 && Number(p.leader) !== 0)).toBe(true);

      // Positive control: the same node with a certificate from the peer CA joins and catches up.
      await cluster.kill(3);
      copyFileSync(ownCert, join(certsDir, 'node3-peer.pem'));
      copyFileSync(ownKey, join(certsDir, 'node3-peer-key.pem'));
      cluster.startNode(3);
      await cluster.waitReady(20_000);
      const fromNode3 = cluster.client([cluster.addresses.get(3) as string]);
      try {
        await expect.poll(async () => (await fromNode3.get('tls/while-shut-out', { consistency: 'stale' })).found, { timeout: 10_000 }).toBe(true);
      } finally {
        fromNode3.close();
      }
    } finally {
      client.close();
    }
  }, 60_000);
});

describe('a TLS node that requires client certificates', () => {
  it('serves a client with a certificate from its CA and refuses one without or with a foreign one', async () => {
    const endpoints = strictNode.endpoints;
    const ca = pem(certsDir, 'ca.pem');
    expect(await putOutcome({ endpoints, tls: strictNode.clientTls() })).toBe('OK');
    expect(await putOutcome({ endpoints, tls: { ca } })).toBe('UNAVAILABLE');
    expect(await putOutcome({ endpoints, tls: { ca, cert: pem(foreignDir, 'client.pem'), key: pem(foreignDir, 'client-key.pem') } })).toBe('UNAVAILABLE');
  });

  it('answers the health probe and the CLI when they present a certificate', async () => {
    const address = strictNode.endpoints[0] as string;
    const report = await checkNodeHealth({ address, timeoutMs: 3_000, requireLeaders: true, tls: strictNode.clientTls() });
    expect(report.healthy).toBe(true);
    await expect(checkNodeHealth({ address, timeoutMs: 1_000, requireLeaders: false, tls: { ca: pem(certsDir, 'ca.pem') } })).rejects.toThrow();

    const env = { ATOLL_TLS_CA: join(certsDir, 'ca.pem'), ATOLL_TLS_CERT: join(certsDir, 'client.pem'), ATOLL_TLS_KEY: join(certsDir, 'client-key.pem') };
    let stdout = '';
    let stderr = '';
    const io = { stdout: (text: string) => (stdout += text), stderr: (text: string) => (stderr += text), env };
    expect(await run(['--endpoints', address, 'health', '--leaders'], io)).toBe(0);
    expect(await run(['--endpoints', address, 'put', 'tls/cli', 'ok'], io)).toBe(0);
    expect(stdout).toContain(`${address} SERVING`);
    expect(await run(['--endpoints', address, '--tls-cert', join(certsDir, 'missing.pem'), 'get', 'tls/cli'], io)).toBe(2);
    expect(stderr).toContain('--tls-cert');
  });
});
