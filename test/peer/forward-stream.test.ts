/**
 * Forwarded requests travel on one long-lived Peer.ForwardStream per peer (src/peer/forward-stream.ts,
 * src/peer/forward-service.ts), with the unary Peer.Forward's error semantics, which the router's
 * retry depends on (src/sim/node/sim-network.ts restates them). A real PeerTransport (node 2)
 * forwards to a peer port served as atoll-server serves it (peer-service.ts), over a stand-in
 * leader (node 1) whose executeForwarded the tests steer by key: `hold/...` waits until released
 * or cancelled, `fail/...` throws NOT_LEADER with a leader hint and the not-applied mark, `huge/...`
 * answers more than a gRPC message holds, anything else is found. An "old" peer port serves Peer without ForwardStream, as a node of a version
 * before it does.
 */
import * as grpc from '@grpc/grpc-js';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CallContext } from '../../src/api/node-api.js';
import type { KvOperation, KvResult } from '../../src/api/operations.js';
import { AtollError } from '../../src/errors.js';
import { defaultLimits } from '../../src/limits.js';
import type { AtollNode } from '../../src/node/atoll-node.js';
import { PeerTransport } from '../../src/peer/grpc-peer-transport.js';
import { peerServiceHandlers } from '../../src/peer/peer-service.js';
import { createGrpcServer } from '../../src/server/grpc-server.js';
import { peerServiceDefinition } from '../../src/wire/protos.js';
import { clusterIdMetadataKey, nodeIdMetadataKey } from '../../src/node/cluster/cluster-descriptor.js';
import { peerSecretMetadataKey } from '../../src/node/peers/peer-secret.js';
import { MAX_CALLS_IN_FLIGHT } from '../../src/peer/forward-stream.js';
import { encodeForwardRequest } from '../../src/wire/forward-codec.js';
import { decodeForwardReply, encodeForwardCall, forwardRepliesOf, type ForwardAnswer } from '../../src/wire/forward-stream-codec.js';
import type { CallSignal } from '../../src/api/call-signal.js';

const SECRET = 'f'.repeat(43);
const CLUSTER = 'c'.repeat(32);
const silent = pino({ level: 'silent' });

/** The stand-in leader: what peer-service.ts asks of a node, with executeForwarded steered by key. */
class StandInLeader {
  readonly descriptor = { clusterId: CLUSTER };
  readonly limits = defaultLimits;
  /** Every call that reached executeForwarded, in order. */
  readonly started: Array<{ key: string; context: CallContext }> = [];
  /** Releases the `hold/` calls waiting, by key. */
  readonly held = new Map<string, () => void>();

  peerCallAllowed(secret: unknown): boolean {
    return secret === SECRET;
  }

  memberRemoved(): boolean {
    return false;
  }

  async executeForwarded(operation: KvOperation, context: CallContext): Promise<KvResult> {
    const key = (operation.request as { key: string }).key;
    this.started.push({ key, context });
    if (key.startsWith('fail/')) {
      throw new AtollError('NOT_LEADER', `partition 7: not the leader (${key})`, { partition: 7, leaderHint: { nodeId: 3, address: '10.0.0.3:7100' }, neverSent: true });
    }
    if (key.startsWith('hold/')) {
      await new Promise<void>((resolve, reject) => {
        this.held.set(key, resolve);
        context.signal?.addEventListener('abort', () => reject(new AtollError('UNAVAILABLE', `${key} aborted`)), { once: true });
      });
    }
    // A value past the gRPC message bound (limits.maxMessageBytes): the answer cannot travel.
    return key.startsWith('huge/') ? found(key, Buffer.alloc(defaultLimits.maxMessageBytes + 1)) : found(key);
  }

  signalOf(key: string): CallSignal | undefined {
    return this.started.find((call) => call.key === key)?.context.signal;
  }
}

function get(key: string): KvOperation {
  return { kind: 'get', request: { key, consistency: 'linearizable' } };
}

function found(key: string, value: Buffer = Buffer.from(key)): KvResult {
  return { kind: 'get', response: { found: true, value, createRevision: 1, modRevision: 2, version: 1, expiresAtMs: 0, revision: 3 } };
}

function valueOf(result: KvResult): string {
  return result.kind === 'get' ? Buffer.from(result.response.value).toString() : `not a get: ${result.kind}`;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function until(what: string, condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** What a promise rejected with (undefined if it resolved). */
async function rejection(promise: Promise<unknown>): Promise<AtollError | undefined> {
  return promise.then(
    () => undefined,
    (error: unknown) => error as AtollError,
  );
}

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

interface PeerPort {
  readonly server: grpc.Server;
  readonly port: number;
  /** ForwardStream and unary Forward calls that reached the port's handlers (refused ones included). */
  readonly counts: { streams: number; unary: number };
  /** Messages (ForwardFrames) that came on its ForwardStreams. */
  readonly frames: { count: number };
}

/** `leader`'s peer port at 127.0.0.1:`port` (default: any free one); `old`: Peer without ForwardStream. */
async function servePeer(leader: StandInLeader, options: { old?: boolean; port?: number } = {}): Promise<PeerPort> {
  const counts = { streams: 0, unary: 0 };
  const frames = { count: 0 };
  const handlers = peerServiceHandlers(leader as unknown as AtollNode, undefined as unknown as PeerTransport, silent);
  const { forward, forwardStream } = handlers as Record<string, (...args: unknown[]) => void>;
  const counted = {
    ...handlers,
    forward: (...args: unknown[]) => {
      counts.unary++;
      forward!(...args);
    },
    forwardStream: (...args: unknown[]) => {
      counts.streams++;
      (args[0] as grpc.ServerDuplexStream<unknown, unknown>).on('data', () => void frames.count++);
      forwardStream!(...args);
    },
  };
  const { ForwardStream: _stream, ...oldDefinition } = peerServiceDefinition;
  const server = createGrpcServer();
  server.addService(options.old === true ? oldDefinition : peerServiceDefinition, counted as grpc.UntypedServiceImplementation);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${options.port ?? 0}`, grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
  );
  cleanups.push(() => server.forceShutdown());
  return { server, port, counts, frames };
}

/** Node 2's transport to node 1 at 127.0.0.1:`port`. */
function transportTo(port: number, secret = SECRET, clusterId = CLUSTER): PeerTransport {
  const events = { onMessages: () => undefined, onPeerUnreachable: () => undefined };
  const transport = new PeerTransport(2, new Map([[1, `127.0.0.1:${port}`]]), events, silent, secret, undefined, clusterId);
  cleanups.push(() => transport.close());
  return transport;
}

const inSeconds = (seconds: number): number => Date.now() + seconds * 1_000;

describe('forwarding on a Peer.ForwardStream', () => {
  it('carries many concurrent forwards on one stream per peer, each answered with its own result', async () => {
    const leader = new StandInLeader();
    const peer = await servePeer(leader);
    const transport = transportTo(peer.port);
    for (let round = 0; round < 2; round++) {
      const keys = Array.from({ length: 200 }, (_, index) => `k/${round}/${index}`);
      const results = await Promise.all(keys.map((key) => transport.forward(1, get(key), 1, inSeconds(5))));
      expect(results.map(valueOf)).toEqual(keys);
    }
    expect(peer.counts).toEqual({ streams: 1, unary: 0 });
    expect(transport.forwardStats(1)).toEqual({ streamsOpened: 1, streamCalls: 400, unaryCalls: 0 });
    // Calls started while a message is being written travel together in the next one.
    expect(peer.frames.count).toBeLessThan(100);
    // The leader ran them with the caller's hops and a deadline within the caller's.
    expect(leader.started).toHaveLength(400);
    expect(leader.started[0]!.context.hops).toBe(1);
    expect(leader.started[0]!.context.deadlineMs).toBeLessThanOrEqual(inSeconds(5));
  });

  it('gives each call its own deadline: one expires (DEADLINE_EXCEEDED, outcome unknown) while the others complete', async () => {
    const leader = new StandInLeader();
    const peer = await servePeer(leader);
    const transport = transportTo(peer.port);
    const startedMs = Date.now();
    const slow = rejection(transport.forward(1, get('hold/slow'), 0, Date.now() + 300));
    const others = Promise.all(Array.from({ length: 20 }, (_, index) => transport.forward(1, get(`k/${index}`), 0, inSeconds(5))));
    expect((await others).map(valueOf)).toEqual(Array.from({ length: 20 }, (_, index) => `k/${index}`));
    const error = await slow;
    const elapsedMs = Date.now() - startedMs;
    expect(error).toBeInstanceOf(AtollError);
    expect(error?.code).toBe('DEADLINE_EXCEEDED');
    expect(error?.details?.['fromTransport']).toBe(true);
    expect(error?.details?.['neverSent']).toBeUndefined();
    expect(elapsedMs).toBeGreaterThanOrEqual(290);
    expect(elapsedMs).toBeLessThan(2_000);
    // The leader had the time left as its deadline, and the cancel frame stopped its work.
    const slowCall = leader.started.find((call) => call.key === 'hold/slow')!;
    expect(slowCall.context.deadlineMs - startedMs).toBeLessThanOrEqual(400);
    await until('the leader to see the cancellation', () => leader.signalOf('hold/slow')?.aborted === true);
    // The stream goes on.
    expect(valueOf(await transport.forward(1, get('k/after'), 0, inSeconds(5)))).toBe('k/after');
    expect(transport.forwardStats(1)).toMatchObject({ streamsOpened: 1, unaryCalls: 0 });
  });

  it('cancels a call when its AbortSignal fires (UNAVAILABLE, outcome unknown); the leader drops it, the others complete', async () => {
    const leader = new StandInLeader();
    const peer = await servePeer(leader);
    const transport = transportTo(peer.port);
    const controller = new AbortController();
    const cancelled = rejection(transport.forward(1, get('hold/cancelled'), 0, inSeconds(5), controller.signal));
    const kept = transport.forward(1, get('hold/kept'), 0, inSeconds(5));
    await until('both calls to reach the leader', () => leader.held.size === 2);
    controller.abort();
    const error = await cancelled;
    // As grpc-js fails a cancelled unary call: CANCELLED, which the forwarding node reads as UNAVAILABLE.
    expect(error?.code).toBe('UNAVAILABLE');
    expect(error?.details).toMatchObject({ fromTransport: true, grpcStatus: grpc.status.CANCELLED });
    expect(error?.details?.['neverSent']).toBeUndefined();
    await until('the leader to see the cancellation', () => leader.signalOf('hold/cancelled')?.aborted === true);
    expect(leader.signalOf('hold/kept')?.aborted).toBe(false);
    leader.held.get('hold/kept')!();
    expect(valueOf(await kept)).toBe('hold/kept');
    // A signal aborted before the call is never sent.
    expect((await rejection(transport.forward(1, get('k/late'), 0, inSeconds(5), controller.signal)))?.code).toBe('UNAVAILABLE');
    expect(leader.started.map((call) => call.key)).not.toContain('k/late');
    expect(peer.counts).toEqual({ streams: 1, unary: 0 });
  });

  it("delivers the leader's AtollError as the unary call does: code, message, leader hint, not-applied mark", async () => {
    const leader = new StandInLeader();
    const current = await servePeer(leader);
    const old = await servePeer(leader, { old: true });
    const onStream = await rejection(transportTo(current.port).forward(1, get('fail/x'), 1, inSeconds(5)));
    const unary = await rejection(transportTo(old.port).forward(1, get('fail/x'), 1, inSeconds(5)));
    expect(current.counts).toEqual({ streams: 1, unary: 0 });
    expect(old.counts).toEqual({ streams: 0, unary: 1 });
    expect(onStream).toBeInstanceOf(AtollError);
    expect({ code: onStream?.code, message: onStream?.message, details: onStream?.details }).toEqual({ code: unary?.code, message: unary?.message, details: unary?.details });
    expect(onStream?.code).toBe('NOT_LEADER');
    expect(onStream?.message).toBe('partition 7: not the leader (fail/x)');
    expect(onStream?.details).toEqual({ grpcStatus: grpc.status.UNAVAILABLE, leaderHint: { nodeId: 3, address: '10.0.0.3:7100' }, neverSent: true });
  });

  it('fails every call in flight when the stream breaks, as outcome unknown (never neverSent); the next forward opens a new stream', async () => {
    const leader = new StandInLeader();
    const peer = await servePeer(leader);
    const transport = transportTo(peer.port);
    const keys = Array.from({ length: 5 }, (_, index) => `hold/${index}`);
    const inFlight = keys.map((key) => rejection(transport.forward(1, get(key), 0, inSeconds(10))));
    await until('the calls to reach the leader', () => leader.held.size === keys.length);
    const brokenAtMs = Date.now();
    peer.server.forceShutdown();
    for (const error of await Promise.all(inFlight)) {
      expect(error).toBeInstanceOf(AtollError);
      expect(error?.code).toBe('UNAVAILABLE');
      expect(error?.details?.['fromTransport']).toBe(true);
      expect(error?.details?.['neverSent']).toBeUndefined();
    }
    // They failed when the stream broke, not at their deadlines.
    expect(Date.now() - brokenAtMs).toBeLessThan(3_000);
    // The peer is back on the same port: forwards get through again, on a new stream. Until the
    // channel reconnects a forward may fail, but only as never sent (no connection).
    const again = await servePeer(leader, { port: peer.port });
    let answer: KvResult | undefined;
    for (let attempt = 0; answer === undefined && attempt < 100; attempt++) {
      try {
        answer = await transport.forward(1, get('k/again'), 0, inSeconds(5));
      } catch (error) {
        expect((error as AtollError).details?.['neverSent']).toBe(true);
        await sleep(50);
      }
    }
    expect(answer && valueOf(answer)).toBe('k/again');
    expect(again.counts.streams).toBe(1);
    expect(transport.forwardStats(1)!.streamsOpened).toBeGreaterThanOrEqual(2);
    expect(transport.forwardStats(1)!.unaryCalls).toBe(0);
  });

  it('sends unary Forward calls to a peer without Peer.ForwardStream (UNIMPLEMENTED), and keeps doing so', async () => {
    const leader = new StandInLeader();
    const old = await servePeer(leader, { old: true });
    const transport = transportTo(old.port);
    const keys = Array.from({ length: 10 }, (_, index) => `k/${index}`);
    // The first forwards went out on a stream the peer does not know: they are sent again, unary.
    expect((await Promise.all(keys.map((key) => transport.forward(1, get(key), 0, inSeconds(5))))).map(valueOf)).toEqual(keys);
    expect(transport.forwardStats(1)).toEqual({ streamsOpened: 1, streamCalls: 10, unaryCalls: 10 });
    expect(valueOf(await transport.forward(1, get('k/later'), 0, inSeconds(5)))).toBe('k/later');
    expect(transport.forwardStats(1)).toEqual({ streamsOpened: 1, streamCalls: 10, unaryCalls: 11 });
    expect(old.counts.unary).toBe(11);
    // Each ran once.
    expect(leader.started.map((call) => call.key).sort()).toEqual([...keys, 'k/later'].sort());
  });

  it('refuses a stream with a wrong peer secret or another cluster id, as it refuses a unary call', async () => {
    const leader = new StandInLeader();
    const current = await servePeer(leader);
    const old = await servePeer(leader, { old: true });
    for (const [secret, clusterId, code] of [
      ['w'.repeat(43), CLUSTER, 'UNAUTHENTICATED'],
      [SECRET, 'd'.repeat(32), 'CLUSTER_MISMATCH'],
    ] as const) {
      const onStream = transportTo(current.port, secret, clusterId);
      const errors = await Promise.all([1, 2, 3].map((index) => rejection(onStream.forward(1, get(`k/${index}`), 0, inSeconds(5)))));
      const unary = await rejection(transportTo(old.port, secret, clusterId).forward(1, get('k/unary'), 0, inSeconds(5)));
      for (const error of errors) {
        expect(error?.code).toBe(code);
        expect(error?.details).toEqual(unary?.details);
        expect(error?.details?.['fromTransport']).toBeUndefined();
      }
      expect(onStream.forwardStats(1)).toEqual({ streamsOpened: 1, streamCalls: 3, unaryCalls: 0 });
    }
    // One stream per transport reached the handler, which refused it; no call ran.
    expect(current.counts.streams).toBe(2);
    expect(leader.started).toEqual([]);
  });

  it('writes one message at a time, as gRPC flow control lets it: large requests all arrive, in order, on the one stream', async () => {
    const leader = new StandInLeader();
    const peer = await servePeer(leader);
    const transport = transportTo(peer.port);
    // 64 puts of 256 KiB: far past HTTP/2's flow-control window, so writes wait for the peer to read.
    const keys = Array.from({ length: 64 }, (_, index) => `big/${index}`);
    const value = Buffer.alloc(256 * 1024, 7);
    const put = (key: string): KvOperation => ({ kind: 'put', request: { key, value } }) as KvOperation;
    const results = await Promise.all(keys.map((key) => transport.forward(1, put(key), 0, inSeconds(10))));
    expect(results.map(valueOf)).toEqual(keys);
    expect(leader.started.map((call) => call.key)).toEqual(keys);
    expect(transport.forwardStats(1)).toEqual({ streamsOpened: 1, streamCalls: 64, unaryCalls: 0 });
  });

  it('fails only the call whose answer passes the message bound, with the RESOURCE_EXHAUSTED a unary call gets', async () => {
    const leader = new StandInLeader();
    const current = await servePeer(leader);
    const old = await servePeer(leader, { old: true });
    const transport = transportTo(current.port);
    const others = Promise.all(Array.from({ length: 10 }, (_, index) => transport.forward(1, get(`k/${index}`), 0, inSeconds(5))));
    const onStream = await rejection(transport.forward(1, get('huge/x'), 0, inSeconds(5)));
    const unary = await rejection(transportTo(old.port).forward(1, get('huge/x'), 0, inSeconds(5)));
    expect(onStream?.code).toBe('RESOURCE_EXHAUSTED');
    expect({ code: onStream?.code, details: onStream?.details }).toEqual({ code: unary?.code, details: unary?.details });
    expect((await others).map(valueOf)).toHaveLength(10);
    expect(valueOf(await transport.forward(1, get('k/after'), 0, inSeconds(5)))).toBe('k/after');
    expect(transport.forwardStats(1)).toMatchObject({ streamsOpened: 1, unaryCalls: 0 });
  });

  it('replaces a stream after an hour: the old one is half-closed, answers its calls and ends; so does close()', async () => {
    const leader = new StandInLeader();
    const peer = await servePeer(leader);
    const transport = transportTo(peer.port);
    const held = transport.forward(1, get('hold/old'), 0, inSeconds(5));
    await until('the call to reach the leader', () => leader.held.size === 1);
    // The next forward starts an hour on (the clock moved for that call only: the leader keeps the real one).
    const realNow = Date.now.bind(Date);
    const hourLater = vi.spyOn(Date, 'now').mockImplementation(() => realNow() + 61 * 60 * 1000);
    let fresh: Promise<KvResult>;
    try {
      fresh = transport.forward(1, get('k/new'), 0, Date.now() + 5_000);
    } finally {
      hourLater.mockRestore();
    }
    expect(valueOf(await fresh)).toBe('k/new');
    expect(transport.forwardStats(1)).toMatchObject({ streamsOpened: 2, unaryCalls: 0 });
    leader.held.get('hold/old')!();
    expect(valueOf(await held)).toBe('hold/old');
    // Closing the transport half-closes the stream too: a call in flight is still answered.
    const last = transport.forward(1, get('hold/last'), 0, inSeconds(5));
    await until('the last call to reach the leader', () => leader.held.has('hold/last'));
    transport.close();
    leader.held.get('hold/last')!();
    expect(valueOf(await last)).toBe('hold/last');
    expect(peer.counts).toEqual({ streams: 2, unary: 0 });
  });

  it('answers a call past MAX_CALLS_IN_FLIGHT of one stream OVERLOADED, never sent, without running it; the calls in flight complete', async () => {
    // A forwarding side that does not keep to the bound (forward-stream.ts does): raw frames on the stream.
    const leader = new StandInLeader();
    const peer = await servePeer(leader);
    const definition = peerServiceDefinition['ForwardStream'] as grpc.MethodDefinition<unknown, unknown>;
    const Client = grpc.makeClientConstructor({ ForwardStream: { ...definition, requestSerialize: (frame: unknown) => frame as Buffer } }, 'atoll.v1.Peer') as unknown as new (
      address: string,
      credentials: grpc.ChannelCredentials,
    ) => grpc.Client & { ForwardStream(metadata: grpc.Metadata): grpc.ClientDuplexStream<Buffer, unknown> };
    const client = new Client(`127.0.0.1:${peer.port}`, grpc.credentials.createInsecure());
    cleanups.push(() => client.close());
    const metadata = new grpc.Metadata();
    metadata.set(peerSecretMetadataKey, SECRET);
    metadata.set(clusterIdMetadataKey, CLUSTER);
    metadata.set(nodeIdMetadataKey, '2');
    const stream = client.ForwardStream(metadata);
    stream.on('error', () => undefined);
    const answers = new Map<number, ForwardAnswer>();
    stream.on('data', (frame: unknown) => {
      for (const reply of forwardRepliesOf(frame)) {
        const answer = decodeForwardReply(reply);
        answers.set(answer.callId, answer);
      }
    });
    const request = (key: string) => encodeForwardRequest({ hops: 0, operation: get(key) });
    // MAX_CALLS_IN_FLIGHT held calls, then two more: in frames of 1,000 calls.
    const total = MAX_CALLS_IN_FLIGHT + 2;
    for (let first = 1; first <= total; first += 1_000) {
      const entries: Buffer[] = [];
      for (let callId = first; callId < Math.min(first + 1_000, total + 1); callId++) entries.push(encodeForwardCall(callId, 30_000, request(`hold/${callId}`))!);
      stream.write(Buffer.concat(entries));
    }
    await until('the two calls past the bound are answered', () => answers.has(total - 1) && answers.has(total), 20_000);
    for (const callId of [total - 1, total]) {
      const answer = answers.get(callId)!;
      expect(answer.status?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(answer.status?.metadata?.get('atoll-code')).toEqual(['OVERLOADED']);
      // Never run: the forwarding node may send it again, elsewhere or later.
      expect(answer.status?.metadata?.get('atoll-not-applied')).toEqual(['true']);
      expect(answer.status?.details).toMatch(/forwarded calls of this stream already/);
    }
    // Only the calls within the bound ran; released, each is answered with its own result.
    expect(leader.started).toHaveLength(MAX_CALLS_IN_FLIGHT);
    expect(leader.started.some((call) => call.key === `hold/${total}`)).toBe(false);
    expect(answers.size).toBe(2);
    for (const release of leader.held.values()) release();
    await until('every call in flight is answered', () => answers.size === total, 20_000);
    expect(answers.get(1)?.status).toBeUndefined();
    expect(answers.get(MAX_CALLS_IN_FLIGHT)?.status).toBeUndefined();
    stream.end();
  });

  it('fails a forward to a peer that does not listen as never sent (UNAVAILABLE, neverSent)', async () => {
    // A port that was served a moment ago, and no longer is.
    const gone = await servePeer(new StandInLeader());
    gone.server.forceShutdown();
    const transport = transportTo(gone.port);
    const error = await rejection(transport.forward(1, get('k/nowhere'), 0, inSeconds(5)));
    expect(error?.code).toBe('UNAVAILABLE');
    expect(error?.details).toMatchObject({ fromTransport: true, neverSent: true });
    expect(transport.forwardStats(1)).toMatchObject({ streamsOpened: 1, unaryCalls: 0 });
  });
});
