/**
 * The voter side of the leader lease (src/node/replica/read-barrier.ts): a heartbeat restarts a voter's
 * election timer, so ticks a stalled loop still owes must be counted before a frame is stepped,
 * not after it (they would shorten the time the voter refuses other candidates). The driver catches
 * its ticks up to its clock before it steps any frame, and after a catch-up its tick clock lags by
 * less than one tick (the rest of a long stall is dropped, never owed).
 */
import { describe, expect, it } from 'vitest';
import { AtollNode } from '../../src/node/atoll-node.js';
import type { NodeClock, NodeTimers, TransportEvents } from '../../src/node/ports.js';
import { Rng } from '../../src/raft/rng.js';
import { MemoryEngine } from '../../src/storage/memory-engine.js';
import { closedAfterEach, driverOf, loneNodeConfig, silentTransport } from './in-process-cluster.js';

const TICK_MS = 20;
const settle = (ms = 30): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const opened = closedAfterEach();

describe('ticks before a frame is stepped', () => {
  it('a frame after a stall first catches up the owed ticks (at most 50), and nothing stays owed', async () => {
    let nowMs = 1_000;
    const clock: NodeClock = { monotonicMs: () => nowMs, wallMs: () => 1_800_000_000_000 + nowMs };
    // The tick timer never fires: only the loop's own catch-ups move the ticks (a stalled timer).
    const timers: NodeTimers = {
      every: () => ({ cancel: () => undefined }),
      after: (delayMs, run) => {
        const timer = setTimeout(run, delayMs);
        return { cancel: () => clearTimeout(timer) };
      },
      soon: (run) => setImmediate(run),
    };
    let events: TransportEvents | undefined;
    const transport = silentTransport();
    const node = opened.add(await AtollNode.open(
      loneNodeConfig('ticks-before-step', { peers: new Map([[1, 'a:1'], [2, 'a:2']]), tickMs: TICK_MS }),
      { transport: (given) => ((events = given), transport), engine: new MemoryEngine(), clock, timers, random: new Rng(5) },
    ));
    const driver = driverOf(node);
    await settle();
    const ticksBefore = driver.activity.ticks;
    // A 5-tick stall, then a frame (a node heartbeat) from node 2: its ticks are counted first.
    nowMs += 5 * TICK_MS + 1;
    events!.onMessages(2, []);
    await settle();
    expect(driver.activity.ticks - ticksBefore).toBe(5);
    // An 80-tick stall: 50 are run, the other 30 are dropped, not owed to the next frame.
    nowMs += 80 * TICK_MS;
    events!.onMessages(2, []);
    await settle();
    expect(driver.activity.ticks - ticksBefore).toBe(55);
    events!.onMessages(2, []);
    await settle();
    expect(driver.activity.ticks - ticksBefore).toBe(55);
  }, 30_000);
});
