/**
 * The client and REQUEST_ID_EXPIRED (issue 16, exactly-once): a commit whose first send applied
 * but whose answer was lost is resent with the same request id; when the partition has evicted
 * that id meanwhile, the resend fails with REQUEST_ID_EXPIRED, and neither the commit nor
 * transaction()'s callback runs again. (Before, the resend conflicted with its own first
 * application, and transaction() ran the callback again: the transfer happened twice.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { AtollClient, AtollClientError, isAtollClientError, newRequestId } from '../../src/index.js';
import { requestIdCreatedAtMs } from '../../src/mvcc/request-id.js';
import type { CallContext, CommitRequest } from '../../src/api/node-api.js';
import { startNode, type RunningNode } from '../server/harness.js';

const running: RunningNode[] = [];
const clients: AtollClient[] = [];
afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  for (const node of running.splice(0)) await node.stop();
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected the call to fail');
}

describe('REQUEST_ID_EXPIRED in the client', () => {
  it('makes timestamped request ids', () => {
    const before = Date.now();
    const id = newRequestId();
    expect(id).toMatch(/^t1\.\d+\.[0-9a-f-]{36}$/);
    expect(requestIdCreatedAtMs(id)).toBeGreaterThanOrEqual(before);
    expect(requestIdCreatedAtMs(id)).toBeLessThanOrEqual(Date.now());
    expect(Buffer.byteLength(id)).toBeLessThanOrEqual(64);
    expect(newRequestId()).not.toBe(id);
  });

  it.each([true, false])('transaction() does not run its callback again when a resent commit expired (pipelining %s)', async (pipelining) => {
    const node = await startNode({ dedupWindow: 2 });
    running.push(node);
    const client = new AtollClient({ endpoints: [node.address], pipelining });
    clients.push(client);
    await client.put('bank/a', '100');
    await client.put('bank/b', '0');

    // The first commit applies, two other requests push its id out of the window, and then its
    // answer is lost (the connection broke after the send, as far as the client can tell).
    let commits = 0;
    const ids: string[] = [];
    node.node.before = async (method, request, context: CallContext) => {
      if (method !== 'commit') return;
      ids.push((request as CommitRequest).requestId!);
      if (commits++ > 0) return;
      await node.node.commit(request as CommitRequest, context);
      for (const key of ['other/1', 'other/2']) {
        const begun = await node.node.beginTransaction({ key, isolation: 'snapshot' }, context);
        const write = { key, value: new Uint8Array([1]) };
        await node.node.commit({ transaction: begun.transaction, writes: [write], readKeys: [], readPrefixes: [], requestId: newRequestId() }, context);
      }
      throw new AtollError('UNAVAILABLE', 'the connection broke after the commit was sent');
    };

    let runs = 0;
    const error = await rejection(
      client.transaction('bank/a', async (tx) => {
        runs++;
        const a = Number((await tx.get('bank/a')).text());
        const b = Number((await tx.get('bank/b')).text());
        await tx.put('bank/a', String(a - 30));
        await tx.put('bank/b', String(b + 30));
      }),
    );
    node.node.before = undefined;
    expect(isAtollClientError(error, 'REQUEST_ID_EXPIRED'), String(error)).toBe(true);
    expect((error as AtollClientError).grpcStatus).toBe('FAILED_PRECONDITION');
    // The first send may have applied (it did): the call's outcome is unknown, not "failed".
    expect((error as AtollClientError).indeterminate).toBe(true);
    expect(runs).toBe(1);
    // The first commit's id, resent once (the client generated it: timestamped).
    expect(ids.slice(0, 2)).toEqual([ids[0], ids[0]]);
    expect(requestIdCreatedAtMs(ids[0]!)).toBeDefined();
    // The user's, plus the 2 fillers': the transfer happened exactly once.
    expect((await client.get('bank/a')).text()).toBe('70');
    expect((await client.get('bank/b')).text()).toBe('30');
  });
});
