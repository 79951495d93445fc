/**
 * docker-compose.tls.yml over docker-compose.yml, as its header says to run it: certificates from
 * scripts/dev-certs.sh, three nodes that serve clients over TLS on 7001 and talk to each other
 * over mutual TLS on 7101 (not published). The image's health check and CLI speak TLS inside the
 * containers; a host client that trusts the CA reads and writes through a published port; a
 * plaintext client is refused; the peer port is not published.
 *
 * Needs Docker, the Compose v2 plugin and the image: scripts/docker-setup.sh.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DockerComposeEnvironment, Wait, type StartedDockerComposeEnvironment } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient, AtollClientError } from '../../src/index.js';
import { atollImage, docker, freePort, requireDocker } from './docker-env.js';

process.env['TESTCONTAINERS_RYUK_DISABLED'] = 'true';

const repositoryRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const projectName = `atolltls${process.pid}`;
const startupMs = 150_000;
const log = (line: string): void => console.log(`docker tls: ${line}`);

const availability = await requireDocker('container TLS tests');

describe.skipIf(!availability.available)('docker-compose.tls.yml: TLS to clients, mutual TLS between nodes', () => {
  let cluster: StartedDockerComposeEnvironment | undefined;
  let certs = '';
  const containerOf = (id: number) => (cluster as StartedDockerComposeEnvironment).getContainer(`node${id}-1`);

  beforeAll(async () => {
    const started = Date.now();
    certs = mkdtempSync(path.join(tmpdir(), 'atoll-tls-certs-'));
    execFileSync('bash', [path.join(repositoryRoot, 'scripts/dev-certs.sh'), certs], { stdio: 'ignore', timeout: 60_000 });
    // The image runs as uid 1000: it must read the keys, as the compose file's header says.
    chmodSync(certs, 0o755);
    for (const file of readdirSync(certs)) chmodSync(path.join(certs, file), 0o644);
    const ports = await Promise.all([1, 2, 3].map(() => freePort()));
    cluster = await new DockerComposeEnvironment(repositoryRoot, ['docker-compose.yml', 'docker-compose.tls.yml'])
      .withProjectName(projectName)
      .withEnvironment({
        ATOLL_IMAGE: atollImage,
        ATOLL_CERTS: certs,
        ATOLL_PARTITIONS: '6',
        ATOLL_LOG_LEVEL: 'warn',
        ATOLL_HEALTHCHECK_INTERVAL: '5s',
        ...Object.fromEntries([1, 2, 3].map((id, index) => [`ATOLL_NODE${id}_PORT`, String(ports[index])])),
        // The etcd ports are published too: free ones, so two compose projects never collide.
        ...Object.fromEntries(await Promise.all([1, 2, 3].map(async (id) => [`ATOLL_NODE${id}_ETCD_PORT`, String(await freePort())]))),
      })
      .withDefaultWaitStrategy(Wait.forHealthCheck())
      .withStartupTimeout(startupMs)
      .up();
    log(`compose up: three healthy nodes in ${Date.now() - started} ms`);
  }, startupMs + 60_000);

  afterAll(async () => {
    await cluster?.down({ timeout: 0, removeVolumes: true }).catch((error: unknown) => log(`compose down: ${String(error)}`));
    if (certs !== '') rmSync(certs, { recursive: true, force: true });
  }, 60_000);

  it('the CLI inside a node speaks TLS (cluster status): every partition has a leader', async () => {
    const status = await containerOf(1).exec(['atoll', 'cluster', 'status']);
    expect(status.exitCode, status.output).toBe(0);
    expect(status.stdout).toContain('6 partitions');
    expect(status.stdout).not.toContain('(none)');
  }, 60_000);

  it('a host client that trusts the CA writes and reads through every published port; a plaintext one is refused', async () => {
    const ca = readFileSync(path.join(certs, 'ca.pem'));
    for (const id of [1, 2, 3]) {
      const endpoint = `127.0.0.1:${containerOf(id).getMappedPort(7001)}`;
      const client = new AtollClient({ endpoints: [endpoint], defaultTimeoutMs: 10_000, tls: { ca } });
      try {
        await client.put(`tls/through-node${id}`, `v${id}`);
        expect((await client.get(`tls/through-node${id}`)).text()).toBe(`v${id}`);
        if (id > 1) expect((await client.get('tls/through-node1')).text()).toBe('v1');
      } finally {
        client.close();
      }
      const plain = new AtollClient({ endpoints: [endpoint], defaultTimeoutMs: 2_000 });
      try {
        const error = await plain.get('tls/through-node1').then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(AtollClientError);
        expect((error as AtollClientError).code).toMatch(/UNAVAILABLE|DEADLINE_EXCEEDED/);
      } finally {
        plain.close();
      }
    }
  }, 60_000);

  it('publishes only the client ports (7001, and etcd\'s API on 7301, both over TLS): the peer port 7101 is reachable only inside the network', async () => {
    for (const id of [1, 2, 3]) {
      const published = (await docker('port', containerOf(id).getId())).trim().split('\n');
      expect(published.every((line) => line.startsWith('7001/tcp') || line.startsWith('7301/tcp')), published.join('; ')).toBe(true);
      expect(published.some((line) => line.startsWith('7001/tcp')), published.join('; ')).toBe(true);
      expect(published.some((line) => line.startsWith('7101/tcp')), published.join('; ')).toBe(false);
    }
  }, 60_000);
});
