/**
 * Watches open in turns (src/node/service/watch-service.ts): a burst of opens in one turn of the
 * event loop (the hostile load run's top-ups of 25 watches a connection, refused at the tenant's
 * memory bound) is served 2 ms of it at a time; the rest waits for a later turn, so one read of a
 * socket cannot hold the loop for the whole burst.
 */
import { describe, expect, it } from 'vitest';
import { AtollError } from '../../src/errors.js';
import { makeLimits } from '../../src/limits.js';
import { WatchService, type WatchServiceOptions } from '../../src/node/service/watch-service.js';
import type { NodeClock, NodeTimers } from '../../src/node/ports.js';

describe('watch opens', () => {
  it('serve 2 ms of a burst in one turn of the loop and the rest on later turns', async () => {
    // Each open costs 0.5 ms of the clock (its authorization); turns run when the test says so.
    let nowMs = 0;
    const turns: Array<() => void> = [];
    const clock: NodeClock = { monotonicMs: () => nowMs, wallMs: () => nowMs };
    const timers = { soon: (run: () => void) => void turns.push(run) } as unknown as NodeTimers;
    const authorized: number[] = [];
    let turn = 0;
    const access = {
      authorize: async () => {
        authorized.push(turn);
        nowMs += 0.5;
        throw new AtollError('PERMISSION_DENIED', 'refused, as a burst of hostile opens is');
      },
    };
    const service = new WatchService({ id: 1, limits: makeLimits(), clock, timers, access } as unknown as WatchServiceOptions);
    const sink = { write: () => true, drained: async () => true };
    const opens = Array.from({ length: 20 }, () => service.watch({ prefix: 'p/' }, { deadlineMs: 60_000 }, sink).catch((error: unknown) => error));
    // Let the first turn's opens run; then turn the loop until every open was served.
    const settle = async (): Promise<void> => {
      for (let i = 0; i < 10; i++) await Promise.resolve();
    };
    await settle();
    for (let guard = 0; guard < 50 && authorized.length < 20; guard++) {
      // One turn of the loop: the callbacks queued before it, each followed by its microtasks (as Node runs setImmediate's).
      turn++;
      for (const run of turns.splice(0)) {
        run();
        await settle();
      }
    }
    for (const outcome of await Promise.all(opens)) expect(outcome).toMatchObject({ code: 'PERMISSION_DENIED' });
    const perTurn = new Map<number, number>();
    for (const t of authorized) perTurn.set(t, (perTurn.get(t) ?? 0) + 1);
    // 2 ms a turn at 0.5 ms an open: 5 opens (the fifth starts before the 2 ms are up), then the rest later.
    expect(authorized).toHaveLength(20);
    expect([...perTurn.values()].every((count) => count <= 5)).toBe(true);
    expect(perTurn.size).toBeGreaterThanOrEqual(4);
  });
});
