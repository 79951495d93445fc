/**
 * KV.Stream through a plain grpc-js client: concurrent requests answered in completion order and
 * matched by id, per-request errors that leave the stream open, per-request deadlines,
 * cancellation, the in-flight bound, and a clean end after the client half-closes.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { EventEmitter } from 'node:events';
import { AtollError } from '../../src/errors.js';
import { limits } from '../../src/limits.js';
import { kvStreamHandler } from '../../src/server/kv-stream.js';
import { hangUntilAborted } from './fake-node.js';
import { genericClient, silentLogger, startNode, type GenericClient, type RunningNode } from './harness.js';

interface StreamAnswer {
  id: string;
  result: string;
  [field: string]: unknown;
}

let running: RunningNode;
let kv: GenericClient;

beforeAll(async () => {
  running = await startNode({ stream: { maxInFlight: 8 } });
  kv = genericClient('KV', running.address);
});

afterAll(async () => {
  kv.close();
  await running.stop();
});

beforeEach(() => {
  running.node.before = undefined;
});

function openStream(): grpc.ClientDuplexStream<object, StreamAnswer> {
  return (kv.raw['Stream'] as () => grpc.ClientDuplexStream<object, StreamAnswer>).call(kv.raw);
}

/** Collects answers until `count` arrived; resolves also with how the stream ended. */
function collect(stream: grpc.ClientDuplexStream<object, StreamAnswer>): { answers: StreamAnswer[]; ended: Promise<grpc.StatusObject> } {
  const answers: StreamAnswer[] = [];
  stream.on('data', (answer: StreamAnswer) => answers.push(answer));
  const ended = new Promise<grpc.StatusObject>((resolve) => {
    stream.on('status', resolve);
    stream.on('error', () => undefined);
  });
  return { answers, ended };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A server stream call whose client sends as fast as it is read and never reads an answer. */
class FloodCall extends EventEmitter {
  readonly cancelled = false;
  readonly metadata = new grpc.Metadata();
  isPaused = false;
  /** Messages delivered to the session. */
  delivered = 0;
  /** Whether write() accepts (the client reads); false: every write fills the window. */
  accepting = false;

  getDeadline(): grpc.Deadline {
    return Infinity;
  }

  getPeer(): string {
    return '127.0.0.1:1';
  }

  pause(): void {
    this.isPaused = true;
  }

  resume(): void {
    this.isPaused = false;
  }

  write(): boolean {
    return this.accepting;
  }

  end(): void {}

  /** Delivers one message, as a stream in flowing mode would (never while paused). */
  deliver(message: object): void {
    if (this.isPaused) return;
    this.delivered++;
    this.emit('data', message);
  }
}

describe('KV.Stream', () => {
  it('answers many concurrent requests out of order, each matched by id', async () => {
    const count = 40;
    // Later requests finish first, so completion order is the reverse of request order.
    running.node.before = async (_method, request) => {
      const index = Number((request as { key: string }).key.split('/')[1]);
      await sleep((count - index) * 3);
    };
    const stream = openStream();
    const { answers, ended } = collect(stream);
    for (let index = 0; index < count; index++) {
      stream.write({ id: String(index + 1), put: { key: `stream/${index}`, value: Buffer.from(`v${index}`) } });
    }
    stream.end();
    const status = await ended;
    expect(status.code).toBe(grpc.status.OK);
    expect(answers).toHaveLength(count);
    expect(new Set(answers.map((answer) => answer.id))).toEqual(new Set(Array.from({ length: count }, (_, index) => String(index + 1))));
    expect(answers.every((answer) => answer.result === 'put' && (answer['put'] as { applied: boolean }).applied)).toBe(true);
    const order = answers.map((answer) => Number(answer.id));
    expect(order).not.toEqual([...order].sort((a, b) => a - b));

    // Every write landed under the key its id asked for.
    running.node.before = undefined;
    const reads = openStream();
    const read = collect(reads);
    for (let index = 0; index < count; index++) reads.write({ id: String(1000 + index), get: { key: `stream/${index}` } });
    reads.end();
    await read.ended;
    for (const answer of read.answers) {
      const index = Number(answer.id) - 1000;
      expect(Buffer.from((answer['get'] as { value: Buffer }).value).toString()).toBe(`v${index}`);
    }
  });

  it('a failing request answers a StreamError and the stream stays open', async () => {
    running.node.before = (method) => {
      if (method === 'delete') throw new AtollError('NOT_LEADER', 'not me', { leaderHint: { nodeId: 3, address: '10.0.0.3:7003' } });
      if (method === 'extend') throw new Error('a bug');
    };
    const stream = openStream();
    const { answers, ended } = collect(stream);
    stream.write({ id: '1', get: {} });
    stream.write({ id: '2', delete: { key: 'a' } });
    stream.write({ id: '3', extend: { key: 'a', ttlMs: '100' } });
    stream.write({ id: '4', exists: { key: 'a' } });
    stream.write({ id: '5' });
    stream.end();
    expect((await ended).code).toBe(grpc.status.OK);
    const byId = new Map(answers.map((answer) => [answer.id, answer]));
    expect(byId.get('1')).toMatchObject({ result: 'error', error: { code: 'INVALID_KEY', grpcStatus: grpc.status.INVALID_ARGUMENT } });
    expect(byId.get('2')).toMatchObject({
      result: 'error',
      error: { code: 'NOT_LEADER', grpcStatus: grpc.status.UNAVAILABLE, leaderHint: '10.0.0.3:7003', leaderId: 3 },
    });
    expect(byId.get('3')).toMatchObject({ result: 'error', error: { code: 'INTERNAL', grpcStatus: grpc.status.INTERNAL } });
    expect((byId.get('3')!['error'] as { message: string }).message).not.toMatch(/a bug/);
    expect(byId.get('4')).toMatchObject({ result: 'exists', exists: { exists: false } });
    expect(byId.get('5')).toMatchObject({ result: 'error', error: { code: 'INVALID_ARGUMENT' } });
  });

  it('each request has its own deadline', async () => {
    running.node.before = (method, _request, context) => (method === 'get' ? hangUntilAborted(context) : undefined);
    const stream = openStream();
    const { answers, ended } = collect(stream);
    const startedMs = Date.now();
    stream.write({ id: '1', timeoutMs: 150, get: { key: 'slow' } });
    stream.write({ id: '2', exists: { key: 'fast' } });
    stream.end();
    await ended;
    expect(answers.map((answer) => answer.id)).toEqual(['2', '1']);
    expect(answers[1]).toMatchObject({ result: 'error', error: { code: 'DEADLINE_EXCEEDED', grpcStatus: grpc.status.DEADLINE_EXCEEDED } });
    expect(Date.now() - startedMs).toBeLessThan(3000);
  });

  it('a cancel message aborts the request and it gets no answer', async () => {
    running.node.before = (method, _request, context) => (method === 'get' ? hangUntilAborted(context) : undefined);
    const stream = openStream();
    const { answers, ended } = collect(stream);
    stream.write({ id: '7', get: { key: 'cancel-me' } });
    await expect.poll(() => running.node.callsOf('get').some((call) => (call.request as { key: string }).key === 'cancel-me')).toBe(true);
    const context = running.node.callsOf('get').at(-1)!.context;
    stream.write({ id: '7', cancel: {} });
    await expect.poll(() => context.signal?.aborted).toBe(true);
    stream.end();
    expect((await ended).code).toBe(grpc.status.OK);
    expect(answers).toEqual([]);
  });

  it('never runs more than maxInFlight requests of one stream at once', async () => {
    let running_ = 0;
    let peak = 0;
    running.node.before = async () => {
      running_++;
      peak = Math.max(peak, running_);
      await sleep(10);
      running_--;
    };
    const stream = openStream();
    const { answers, ended } = collect(stream);
    for (let index = 0; index < 50; index++) stream.write({ id: String(index + 1), exists: { key: `bound/${index}` } });
    stream.end();
    await ended;
    expect(answers).toHaveLength(50);
    expect(peak).toBeLessThanOrEqual(8);
    expect(peak).toBeGreaterThan(1);
  });

  it('waits for drain when write() refuses, and still delivers every answer', async () => {
    let refusals = 0;
    let writesWhileFull = 0;
    const slow = await startNode({
      kvHandlers: (handlers) => ({
        ...handlers,
        Stream: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
          const write = call.write.bind(call) as (message: unknown) => boolean;
          let full = false;
          call.write = ((message: unknown) => {
            if (full) writesWhileFull++;
            const accepted = write(message);
            if (!accepted) {
              refusals++;
              full = true;
              call.once('drain', () => (full = false));
            }
            return accepted;
          }) as typeof call.write;
          (handlers['Stream'] as (call: grpc.ServerDuplexStream<unknown, unknown>) => void)(call);
        },
      }),
    });
    const client = genericClient('KV', slow.address);
    try {
      await client.call('Put', { key: 'big/value', value: Buffer.alloc(200_000, 7) });
      const stream = (client.raw['Stream'] as () => grpc.ClientDuplexStream<object, StreamAnswer>).call(client.raw);
      const { answers, ended } = collect(stream);
      // Not reading lets HTTP/2 flow control fill up, so the server's writes start to refuse.
      stream.pause();
      for (let index = 0; index < 30; index++) stream.write({ id: String(index + 1), get: { key: 'big/value' } });
      stream.end();
      await sleep(300);
      stream.resume();
      expect((await ended).code).toBe(grpc.status.OK);
      expect(answers).toHaveLength(30);
      expect(answers.every((answer) => (answer['get'] as { value: Buffer }).value.length === 200_000)).toBe(true);
      expect(refusals).toBeGreaterThan(0);
      expect(writesWhileFull).toBe(0);
    } finally {
      client.close();
      await slow.stop();
    }
  });

  it('a client that never reads cannot make the server queue answers without bound', async () => {
    // A raw HTTP/2 client can send far faster than a grpc-js client in this process, so the flood
    // comes from a fake call: it delivers messages while the session reads, and its write() always
    // refuses (the client never reads an answer, so the HTTP/2 window stays full).
    const stats = { queuedAnswers: 0, peakOccupancy: 0 };
    const handler = kvStreamHandler(running.node, silentLogger, { maxInFlight: 8, stats });
    running.node.before = (method, _request, context) => (method === 'get' ? hangUntilAborted(context) : undefined);
    const call = new FloodCall();
    handler(call as unknown as Parameters<typeof handler>[0]);
    call.deliver({ id: '1', request: 'get', get: { key: 'hang' } });
    const floodCount = 20_000;
    for (let index = 0; index < floodCount && !call.isPaused; index++) {
      // Half malformed (no body), half duplicates of the running request's id: each gets an error answer.
      call.deliver(index % 2 === 0 ? { id: String(index + 2) } : { id: '1', request: 'get', get: { key: 'hang' } });
    }
    expect(call.isPaused).toBe(true);
    expect(call.delivered).toBeLessThanOrEqual(9);
    expect(stats.peakOccupancy).toBeLessThanOrEqual(9);
    expect(stats.queuedAnswers).toBeLessThanOrEqual(9);
    // Once the client reads again, the answers drain and the session reads on.
    call.accepting = true;
    call.emit('drain');
    expect(call.isPaused).toBe(false);
    expect(stats.queuedAnswers).toBe(0);
    call.emit('cancelled');
  });

  it('clamps a request timeout past the server maximum instead of expiring at once', async () => {
    running.node.before = async () => {
      await sleep(50);
    };
    const stream = openStream();
    const { answers, ended } = collect(stream);
    // 2^32 - 1 ms (about 50 days) would overflow setTimeout and answer DEADLINE_EXCEEDED at once.
    stream.write({ id: '1', timeoutMs: 0xffff_ffff, put: { key: 'far/future', value: Buffer.from('v') } });
    stream.end();
    expect((await ended).code).toBe(grpc.status.OK);
    expect(answers[0]).toMatchObject({ id: '1', result: 'put' });
    const context = running.node.callsOf('put').at(-1)!.context;
    expect(context.deadlineMs - Date.now()).toBeLessThanOrEqual(limits.maxCallTimeoutMs);
  });

  it('cancelling the whole stream aborts the running requests', async () => {
    running.node.before = (_method, _request, context) => hangUntilAborted(context);
    const stream = openStream();
    collect(stream);
    stream.write({ id: '1', get: { key: 'whole-stream' } });
    await expect.poll(() => running.node.callsOf('get').some((call) => (call.request as { key: string }).key === 'whole-stream')).toBe(true);
    const context = running.node.callsOf('get').at(-1)!.context;
    stream.cancel();
    await expect.poll(() => context.signal?.aborted).toBe(true);
  });
});
