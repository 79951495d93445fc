/**
 * The watch transport (src/server/watch-transport.ts) against the installed grpc-js and node:http2:
 * a client whose HTTP/2 window is 0 gets nothing written (so no write callback fires and the bytes
 * stay counted), a reading client gets every callback, and a cut-off resets the stream (the
 * client sees RST_STREAM with CANCEL), which aborts the watch and reports the stream closed; on
 * KV.Stream every watch of the stream shares one transport. If a grpc-js upgrade moves the HTTP/2
 * stream, these tests fail instead of the node silently keeping stalled streams.
 */
import { EventEmitter } from 'node:events';
import http2 from 'node:http2';
import net from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NodeApi, WatchMessage, WatchRequest, WatchSink } from '../../src/api/node-api.js';
import { createGrpcServer } from '../../src/server/grpc-server.js';
import { kvServiceHandlers } from '../../src/server/kv-service.js';
import { kvServiceDefinition } from '../../src/wire/protos.js';
import { encodeStreamRequest } from '../../src/wire/stream-codec.js';
import { CONNECTION_GRACE_MS, http2StreamOf, watchTransportOf } from '../../src/server/watch-transport.js';
import { silentLogger } from './harness.js';

/** One gRPC length-prefixed frame. */
function grpcFrame(body: Buffer): Buffer {
  const frame = Buffer.alloc(5 + body.length);
  frame.writeUInt32BE(body.length, 1);
  body.copy(frame, 5);
  return frame;
}

const watchMethod = kvServiceDefinition['Watch']!;
const streamMethod = kvServiceDefinition['Stream']!;
const big: WatchMessage = {
  revision: 9,
  progress: false,
  events: [{ type: 'put', key: 'x/big', revision: 9, value: new Uint8Array(256 * 1024).fill(1), createRevision: 9, version: 1, expiresAtMs: 0, reason: '' }],
};

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 1_000; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

interface Watching {
  readonly sink: WatchSink;
  readonly signal: AbortSignal;
  written: number;
}

describe('watch transport over a real gRPC server', () => {
  const watching: Watching[] = [];
  let server: grpc.Server;
  let url: string;

  beforeAll(async () => {
    // A node whose every watch writes four 256 KiB messages, counting their write callbacks, and
    // then waits for its end.
    const api = {
      watch: async (request: WatchRequest, context: { signal?: AbortSignal }, sink: WatchSink): Promise<void> => {
        const entry: Watching = { sink, signal: context.signal!, written: 0 };
        watching.push(entry);
        // Prefix "many": 16 MiB, more than a loopback socket's buffers hold.
        for (let i = 0; i < (request.prefix === 'many' ? 64 : 4); i++) sink.write(big, () => entry.written++);
        await new Promise<void>((resolve) => {
          if (context.signal!.aborted) resolve();
          context.signal!.addEventListener('abort', () => resolve(), { once: true });
        });
      },
    } as unknown as NodeApi;
    server = createGrpcServer();
    server.addService(kvServiceDefinition, kvServiceHandlers(api, silentLogger));
    const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
    url = `http://127.0.0.1:${port}`;
  });

  afterAll(() => {
    server.forceShutdown();
  });

  /** A raw HTTP/2 call; `stalled` gives the client a window of 0 (it never takes a byte). */
  function open(path: string, body: Buffer, stalled: boolean): { session: http2.ClientHttp2Session; request: http2.ClientHttp2Stream; closed: Promise<number> } {
    const session = http2.connect(url, stalled ? { settings: { initialWindowSize: 0 } } : {});
    session.on('error', () => undefined);
    const request = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers' });
    request.on('error', () => undefined);
    if (stalled) request.pause();
    else request.on('data', () => undefined);
    const closed = new Promise<number>((resolve) => request.on('close', () => resolve(request.rstCode ?? 0)));
    if (path.endsWith('/Watch')) request.end(body);
    else request.write(body);
    return { session, request, closed };
  }

  it('KV.Watch: nothing is written to a zero window; a cut-off resets the stream, aborts the watch and reports it closed', async () => {
    const before = watching.length;
    const client = open('/atoll.v1.KV/Watch', grpcFrame(watchMethod.requestSerialize({ prefix: 'x' } as never) as Buffer), true);
    try {
      await until(() => watching.length === before + 1, 'the watch');
      const entry = watching[before]!;
      expect(entry.sink.transport).toBeDefined();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(entry.written).toBe(0);
      let closedSeen = false;
      entry.sink.transport!.onClosed(() => (closedSeen = true));
      entry.sink.transport!.cutOff();
      expect(await client.closed).toBe(http2.constants.NGHTTP2_CANCEL);
      await until(() => closedSeen && entry.signal.aborted, 'the close and the abort');
      // The session stays: only the stream was reset.
      expect(client.session.destroyed).toBe(false);
      // Listeners added after the close are told at once.
      let late = false;
      entry.sink.transport!.onClosed(() => (late = true));
      expect(late).toBe(true);
    } finally {
      client.session.destroy();
    }
  });

  it('KV.Watch: a reading client gets every write callback', async () => {
    const before = watching.length;
    const client = open('/atoll.v1.KV/Watch', grpcFrame(watchMethod.requestSerialize({ prefix: 'x' } as never) as Buffer), false);
    try {
      await until(() => watching.length === before + 1 && watching[before]!.written === 4, 'four write callbacks');
    } finally {
      client.session.destroy();
    }
  });

  it('KV.Watch: a client that stops reading its socket cannot even get the reset, so its connection is destroyed', async () => {
    const before = watching.length;
    // A raw HTTP/2 client over TCP: windows as large as HTTP/2 allows, then it never reads again.
    const socket = net.connect(Number(new URL(url).port), '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.on('error', () => undefined);
    const frameOf = (type: number, flags: number, stream: number, payload: Buffer): Buffer => {
      const header = Buffer.alloc(9);
      header.writeUIntBE(payload.length, 0, 3);
      header.writeUInt8(type, 3);
      header.writeUInt8(flags, 4);
      header.writeUInt32BE(stream, 5);
      return Buffer.concat([header, payload]);
    };
    const settings = Buffer.alloc(6);
    settings.writeUInt16BE(0x4, 0); // SETTINGS_INITIAL_WINDOW_SIZE
    settings.writeUInt32BE(0x7fffffff, 2);
    const windowUpdate = Buffer.alloc(4);
    windowUpdate.writeUInt32BE(0x7fffffff - 65_535, 0);
    // HPACK: every field a literal without indexing, with a new name (0x00, length, bytes, length, bytes).
    const fields: Array<[string, string]> = [[':method', 'POST'], [':scheme', 'http'], [':path', '/atoll.v1.KV/Watch'], [':authority', 'localhost'], ['content-type', 'application/grpc'], ['te', 'trailers']];
    const block = Buffer.concat(fields.map(([name, value]) => Buffer.concat([Buffer.from([0, name.length]), Buffer.from(name), Buffer.from([value.length]), Buffer.from(value)])));
    socket.pause();
    socket.write(
      Buffer.concat([
        Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
        frameOf(0x4, 0, 0, settings),
        frameOf(0x8, 0, 0, windowUpdate),
        frameOf(0x1, 0x4, 1, block),
        frameOf(0x0, 0x1, 1, grpcFrame(watchMethod.requestSerialize({ prefix: 'many' } as never) as Buffer)),
      ]),
    );
    try {
      await until(() => watching.length === before + 1, 'the watch');
      const entry = watching[before]!;
      // The socket's buffers fill: the writes stop completing.
      let last = -1;
      await until(() => {
        const stable = entry.written === last;
        last = entry.written;
        return stable && entry.written > 0;
      }, 'the writes to stop');
      expect(entry.written).toBeLessThan(64);
      let closedAtMs: number | undefined;
      const cutMs = Date.now();
      entry.sink.transport!.onClosed(() => (closedAtMs = Date.now()));
      entry.sink.transport!.cutOff();
      await until(() => closedAtMs !== undefined, 'the stream to close');
      await until(() => entry.signal.aborted, 'the abort');
      // Closed by the connection's end, after the grace the reset had to go out.
      expect((entry.sink.transport!.connection as http2.Http2Session).destroyed).toBe(true);
      expect(closedAtMs! - cutMs).toBeGreaterThanOrEqual(CONNECTION_GRACE_MS - 100);
    } finally {
      socket.destroy();
    }
  });

  it('KV.Stream: every watch of one stream shares its transport, and a cut-off resets the whole stream', async () => {
    const before = watching.length;
    const request = (id: string): Buffer => grpcFrame(streamMethod.requestSerialize(encodeStreamRequest(id, 0, { kind: 'watch', request: { prefix: 'x' } }) as never) as Buffer);
    const client = open('/atoll.v1.KV/Stream', Buffer.concat([request('1'), request('2')]), true);
    try {
      await until(() => watching.length === before + 2, 'two watches');
      const [first, second] = [watching[before]!, watching[before + 1]!];
      expect(first.sink.transport).toBe(second.sink.transport);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(first.written + second.written).toBe(0);
      first.sink.transport!.cutOff();
      expect(await client.closed).toBe(http2.constants.NGHTTP2_CANCEL);
      await until(() => first.signal.aborted && second.signal.aborted, 'both watches aborted');
    } finally {
      client.session.destroy();
    }
  });
});

describe('watch transport without an HTTP/2 stream', () => {
  it('finds no stream in a call that has none; its cut-off destroys the call and its close is the call ending', () => {
    class BareCall extends EventEmitter {
      destroyed = 0;
      getPeer(): string {
        return '10.0.0.1:5000';
      }
      destroy(): void {
        this.destroyed++;
      }
    }
    const call = new BareCall();
    expect(http2StreamOf(call)).toBeUndefined();
    let warned = 0;
    const transport = watchTransportOf(call, () => warned++);
    expect(transport.connection).toBe('10.0.0.1:5000');
    let closed = 0;
    transport.onClosed(() => closed++);
    transport.cutOff();
    expect([call.destroyed, warned, closed]).toEqual([1, 1, 0]);
    call.emit('cancelled');
    call.emit('close');
    expect(closed).toBe(1);
  });
});
