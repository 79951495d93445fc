/**
 * deploy/kubernetes/statefulset.yaml grows past its founding nodes (issue 19): the container's
 * start script makes pods 0..2 the founding nodes (ATOLL_PEERS) and any higher ordinal a joiner
 * (ATOLL_JOIN, an id past the founders'). No Kubernetes runs here, so the test checks the manifest's
 * own pieces: its settings agree with each other, its script derives the right identity for every
 * ordinal, and a pod started by that script (the real server, with loopback addresses in place of
 * the headless Service's names) joins a running three-node cluster and takes replicas after
 * `add-node`, as deploy/README.md ("Growing and shrinking") documents.
 */
import { spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/chaos/local-cluster.js';
import { rebalance } from '../../src/cli/membership.js';
import { LocalCluster } from '../integration/local-cluster.js';
import { statesOf, until } from '../integration/membership-support.js';

const root = join(import.meta.dirname, '..', '..');
const manifest = readFileSync(join(root, 'deploy/kubernetes/statefulset.yaml'), 'utf8');


/** The block scalar under `command:`'s `- |` item: the start script, indentation removed. */
function startScript(): string {
  const lines = manifest.split('\n');
  const start = lines.findIndex((line) => /^\s+- \|\s*$/.test(line));
  expect(start, 'the command has a block script').toBeGreaterThan(0);
  const indent = (lines[start + 1] as string).match(/^\s*/)?.[0].length ?? 0;
  const body: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line.trim() !== '' && (line.match(/^\s*/)?.[0].length ?? 0) < indent) break;
    body.push(line.slice(indent));
  }
  return body.join('\n');
}

/** The container's `env` list as a map (the manifest quotes every value). */
function manifestEnv(): Map<string, string> {
  const env = new Map<string, string>();
  for (const match of manifest.matchAll(/- name: (ATOLL_[A-Z_]+)\n\s+value: "([^"]*)"/g)) env.set(match[1] as string, match[2] as string);
  return env;
}

/** Runs the start script as pod `hostname` would, with a stand-in `node` that prints what it got. */
function identityOf(hostname: string, overrides: Record<string, string> = {}): { status: number | null; out: string; err: string } {
  const bin = mkdtempSync(join(tmpdir(), 'atoll-sts-bin-'));
  try {
    writeFileSync(join(bin, 'node'), '#!/bin/sh\necho "id=$ATOLL_ID peers=$ATOLL_PEERS join=$ATOLL_JOIN args=$*"\n');
    chmodSync(join(bin, 'node'), 0o755);
    const env = { PATH: `${bin}:/usr/bin:/bin`, HOSTNAME: hostname, ...Object.fromEntries(manifestEnv()), ...overrides };
    const result = spawnSync('/bin/sh', ['-c', startScript()], { env, encoding: 'utf8', timeout: 10_000 });
    return { status: result.status, out: result.stdout.trim(), err: result.stderr.trim() };
  } finally {
    rmSync(bin, { recursive: true, force: true });
  }
}

describe('the StatefulSet grows past its founding nodes', () => {
  let cluster: LocalCluster | undefined;
  afterAll(async () => {
    await cluster?.stop();
  });

  it('has founding settings that agree: replicas, ATOLL_FOUNDING_NODES, ATOLL_PEERS and ATOLL_FOUNDING_PEERS', () => {
    const env = manifestEnv();
    const replicas = Number(manifest.match(/^\s+replicas: (\d+)$/m)?.[1]);
    const founders = Number(env.get('ATOLL_FOUNDING_NODES'));
    const peers = (env.get('ATOLL_PEERS') ?? '').split(',');
    expect(founders).toBe(replicas);
    expect(peers).toHaveLength(founders);
    // Each founding node's peer port is its client port + 100 (the server's default), under the same name.
    const expectedJoin = peers.map((entry) => {
      const [, host, port] = entry.match(/^\d+=(.+):(\d+)$/) ?? [];
      return `${host}:${Number(port) + 100}`;
    });
    expect((env.get('ATOLL_FOUNDING_PEERS') ?? '').split(',')).toEqual(expectedJoin);
    expect(env.get('ATOLL_JOIN_ID_OFFSET')).toBe('0');
  });

  it('binds the admin port where the probes and Prometheus reach it: the pod\'s address, the port they name', () => {
    // A node binds its admin port on loopback unless told otherwise (issue 33): the kubelet probes
    // the pod's IP, so the manifest must name an address the pod's IP reaches.
    const listen = manifestEnv().get('ATOLL_ADMIN_LISTEN') ?? '';
    const [, host, port] = listen.match(/^(.+):(\d+)$/) ?? [];
    expect(host, 'ATOLL_ADMIN_LISTEN names a host').toBeDefined();
    expect(host).not.toMatch(/^(127\.|localhost$|\[?::1\]?$)/);
    const adminPort = manifest.match(/- name: admin\n\s+containerPort: (\d+)/)?.[1];
    expect(port).toBe(adminPort);
    expect(manifest.match(/prometheus\.io\/port: "(\d+)"/)?.[1]).toBe(adminPort);
    // Every probe asks that port.
    const probes = [...manifest.matchAll(/(startupProbe|livenessProbe|readinessProbe):\n\s+httpGet:\n\s+path: (\S+)\n\s+port: (\S+)/g)].map((match) => [match[1], match[2], match[3]]);
    expect(probes).toEqual([['startupProbe', '/livez', 'admin'], ['livenessProbe', '/livez', 'admin'], ['readinessProbe', '/readyz', 'admin']]);
  });

  it('derives each pod\'s identity from its ordinal: founders keep ATOLL_PEERS, later pods join', () => {
    const founders = manifestEnv().get('ATOLL_PEERS');
    const join = manifestEnv().get('ATOLL_FOUNDING_PEERS');
    expect(identityOf('atoll-0').out).toBe(`id=1 peers=${founders} join= args=/app/dist/src/bin/atoll-server.js`);
    expect(identityOf('atoll-2').out).toBe(`id=3 peers=${founders} join= args=/app/dist/src/bin/atoll-server.js`);
    expect(identityOf('atoll-3').out).toBe(`id=4 peers= join=${join} args=/app/dist/src/bin/atoll-server.js`);
    expect(identityOf('atoll-4').out).toBe(`id=5 peers= join=${join} args=/app/dist/src/bin/atoll-server.js`);
    // After a shrink the offset moves joiners to unused ids; founders never take it.
    expect(identityOf('atoll-3', { ATOLL_JOIN_ID_OFFSET: '2' }).out).toMatch(/^id=6 peers= join=/);
    expect(identityOf('atoll-1', { ATOLL_JOIN_ID_OFFSET: '2' }).out).toMatch(/^id=2 peers=1=/);
    const bad = identityOf('atoll');
    expect(bad.status).toBe(2);
    expect(bad.err).toContain('cannot take a pod ordinal from host name atoll');
  });

  it('starts a pod past the founders as a joiner that add-node fills with replicas', async () => {
    cluster = await LocalCluster.start({ nodes: 3, partitions: 3, snapshotEvery: 100, extraArgs: ['--replication-factor', '3'] });
    const address = `127.0.0.1:${await freePort()}`;
    const peerAddress = `127.0.0.1:${await freePort()}`;
    // The manifest's script, run as pod atoll-3 with the real server in place of /app.
    const script = startScript().replace('exec node /app/dist/src/bin/atoll-server.js', `exec "${process.execPath}" "${join(root, 'dist/src/bin/atoll-server.js')}"`);
    const env = {
      ...process.env,
      ...Object.fromEntries(manifestEnv()),
      HOSTNAME: 'atoll-3',
      ATOLL_FOUNDING_PEERS: [1, 2, 3].map((id) => cluster?.peerAddresses.get(id)).join(','),
      ATOLL_LISTEN: address,
      ATOLL_PEER_LISTEN: peerAddress,
      ATOLL_ADMIN_LISTEN: 'none',
      ATOLL_PEER_SECRET_FILE: cluster.peerSecretFile,
      ATOLL_DATA_DIR: join(cluster.dataRoot, 'node4'),
      ATOLL_PARTITIONS: '3',
      ATOLL_TICK_MS: '50',
      ATOLL_LOG_LEVEL: 'warn',
    };
    const log: string[] = [];
    const child = spawn('/bin/sh', ['-c', script], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk: Buffer): void => {
      log.push(chunk.toString());
      if (log.length > 200) log.shift();
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    cluster.processes.set(4, child);
    cluster.addresses.set(4, address);
    const admin = cluster.client();
    try {
      const added = await admin.changeMember({ action: 'add', id: 4, address, peerAddress });
      const moves = await rebalance(admin, () => undefined, 60_000, added.version);
      expect(moves.length, log.join('')).toBeGreaterThan(0);
      expect(moves.every((move) => move.to === 4)).toBe(true);
      await admin.changeMember({ action: 'activate', id: 4 });
      expect(await until(async () => statesOf(await cluster!.clusterInfoOf(4, 2_000)) === '1:active,2:active,3:active,4:active', 15_000), log.join('')).toBe(true);
      // The joiner serves: a write through it is read back through a founder.
      const viaJoiner = cluster.client([address]);
      try {
        await viaJoiner.put('sts/grown', 'yes');
      } finally {
        viaJoiner.close();
      }
      expect((await admin.get('sts/grown')).text()).toBe('yes');
    } finally {
      admin.close();
    }
  }, 120_000);
});
