/**
 * The node's scheduler of scripts (src/node/service/script-scheduler.ts, issue 33 finding 2): admission
 * (scripts per node, per tenant, and each tenant's budget of script time) and turns of the event
 * loop. The clock and the loop's turns are the test's, so every assertion is exact.
 */
import { describe, expect, it } from 'vitest';
import { ScriptScheduler, type ScriptSlot } from '../../src/node/service/script-scheduler.js';
import { failure } from '../script/harness.js';

const limits = {
  maxScriptsPerNode: 3,
  maxScriptsPerTenant: 2,
  scriptCpuMsPerSecond: 100,
  scriptCpuBurstMs: 50,
  // The line of scripts waiting for a slot: 2 of a tenant, 3 in all.
  maxPendingRequestsPerPartition: 2,
  maxPendingRequestsPerNode: 3,
};

function harness(turnMs = 5) {
  let nowMs = 0;
  const turns: Array<() => void> = [];
  /** The rests asked for after used-up holds, in ms; each passes at once here (its turn is queued as without one). */
  const rests: number[] = [];
  const after = (ms: number, run: () => void): void => {
    rests.push(ms);
    run();
  };
  const scheduler = new ScriptScheduler({ limits, nowMs: () => nowMs, nextTurn: (run) => void turns.push(run), turnMs, after });
  return {
    scheduler,
    rests,
    advance: (ms: number) => void (nowMs += ms),
    /** Runs what one turn of the loop runs (its queued callbacks), then lets every promise settle. */
    async turn(): Promise<void> {
      for (const run of turns.splice(0)) run();
      await settle();
    },
    get queued(): number {
      return turns.length;
    },
  };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The slots a set of admissions has been given so far, by name. */
function admitted(admissions: Record<string, Promise<ScriptSlot>>): Promise<string[]> {
  const given: string[] = [];
  for (const [name, admission] of Object.entries(admissions)) void admission.then(() => given.push(name), () => undefined);
  return settle().then(() => given.sort());
}

describe('admission', () => {
  it('runs at most its bounds of scripts, lets more wait in line in order, and refuses past the line', async () => {
    const { scheduler } = harness();
    const a1 = await scheduler.admit('acme');
    const a2 = await scheduler.admit('acme');
    const waiting = { a3: scheduler.admit('acme'), a4: scheduler.admit('acme') };
    // The tenant runs 2 and has 2 in line: refused.
    const tenant = await failure(scheduler.admit('acme'));
    expect(tenant.code).toBe('RESOURCE_EXHAUSTED');
    expect(tenant.details).toMatchObject({ reason: 'script-concurrency', maxScriptsPerTenant: 2 });
    const g1 = await scheduler.admit('globex');
    // The node runs 3: initech waits, and the line (3) is full.
    const i1 = scheduler.admit('initech');
    const node = await failure(scheduler.admit('initech'));
    expect(node.code).toBe('OVERLOADED');
    expect(await admitted({ ...waiting, i1 })).toEqual([]);
    a1.release();
    a1.release();
    expect(await admitted({ ...waiting, i1 })).toEqual(['a3']);
    // A node slot: acme is at its bound, so initech (behind a4) goes on first.
    g1.release();
    expect(await admitted({ ...waiting, i1 })).toEqual(['a3', 'i1']);
    a2.release();
    expect(await admitted({ ...waiting, i1 })).toEqual(['a3', 'a4', 'i1']);
    expect(scheduler.runningScripts).toBe(3);
    expect(scheduler.waitingScripts).toBe(0);
  });

  it('counts the time a script ran, never the time it was paused', async () => {
    const { scheduler, advance, turn } = harness();
    const slot = await scheduler.admit('acme');
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
    expect((await scheduler.admit('acme')).usedMs).toBe(0);
  });

  it('refuses a tenant whose budget is spent with QUOTA_EXCEEDED, says when to retry, and lets other tenants run', async () => {
    const { scheduler, advance } = harness();
    const slot = await scheduler.admit('acme');
    await slot.run(async () => advance(80));
    slot.release();
    const spent = await failure(scheduler.admit('acme'));
    expect(spent.code).toBe('QUOTA_EXCEEDED');
    // 50 - 80 + 8 (80 ms of refill at 100 ms per second) = -22 ms: 220 ms to refill.
    expect(spent.details).toMatchObject({ reason: 'script-cpu', retryAfterMs: 221 });
    expect((await scheduler.admit('globex')).usedMs).toBe(0);
    advance(220);
    expect((await failure(scheduler.admit('acme'))).code).toBe('QUOTA_EXCEEDED');
    advance(1);
    await scheduler.admit('acme');
  });

  it('refuses a script that waited in line while its tenant spent its budget', async () => {
    const { scheduler, advance } = harness();
    const running = [await scheduler.admit('acme'), await scheduler.admit('acme')];
    const waiting = scheduler.admit('acme');
    await running[0]!.run(async () => advance(100));
    running[0]!.release();
    expect((await failure(waiting)).code).toBe('QUOTA_EXCEEDED');
    expect(scheduler.waitingScripts).toBe(0);
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
  async function twoScripts(unitsA: number, unitsB: number) {
    const loop = harness(5);
    const log: string[] = [];
    const [a, b] = await Promise.all([loop.scheduler.admit('acme'), loop.scheduler.admit('globex')]);
    const done = Promise.all([script(a, 'a', unitsA, log, loop.advance), script(b, 'b', unitsB, log, loop.advance)]);
    return { turn: () => loop.turn(), log, a, b, done };
  }

  it('lets scripts together hold the loop for one turn at a time, one after the other, the one that used least first', async () => {
    const { turn, log, a, b, done } = await twoScripts(12, 12);
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

  it('rests three times a used-up hold before the next turn, so scripts back to back have at most a quarter of the loop', async () => {
    const loop = harness(5);
    const log: string[] = [];
    const done = script(await loop.scheduler.admit('acme'), 'a', 12, log, loop.advance);
    await settle();
    // The first hold (5 ms) is used up: the next turn waits 15 ms, and so after each hold.
    expect(log.join('')).toBe('aaaaa');
    expect(loop.rests).toEqual([15]);
    await loop.turn();
    expect(loop.rests).toEqual([15, 15]);
    await loop.turn();
    await done;
    expect(log.length).toBe(12);
    // The last turn ran 2 ms and the script ended: no rest is asked for a hold that was not used up.
    expect(loop.rests).toEqual([15, 15]);
  });

  it('goes on with the next paused script in the same turn when the one before ends early', async () => {
    const { turn, log, done } = await twoScripts(8, 3);
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
    await script(await loop.scheduler.admit('acme'), 'a', 4, log, loop.advance);
    expect(log).toHaveLength(4);
    // Only the marker that ends the hold at the next turn.
    expect(loop.queued).toBe(1);
  });
});
