/**
 * An awake group's leader sends a heartbeat round every second tick, not every tick (issue 18: at
 * 1,024 partitions the rounds of awake groups were half the Raft messages of a put). Deterministic:
 * the whole-node simulator, one partition kept awake by a put every 100 ms (two ticks) through the
 * leader's node, heartbeats counted as they leave.
 */
import { describe, expect, it } from 'vitest';
import { simNodeCluster, startAllLed } from './sim-node-cluster.js';

const NODES = [1, 2, 3];
const TICK_MS = 50;
const MAX_EVENTS = 2_000_000;

describe('heartbeat rounds of an awake group', () => {
  it('go out every second tick while puts keep the group awake, and the puts succeed', async () => {
    const sim = simNodeCluster({ seed: 18, nodes: NODES, partitions: 1, tickMs: TICK_MS });
    const { scheduler, network, cluster } = sim;
    await startAllLed(sim, NODES, 10_000, MAX_EVENTS);
    await scheduler.runUntil(scheduler.now + 3_000, MAX_EVENTS);

    let heartbeats = 0;
    let counting = true;
    const send = network.send.bind(network);
    network.send = (from, to, messages) => {
      if (counting) for (const item of messages) if (item.message?.type === 'heartbeat') heartbeats++;
      return send(from, to, messages);
    };
    const seconds = 5;
    const value = new Uint8Array(16).fill(97);
    let puts = 0;
    let failed = 0;
    const endAt = scheduler.now + seconds * 1_000;
    const client = async (): Promise<void> => {
      // Bounded by virtual time: one put every 100 ms for `seconds`.
      while (scheduler.now < endAt) {
        const api = cluster.apiOf(1);
        const host = cluster.hostOf(1);
        try {
          await api!.put({ key: `k${puts}`, value }, { deadlineMs: host!.clock.wallMs() + 2_000 });
          puts++;
        } catch {
          failed++;
        }
        await new Promise<void>((resolve) => scheduler.after(100, resolve));
      }
    };
    const done = client();
    await scheduler.runUntil(endAt + 1_000, MAX_EVENTS);
    counting = false;
    await done;
    const ticks = (seconds * 1_000) / TICK_MS;
    expect(failed).toBe(0);
    expect(puts).toBeGreaterThan(30);
    // One leader, two followers: a round is two heartbeats. Every tick would be about 2 x 100 = 200
    // (the group stays awake: a put every two ticks); every second tick about 100.
    expect(heartbeats).toBeGreaterThan(0);
    expect(heartbeats).toBeLessThanOrEqual(ticks * 1.2);
  }, 60_000);
});
