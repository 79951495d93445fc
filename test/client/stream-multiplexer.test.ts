/**
 * The client's stream multiplexer against a real server: at most maxInFlight requests on the
 * stream, the rest waiting in order; a request that times out while queued was never sent (so a
 * write there is not in doubt); a cancelled request is cancelled on the server too.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { StreamMultiplexer } from '../../src/client/stream-multiplexer.js';
import { hangUntilAborted } from '../server/fake-node.js';
import { startNode, type RunningNode } from '../server/harness.js';

let running: RunningNode;
let client: grpc.Client;

beforeAll(async () => {
  running = await startNode();
  client = new grpc.Client(running.address, grpc.credentials.createInsecure());
});
afterAll(async () => {
  client.close();
  await running.stop();
});
beforeEach(() => {
  running.node.before = undefined;
  running.node.calls.length = 0;
});

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

describe('StreamMultiplexer', () => {
  it('keeps at most maxInFlight requests on the stream and sends the rest in order as slots free', async () => {
    const gate = deferred();
    running.node.before = () => gate.promise;
    const multiplexer = new StreamMultiplexer(client, { maxInFlight: 2 });
    const deadlineMs = Date.now() + 5000;
    const results = Array.from({ length: 5 }, (_, index) =>
      multiplexer.request({ kind: 'exists', request: { key: `queued/${index}` } }, deadlineMs, undefined),
    );
    await expect.poll(() => running.node.calls.length).toBe(2);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(running.node.calls.length).toBe(2);
    gate.resolve();
    expect(await Promise.all(results)).toHaveLength(5);
    expect(running.node.calls.map((call) => (call.request as { key: string }).key)).toEqual(['queued/0', 'queued/1', 'queued/2', 'queued/3', 'queued/4']);
    multiplexer.close();
  });

  it('a request that times out in the queue was never sent', async () => {
    running.node.before = (_method, _request, context) => hangUntilAborted(context);
    const multiplexer = new StreamMultiplexer(client, { maxInFlight: 1 });
    const first = multiplexer.request({ kind: 'put', request: { key: 'q/a', value: Uint8Array.of(1) } }, Date.now() + 2000, undefined).catch((error: unknown) => error);
    const second = await multiplexer
      .request({ kind: 'put', request: { key: 'q/b', value: Uint8Array.of(1) } }, Date.now() + 100, undefined)
      .catch((error: unknown) => error);
    expect(second).toBeInstanceOf(AtollError);
    expect((second as AtollError).code).toBe('DEADLINE_EXCEEDED');
    expect((second as AtollError).details).toMatchObject({ neverSent: true });
    expect(running.node.callsOf('put').map((call) => (call.request as { key: string }).key)).toEqual(['q/a']);
    multiplexer.close();
    expect(((await first) as AtollError).code).toBe('UNAVAILABLE');
  });

  it('aborting a sent request cancels it on the server', async () => {
    running.node.before = (_method, _request, context) => hangUntilAborted(context);
    const multiplexer = new StreamMultiplexer(client, { maxInFlight: 4 });
    const controller = new AbortController();
    const pending = multiplexer.request({ kind: 'get', request: { key: 'abort/a' } }, Date.now() + 5000, controller.signal).catch((error: unknown) => error);
    await expect.poll(() => running.node.callsOf('get').length).toBe(1);
    controller.abort(new Error('stop'));
    expect(((await pending) as Error).message).toBe('stop');
    await expect.poll(() => running.node.callsOf('get')[0]!.context.signal?.aborted).toBe(true);
    multiplexer.close();
  });
});
