/**
 * AtollClient against real gRPC servers around fake nodes: every method, over the stream and over
 * unary calls; routing by NOT_LEADER hints; which failures are retried (reads always, writes only
 * when certainly not applied); deadlines, AbortSignal, client-side validation and error codes.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { AtollClient, AtollClientError, isAtollClientError } from '../../src/index.js';
import { limits } from '../../src/limits.js';
import { hangUntilAborted } from '../server/fake-node.js';
import { startNode, type RunningNode } from '../server/harness.js';

/** An address nothing listens on: connections are refused at once. */
const deadAddress = '127.0.0.1:1';

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

const clients: AtollClient[] = [];
function makeClient(...args: ConstructorParameters<typeof AtollClient>): AtollClient {
  const client = new AtollClient(...args);
  clients.push(client);
  return client;
}

afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});

describe.each([
  { name: 'pipelined over KV.Stream', pipelining: true },
  { name: 'unary calls', pipelining: false },
])('every method, $name', ({ pipelining }) => {
  let running: RunningNode;
  let client: AtollClient;

  beforeAll(async () => {
    running = await startNode();
  });
  afterAll(() => running.stop());
  beforeEach(() => {
    running.node.before = undefined;
    client = makeClient({ endpoints: [running.address], pipelining });
  });

  it('put, get, text(), revisions; a missing key is found=false', async () => {
    const put = await client.put('users/ada', 'Ada Lovelace', { ttlMs: 60_000 });
    expect(put.applied).toBe(true);
    const got = await client.get('users/ada');
    expect(got.found).toBe(true);
    expect(got.text()).toBe('Ada Lovelace');
    expect(got.value).toEqual(new TextEncoder().encode('Ada Lovelace'));
    expect(got.modRevision).toBe(put.revision);
    expect(got.expiresAtMs).toBeGreaterThan(Date.now());

    const missing = await client.get('users/nobody');
    expect(missing.found).toBe(false);
    expect(missing.value).toHaveLength(0);
    expect(missing.text()).toBe('');
  });

  it('stored "", "0" and bytes are hits', async () => {
    await client.put('values/empty', '');
    await client.put('values/zero', '0');
    await client.put('values/bytes', Uint8Array.of(0, 255, 1));
    expect(await client.get('values/empty')).toMatchObject({ found: true });
    expect((await client.get('values/zero')).text()).toBe('0');
    expect((await client.get('values/bytes')).value).toEqual(Uint8Array.of(0, 255, 1));
  });

  it('conditional puts and deletes, returnPrevious, reads at a past revision', async () => {
    const first = await client.put('cas/k', 'one', { ifAbsent: true });
    expect(first.applied).toBe(true);
    expect((await client.put('cas/k', 'two', { ifAbsent: true })).applied).toBe(false);
    expect((await client.put('cas/k', 'two', { ifModRevision: first.revision + 1000 })).applied).toBe(false);
    const swapped = await client.put('cas/k', 'two', { ifModRevision: first.revision, returnPrevious: true });
    expect(swapped.applied).toBe(true);
    expect(swapped.previous?.text()).toBe('one');
    expect((await client.put('cas/k', 'three', { ifValue: 'two', ifPresent: true })).applied).toBe(true);
    expect((await client.get('cas/k', { revision: first.revision })).text()).toBe('one');
    expect((await client.delete('cas/k', { ifValue: 'nope' })).deleted).toBe(false);
    expect((await client.delete('cas/k')).deleted).toBe(true);
    expect((await client.exists('cas/k')).exists).toBe(false);
  });

  it('increment with number and bigint deltas, exists, extend', async () => {
    expect((await client.increment('counters/a')).value).toBe(1n);
    expect((await client.increment('counters/a', 41)).value).toBe(42n);
    expect((await client.increment('counters/a', -2n)).value).toBe(40n);
    expect((await client.increment('counters/max', 2n ** 63n - 1n)).value).toBe(2n ** 63n - 1n);
    expect((await client.exists('counters/a')).exists).toBe(true);
    const extended = await client.extend('counters/a', 30_000);
    expect(extended.extended).toBe(true);
    expect(extended.expiresAtMs).toBeGreaterThan(Date.now());
    expect((await client.extend('counters/none', 30_000)).extended).toBe(false);
  });

  it('a watch refused for watch memory (RESOURCE_EXHAUSTED, reason watch-memory) resumes after a pause; other RESOURCE_EXHAUSTED end it', async () => {
    const node = running.node;
    const watch = node.watch.bind(node);
    let refusals = 2;
    let reason = 'watch-memory';
    node.watch = async (request, context, sink) => {
      if (refusals > 0) {
        refusals--;
        throw new AtollError('RESOURCE_EXHAUSTED', 'the stream holds 5 bytes for watch clients and has no room for another watch', { reason });
      }
      return watch(request, context, sink);
    };
    try {
      const first = await client.put('memwatch/a', 'one');
      const controller = new AbortController();
      const seen: string[] = [];
      for await (const item of client.watch('memwatch', { fromRevision: first.revision - 1, signal: controller.signal })) {
        if (item.type !== 'progress') seen.push(item.key);
        if (seen.length === 1) controller.abort();
      }
      expect(seen).toEqual(['memwatch/a']);
      expect(refusals).toBe(0);

      // Any other RESOURCE_EXHAUSTED (a watcher limit) still ends the watch.
      refusals = 1;
      reason = 'watchers';
      const ended = (async () => {
        for await (const _ of client.watch('memwatch', { fromRevision: first.revision - 1 })) return 'item';
        return 'done';
      })();
      await expect(ended).rejects.toMatchObject({ code: 'RESOURCE_EXHAUSTED' });
    } finally {
      node.watch = watch;
    }
  });

  it('getByPrefix pages and scanPrefix iterates every page', async () => {
    for (let index = 0; index < 7; index++) await client.put(`scan/${index}`, `v${index}`);
    const page = await client.getByPrefix('scan', { limit: 3 });
    expect(page.items.map((item) => item.key)).toEqual(['scan/0', 'scan/1', 'scan/2']);
    expect(page.items[0]!.text()).toBe('v0');
    expect(page.nextPageToken).not.toBe('');
    const keys: string[] = [];
    for await (const entry of client.scanPrefix('scan', { pageSize: 2 })) keys.push(entry.key);
    expect(keys).toEqual(['scan/0', 'scan/1', 'scan/2', 'scan/3', 'scan/4', 'scan/5', 'scan/6']);
  });

  it('clusterInfo and transferLeader', async () => {
    const info = await client.clusterInfo();
    expect(info.partitionCount).toBe(4);
    expect(info.nodes).toEqual([{ id: 1, address: running.address, reachable: true }]);
    await client.transferLeader(1, 1);
    expect(running.node.callsOf('transferLeader').at(-1)!.request).toEqual({ partition: 1, targetNode: 1 });
  });

  it("a value over the node's limit is VALUE_TOO_LARGE / RESOURCE_EXHAUSTED from the node", async () => {
    const error = await rejection(client.put('big/a', new Uint8Array(limits.maxValueBytes + 1)));
    expect(isAtollClientError(error, 'VALUE_TOO_LARGE')).toBe(true);
    expect((error as AtollClientError).grpcStatusCode).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect((error as AtollClientError).indeterminate).toBe(false);
    expect((await client.exists('big/a')).exists).toBe(false);
  });

  it('server-side operating errors keep their code', async () => {
    await client.put('errors/text', 'abc');
    const error = await rejection(client.increment('errors/text'));
    expect(isAtollClientError(error, 'NOT_INTEGER')).toBe(true);
    expect((error as AtollClientError).grpcStatus).toBe('FAILED_PRECONDITION');
    expect((error as AtollClientError).grpcStatusCode).toBe(grpc.status.FAILED_PRECONDITION);
    expect((error as AtollClientError).indeterminate).toBe(false);
  });

  it('a node bug is INTERNAL and the connection keeps working', async () => {
    running.node.before = (method) => {
      if (method === 'get') throw new Error('boom');
    };
    const error = await rejection(client.get('bugs/a'));
    expect(isAtollClientError(error, 'INTERNAL')).toBe(true);
    expect((await client.put('bugs/a', 'fine')).applied).toBe(true);
  });

  it('a hanging read fails with DEADLINE_EXCEEDED within its timeout', async () => {
    running.node.before = (_method, _request, context) => hangUntilAborted(context);
    const startedMs = Date.now();
    const error = await rejection(client.get('slow/a', { timeoutMs: 200 }));
    expect(isAtollClientError(error, 'DEADLINE_EXCEEDED')).toBe(true);
    expect((error as AtollClientError).indeterminate).toBe(false);
    expect(Date.now() - startedMs).toBeLessThan(3000);
  });

  it('a write that times out is indeterminate and is not retried', async () => {
    running.node.before = (method, _request, context) => (method === 'put' ? hangUntilAborted(context) : undefined);
    const puts = running.node.callsOf('put').length;
    const error = await rejection(client.put('slow/w', 'x', { deadline: Date.now() + 200 }));
    expect(isAtollClientError(error, 'DEADLINE_EXCEEDED')).toBe(true);
    expect((error as AtollClientError).indeterminate).toBe(true);
    expect(running.node.callsOf('put').length).toBe(puts + 1);
  });

  it('an UNAVAILABLE answer is retried for a read but never for a write (it may have been applied)', async () => {
    let failuresLeft = 0;
    running.node.before = (method) => {
      if (method !== 'clusterInfo' && failuresLeft-- > 0) throw new AtollError('UNAVAILABLE', 'leadership lost while applying');
    };
    failuresLeft = 1;
    const gets = running.node.callsOf('get').length;
    expect((await client.get('retry/read')).found).toBe(false);
    expect(running.node.callsOf('get').length).toBe(gets + 2);

    failuresLeft = 1;
    const increments = running.node.callsOf('increment').length;
    const error = await rejection(client.increment('retry/write'));
    expect(isAtollClientError(error, 'UNAVAILABLE')).toBe(true);
    expect((error as AtollClientError).indeterminate).toBe(true);
    expect(running.node.callsOf('increment').length).toBe(increments + 1);

    failuresLeft = 1;
    running.node.before = (method) => {
      if (method === 'put' && failuresLeft-- > 0) throw new AtollError('NO_LEADER', 'electing');
    };
    expect((await client.put('retry/no-leader', 'x')).applied).toBe(true);

    // A node that could not even connect to the leader says so; that write is safe to retry.
    failuresLeft = 1;
    running.node.before = (method) => {
      if (method === 'put' && failuresLeft-- > 0) throw new AtollError('UNAVAILABLE', 'leader unreachable', { neverSent: true });
    };
    const puts = running.node.callsOf('put').length;
    expect((await client.put('retry/not-applied', 'x')).applied).toBe(true);
    expect(running.node.callsOf('put').length).toBe(puts + 2);
  });

  it('an AbortSignal cancels the call: it rejects with the reason and the node sees the abort', async () => {
    running.node.before = (method, _request, context) => (method === 'get' ? hangUntilAborted(context) : undefined);
    const controller = new AbortController();
    const pending = client.get('abort/a', { signal: controller.signal });
    await expect.poll(() => running.node.callsOf('get').some((call) => (call.request as { key: string }).key === 'abort/a')).toBe(true);
    controller.abort();
    const error = await rejection(pending);
    expect((error as Error).name).toBe('AbortError');
    const context = running.node.callsOf('get').at(-1)!.context;
    await expect.poll(() => context.signal?.aborted).toBe(true);

    const already = await rejection(client.get('abort/b', { signal: AbortSignal.abort(new Error('stop')) }));
    expect((already as Error).message).toBe('stop');
  });
});

describe('client-side validation', () => {
  let client: AtollClient;
  beforeEach(() => {
    client = makeClient({ endpoints: [deadAddress] });
  });

  it('rejects bad input at once with typed errors, before any network call', async () => {
    const empty = await rejection(client.get(''));
    expect(empty).toBeInstanceOf(AtollClientError);
    expect(empty).toBeInstanceOf(AtollError);
    expect((empty as AtollClientError).code).toBe('INVALID_KEY');
    expect((empty as AtollClientError).grpcStatus).toBe('INVALID_ARGUMENT');

    const tooLarge = await rejection(client.put('a/b', new Uint8Array(4 * 1024 * 1024)));
    expect((tooLarge as AtollClientError).code).toBe('VALUE_TOO_LARGE');
    expect((tooLarge as AtollClientError).grpcStatus).toBe('RESOURCE_EXHAUSTED');
    const strict = makeClient({ endpoints: [deadAddress], maxValueBytes: limits.maxValueBytes });
    expect((await rejection(strict.put('a/b', new Uint8Array(limits.maxValueBytes + 1)))) as AtollClientError).toMatchObject({ code: 'VALUE_TOO_LARGE' });

    expect((await rejection(client.get('k'.repeat(5000)))) as AtollClientError).toMatchObject({ code: 'KEY_TOO_LARGE' });
    expect((await rejection(client.increment('a', 1.5))) as AtollClientError).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((await rejection(client.increment('a', 2n ** 63n))) as AtollClientError).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((await rejection(client.put('a', 'b', { ttlMs: 0 }))) as AtollClientError).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((await rejection(client.getByPrefix(''))) as AtollClientError).toMatchObject({ code: 'PREFIX_SPANS_BUCKETS' });
    expect((await rejection(client.get('a', { timeoutMs: -1 }))) as AtollClientError).toMatchObject({ code: 'INVALID_ARGUMENT' });
  });

  it('needs an endpoint', () => {
    expect(() => new AtollClient({ endpoints: [] })).toThrow(AtollError);
  });
});

describe('routing and retries across nodes', () => {
  let first: RunningNode;
  let second: RunningNode;

  beforeAll(async () => {
    first = await startNode({ nodeId: 1 });
    second = await startNode({ nodeId: 2 });
  });
  afterAll(async () => {
    await first.stop();
    await second.stop();
  });
  beforeEach(() => {
    const nodes = [
      { id: 1, address: first.address, reachable: true },
      { id: 2, address: second.address, reachable: true },
    ];
    for (const running of [first, second]) {
      running.node.nodes = nodes;
      running.node.leaderId = 1;
      running.node.before = undefined;
      running.node.calls.length = 0;
    }
  });

  it('sends to the leader the map names, computed from the key', async () => {
    const client = makeClient({ endpoints: [second.address] });
    await client.put('route/a', 'x');
    expect(first.node.callsOf('put')).toHaveLength(1);
    expect(second.node.callsOf('put')).toHaveLength(0);
  });

  it('NOT_LEADER with a hint: the client retries on the hinted leader and remembers it', async () => {
    first.node.before = (method) => {
      if (method !== 'clusterInfo') {
        throw new AtollError('NOT_LEADER', 'node 1 no longer leads', { leaderHint: { nodeId: 2, address: second.address } });
      }
    };
    for (const pipelining of [true, false]) {
      const client = makeClient({ endpoints: [first.address], pipelining });
      first.node.calls.length = 0;
      second.node.calls.length = 0;
      expect((await client.put('hint/a', 'x')).applied).toBe(true);
      expect(first.node.callsOf('put')).toHaveLength(1);
      expect(second.node.callsOf('put')).toHaveLength(1);
      // The next request of the same partition goes straight to the learned leader.
      expect((await client.get('hint/a')).text()).toBe('x');
      expect(first.node.callsOf('get')).toHaveLength(0);
    }
  });

  it('NOT_LEADER without a hint: the client refreshes the map and finds the new leader', async () => {
    first.node.before = (method) => {
      if (method !== 'clusterInfo') throw new AtollError('NOT_LEADER', 'node 1 no longer leads');
    };
    const client = makeClient({ endpoints: [first.address] });
    await client.clusterInfo();
    first.node.leaderId = 2;
    second.node.leaderId = 2;
    expect((await client.increment('refresh/a', 5)).value).toBe(5n);
    expect(second.node.callsOf('increment')).toHaveLength(1);
  });

  it('with no known leader the client sends to any node', async () => {
    first.node.leaderId = 0;
    second.node.leaderId = 0;
    const client = makeClient({ endpoints: [first.address, second.address] });
    await client.put('anyone/a', 'x');
    expect(first.node.callsOf('put').length + second.node.callsOf('put').length).toBe(1);
  });

  it('an unreachable endpoint is skipped, for reads and for writes that never left', async () => {
    const client = makeClient({ endpoints: [deadAddress, second.address] });
    second.node.nodes = [{ id: 2, address: second.address, reachable: true }];
    second.node.leaderId = 2;
    expect((await client.put('dead/a', 'x')).applied).toBe(true);
    expect((await client.get('dead/a')).text()).toBe('x');
  });

  it('a dead cluster is UNAVAILABLE within the deadline, writes included, and not indeterminate', async () => {
    const client = makeClient({ endpoints: [deadAddress] });
    const startedMs = Date.now();
    const error = await rejection(client.put('dead/b', 'x', { timeoutMs: 500 }));
    expect(isAtollClientError(error, 'UNAVAILABLE')).toBe(true);
    expect((error as AtollClientError).indeterminate).toBe(false);
    expect(Date.now() - startedMs).toBeLessThan(3000);
  });
});

describe('a connection that breaks after a write was sent', () => {
  it.each([true, false])('fails the write as indeterminate UNAVAILABLE and never re-sends it (pipelining %s)', async (pipelining) => {
    const running = await startNode();
    running.node.before = (method, _request, context) => (method === 'put' ? hangUntilAborted(context) : undefined);
    const client = makeClient({ endpoints: [running.address], pipelining });
    const pending = rejection(client.put('broken/a', 'x', { timeoutMs: 5000 }));
    await expect.poll(() => running.node.callsOf('put').length).toBe(1);
    const startedMs = Date.now();
    const serverGone = running.stop();
    const error = await pending;
    await serverGone;
    expect(isAtollClientError(error, 'UNAVAILABLE')).toBe(true);
    expect((error as AtollClientError).indeterminate).toBe(true);
    // Well before the call's own 5 s deadline: the break itself ended the call.
    expect(Date.now() - startedMs).toBeLessThan(4500);
    expect(running.node.callsOf('put')).toHaveLength(1);
  });
});

describe('pipelining', () => {
  it('multiplexes many concurrent requests over one stream per node', async () => {
    let streamsOpened = 0;
    const running = await startNode({
      kvHandlers: (handlers) => ({
        ...handlers,
        Stream: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
          streamsOpened++;
          (handlers['Stream'] as (call: grpc.ServerDuplexStream<unknown, unknown>) => void)(call);
        },
      }),
    });
    try {
      const client = makeClient({ endpoints: [running.address] });
      const results = await Promise.all(Array.from({ length: 300 }, () => client.increment('pipeline/counter')));
      expect(new Set(results.map((result) => result.value)).size).toBe(300);
      expect((await client.get('pipeline/counter')).text()).toBe('300');
      expect(streamsOpened).toBe(1);
      client.close();
    } finally {
      await running.stop();
    }
  });

  it('falls back to unary calls when the server has no Stream method', async () => {
    const running = await startNode({
      kvHandlers: (handlers) => {
        const { Stream: _stream, ...unary } = handlers;
        return unary;
      },
    });
    try {
      const client = makeClient({ endpoints: [running.address] });
      expect((await client.put('fallback/a', 'x')).applied).toBe(true);
      expect((await client.get('fallback/a')).text()).toBe('x');
      expect(running.node.callsOf('get')).toHaveLength(1);
      client.close();
    } finally {
      await running.stop();
    }
  });
});

describe('an overloaded node', () => {
  let running: RunningNode;

  beforeAll(async () => {
    running = await startNode({ nodeId: 1 });
  });
  afterAll(async () => {
    await running.stop();
  });

  it('OVERLOADED is retried after a back-off, writes included (nothing was queued)', async () => {
    let refusals = 2;
    running.node.before = (method) => {
      if (method === 'put' && refusals-- > 0) throw new AtollError('OVERLOADED', 'partition 0 has 2000 requests waiting');
    };
    const client = makeClient({ endpoints: [running.address] });
    expect((await client.put('busy/a', 'x')).applied).toBe(true);
    expect(running.node.callsOf('put')).toHaveLength(3);
    // With every attempt refused, the caller gets OVERLOADED (RESOURCE_EXHAUSTED), not marked indeterminate.
    running.node.before = (method) => {
      if (method === 'put') throw new AtollError('OVERLOADED', 'partition 0 has 2000 requests waiting');
    };
    const error = (await rejection(makeClient({ endpoints: [running.address], maxAttempts: 3 }).put('busy/b', 'x'))) as AtollClientError;
    expect(error).toMatchObject({ code: 'OVERLOADED', indeterminate: false });
    expect(error.grpcStatusCode).toBe(8);
  });
});

describe('where the token goes', () => {
  let member: RunningNode;
  let stranger: RunningNode;

  beforeAll(async () => {
    member = await startNode({ nodeId: 1 });
    stranger = await startNode({ nodeId: 9 });
  });
  afterAll(async () => {
    await member.stop();
    await stranger.stop();
  });

  it('never follows a leader hint to an address the cluster did not advertise', async () => {
    member.node.nodes = [{ id: 1, address: member.address, reachable: true }];
    member.node.leaderId = 1;
    // A hint (from a compromised or confused node, or forged on the way) names a stranger.
    member.node.before = (method) => {
      if (method !== 'clusterInfo') throw new AtollError('NOT_LEADER', 'go elsewhere', { leaderHint: { nodeId: 9, address: stranger.address } });
    };
    const client = makeClient({ endpoints: [member.address], token: 'atk_secret-token-value', maxAttempts: 3, defaultTimeoutMs: 1_500 });
    const error = (await rejection(client.put('token/a', 'x'))) as AtollClientError;
    expect(error.code).toBe('NOT_LEADER');
    expect(stranger.node.calls).toHaveLength(0);
    // A hint to a node of the cluster, at its advertised address, is still followed.
    member.node.before = undefined;
    expect((await client.put('token/b', 'y')).applied).toBe(true);
    expect(member.node.callsOf('put').at(-1)!.context.authorization).toBe('Bearer atk_secret-token-value');
  });
});
