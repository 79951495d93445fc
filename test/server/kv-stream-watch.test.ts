/**
 * Watch on the multiplexed KV.Stream (issue 21): a watch request on the stream answered by watch
 * frames with its id, cancelled by a cancel frame, failed by one error frame; the client's watch
 * takes the stream when it has a slot and falls back to KV.Watch; a reader that falls behind its
 * buffer, and a stream whose frames are not read, end the watch with WATCH_OVERFLOW.
 */
import * as grpc from '@grpc/grpc-js';
import { EventEmitter } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NodeConnection } from '../../src/client/node-connection.js';
import { maxWatchBuffered, StreamMultiplexer } from '../../src/client/stream-multiplexer.js';
import { AtollError } from '../../src/errors.js';
import type { NodeApi, WatchMessage, WatchRequest, WatchSink } from '../../src/api/node-api.js';
import { kvStreamHandler, type KvStreamStats } from '../../src/server/kv-stream.js';
import { kvServiceDefinition } from '../../src/wire/protos.js';
import { decodeStreamFrame, encodeStreamRequest } from '../../src/wire/stream-codec.js';
import { silentLogger, startNode, type RunningNode } from './harness.js';

const streamMethod = kvServiceDefinition['Stream']!;
/** A StreamRequest as the server receives it (through the method's own serializers). */
const onWire = (message: object): unknown => streamMethod.requestDeserialize(streamMethod.requestSerialize(message as never));
const answerOnWire = (message: unknown): unknown => streamMethod.responseDeserialize(streamMethod.responseSerialize(message as never));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const deadline = () => Date.now() + 2_000;

/** The fake node's current revision (a write to a bucket no test watches). */
async function revisionNow(running: RunningNode): Promise<number> {
  return (await running.node.put({ key: 'rev/x', value: new Uint8Array([0]) }, { deadlineMs: deadline() })).revision;
}

/** The next message with changes (the fake sends progress every 50 ms on an idle watch). */
async function nextChange(feed: AsyncGenerator<WatchMessage, void, undefined>): Promise<WatchMessage> {
  for (let n = 0; n < 1_000; n++) {
    const { value, done } = await feed.next();
    if (done === true) break;
    if (!value.progress) return value;
  }
  throw new Error('the watch ended without a change');
}

/** The multiplexer's running watches (the slot accounting under test). */
function streamWatches(connection: NodeConnection): number {
  const multiplexer = (connection as unknown as { multiplexer: StreamMultiplexer }).multiplexer;
  return (multiplexer as unknown as { watches: Map<string, unknown> }).watches.size;
}

describe('watch on KV.Stream (fake node)', () => {
  let running: RunningNode;
  const stats: KvStreamStats = { queuedAnswers: 0, peakOccupancy: 0 };
  beforeAll(async () => {
    running = await startNode({ nodeId: 1, partitionCount: 4, stream: { stats } });
  });
  afterAll(async () => {
    await running.stop();
  });

  it('rides the stream next to ordinary requests, and leaving the loop cancels it on the server', async () => {
    const connection = new NodeConnection(running.address, { pipelining: true, maxStreamInFlight: 8 });
    try {
      const startRevision = await revisionNow(running);
      const seen: WatchMessage[] = [];
      let onStream = -1;
      const watching = (async () => {
        for await (const message of connection.watch({ prefix: 'sw', startRevision, progress: true }, undefined)) {
          if (onStream < 0) onStream = streamWatches(connection);
          seen.push(message);
          if (seen.filter((m) => m.events.length > 0).length === 2) break;
        }
      })();
      await sleep(100);
      // Writes through the same connection: the same stream carries them and the watch's frames.
      await connection.run({ kind: 'put', request: { key: 'sw/a', value: new Uint8Array([1]) } }, deadline(), undefined);
      await connection.run({ kind: 'put', request: { key: 'sw/b', value: new Uint8Array([2]) } }, deadline(), undefined);
      await watching;
      expect(onStream).toBe(1);
      expect(seen[0]?.progress).toBe(true);
      expect(seen.filter((m) => !m.progress).map((m) => m.events.map((e) => e.key))).toEqual([['sw/a'], ['sw/b']]);
      // The break freed the slot and told the server: the session holds nothing for it any more.
      expect(streamWatches(connection)).toBe(0);
      await sleep(100);
      await connection.run({ kind: 'put', request: { key: 'sw/c', value: new Uint8Array([3]) } }, deadline(), undefined);
      await sleep(100);
      expect(stats.queuedAnswers).toBe(0);
    } finally {
      connection.close();
    }
  });

  it('fails a bad watch with its Atoll code in one error frame, and the stream stays usable', async () => {
    const connection = new NodeConnection(running.address, { pipelining: true, maxStreamInFlight: 8 });
    try {
      const failed = await (async () => {
        for await (const _ of connection.watch({ prefix: '' }, undefined)) return 'a message';
        return 'no error';
      })().catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(AtollError);
      expect((failed as AtollError).code).toBe('PREFIX_SPANS_BUCKETS');
      expect(streamWatches(connection)).toBe(0);
      const result = await connection.run({ kind: 'get', request: { key: 'sw/a' } }, deadline(), undefined);
      expect(result.kind).toBe('get');
    } finally {
      connection.close();
    }
  });

  it('falls back to KV.Watch when the stream has no free slot', async () => {
    // Watches take at most half of the stream's slots: here one.
    const connection = new NodeConnection(running.address, { pipelining: true, maxStreamInFlight: 2 });
    const abort = new AbortController();
    try {
      const startRevision = await revisionNow(running);
      const first = connection.watch({ prefix: 'fb', progress: true, startRevision }, abort.signal);
      expect((await first.next()).value?.progress).toBe(true);
      expect(streamWatches(connection)).toBe(1);
      const second = connection.watch({ prefix: 'fb', progress: true, startRevision }, abort.signal);
      expect((await second.next()).value?.progress).toBe(true);
      // Still one watch on the stream: the second is a KV.Watch call of its own.
      expect(streamWatches(connection)).toBe(1);
      await connection.run({ kind: 'put', request: { key: 'fb/x', value: new Uint8Array([9]) } }, deadline(), undefined);
      expect(streamWatches(connection)).toBe(1);
      expect((await nextChange(first)).events[0]?.key).toBe('fb/x');
      expect((await nextChange(second)).events[0]?.key).toBe('fb/x');
      abort.abort();
      await expect(first.next()).rejects.toBeDefined();
      expect(streamWatches(connection)).toBe(0);
    } finally {
      abort.abort();
      connection.close();
    }
  });

  it('cancels a reader that falls maxWatchBuffered messages behind with WATCH_OVERFLOW and the revision to resume after', async () => {
    const connection = new NodeConnection(running.address, { pipelining: true, maxStreamInFlight: 8 });
    try {
      const start = await revisionNow(running);
      const feed = connection.watch({ prefix: 'ov', startRevision: start }, undefined);
      await running.node.put({ key: 'ov/first', value: new Uint8Array([0]) }, { deadlineMs: deadline() });
      const first = (await feed.next()).value as WatchMessage;
      expect(first.events[0]?.key).toBe('ov/first');
      // The reader now stops reading while more than the buffer's worth of revisions commit.
      // (Yielding to I/O after each, so the frames reach the client while the writes go on: the
      // fake's writes never wait for I/O, and a starved event loop would stall the server's sink.)
      for (let i = 0; i < maxWatchBuffered + 10; i++) {
        await running.node.put({ key: `ov/k${i % 5}`, value: new Uint8Array([i & 0xff]) }, { deadlineMs: deadline() });
        await new Promise((resolve) => setImmediate(resolve));
      }
      await sleep(300);
      // The frames the reader had not taken are dropped with the watch: it fails at once.
      const error = await (async () => {
        for (let n = 0; n < maxWatchBuffered * 2; n++) await feed.next();
        return 'no error';
      })().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AtollError);
      expect((error as AtollError).code).toBe('WATCH_OVERFLOW');
      expect((error as AtollError).details?.['resumeRevision']).toBe(first.revision);
      expect(streamWatches(connection)).toBe(0);
    } finally {
      connection.close();
    }
  }, 30_000);
});

/** A stream call whose client reads nothing: every write fills the window, 'drain' never comes. */
class StalledCall extends EventEmitter {
  readonly cancelled = false;
  readonly metadata = new grpc.Metadata();
  readonly written: unknown[] = [];
  getDeadline(): grpc.Deadline {
    return Infinity;
  }
  getPeer(): string {
    return '127.0.0.1:1';
  }
  pause(): void {}
  resume(): void {}
  write(message: unknown): boolean {
    this.written.push(message);
    return false;
  }
  end(): void {}
}

describe('watch on KV.Stream: server-side bounds', () => {
  it('a stream whose frames are not read ends the watch with WATCH_OVERFLOW (the sink reports the stream backpressure)', async () => {
    let sinkWrites: boolean[] = [];
    let drainedResult: boolean | undefined;
    const api = {
      watch: async (_request: WatchRequest, context: { signal?: AbortSignal }, sink: WatchSink) => {
        sinkWrites = [sink.write({ revision: 5, events: [], progress: true })];
        drainedResult = await sink.drained(50);
        if (!drainedResult && context.signal?.aborted !== true) throw new AtollError('WATCH_OVERFLOW', 'slow', { resumeRevision: 5 });
      },
    } as unknown as NodeApi;
    const call = new StalledCall();
    kvStreamHandler(api, silentLogger)(call as never);
    call.emit('data', onWire(encodeStreamRequest('7', 0, { kind: 'watch', request: { prefix: 'x' } })));
    await sleep(200);
    expect(sinkWrites).toEqual([false]);
    expect(drainedResult).toBe(false);
    // The frame went out first; the error frame waits for 'drain' behind it.
    expect(call.written.map((m) => decodeStreamFrame(answerOnWire(m)))).toMatchObject([{ id: '7', watch: { revision: 5, progress: true } }]);
    call.write = (message: unknown) => (call.written.push(message), true);
    call.emit('drain');
    const last = decodeStreamFrame(answerOnWire(call.written.at(-1)));
    expect('outcome' in last && !last.outcome.ok && last.outcome.error.code).toBe('WATCH_OVERFLOW');
    // The resume point travels in the StreamError as in KV.Watch's metadata.
    expect('outcome' in last && !last.outcome.ok && last.outcome.error.details?.['resumeRevision']).toBe(5);
  });

  it('a cancel frame aborts the watch and no frame follows it', async () => {
    let aborted = false;
    let sink: WatchSink | undefined;
    const api = {
      watch: (_request: WatchRequest, context: { signal?: AbortSignal }, given: WatchSink) =>
        new Promise<void>((resolve) => {
          sink = given;
          context.signal?.addEventListener('abort', () => {
            aborted = true;
            resolve();
          });
        }),
    } as unknown as NodeApi;
    const call = new StalledCall();
    call.write = (message: unknown) => (call.written.push(message), true);
    kvStreamHandler(api, silentLogger)(call as never);
    call.emit('data', onWire(encodeStreamRequest('9', 0, { kind: 'watch', request: { prefix: 'x' } })));
    await sleep(20);
    sink?.write({ revision: 1, events: [], progress: true });
    call.emit('data', onWire(encodeStreamRequest('9', 0, { kind: 'cancel' })));
    await sleep(20);
    expect(aborted).toBe(true);
    sink?.write({ revision: 2, events: [], progress: true });
    await sleep(20);
    expect(call.written).toHaveLength(1);
  });
});
