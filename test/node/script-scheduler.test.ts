/**
 * The node's scheduler of scripts (src/node/script-scheduler.ts, issue 33 finding 2): admission
 * (scripts per node, per tenant, and each tenant's budget of script time) and turns of the event
 * loop. The clock and the loop's turns are the test's, so every assertion is exact.
 */
import { describe, expect, it } from 'vitest';
import { ScriptScheduler, type ScriptSlot } from '../../src/node/script-scheduler.js';
import { failure } from '../script/harness.js';

const limits = { maxScriptsPerNode: 3, maxScriptsPerTenant: 2, scriptCpuMsPerSecond: 100, scriptCpuBurstMs: 50 };

function harness(turnMs = 5) {
  let nowMs = 0;
  const turns: Array<() => void> = [];
  const scheduler = new ScriptScheduler({ limits, nowMs: () => nowMs, nextTurn: (run) => void turns.push(run), turnMs });
  return {
    scheduler,
    advance: (ms: number) => void (nowMs += ms),
    /** Runs what one turn of the loop runs (its queued callbacks), then lets every promise settle. */
    async turn(): Promise<void> {
      for (const run of turns.splice(0)) run();
      await new Promise((resolve) => setImmediate(resolve));
    },
    get queued(): number {
      return turns.length;
    },
  };
}

describe('admission', () => {
  it('bounds the scripts of a tenant and of the node, and frees a slot when a script ends (once)', async () => {
    const { scheduler } = harness();
    const first = scheduler.admit('acme');
    scheduler.admit('acme');
    const tenant = await failure(() => scheduler.admit('acme'));
    expect(tenant.code).toBe('RESOURCE_EXHAUSTED');
    expect(tenant.details).toMatchObject({ reason: 'script-concurrency', maxScriptsPerTenant: 2 });
    const other = scheduler.admit('globex');
    const node = await failure(() => scheduler.admit('initech'));
    expect(node.code).toBe('OVERLOADED');
    expect(node.details).toMatchObject({ maxScriptsPerNode: 3 });
    first.release();
    first.release();
    expect(scheduler.runningScripts).toBe(2);
    other.release();
    scheduler.admit('acme');
    expect((await failure(() => scheduler.admit('acme'))).code).toBe('RESOURCE_EXHAUSTED');
  });

  it('counts the time a script ran, never the time it was paused', async () => {
    const { scheduler, advance, turn } = harness();
    const slot = scheduler.admit('acme');
    await slot.run(async () => {
      advance(30);
      expect(slot.due()).toBe(false); // the first ask opens a hold: 30 ms before it were the script's too
      advance(5);
      expect(slot.due()).toBe(true);
      const paused = slot.pause();
      advance(1_000); // others' work: not this script's
      await turn();
      await paused;
      advance(20);
    });
    slot.release();
    expect(slot.usedMs).toBe(55);
    expect(slot.pausedMs).toBe(1_000);
    // The 55 ms were charged (5 ms of debt on a 50 ms budget), and the budget refilled meanwhile
    // at 100 ms per second: after 1,055 ms it is full again.
    expect(scheduler.admit('acme').usedMs).toBe(0);
  });

  it('refuses a tenant whose budget is spent with QUOTA_EXCEEDED, says when to retry, and lets other tenants run', async () => {
    const { scheduler, advance } = harness();
    const slot = scheduler.admit('acme');
    await slot.run(async () => advance(80));
    slot.release();
    const spent = await failure(() => scheduler.admit('acme'));
    expect(spent.code).toBe('QUOTA_EXCEEDED');
    // 50 - 80 + 8 (80 ms of refill at 100 ms per second) = -22 ms: 220 ms to refill.
    expect(spent.details).toMatchObject({ reason: 'script-cpu', retryAfterMs: 221 });
    expect(scheduler.admit('globex').usedMs).toBe(0);
    advance(220);
    expect((await failure(() => scheduler.admit('acme'))).code).toBe('QUOTA_EXCEEDED');
    advance(1);
    scheduler.admit('acme');
  });
});

describe('turns of the loop', () => {
  /** A script of `units` pieces of work of 1 ms each, asking before each; logs who ran. */
  function script(slot: ScriptSlot, name: string, units: number, log: string[], advance: (ms: number) => void): Promise<void> {
    return slot.run(async () => {
      for (let unit = 0; unit < units; unit++) {
        if (slot.due()) await slot.pause();
        log.push(name);
        advance(1);
      }
    });
  }

  /** Two tenants' scripts of `unitsA` and `unitsB` ms, started together. */
  function twoScripts(unitsA: number, unitsB: number) {
    const loop = harness(5);
    const log: string[] = [];
    const a = loop.scheduler.admit('acme');
    const b = loop.scheduler.admit('globex');
    const done = Promise.all([script(a, 'a', unitsA, log, loop.advance), script(b, 'b', unitsB, log, loop.advance)]);
    return { turn: () => loop.turn(), log, a, b, done };
  }

  it('lets scripts together hold the loop for one turn at a time, one after the other, the one that used least first', async () => {
    const { turn, log, a, b, done } = twoScripts(12, 12);
    const perTurn: string[] = [];
    for (let round = 0; round < 10 && log.length < 24; round++) {
      const before = log.length;
      await turn();
      perTurn.push(log.slice(before).join(''));
    }
    await done;
    // Before the first turn a ran its 5 ms; then each turn is one script's 5 ms, b first (it had used none).
    expect(log.slice(0, 5).join('')).toBe('aaaaa');
    // In the fourth turn a ends after 2 ms, and b goes on in the same turn.
    expect(perTurn).toEqual(['bbbbb', 'aaaaa', 'bbbbb', 'aabb']);
    expect(a.usedMs).toBe(12);
    expect(b.usedMs).toBe(12);
  });

  it('goes on with the next paused script in the same turn when the one before ends early', async () => {
    const { turn, log, done } = twoScripts(8, 3);
    await turn();
    // b (none used) went on, ended after 3 ms; a went on in the same turn for the 2 ms left.
    expect(log.join('')).toBe('aaaaabbbaa');
    await turn();
    await done;
    expect(log.join('')).toBe('aaaaabbbaaa');
  });

  it('queues nothing for a script that never has to pause', async () => {
    const loop = harness(5);
    const log: string[] = [];
    await script(loop.scheduler.admit('acme'), 'a', 4, log, loop.advance);
    expect(log).toHaveLength(4);
    // Only the marker that ends the hold at the next turn.
    expect(loop.queued).toBe(1);
  });
});
