/**
 * Hostile callers of the admin HTTP port (issue 33, findings 3, 5 and 8; docs/security.md).
 *
 * Finding 3, on an admin server of its own (no cluster) and on a real node's default address:
 * connections that send a partial request header (no token needed) must not keep /livez and
 * /readyz from answering. Each connection's header deadline holds (within HEADERS_TIMEOUT_MS, not
 * node:http's 30 s check interval), one source address holds at most MAX_CONNECTIONS_PER_SOURCE
 * connections, probes still get a slot when every general one is in a request, and a node binds
 * its admin port on loopback unless told otherwise. Sources are distinct loopback addresses
 * (127.0.0.N: Linux routes all of 127/8 to lo).
 *
 * Findings 5 and 8, on a three-node cluster with authentication, client TLS and peer mutual TLS:
 * the status page asks its peers over the peer port and never sends the viewer's token anywhere
 * (the other nodes' admin addresses point at a trap that records what reaches it), and /metrics
 * names no tenant unless --tenant-metrics says so (off by default).
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { createServer, request as httpRequest, type IncomingHttpHeaders, type Server } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient } from '../../src/client/index.js';
import { freePort } from '../../src/chaos/local-cluster.js';
import { partitionOf } from '../../src/keys/partition-table.js';
import { toInternalKey } from '../../src/keys/tenant-keys.js';
import { newToken } from '../../src/tenancy/token.js';
import type { NodeMetricsView } from '../../src/node/metrics.js';
import { AdminServer } from '../../src/server/admin-server.js';
import { PrometheusNodeMetrics } from '../../src/server/node-metrics.js';
import { peerServiceDefinition } from '../../src/wire/protos.js';
import { LocalCluster } from '../integration/local-cluster.js';

const logger = pino({ level: 'silent' });
/** The bounds docs/security.md states for the admin port ("Limits"). */
const MAX_CONNECTIONS = 64;
const MAX_CONNECTIONS_PER_SOURCE = 16;
const HEADERS_TIMEOUT_MS = 3_000;
const root = resolve(import.meta.dirname, '../..');
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));
/** The slow page's handler count and the promise it waits on (the busy-slots case sets both). */
const slowPage: { started: number; gate: Promise<void> } = { started: 0, gate: Promise.resolve() };

interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  readonly ms: number;
}

/** One GET from `localAddress`; rejects when no answer comes within `timeoutMs`. */
function get(port: number, path: string, options: { localAddress?: string; timeoutMs?: number; headers?: Record<string, string>; host?: string } = {}): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolveAnswer, reject) => {
    const req = httpRequest(
      { host: options.host ?? '127.0.0.1', port, path, agent: false, headers: options.headers ?? {}, ...(options.localAddress !== undefined && { localAddress: options.localAddress }) },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => resolveAnswer({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString(), ms: performance.now() - started }));
        res.on('error', reject);
      },
    );
    req.setTimeout(options.timeoutMs ?? 2_000, () => req.destroy(new Error(`no answer to ${path} within ${options.timeoutMs ?? 2_000} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** A connection from `localAddress` that sends the start of a request header and never ends it. */
function partialHeader(port: number, localAddress: string): Promise<Socket> {
  return new Promise((resolveSocket) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    socket.on('error', () => undefined);
    socket.once('connect', () => {
      socket.write('GET /livez HTTP/1.1\r\nHost: atoll\r\nX-Slow: ');
      resolveSocket(socket);
    });
    // Refused before it connected: resolve anyway (the test counts open sockets).
    socket.once('close', () => resolveSocket(socket));
  });
}

const openCount = (sockets: readonly Socket[]): number => sockets.filter((socket) => !socket.destroyed && socket.readyState === 'open').length;

describe('finding 3: connections that never finish a request cannot take the admin port down', () => {
  const state = { view: { nodeId: 1, tasksQueued: 0, partitions: [], reachable: [] } as NodeMetricsView };
  let server: AdminServer;
  let port: number;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    const metrics = new PrometheusNodeMetrics({ processMetrics: false });
    metrics.attach({ metricsView: () => state.view, tenantUsageForMetrics: async () => [] });
    server = new AdminServer({ registry: metrics.registry, view: () => state.view, serving: () => true, logger });
    // A page that answers when the test opens its gate: connections in a request cannot be closed to make room.
    server.route('/slow', async () => {
      slowPage.started++;
      await slowPage.gate;
      return { status: 200, contentType: 'text/plain', body: 'slow\n' };
    });
    port = (await server.listen('127.0.0.1:0')).port;
  });

  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    // Let the server see the closes before the next case counts slots.
    await sleep(100);
  });

  afterAll(() => server.close());

  it('answers /livez and /readyz at once while 64 connections from one address hold partial request headers', async () => {
    for (let i = 0; i < MAX_CONNECTIONS; i++) sockets.push(await partialHeader(port, '127.0.0.1'));
    for (const path of ['/livez', '/readyz']) {
      const answer = await get(port, path, { localAddress: '127.0.0.1', timeoutMs: 1_000 });
      expect(answer.status, path).toBe(200);
      expect(answer.ms, path).toBeLessThan(1_000);
    }
    // One address holds at most its share; the rest were closed (oldest first) or refused.
    expect(openCount(sockets)).toBeLessThanOrEqual(MAX_CONNECTIONS_PER_SOURCE);
  });

  it('answers the probes while 64 connections from eight addresses hold partial request headers', async () => {
    for (let i = 0; i < MAX_CONNECTIONS; i++) sockets.push(await partialHeader(port, `127.0.0.${2 + (i % 8)}`));
    await sleep(50);
    expect(openCount(sockets)).toBe(MAX_CONNECTIONS);
    for (const path of ['/livez', '/readyz', '/metrics']) {
      const answer = await get(port, path, { localAddress: '127.0.0.20', timeoutMs: 1_000 });
      expect(answer.status, path).toBe(200);
    }
    // The oldest idle connections made room; the port never holds more than its slots.
    await sleep(100);
    expect(openCount(sockets)).toBeLessThan(MAX_CONNECTIONS);
  });

  it('closes a connection whose request header is not complete within the header timeout', async () => {
    const socket = await partialHeader(port, '127.0.0.30');
    sockets.push(socket);
    const started = performance.now();
    const closedAfterMs = await new Promise<number>((done) => {
      socket.once('close', () => done(performance.now() - started));
      // node:http alone checks its header timeout every 30 s: give it far less.
      setTimeout(() => done(Number.POSITIVE_INFINITY), HEADERS_TIMEOUT_MS + 2_000);
    });
    expect(closedAfterMs).toBeLessThan(HEADERS_TIMEOUT_MS + 2_000);
    expect(closedAfterMs).toBeGreaterThan(HEADERS_TIMEOUT_MS - 500);
  }, 15_000);

  it('keeps slots for the probes when every general slot is in a request, and tells the rest it is busy', async () => {
    // 64 requests of the slow page from four addresses (16 each): every general slot is busy.
    let open = (): void => undefined;
    slowPage.gate = new Promise<void>((resolve) => (open = resolve));
    slowPage.started = 0;
    const slow = Array.from({ length: MAX_CONNECTIONS }, (_, i) => get(port, '/slow', { localAddress: `127.0.0.${40 + (i % 4)}`, timeoutMs: 10_000 }).catch((error: Error) => error));
    // Wait until every slow request is in its handler (bounded: 200 polls of 25 ms).
    for (let poll = 0; poll < 200 && slowPage.started < MAX_CONNECTIONS; poll++) await sleep(25);
    expect(slowPage.started).toBe(MAX_CONNECTIONS);
    for (const path of ['/livez', '/readyz']) {
      const answer = await get(port, path, { localAddress: '127.0.0.50', timeoutMs: 1_000 });
      expect(answer.status, path).toBe(200);
    }
    const busy = await get(port, '/metrics', { localAddress: '127.0.0.51', timeoutMs: 1_000 });
    expect(busy.status).toBe(503);
    expect(busy.headers['atoll-code']).toBe('ADMIN_PORT_BUSY');
    // The slow requests were not disturbed.
    open();
    const answers = await Promise.all(slow);
    expect(answers.map((answer) => (answer instanceof Error ? answer.message : answer.status))).toEqual(Array(MAX_CONNECTIONS).fill(200));
  }, 20_000);
});

describe('finding 3: a node binds its admin port on loopback unless told otherwise', () => {
  let child: ChildProcess | undefined;
  let dataDir: string | undefined;
  afterAll(() => {
    child?.kill('SIGKILL');
    if (dataDir !== undefined) rmSync(dataDir, { recursive: true, force: true });
  });

  /** A port P with P + 100 (peer) and P + 1000 (admin) free as well. */
  async function portWithNeighbours(): Promise<number> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const port = await freePort();
      if (port + 1000 > 65_535) continue;
      const free = await Promise.all([port + 100, port + 1000].map((candidate) => new Promise<boolean>((done) => {
        const probe = createServer();
        probe.once('error', () => done(false));
        probe.listen(candidate, '0.0.0.0', () => probe.close(() => done(true)));
      })));
      if (free.every(Boolean)) return port;
    }
    throw new Error('no free port with free neighbours');
  }

  it('listens on 127.0.0.1 at the client port + 1000 when --listen binds every interface', async () => {
    const port = await portWithNeighbours();
    dataDir = mkdtempSync(join(tmpdir(), 'atoll-admin-bind-'));
    const argv = [join(root, 'dist/src/bin/atoll-server.js'), '--id', '1', '--peers', `1=127.0.0.1:${port}`, '--listen', `0.0.0.0:${port}`, '--replication-factor', '1', '--partitions', '1', '--data-dir', dataDir];
    child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ATOLL_LOG_FORMAT: 'json', ATOLL_LOG_LEVEL: 'info' } });
    let log = '';
    const line = await new Promise<{ adminListen?: string }>((done, reject) => {
      const timer = setTimeout(() => reject(new Error(`no admin port line within 20 s:\n${log}`)), 20_000);
      const read = (chunk: Buffer): void => {
        log += chunk.toString();
        const found = log.split('\n').find((text) => text.includes('atoll admin port listening'));
        if (found !== undefined) {
          clearTimeout(timer);
          done(JSON.parse(found) as { adminListen?: string });
        }
      };
      child?.stdout?.on('data', read);
      child?.stderr?.on('data', read);
    });
    expect(line.adminListen).toBe(`127.0.0.1:${port + 1000}`);
    expect((await get(port + 1000, '/livez', { timeoutMs: 5_000 })).status).toBe(200);
    // From any other address of this host, nothing listens there.
    const external = Object.values(networkInterfaces()).flat().find((address) => address !== undefined && address.family === 'IPv4' && !address.internal);
    if (external !== undefined) await expect(get(port + 1000, '/livez', { host: external.address, timeoutMs: 2_000 })).rejects.toThrow();
  }, 30_000);
});

/** An HTTP server that records every request reaching it and answers 404. */
async function startTrap(): Promise<{ server: Server; port: number; seen: Array<{ url: string; authorization?: string }> }> {
  const seen: Array<{ url: string; authorization?: string }> = [];
  const server = createServer((req, res) => {
    seen.push({ url: req.url ?? '', ...(req.headers.authorization !== undefined && { authorization: req.headers.authorization }) });
    res.writeHead(404).end();
  });
  const port = await new Promise<number>((done) => server.listen(0, '127.0.0.1', () => done((server.address() as { port: number }).port)));
  return { server, port, seen };
}

describe('findings 5 and 8 on a cluster with authentication, client TLS and peer mutual TLS', () => {
  const PARTITIONS = 6;
  const token = newToken();
  let cluster: LocalCluster;
  let work: string;
  let certsDir: string;
  let trap: Awaited<ReturnType<typeof startTrap>>;
  let admin: AtollClient;
  let acme: AtollClient;

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'atoll-hostile-admin-'));
    certsDir = join(work, 'certs');
    execFileSync('bash', [join(root, 'scripts/dev-certs.sh'), certsDir], { stdio: 'pipe' });
    const tokenFile = join(work, 'admin-token');
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    trap = await startTrap();
    // Every node believes nodes 2 and 3 serve their admin ports at the trap: a status page that
    // fetched peers there would send the viewer's token to it.
    const trapAddress = `127.0.0.1:${trap.port}`;
    cluster = await LocalCluster.start({ partitions: PARTITIONS, tls: { certsDir }, extraArgs: ['--admin-token-file', tokenFile, '--admin-addresses', `2=${trapAddress},3=${trapAddress}`] });
    const tls = cluster.clientTls();
    admin = new AtollClient({ endpoints: cluster.endpoints, defaultTimeoutMs: 5_000, token, ...(tls !== undefined && { tls }) });
    const acmeToken = String((await admin.authCall('CreateToken', { tenant: 'acme', role: 'readwrite', name: 'acme-app' }))['token']);
    acme = new AtollClient({ endpoints: cluster.endpoints, defaultTimeoutMs: 5_000, token: acmeToken, ...(tls !== undefined && { tls }) });
  }, 90_000);

  afterAll(async () => {
    await acme?.close();
    await admin?.close();
    await cluster?.stop();
    trap?.server.close();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const adminPort = (id: number): number => Number((cluster.adminAddresses.get(id) as string).split(':')[1]);

  it('finding 5: the status page asks peers over the peer port and never forwards the viewer\'s token', async () => {
    // Load on keys whose partitions other nodes lead: their hot keys reach node 1's page only
    // through those nodes' own status.
    const info = await cluster.clusterInfoOf(1);
    const leaderOf = new Map(info.partitions.map((p) => [Number(p.id), Number(p.leader)]));
    const remoteKeys = Array.from({ length: 200 }, (_, i) => `hot/${i}`).filter((key) => ![0, 1].includes(leaderOf.get(partitionOf(toInternalKey('acme', key), PARTITIONS)) ?? 0)).slice(0, 4);
    expect(remoteKeys.length).toBeGreaterThan(0);
    for (let round = 0; round < 15; round++) for (const key of remoteKeys) await acme.put(key, `v${round}`);

    let body: { nodes: Array<{ id: number; reachable: boolean; ready: boolean; problems: string[] }>; hotKeys: Array<{ tenant: string; key: string }> } | undefined;
    const deadline = Date.now() + 15_000;
    while (Date.now() < deadline) {
      const answer = await get(adminPort(1), '/status.json', { headers: { authorization: `Bearer ${token}` }, timeoutMs: 5_000 });
      expect(answer.status).toBe(200);
      body = JSON.parse(answer.text) as NonNullable<typeof body>;
      if (body.nodes.every((node) => node.reachable && node.ready) && body.hotKeys.some((hot) => hot.tenant === 'acme' && remoteKeys.includes(hot.key))) break;
      await sleep(300);
    }
    // Nothing reached the other nodes' admin addresses, and the token least of all.
    expect(trap.seen.filter((seen) => seen.authorization?.includes(token) === true).slice(0, 3)).toEqual([]);
    expect(trap.seen).toEqual([]);
    // Every peer answered over the peer port (mutual TLS and the peer secret) ...
    expect(body?.nodes.map((node) => [node.id, node.reachable, node.ready])).toEqual([[1, true, true], [2, true, true], [3, true, true]]);
    // ... with every tenant's hot keys of the partitions it leads.
    expect(body?.hotKeys.filter((hot) => hot.tenant === 'acme' && remoteKeys.includes(hot.key)).length).toBeGreaterThan(0);
  }, 60_000);

  it('finding 5: Peer.NodeStatus needs the peer secret', async () => {
    const file = (name: string): Buffer => readFileSync(join(certsDir, name));
    // A peer-CA certificate gets through the handshake; the secret is still required.
    const credentials = grpc.credentials.createSsl(file('peer-ca.pem'), file('node1-peer-key.pem'), file('node1-peer.pem'));
    const { path, requestSerialize, responseDeserialize } = peerServiceDefinition['NodeStatus'] as grpc.MethodDefinition<object, unknown>;
    const call = (metadata: grpc.Metadata): Promise<{ error: grpc.ServiceError | null; response: unknown }> => {
      const client = new grpc.Client(cluster.peerAddresses.get(2) as string, credentials);
      return new Promise((done) => {
        client.makeUnaryRequest(path, requestSerialize, responseDeserialize, {}, metadata, { deadline: Date.now() + 5_000 }, (error, response) => {
          client.close();
          done({ error, response });
        });
      });
    };
    const refused = await call(new grpc.Metadata());
    expect(refused.error?.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(refused.error?.metadata.get('atoll-code')[0]).toBe('UNAUTHENTICATED');
    const withSecret = new grpc.Metadata();
    withSecret.set('atoll-peer-secret', cluster.peerSecret());
    const answered = await call(withSecret);
    expect(answered.error).toBeNull();
    expect(answered.response).toMatchObject({ nodeId: 2, ready: true });
  });

  it('finding 8: /metrics names no tenant by default, with or without the admin token', async () => {
    await acme.put('usage/one', 'x');
    // The usage is published (what the tenant series would show) ...
    let keys = 0;
    for (const deadline = Date.now() + 15_000; keys === 0 && Date.now() < deadline; ) {
      const tenants = (await admin.authCall('GetUsage', { tenant: 'acme' }))['tenants'] as Array<{ tenant: string; keys: string }>;
      keys = Number(tenants.find((usage) => usage.tenant === 'acme')?.keys ?? 0);
      if (keys === 0) await sleep(250);
    }
    expect(keys).toBeGreaterThan(0);
    // ... and no node's scrape names it.
    for (const id of [1, 2, 3]) {
      for (const headers of [{}, { authorization: `Bearer ${token}` }] as Array<Record<string, string>>) {
        const scrape = await get(adminPort(id), '/metrics', { headers, timeoutMs: 5_000 });
        expect(scrape.status).toBe(200);
        expect(scrape.text).toContain('atoll_partition_is_leader');
        expect(scrape.text).not.toContain('acme');
        expect(scrape.text).not.toContain('atoll_tenant_');
      }
    }
  }, 30_000);
});
