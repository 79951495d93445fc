/**
 * The router's retry after a leader change, on a node that hosts no replica of the partition (so
 * every attempt is a forward): which failures it routes again (those proving the request was not
 * applied, and any leader change for a read), which it hands to the caller (unknown outcomes), and
 * that it stops within the deadline and a bounded number of attempts.
 */
import { describe, expect, it } from 'vitest';
import { AtollError, isAtollError } from '../../src/errors.js';
import { defaultLimits } from '../../src/limits.js';
import type { KvOperation, KvResult } from '../../src/api/operations.js';
import { Router, type RouterOptions } from '../../src/node/service/router.js';
import { bucketHash } from '../../src/keys/bucket-hash.js';

const putOp: KvOperation = { kind: 'put', request: { key: 'a/k', value: new Uint8Array([1]) } };
const getOp: KvOperation = { kind: 'get', request: { key: 'a/k' } };
const ok = { kind: 'put', response: { applied: true, revision: 7 } } as unknown as KvResult;

function routerWith(answers: Array<() => Promise<KvResult>>): { router: Router; sent: number[] } {
  const sent: number[] = [];
  let n = 0;
  const options = {
    id: 1,
    peers: new Map([[1, 'h:1'], [2, 'h:2'], [3, 'h:3']]),
    nodeIds: [1, 2, 3],
    partitions: 1,
    replicationFactor: 3,
    tickMs: 10,
    electionTicks: 10,
    limits: defaultLimits,
    testBugs: undefined,
    driver: {
      groups: new Map(),
      enqueue: () => undefined,
      transport: {
        forward: (to: number) => {
          sent.push(to);
          const answer = answers[Math.min(n++, answers.length - 1)] as () => Promise<KvResult>;
          return answer();
        },
      },
    },
    executor: {},
    admission: { admitForward: () => () => undefined },
    clock: { wallMs: () => Date.now(), monotonicMs: () => performance.now() },
    timers: { after: (ms: number, run: () => void) => { const t = setTimeout(run, ms); return { cancel: () => clearTimeout(t) }; } },
  } as unknown as RouterOptions;
  return { router: new Router(options), sent };
}

const fail = (error: AtollError) => () => Promise.reject(error);
const refused = new AtollError('NOT_LEADER', 'leadership is moving', { partition: 0, neverSent: true, leaderHint: { nodeId: 3, address: 'h:3' } });

async function errorOf(promise: Promise<unknown>): Promise<AtollError> {
  const error = await promise.then(() => undefined, (e: unknown) => e);
  if (!isAtollError(error)) throw new Error(`expected an AtollError, got ${String(error)}`);
  return error;
}

describe('router retry after a leader change', () => {
  it('routes a write again, to the hinted leader, when it was refused unapplied', async () => {
    const { router, sent } = routerWith([fail(refused), fail(new AtollError('NO_LEADER', 'none', { neverSent: true })), () => Promise.resolve(ok)]);
    await expect(router.route(0, putOp, { deadlineMs: Date.now() + 2_000 })).resolves.toBe(ok);
    expect(sent.length).toBe(3);
    expect(sent[1]).toBe(3);
  });

  it('hands a write whose outcome is unknown to the caller at once (never applied twice)', async () => {
    for (const unknown of [
      new AtollError('UNAVAILABLE', 'connection reset', { fromTransport: true }),
      new AtollError('NOT_LEADER', 'no mark', { partition: 0 }),
      new AtollError('DEADLINE_EXCEEDED', 'slow', { fromTransport: true }),
    ]) {
      const { router, sent } = routerWith([fail(unknown), () => Promise.resolve(ok)]);
      const error = await errorOf(router.route(0, putOp, { deadlineMs: Date.now() + 2_000 }));
      expect(error.code).toBe(unknown.code);
      expect(error.details?.['neverSent']).toBeUndefined();
      expect(sent.length).toBe(1);
    }
  });

  it('routes a read again after an unreachable leader', async () => {
    const { router, sent } = routerWith([fail(new AtollError('UNAVAILABLE', 'reset', { fromTransport: true })), () => Promise.resolve(ok)]);
    await expect(router.route(0, getOp, { deadlineMs: Date.now() + 2_000 })).resolves.toBe(ok);
    expect(sent.length).toBe(2);
  });

  it('a forwarded request (hops > 0) is not retried there: only the node it arrived at retries', async () => {
    const { router, sent } = routerWith([fail(refused), () => Promise.resolve(ok)]);
    expect((await errorOf(router.route(0, putOp, { deadlineMs: Date.now() + 2_000, hops: 1 }))).code).toBe('NOT_LEADER');
    expect(sent.length).toBe(1);
  });

  it('stops before the deadline with DEADLINE_EXCEEDED marked not applied, and within the attempt bound', async () => {
    const { router, sent } = routerWith([fail(refused)]);
    const started = Date.now();
    const error = await errorOf(router.route(0, putOp, { deadlineMs: started + 300 }));
    expect(Date.now()).toBeLessThanOrEqual(started + 300);
    expect(error.code).toBe('DEADLINE_EXCEEDED');
    expect(error.details?.['neverSent']).toBe(true);
    expect(sent.length).toBeGreaterThan(1);

    const long = routerWith([fail(refused)]);
    const exhausted = await errorOf(long.router.route(0, putOp, { deadlineMs: Date.now() + 30_000 }));
    expect(exhausted.code).toBe('NOT_LEADER');
    expect(long.sent.length).toBe(12);
  });

  it('follows a merge: PARTITION_MOVED naming mergedInto tombstones the partition\'s start and routes to the left one at once', async () => {
    const start = bucketHash('a');
    const moved = new AtollError('PARTITION_MOVED', 'merged', { servedPartitionId: start, mergedInto: 0 });
    const { router, sent } = routerWith([fail(moved), () => Promise.resolve(ok)]);
    expect(router.ranges.learn(start)).toBe(true);
    expect(router.partitionOf(putOp)).toBe(start);
    await expect(router.route(start, putOp, { deadlineMs: Date.now() + 2_000 })).resolves.toBe(ok);
    expect(sent.length).toBe(2);
    expect(router.partitionOf(putOp)).toBe(0);
    expect(router.ranges.isKnown(start)).toBe(false);
    expect(router.ranges.learn(start)).toBe(false);
  });
});
