/**
 * Hostile clients against the node's limits, on real three-node clusters (one without
 * authentication, one with): a KV.Stream flood from a client that never reads, far-future
 * deadlines, oversized, deeply nested and huge-result scripts, a flood of random tokens, the bound on
 * a tenant admin's tokens, and quota edge cases. Each test asserts the precise error (gRPC status
 * and `atoll-code`) and that nothing else changed: the victim's data intact, no node restarted.
 */
import { readFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import http2 from 'node:http2';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AtollClient, AtollClientError } from '../../src/client/index.js';
import { partitionOf } from '../../src/keys/partition-table.js';
import { newToken } from '../../src/tenancy/token.js';
import { LocalCluster } from '../integration/local-cluster.js';
import { rawSession, rawUnary } from './raw-http2.js';

const root = resolve(import.meta.dirname, '../..');
const sleep = (ms: number): Promise<void> => new Promise((resolveSleep) => setTimeout(resolveSleep, ms));

type Callback = (error: grpc.ServiceError | null, response: Record<string, unknown>) => void;
type RawKv = Record<string, (request: object, metadata: grpc.Metadata, options: grpc.CallOptions, callback: Callback) => void> & grpc.Client;

/** A KV client from the .proto alone, on a connection of its own (not shared with other clients). */
function rawKv(address: string): RawKv {
  const definition = protoLoader.loadSync(['atoll/v1/kv.proto'], { includeDirs: [join(root, 'proto')], longs: String, defaults: true, oneofs: true });
  const pkg = grpc.loadPackageDefinition(definition) as unknown as { atoll: { v1: { KV: new (a: string, c: grpc.ChannelCredentials, o: object) => RawKv } } };
  return new pkg.atoll.v1.KV(address, grpc.credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 });
}

function rawCall(client: RawKv, method: string, request: object, options: { token?: string; deadline?: number } = {}): Promise<Record<string, unknown>> {
  const metadata = new grpc.Metadata();
  if (options.token !== undefined) metadata.set('authorization', `Bearer ${options.token}`);
  return new Promise((resolveCall, reject) => {
    client[method]!.call(client, request, metadata, { deadline: options.deadline ?? Date.now() + 5_000 }, (error, response) =>
      error ? reject(error) : resolveCall(response),
    );
  });
}

/** The gRPC status and atoll-code a call failed with (the test fails if it succeeded). */
async function failureOf(promise: Promise<unknown>): Promise<{ code: number; atollCode: unknown; message: string }> {
  const error = (await promise.then(
    () => undefined,
    (e: unknown) => e,
  )) as grpc.ServiceError | undefined;
  expect(error, 'the call should have failed').toBeDefined();
  return { code: error!.code, atollCode: error!.metadata?.get('atoll-code')[0], message: error!.details };
}

/**
 * failureOf for a raw call that a partition without a leader for a moment (an election on a loaded
 * machine) may refuse with NO_LEADER or NOT_LEADER before it runs: asked again, at most 10 times,
 * so the answer is the one the request itself gets. Returns the last attempt's duration too.
 */
async function settledFailureOf(call: () => Promise<unknown>): Promise<{ code: number; atollCode: unknown; message: string; tookMs: number }> {
  for (let attempt = 1; ; attempt++) {
    const startedMs = Date.now();
    const failure = await failureOf(call());
    const electing = failure.atollCode === 'NO_LEADER' || failure.atollCode === 'NOT_LEADER';
    if (!electing || attempt === 10) return { ...failure, tookMs: Date.now() - startedMs };
    await sleep(300);
  }
}

async function clientFailure(promise: Promise<unknown>): Promise<AtollClientError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AtollClientError);
  return error as AtollClientError;
}

/** Resident memory of a process, from /proc (bytes). */
function rssOf(pid: number): number {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(match![1]) * 1024;
}

function pidsOf(cluster: LocalCluster): number[] {
  return [1, 2, 3].map((id) => cluster.pidOf(id)!);
}

/** One gRPC length-prefixed message holding a StreamRequest with only its id (field 1): no operation. */
function malformedStreamRequest(id: number): Buffer {
  const varint: number[] = [];
  for (let rest = id; ; rest = Math.floor(rest / 128)) {
    if (rest < 128) {
      varint.push(rest);
      break;
    }
    varint.push((rest % 128) | 128);
  }
  const body = Buffer.from([0x08, ...varint]);
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt8(0, 0);
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  return frame;
}

/** One KV.Exists request as a gRPC length-prefixed message (field 1: the key). */
function kvExistsFrame(key: string): Buffer {
  const keyBytes = Buffer.from(key, 'utf8');
  const message = Buffer.concat([Buffer.from([0x0a, keyBytes.length]), keyBytes]);
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  return frame;
}

describe('hostile clients against a cluster without authentication', () => {
  let cluster: LocalCluster;
  let client: AtollClient;
  let pids: number[];

  beforeAll(async () => {
    cluster = await LocalCluster.start({ partitions: 8 });
    client = cluster.client();
    await client.put('victim/data', 'intact');
    pids = pidsOf(cluster);
  }, 60_000);

  afterAll(async () => {
    client?.close();
    await cluster?.stop();
  });

  const nothingChanged = async (): Promise<void> => {
    expect((await client.get('victim/data')).text()).toBe('intact');
    expect(pidsOf(cluster)).toEqual(pids);
    for (const id of [1, 2, 3]) expect(cluster.isRunning(id)).toBe(true);
  };

  it('a stream flood of malformed requests from a client that never reads stays bounded at the node', async () => {
    const address = cluster.endpoints[0]!;
    const pid = cluster.pidOf(1)!;
    const before = rssOf(pid);
    // A raw HTTP/2 client: 400,000 malformed requests (no operation, so each would get an error
    // answer) in one write, and never a read of the answers.
    const session = http2.connect(`http://${address}`);
    session.on('error', () => undefined);
    const stream = session.request({ ':method': 'POST', ':path': '/atoll.v1.KV/Stream', 'content-type': 'application/grpc', te: 'trailers' });
    stream.on('error', () => undefined);
    stream.pause();
    const floodCount = 400_000;
    const frames: Buffer[] = [];
    for (let id = 1; id <= floodCount; id++) frames.push(malformedStreamRequest(id));
    stream.write(Buffer.concat(frames));
    try {
      // The node keeps serving others meanwhile.
      for (let index = 0; index < 20; index++) {
        await client.put(`flood/other-${index}`, 'ok');
        await sleep(100);
      }
      const grownBytes = rssOf(pid) - before;
      // Without the bound the node read every request and queued an answer object for each
      // (hundreds of MB); with it, it stops reading once maxStreamRequestsInFlight answers wait.
      expect(grownBytes).toBeLessThan(64 * 1024 * 1024);
      expect((await client.get('flood/other-19')).text()).toBe('ok');
    } finally {
      stream.close(http2.constants.NGHTTP2_CANCEL);
      session.destroy();
    }
    await nothingChanged();
  });

  it('a deadline years away is clamped: the put succeeds and applies once', async () => {
    // Sent to the leader of the keys' partition, so the node that times the request is the one
    // that receives it (a forward would carry the deadline on, re-encoded by gRPC).
    const info = await client.clusterInfo();
    const leader = info.partitions[partitionOf('deadline', 8)]!.leader;
    const kv = rawKv(cluster.addresses.get(leader)!);
    try {
      const farMs = Date.now() + 3 * 365 * 24 * 60 * 60 * 1000;
      const put = await rawCall(kv, 'Put', { key: 'deadline/far', value: Buffer.from('once') }, { deadline: farMs });
      expect(put['applied']).toBe(true);
      const got = await rawCall(kv, 'Get', { key: 'deadline/far' });
      expect(Buffer.from(got['value'] as Uint8Array).toString()).toBe('once');
      expect(Number(got['version'])).toBe(1);
      // The same on a stream, with the largest per-request timeout (2^32 - 1 ms, about 50 days):
      // past setTimeout's 2^31 - 1 ms, which Node would fire at once.
      const answers = await new Promise<Array<Record<string, unknown>>>((resolveStream, reject) => {
        const call = (kv['Stream'] as unknown as (m: grpc.Metadata) => grpc.ClientDuplexStream<object, Record<string, unknown>>).call(kv, new grpc.Metadata());
        const received: Array<Record<string, unknown>> = [];
        call.on('data', (answer: Record<string, unknown>) => received.push(answer));
        call.on('error', reject);
        call.on('end', () => resolveStream(received));
        call.write({ id: '1', timeoutMs: 0xffff_ffff, put: { key: 'deadline/stream', value: Buffer.from('once') } });
        call.end();
      });
      expect(answers).toHaveLength(1);
      expect(answers[0]).toMatchObject({ id: '1', result: 'put', put: { applied: true } });
      expect((await client.get('deadline/stream')).version).toBe(1);
    } finally {
      kv.close();
    }
    await nothingChanged();
  });

  it('oversized, deeply nested and huge-result scripts fail with SCRIPT_LIMIT, fast', async () => {
    const kv = rawKv(cluster.endpoints[0]!);
    try {
      const limit = { code: grpc.status.RESOURCE_EXHAUSTED, atollCode: 'SCRIPT_LIMIT' };
      const oversized = `return "${'x'.repeat(70_000)}"`;
      const tooLarge = await settledFailureOf(() => rawCall(kv, 'ExecuteScript', { script: oversized, bucket: 'victim' }));
      expect(tooLarge).toMatchObject(limit);
      for (const depth of [100_000, 30_000]) {
        const nested = `return ${'('.repeat(depth)}1${')'.repeat(depth)}`;
        expect(await settledFailureOf(() => rawCall(kv, 'ExecuteScript', { script: nested, bucket: 'victim' }))).toMatchObject(limit);
      }
      // A read-only script returning one 1 MB string 1,000 times over: a gigabyte of JSON.
      const params = { s: JSON.stringify('x'.repeat(1_000_000)) };
      const huge = 'let a = [@s, @s, @s, @s, @s, @s, @s, @s, @s, @s]\nlet b = [a, a, a, a, a, a, a, a, a, a]\nreturn [b, b, b, b, b, b, b, b, b, b]';
      const failure = await settledFailureOf(() => rawCall(kv, 'ExecuteScript', { script: huge, params, bucket: 'victim' }));
      expect(failure).toMatchObject(limit);
      expect(failure.message).toMatch(/result is more than/);
      // Refused by its measured size, not by building a gigabyte first (which takes far longer).
      expect(failure.tookMs).toBeLessThan(3_000);
    } finally {
      kv.close();
    }
    await nothingChanged();
  });
});

describe('hostile clients against a cluster with authentication', () => {
  const adminToken = newToken();
  const maxTokensPerTenant = 40;
  let cluster: LocalCluster;
  let admin: AtollClient;
  let pids: number[];
  const clients: AtollClient[] = [];
  const clientFor = (token: string): AtollClient => {
    const created = new AtollClient({ endpoints: cluster.endpoints, token });
    clients.push(created);
    return created;
  };
  const tokens: Record<string, string> = {};

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'atoll-limits-'));
    const file = join(dir, 'admin-token');
    writeFileSync(file, `${adminToken}\n`, { mode: 0o600 });
    // The token bound is lowered so the test need not create a thousand tokens (the default).
    cluster = await LocalCluster.start({ partitions: 8, extraArgs: ['--admin-token-file', file, '--max-tokens-per-tenant', String(maxTokensPerTenant)] });
    admin = clientFor(adminToken);
    for (const [name, tenant, role] of [
      ['victim', 'victim', 'readwrite'],
      ['quota', 'quota', 'readwrite'],
      ['history', 'history', 'readwrite'],
      ['bounded', 'bounded', 'admin'],
    ] as const) {
      tokens[name] = (await admin.authCall('CreateToken', { tenant, role, name }))['token'] as string;
    }
    await clientFor(tokens['victim']!).put('victim/data', 'intact');
    pids = pidsOf(cluster);
  }, 60_000);

  afterAll(async () => {
    for (const created of clients) created.close();
    await cluster?.stop();
  });

  const nothingChanged = async (): Promise<void> => {
    expect((await clientFor(tokens['victim']!).get('victim/data')).text()).toBe('intact');
    expect(pidsOf(cluster)).toEqual(pids);
    for (const id of [1, 2, 3]) expect(cluster.isRunning(id)).toBe(true);
  };

  it('a flood of random tokens: each connection is closed after 20 failures, its address refused at accept after 100; valid tokens keep working', async () => {
    const [host, port] = cluster.endpoints[0]!.split(':') as [string, string];
    const body = kvExistsFrame('victim/data');
    const victim = clientFor(tokens['victim']!);
    const outcomes = new Map<string, number>();
    const count = (kind: string): void => void outcomes.set(kind, (outcomes.get(kind) ?? 0) + 1);
    const perConnection: number[] = [];
    const startedMs = Date.now();
    // The flood comes from 127.0.0.5, a source of its own: the victim's calls come from 127.0.0.1.
    let refusedAtAccept = false;
    for (let connection = 0; connection < 30 && !refusedAtAccept; connection++) {
      const session = rawSession(host, Number(port), '127.0.0.5');
      let lookedUp = 0;
      try {
        // Batches of 10 until the node closes the connection (or refuses it at accept).
        for (let batch = 0; batch < 10 && !session.closed; batch++) {
          const results = await Promise.all(Array.from({ length: 10 }, () => rawUnary(session.session, '/atoll.v1.KV/Exists', { authorization: `Bearer ${newToken()}` }, body)));
          for (const result of results) {
            count(result);
            if (result === 'unknown or revoked token') lookedUp++;
          }
        }
        refusedAtAccept = (await session.settled) === 'refused';
        expect(session.closed, `connection ${connection} should have been closed by the node`).toBe(true);
      } finally {
        session.session.destroy();
      }
      perConnection.push(lookedUp);
      if (connection % 5 === 0) expect((await victim.get('victim/data')).text()).toBe('intact');
    }
    expect(Date.now() - startedMs).toBeLessThan(30_000);
    // Each connection cost at most 20 lookups (plus the rest of the batch that reached the limit),
    // the source at most 100 (plus one batch), and then its next connection was refused at accept.
    for (const lookedUp of perConnection) expect(lookedUp).toBeLessThanOrEqual(30);
    const lookups = outcomes.get('unknown or revoked token') ?? 0;
    expect(lookups).toBeGreaterThanOrEqual(100);
    expect(lookups).toBeLessThanOrEqual(110);
    expect(refusedAtAccept, `outcomes ${JSON.stringify([...outcomes])}`).toBe(true);
    // A valid token from the blocked address on a new connection waits for the window too; from
    // another address, and on connections that never failed, valid tokens keep working.
    const blocked = rawSession(host, Number(port), '127.0.0.5');
    expect(await blocked.settled).toBe('refused');
    blocked.session.destroy();
    const other = rawSession(host, Number(port), '127.0.0.6');
    try {
      expect(await rawUnary(other.session, '/atoll.v1.KV/Exists', { authorization: `Bearer ${tokens['victim']!}` }, body)).toBe('answered');
    } finally {
      other.session.destroy();
    }
    // The node counts both.
    const metrics = await (await fetch(`http://${cluster.adminAddresses.get(1)!}/metrics`)).text();
    const counter = (name: string): number => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(metrics)?.[1] ?? Number.NaN);
    expect(counter('atoll_failed_auth_connections_closed_total')).toBeGreaterThanOrEqual(5);
    expect(counter('atoll_failed_auth_connections_refused_total')).toBeGreaterThanOrEqual(2);
    await nothingChanged();
  });

  it("bounds a tenant admin's tokens with RESOURCE_EXHAUSTED", async () => {
    const tenantAdmin = clientFor(tokens['bounded']!);
    let created = 1; // the tenant admin's own token
    let refusal: AtollClientError | undefined;
    // Four creators at a time until the bound refuses one.
    while (refusal === undefined && created < maxTokensPerTenant + 100) {
      const results = await Promise.allSettled(Array.from({ length: 4 }, () => tenantAdmin.authCall('CreateToken', { tenant: 'bounded', role: 'read', name: 'many' })));
      for (const result of results) {
        if (result.status === 'fulfilled') created++;
        else refusal = result.reason as AtollClientError;
      }
    }
    expect(refusal).toBeInstanceOf(AtollClientError);
    expect(refusal).toMatchObject({ code: 'RESOURCE_EXHAUSTED' });
    // Creations on different nodes may race past the bound by the few in flight, never further.
    expect(created).toBeGreaterThanOrEqual(maxTokensPerTenant);
    expect(created).toBeLessThanOrEqual(maxTokensPerTenant + 3);
    expect((await clientFailure(tenantAdmin.authCall('CreateToken', { tenant: 'bounded', role: 'read', name: 'one-more' }))).code).toBe('RESOURCE_EXHAUSTED');
    await nothingChanged();
  }, 60_000);

  it('over quota: puts are refused, deletes, extend and delete-only transactions and scripts go through, and usage falls back under', async () => {
    const tenant = clientFor(tokens['quota']!);
    for (let index = 0; index < 5; index++) await tenant.put(`q/key-${index}`, 'v', { ttlMs: 600_000 });
    await admin.authCall('SetQuota', { tenant: 'quota', quota: { maxKeys: '4' } });
    // Usage is published by the leaders every second and cached for a second; wait for the refusal.
    let refused: AtollClientError | undefined;
    for (let attempt = 0; attempt < 60 && refused === undefined; attempt++) {
      refused = await tenant.put('q/one-more', 'v').then(
        () => undefined,
        (error: unknown) => error as AtollClientError,
      );
      if (refused === undefined) {
        await tenant.delete('q/one-more');
        await sleep(250);
      }
    }
    expect(refused?.code).toBe('QUOTA_EXCEEDED');
    expect(refused?.grpcStatusCode).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((await tenant.get('q/one-more')).found).toBe(false);
    // A transaction that writes a value is refused too, and leaves nothing behind.
    const writing = await tenant.beginTransaction('q');
    await writing.put('q/from-txn', 'v');
    expect((await clientFailure(writing.commit())).code).toBe('QUOTA_EXCEEDED');
    expect((await tenant.get('q/from-txn')).found).toBe(false);
    // Getting back under the quota is always allowed.
    expect((await tenant.extend('q/key-0', 1_200_000)).extended).toBe(true);
    expect((await tenant.delete('q/key-0')).deleted).toBe(true);
    const tx = await tenant.beginTransaction('q');
    await tx.delete('q/key-1');
    await tx.commit();
    const script = await tenant.executeScript('delete "q/key-2"\nreturn 1');
    expect(script.value).toBe(1);
    expect((await tenant.get('q/key-2')).found).toBe(false);
    // Two keys left, under the quota of four: puts work again once usage is republished.
    let accepted = false;
    for (let attempt = 0; attempt < 60 && !accepted; attempt++) {
      accepted = await tenant.put('q/again', 'v').then(
        () => true,
        () => false,
      );
      if (!accepted) await sleep(250);
    }
    expect(accepted).toBe(true);
    await nothingChanged();
  }, 60_000);

  it('retained history counts toward the bytes quota: overwriting one key with large values is refused once history passes it; deleting brings the tenant back under', async () => {
    const tenant = clientFor(tokens['history']!);
    const maxBytes = 100_000;
    await admin.authCall('SetQuota', { tenant: 'history', quota: { maxBytes: String(maxBytes) } });
    // One key, overwritten with 16 KiB values: live bytes stay near 16 KiB (far under the quota)
    // while every overwrite adds the old value to history. Usage is published every second and
    // cached for a second, so writes go on a little past the line before the refusal.
    const valueOf = (index: number): string => `${index}:`.padEnd(16 * 1024, 'x');
    let accepted = 0;
    let refused: AtollClientError | undefined;
    const startedMs = Date.now();
    for (let attempt = 0; attempt < 100 && refused === undefined && Date.now() - startedMs < 30_000; attempt++) {
      refused = await tenant.put('h/big', valueOf(attempt)).then(
        () => undefined,
        (error: unknown) => error as AtollClientError,
      );
      if (refused === undefined) {
        accepted = attempt + 1;
        await sleep(100);
      }
    }
    expect(refused).toBeInstanceOf(AtollClientError);
    expect(refused?.code).toBe('QUOTA_EXCEEDED');
    expect(refused?.grpcStatusCode).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(refused?.message).toMatch(/retained history/);
    // The quota was crossed by history: at least the ~6 overwrites the quota holds were accepted.
    expect(accepted).toBeGreaterThanOrEqual(Math.floor(maxBytes / (16 * 1024)));
    // The refusal says why: live bytes far under the quota, live plus history at or over it.
    const stored = /stores (\d+) bytes \((\d+) live, (\d+) retained history/.exec(refused!.message);
    expect(stored).not.toBeNull();
    const [liveBytes, historyBytes] = [Number(stored![2]), Number(stored![3])];
    expect(liveBytes).toBeLessThan(maxBytes / 2);
    expect(liveBytes + historyBytes).toBeGreaterThanOrEqual(maxBytes);
    // The refused put changed nothing: the key holds the last accepted value (compaction, which the
    // refusal sets off, keeps every key's newest version).
    expect((await tenant.get('h/big')).text()).toBe(valueOf(accepted - 1));
    // Deletes pass over quota. A delete only moves the value into history, but the partitions that
    // hold history of a tenant at its bytes quota compact it (at most every 10 s each), so the
    // tenant gets back under by itself: a new key is accepted again within seconds. Without that
    // compaction this partition (100,000 revisions of retention) would keep the history for good.
    expect((await tenant.delete('h/big')).deleted).toBe(true);
    expect((await tenant.get('h/big')).found).toBe(false);
    const backUnderMs = Date.now();
    let written = false;
    while (!written && Date.now() - backUnderMs < 30_000) {
      written = await tenant.put('h/small', 'v').then(
        () => true,
        (error: unknown) => {
          expect(error).toMatchObject({ code: 'QUOTA_EXCEEDED' });
          return false;
        },
      );
      if (!written) await sleep(500);
    }
    expect(written, 'the tenant never got back under its bytes quota after deleting').toBe(true);
    console.log(`hostile-limits: back under the bytes quota ${Date.now() - backUnderMs} ms after the delete`);
    expect((await tenant.get('h/small')).text()).toBe('v');
    // Usage is published every second and each node caches the totals for a second, so the node
    // that answers GetUsage may lag the one that admitted the put by about two seconds.
    let storedBytes = Number.POSITIVE_INFINITY;
    for (const startedUsageMs = Date.now(); storedBytes >= maxBytes && Date.now() - startedUsageMs < 10_000; ) {
      const usage = ((await admin.authCall('GetUsage', { tenant: 'history' }))['tenants'] as Array<{ tenant: string; bytes: string; historyBytes: string }>)[0]!;
      storedBytes = Number(usage.bytes) + Number(usage.historyBytes);
      if (storedBytes >= maxBytes) await sleep(250);
    }
    expect(storedBytes).toBeLessThan(maxBytes);
    await nothingChanged();
  }, 60_000);
});
