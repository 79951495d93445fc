/**
 * Watchers take turns at the node's loop (src/watch/history-turns.ts): reads of history run at
 * most `concurrent` at once, served tenant by tenant, and a batch's messages go out in slices of
 * PACE_MS between two turns of the loop.
 */
import { describe, expect, it } from 'vitest';
import { HistoryReadLine, SendPacer } from '../../src/watch/history-turns.js';

const never = new AbortController().signal;

/** A line on a clock the test moves; `timers` are the line's wake-ups, run by the test. */
function lineOf(concurrent: number, bytesPerSecond = 1_000_000, burstBytes = 1_000_000) {
  const clock = { nowMs: 0 };
  const timers: Array<{ atMs: number; run: () => void; cancelled: boolean }> = [];
  const line = new HistoryReadLine({
    concurrent,
    bytesPerSecond,
    burstBytes,
    nowMs: () => clock.nowMs,
    after: (ms, run) => {
      const timer = { atMs: clock.nowMs + ms, run, cancelled: false };
      timers.push(timer);
      return { cancel: () => (timer.cancelled = true) };
    },
  });
  const advance = (ms: number): void => {
    clock.nowMs += ms;
    for (const timer of timers.splice(0)) {
      if (timer.cancelled) continue;
      if (timer.atMs <= clock.nowMs) timer.run();
      else timers.push(timer);
    }
  };
  return { line, advance };
}

describe('HistoryReadLine', () => {
  it('runs at most `concurrent` reads, and serves the tenants in turns, not in order of arrival', async () => {
    const { line } = lineOf(1);
    const served: string[] = [];
    const first = await line.turn('evil', never);
    expect(first).toBeDefined();
    // evil queues five more reads, then acme one: acme's goes second, not sixth.
    const pending = [...['evil', 'evil', 'evil', 'evil', 'evil', 'acme'].entries()].map(async ([i, tenant]) => {
      const release = await line.turn(tenant, never);
      served.push(`${tenant}${i}`);
      expect(line.reading).toBe(1);
      release!(0);
    });
    expect(line.reading).toBe(1);
    expect(line.queued).toBe(6);
    first!(0);
    await Promise.all(pending);
    expect(served).toEqual(['evil0', 'acme5', 'evil1', 'evil2', 'evil3', 'evil4']);
    expect(line.reading).toBe(0);
    expect(line.queued).toBe(0);
  });

  it('a watcher aborted while it waits leaves the line, and a release counts once', async () => {
    const { line } = lineOf(1);
    const held = (await line.turn('a', never))!;
    const abort = new AbortController();
    const waiting = line.turn('b', abort.signal);
    const behind = line.turn('c', never);
    abort.abort();
    expect(await waiting).toBeUndefined();
    expect(line.queued).toBe(1);
    held(0);
    held(0);
    const next = await behind;
    expect(line.reading).toBe(1);
    next!(0);
    expect(line.reading).toBe(0);
    expect(await line.turn('d', abort.signal)).toBeUndefined();
  });
});

describe('HistoryReadLine byte rate', () => {
  it('a tenant that read past its allowance waits until it is paid, while another tenant reads', async () => {
    // 1 MB a second, 1 MB at once, two turns.
    const { line, advance } = lineOf(2, 1_000_000, 1_000_000);
    (await line.turn('evil', never))!(3_000_000); // 2 MB in debt now
    const evil = line.turn('evil', never);
    let evilGot = false;
    void evil.then(() => (evilGot = true));
    const acme = await line.turn('acme', never);
    expect(acme).toBeDefined(); // not behind evil's debt
    acme!(1_000);
    advance(1_500);
    await Promise.resolve();
    expect(evilGot).toBe(false);
    advance(600); // 2.1 s: paid
    expect((await evil) === undefined).toBe(false);
    expect(line.reading).toBe(1);
  });
});

describe('SendPacer', () => {
  it('is due once the watchers sent for PACE_MS since the loop turned, and resumes them on the next turn', async () => {
    let nowMs = 0;
    const turns: Array<() => void> = [];
    const pacer = new SendPacer(() => nowMs, (run) => void turns.push(run), 2);
    expect(pacer.due()).toBe(false); // the hold starts
    nowMs = 1;
    expect(pacer.due()).toBe(false);
    nowMs = 2;
    expect(pacer.due()).toBe(true);
    let resumed = 0;
    const paused = [pacer.pause().then(() => resumed++), pacer.pause().then(() => resumed++)];
    await Promise.resolve();
    expect(resumed).toBe(0);
    // The loop turns: the marker ends the hold and the paused watchers go on.
    for (const run of turns.splice(0)) run();
    await Promise.all(paused);
    expect(resumed).toBe(2);
    nowMs = 10;
    expect(pacer.due()).toBe(false); // a new hold
    nowMs = 11;
    expect(pacer.due()).toBe(false);
  });
});
