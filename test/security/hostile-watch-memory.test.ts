/**
 * Issue 33, finding 1: a tenant with only the read role opens KV.Watch from revision 0 on a prefix
 * with megabytes of history, over HTTP/2 connections whose receive window is 0, and never reads.
 * Without a byte bound every such watch held a read of history and its queued messages for as long
 * as the connection lived, and its slot came back while the bytes stayed.
 *
 * Here, on a three-node cluster with authentication and small watch memory bounds (tenant 16 MiB,
 * connection 16 MiB, node 32 MiB, stall 5 s), 24 such watches go to the partition's leader from
 * four connections. Asserted: the watches past the tenant's bound are refused at once with
 * RESOURCE_EXHAUSTED (atoll-code RESOURCE_EXHAUSTED, atoll-reason watch-memory); the bytes the
 * leader holds for watch clients (atoll_memory_watch_bytes) never pass the tenant's bound; every
 * admitted stream is closed by the node (RST_STREAM CANCEL) once it has not drained for the stall
 * time, and the bytes go back to zero; an ordinary tenant's watch on the same partition keeps
 * receiving every change meanwhile; and afterwards the same tenant, reading, watches the whole
 * history again. No node restarts.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient } from '../../src/client/index.js';
import { partitionOfBucket } from '../../src/keys/partition-table.js';
import { newToken } from '../../src/tenancy/token.js';
import { preferredLeaderOf } from '../../src/keys/placement.js';
import { encodeWatchRequest } from '../../src/wire/watch-codec.js';
import { kvServiceDefinition } from '../../src/wire/protos.js';
import { LocalCluster } from '../integration/local-cluster.js';

const PARTITIONS = 4;
const MiB = 1024 * 1024;
const TENANT_MB = 16;
const STALL_MS = 5_000;
const HISTORY_VALUES = 24;
const VALUE_BYTES = 200 * 1024;
const CONNECTIONS = 4;
const WATCHES_PER_CONNECTION = 6;

const sleep = (ms: number): Promise<void> => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

/** Polls `check` every 100 ms until it holds or `ms` passes; returns whether it held. */
async function eventually(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(100);
  }
  return check();
}

/** One value of a Prometheus text exposition (the first series of that name), or undefined. */
async function metricOf(adminAddress: string, name: string): Promise<number | undefined> {
  const text = await (await fetch(`http://${adminAddress}/metrics`, { signal: AbortSignal.timeout(5_000) })).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

/** A KV.Watch from a client that never reads: HTTP/2 window 0, nothing taken from the stream. */
interface HostileWatch {
  /** 'open' until the node ends it: refused (a status) or reset (RST_STREAM). */
  outcome: 'open' | 'refused' | 'reset' | 'other';
  headers: http2.IncomingHttpHeaders | undefined;
  rstCode: number | undefined;
}

function openHostileWatch(session: http2.ClientHttp2Session, token: string, body: Buffer): HostileWatch {
  const watch: HostileWatch = { outcome: 'open', headers: undefined, rstCode: undefined };
  const request = session.request({ ':method': 'POST', ':path': '/atoll.v1.KV/Watch', 'content-type': 'application/grpc', te: 'trailers', authorization: `Bearer ${token}` });
  request.on('error', () => undefined);
  request.on('response', (headers) => (watch.headers = headers));
  request.on('close', () => {
    watch.rstCode = request.rstCode;
    const status = watch.headers?.['grpc-status'];
    if (request.rstCode === http2.constants.NGHTTP2_CANCEL) watch.outcome = 'reset';
    else if (status === '8' && watch.headers?.['atoll-code'] === 'RESOURCE_EXHAUSTED') watch.outcome = 'refused';
    else watch.outcome = 'other';
  });
  request.pause();
  request.end(body);
  return watch;
}

describe('a read-only tenant whose watches never read', () => {
  const adminToken = newToken();
  let cluster: LocalCluster;
  const clients: AtollClient[] = [];
  const tokens: Record<string, string> = {};
  let leaderAddress = '';
  let leaderAdmin = '';
  let goodBucket = '';
  let pids: number[] = [];

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atoll-watch-memory-'));
    const file = join(dir, 'admin-token');
    writeFileSync(file, `${adminToken}\n`, { mode: 0o600 });
    cluster = await LocalCluster.start({
      partitions: PARTITIONS,
      extraArgs: ['--admin-token-file', file],
      // Environment variables, so that a node without these settings starts all the same.
      env: { ATOLL_WATCH_TENANT_MB: String(TENANT_MB), ATOLL_WATCH_CONNECTION_MB: '16', ATOLL_WATCH_MEMORY_MB: '32', ATOLL_WATCH_STALL_MS: String(STALL_MS) },
    });
    const admin = new AtollClient({ endpoints: cluster.endpoints, token: adminToken });
    clients.push(admin);
    for (const [name, tenant, role] of [
      ['writer', 'evil', 'readwrite'],
      ['reader', 'evil', 'read'],
      ['good', 'good', 'readwrite'],
    ] as const) {
      tokens[name] = (await admin.authCall('CreateToken', { tenant, role, name }))['token'] as string;
    }
    const writer = new AtollClient({ endpoints: cluster.endpoints, token: tokens['writer']! });
    clients.push(writer);
    for (let i = 0; i < HISTORY_VALUES; i++) await writer.put(`hist/k${i}`, Buffer.alloc(VALUE_BYTES, i));
    // The leader of evil's history, and a bucket of tenant good on the same partition (same hub).
    const partition = partitionOfBucket('\u0000evil\u0000hist', PARTITIONS);
    for (let i = 0; goodBucket === ''; i++) if (partitionOfBucket(`\u0000good\u0000g${i}`, PARTITIONS) === partition) goodBucket = `g${i}`;
    // The leader balancer moves a partition's leadership to its preferred node: wait for that, so
    // the watches are not ended by a leader change (NOT_LEADER) mid-test.
    // On a loaded machine the balancer may not have moved it yet: ask for the transfer (each try
    // bounded), and wait until the preferred node leads.
    const preferred = preferredLeaderOf(partition, [1, 2, 3], 3);
    const leads = async (): Promise<boolean> => (await admin.clusterInfo()).partitions[partition]?.leader === preferred;
    for (let attempt = 0; attempt < 10 && !(await eventually(leads, 3_000)); attempt++) {
      await admin.transferLeader(partition, preferred, { timeoutMs: 5_000 }).catch(() => undefined);
    }
    expect(await leads()).toBe(true);
    const leader = preferred;
    leaderAddress = cluster.addresses.get(leader)!;
    leaderAdmin = cluster.adminAddresses.get(leader)!;
    pids = [1, 2, 3].map((id) => cluster.pidOf(id)!);
  }, 120_000);

  afterAll(async () => {
    for (const client of clients) client.close();
    await cluster?.stop();
  });

  it('refuses watches past the byte bound, holds at most the bound, and cuts off every stalled stream while an ordinary watch goes on', async () => {
    // An ordinary tenant's watch on the same partition, reading normally.
    const good = new AtollClient({ endpoints: cluster.endpoints, token: tokens['good']! });
    clients.push(good);
    const fromRevision = (await good.put(`${goodBucket}/start`, 'x')).revision;
    const seen: string[] = [];
    const stopGood = new AbortController();
    const goodWatch = (async () => {
      for await (const item of good.watch(goodBucket, { fromRevision, signal: stopGood.signal })) if (item.type !== 'progress') seen.push(item.key);
    })().catch(() => undefined);

    const externalBefore = (await metricOf(leaderAdmin, 'nodejs_external_memory_bytes')) ?? 0;
    const body = (() => {
      const message = kvServiceDefinition['Watch']!.requestSerialize(encodeWatchRequest({ prefix: 'hist', startRevision: 0 }) as never) as Buffer;
      const frame = Buffer.alloc(5 + message.length);
      frame.writeUInt32BE(message.length, 1);
      message.copy(frame, 5);
      return frame;
    })();
    const sessions: http2.ClientHttp2Session[] = [];
    const hostile: HostileWatch[] = [];
    let peakHeld = 0;
    let sampledHeld = 0;
    const sample = async (): Promise<void> => {
      const held = await metricOf(leaderAdmin, 'atoll_memory_watch_bytes');
      if (held !== undefined) {
        sampledHeld++;
        peakHeld = Math.max(peakHeld, held);
      }
    };
    try {
      for (let c = 0; c < CONNECTIONS; c++) {
        const session = http2.connect(`http://${leaderAddress}`, { settings: { initialWindowSize: 0 } });
        session.on('error', () => undefined);
        sessions.push(session);
        for (let w = 0; w < WATCHES_PER_CONNECTION; w++) hostile.push(openHostileWatch(session, tokens['reader']!, body));
        await sample();
      }
      // Refusals come at once: the tenant's bound holds about three reads of its history.
      await eventually(async () => {
        await sample();
        return hostile.filter((w) => w.outcome === 'refused').length >= CONNECTIONS * WATCHES_PER_CONNECTION - 8;
      }, STALL_MS);
      const externalPeak = (await metricOf(leaderAdmin, 'nodejs_external_memory_bytes')) ?? 0;
      const refused = hostile.filter((w) => w.outcome === 'refused');
      console.log(
        `hostile watches: ${refused.length} refused, ${hostile.filter((w) => w.outcome === 'open').length} open; ` +
          `leader watch bytes peak ${(peakHeld / MiB).toFixed(1)} MiB (${sampledHeld} samples); external memory ${(externalBefore / MiB).toFixed(0)} -> ${(externalPeak / MiB).toFixed(0)} MiB`,
      );
      expect(refused.length, 'watches past the tenant bound are refused').toBeGreaterThanOrEqual(CONNECTIONS * WATCHES_PER_CONNECTION - 8);
      for (const watch of refused) expect(watch.headers?.['atoll-reason']).toBe('watch-memory');
      // Meanwhile the ordinary tenant's watch gets every change.
      for (let i = 0; i < 10; i++) await good.put(`${goodBucket}/k${i}`, `v${i}`);
      expect(await eventually(() => seen.filter((key) => key.includes('/k')).length === 10, 20_000), 'the ordinary watch received its changes').toBe(true);
      // Every admitted stream is reset once it has not drained for the stall time (the ones that
      // waited for room take their turn after); the bytes come back.
      const allEnded = await eventually(async () => {
        await sample();
        return hostile.every((w) => w.outcome !== 'open');
      }, 8 * STALL_MS + 10_000);
      const outcomes = hostile.map((w) => w.outcome);
      console.log(`outcomes: ${JSON.stringify(Object.fromEntries(['refused', 'reset', 'open', 'other'].map((o) => [o, outcomes.filter((x) => x === o).length])))}; peak ${(peakHeld / MiB).toFixed(1)} MiB`);
      expect(allEnded, 'every stalled stream was closed by the node').toBe(true);
      expect(outcomes.filter((o) => o === 'reset').length).toBeGreaterThanOrEqual(3);
      expect(outcomes.filter((o) => o === 'other')).toEqual([]);
      expect(sampledHeld).toBeGreaterThan(0);
      expect(peakHeld).toBeLessThanOrEqual(TENANT_MB * MiB + MiB);
      expect(await eventually(async () => ((await metricOf(leaderAdmin, 'atoll_memory_watch_bytes')) ?? Infinity) < 64 * 1024, 10_000), 'the bytes came back').toBe(true);
      expect(externalPeak - externalBefore).toBeLessThan(48 * MiB);
    } finally {
      for (const session of sessions) session.destroy();
      stopGood.abort();
      await goodWatch;
    }
    // The slots and the memory came back: the same tenant, reading, gets the whole history.
    const reader = new AtollClient({ endpoints: cluster.endpoints, token: tokens['reader']! });
    clients.push(reader);
    const history: string[] = [];
    const stop = new AbortController();
    const reading = (async () => {
      for await (const item of reader.watch('hist', { fromRevision: 0, signal: stop.signal })) {
        if (item.type !== 'progress') history.push(item.key);
        if (history.length === HISTORY_VALUES) stop.abort();
      }
    })().catch(() => undefined);
    expect(await eventually(() => history.length === HISTORY_VALUES, 30_000), 'a reading watch gets the whole history').toBe(true);
    stop.abort();
    await reading;
    expect([1, 2, 3].map((id) => cluster.pidOf(id))).toEqual(pids);
    for (const id of [1, 2, 3]) expect(cluster.isRunning(id)).toBe(true);
  }, 180_000);
});
