/**
 * Client requests take turns of the event loop (src/server/request-turns.ts): once a turn has spent
 * REQUEST_TURN_MS starting requests, the next request starts on the loop's next turn, after the
 * I/O and immediates already queued; unary handlers wait for it before they run.
 */
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { REQUEST_TURN_MS, requestTurn } from '../../src/server/request-turns.js';
import { unaryHandler } from '../../src/server/unary-handler.js';

const spin = (ms: number): void => {
  const until = performance.now() + ms;
  while (performance.now() < until);
};
const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
const microtasks = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

describe('request turns', () => {
  it('defers a request that arrives after the turn spent its budget to the next turn', async () => {
    await nextTurn();
    expect(requestTurn()).toBeUndefined();
    spin(REQUEST_TURN_MS + 1);
    const deferred = requestTurn();
    expect(deferred).toBeInstanceOf(Promise);
    let started = false;
    void deferred!.then(() => (started = true));
    await microtasks();
    expect(started).toBe(false);
    await nextTurn();
    expect(started).toBe(true);
    // A new turn has its budget again.
    expect(requestTurn()).toBeUndefined();
  });

  it('a unary call arriving in a spent turn runs on the next one', async () => {
    await nextTurn();
    expect(requestTurn()).toBeUndefined();
    spin(REQUEST_TURN_MS + 1);
    let handled = false;
    let answered: unknown;
    const handler = unaryHandler(pino({ level: 'silent' }), async () => {
      handled = true;
      return 'answer';
    });
    const call = { request: {}, cancelled: false, getDeadline: () => Infinity, on: () => undefined, removeListener: () => undefined, metadata: { get: () => [] } };
    handler(call as never, ((error: unknown, response: unknown) => (answered = error ?? response)) as never);
    await microtasks();
    expect(handled).toBe(false);
    await nextTurn();
    await microtasks();
    expect(handled).toBe(true);
    expect(answered).toBe('answer');
  });
});
