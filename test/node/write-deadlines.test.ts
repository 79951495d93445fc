/**
 * Writes waiting for the loop share one deadline timer (src/node/service/deadline-wheel.ts, used by
 * kv-executor.ts) instead of a timer each, and every one still ends in DEADLINE_EXCEEDED on time.
 * The node's loop is stopped (an assertion failure, as in loop-failure.test.ts), so every write
 * runs out its deadline.
 */
import assert from 'node:assert/strict';
import { expect, it } from 'vitest';
import { AtollNode } from '../../src/node/atoll-node.js';
import { systemClock, systemTimers, type NodeTimers } from '../../src/node/ports.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { closedAfterEach, driverOf, expectAllLed, loneNodeConfig, silentTransport } from './in-process-cluster.js';

const settle = (ms = 50): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const nodes = closedAfterEach();

it('twenty writes waiting on a stopped loop arm at most a few deadline timers, and all time out', async () => {
  // Timers of about the writes' deadline (300 ms) are the executor's deadline timers.
  let deadlineTimers = 0;
  const timers: NodeTimers = {
    ...systemTimers,
    after(delayMs, run) {
      if (delayMs >= 200 && delayMs <= 400) deadlineTimers++;
      return systemTimers.after(delayMs, run);
    },
  };
  const node = nodes.add(
    await AtollNode.open(loneNodeConfig('write-deadlines', { partitions: 2 }), {
      transport: () => silentTransport(),
      engine: new MemoryEngine(),
      clock: systemClock,
      timers,
      random: new Rng(5),
    }),
  );
  await expectAllLed(node, 5_000);
  const driver = driverOf(node);
  driver.enqueue(() => assert.fail('stop the loop for this test'));
  for (let attempt = 0; attempt < 50 && node.failure === undefined; attempt++) await settle(20);
  expect(node.failure).toBeInstanceOf(assert.AssertionError);

  deadlineTimers = 0;
  const startedMs = Date.now();
  const deadlineMs = startedMs + 300;
  const results = await Promise.allSettled(
    Array.from({ length: 20 }, (_, i) => node.put({ key: `w/${i}`, value: Uint8Array.of(i) }, { deadlineMs })),
  );
  for (const result of results) {
    expect(result.status).toBe('rejected');
    expect((result as PromiseRejectedResult).reason).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
  }
  // Not early, and not much later than one slot (10 ms) plus this loaded machine's timer slack.
  expect(Date.now() - startedMs).toBeGreaterThanOrEqual(290);
  // One timer per write before the wheel (20 here); one per 10 ms slot they fall in now.
  expect(deadlineTimers).toBeGreaterThanOrEqual(1);
  expect(deadlineTimers).toBeLessThanOrEqual(3);
});
