/**
 * Decayed request rates of the hottest keys, on simulated time: the hot key of a skewed stream is
 * reported first within a second, rates track a steady load without a warm-up lag, old load
 * fades by half per half-life, the documented error bound holds against exactly computed decayed
 * rates, and memory stays bounded.
 */
import { describe, expect, it } from 'vitest';
import { DecayingTopK } from '../../src/hotkeys/decaying-top-k.js';
import { Rng } from '../../src/raft/rng.js';

const halfLifeMs = 5_000;

/** The exact decayed rate the estimator targets, from every request's time. */
function exactRate(times: readonly number[], nowMs: number, firstMs: number): number {
  const lambda = Math.LN2 / halfLifeMs;
  const decayed = times.reduce((sum, t) => sum + Math.exp(-lambda * (nowMs - t)), 0);
  return (lambda * decayed * 1_000) / (1 - Math.exp(-lambda * Math.max(nowMs - firstMs, 1_000)));
}

/** `requestsPerSecond` requests, a `hotShare` of them to `hot`, the rest spread over `others` keys. */
function feed(topK: DecayingTopK, options: { rng: Rng; fromMs: number; toMs: number; requestsPerSecond: number; hot?: string; hotShare: number; others: number }): void {
  const stepMs = 1_000 / options.requestsPerSecond;
  for (let t = options.fromMs; t < options.toMs; t += stepMs) {
    const key = options.hot !== undefined && options.rng.chance(options.hotShare) ? options.hot : `other-${options.rng.int(options.others)}`;
    topK.record(key, t);
  }
}

describe('DecayingTopK', () => {
  it('reports a key with 50% of the traffic among 10,000 others first within a second', () => {
    const rng = new Rng(7);
    const topK = new DecayingTopK({ capacity: 64, halfLifeMs });
    for (let second = 0; second < 3; second++) {
      feed(topK, { rng, fromMs: second * 1_000, toMs: (second + 1) * 1_000, requestsPerSecond: 2_000, hot: 'hot', hotShare: 0.5, others: 10_000 });
      const [first, second_] = topK.top(2, (second + 1) * 1_000);
      expect(first?.key).toBe('hot');
      // About 1,000 of 2,000 requests per second, from the first second on (no warm-up lag).
      expect(first!.requestsPerSecond).toBeGreaterThan(900);
      expect(first!.requestsPerSecond).toBeLessThan(1_100);
      expect(second_!.requestsPerSecond).toBeLessThan(first!.requestsPerSecond / 4);
    }
    expect(topK.totalRate(3_000)).toBeCloseTo(2_000, -2);
  });

  it('keeps at most `capacity` keys after 1,000,000 distinct keys', () => {
    const topK = new DecayingTopK({ capacity: 64, halfLifeMs });
    for (let i = 0; i < 1_000_000; i++) topK.record(`distinct-${i}`, i / 100);
    expect(topK.size).toBe(64);
    expect(topK.totalRate(10_000)).toBeCloseTo(100_000, -3);
  });

  it('estimates within the documented error bound of the exact decayed rates', () => {
    const rng = new Rng(11);
    const capacity = 32;
    const topK = new DecayingTopK({ capacity, halfLifeMs });
    const times = new Map<string, number[]>();
    let t = 0;
    for (let i = 0; i < 40_000; i++) {
      t += rng.float() * 2; // about 1,000 requests per second, irregularly spaced
      const rank = Math.floor(Math.exp(rng.float() * Math.log(3_000))); // Zipf-like over 3,000 keys
      const key = `z${rank}`;
      topK.record(key, t);
      let list = times.get(key);
      if (!list) times.set(key, (list = []));
      list.push(t);
    }
    const now = t + 250;
    const keyedRate = topK.totalRate(now);
    const violations: string[] = [];
    for (const entry of topK.top(capacity, now)) {
      const exact = exactRate(times.get(entry.key) ?? [], now, 0);
      const slack = 1e-6 * keyedRate;
      if (exact > entry.requestsPerSecond + slack) violations.push(`${entry.key}: exact ${exact} > estimate ${entry.requestsPerSecond}`);
      if (entry.requestsPerSecond - entry.errorPerSecond > exact + slack) violations.push(`${entry.key}: estimate - error above exact ${exact}`);
      if (entry.errorPerSecond > keyedRate / capacity + slack) violations.push(`${entry.key}: error ${entry.errorPerSecond} > keyedRate / capacity`);
    }
    expect(violations).toEqual([]);
    // Unmonitored keys are below the smallest monitored estimate, so the top of the list is exact in rank.
    const heaviest = [...times].map(([key, list]) => ({ key, rate: exactRate(list, now, 0) })).sort((a, b) => b.rate - a.rate)[0]!;
    expect(topK.top(1, now)[0]!.key).toBe(heaviest.key);
  });

  it('lets old load fade by half per half-life, so a new hot key takes over', () => {
    const rng = new Rng(3);
    const topK = new DecayingTopK({ capacity: 64, halfLifeMs });
    feed(topK, { rng, fromMs: 0, toMs: 20_000, requestsPerSecond: 1_000, hot: 'old', hotShare: 0.5, others: 10_000 });
    const before = topK.top(1, 20_000)[0]!;
    expect(before.key).toBe('old');
    feed(topK, { rng, fromMs: 20_000, toMs: 30_000, requestsPerSecond: 1_000, hot: 'new', hotShare: 0.5, others: 10_000 });
    const after = topK.top(2, 30_000);
    expect(after.map((entry) => entry.key)).toEqual(['new', 'old']);
    // Two half-lives without a request: a quarter is left (over the warm-up factors at 20 s and 30 s).
    const warmUp = (ms: number): number => 1 - 2 ** (-ms / halfLifeMs);
    expect(after[1]!.requestsPerSecond / before.requestsPerSecond).toBeCloseTo((0.25 * warmUp(20_000)) / warmUp(30_000), 6);
  });

  it('survives hours of time (the landmark moves), long idle spells and a clock that steps back', () => {
    const topK = new DecayingTopK({ capacity: 8, halfLifeMs });
    for (let t = 0; t < 2 * 3_600_000; t += 100) topK.record('steady', t);
    // 10 per second, less the discreteness of one request per 100 ms (under 1%).
    expect(topK.top(1, 2 * 3_600_000)[0]!.requestsPerSecond).toBeCloseTo(10, 0);
    topK.record('late', 20 * 3_600_000); // 18 hours idle: the old weight underflows to 0
    topK.record('late', 20 * 3_600_000 - 5_000); // a clock stepping back counts as "now"
    const [late, steady] = topK.top(2, 20 * 3_600_000);
    expect(late?.key).toBe('late');
    expect(steady?.requestsPerSecond).toBe(0);
    expect(Number.isFinite(topK.totalRate(20 * 3_600_000))).toBe(true);
  });

  it('counts requests without a key in the total only, and is empty before any request', () => {
    const topK = new DecayingTopK({ capacity: 4, halfLifeMs });
    expect(topK.totalRate(0)).toBe(0);
    expect(topK.top(3, 0)).toEqual([]);
    for (let t = 0; t < 1_000; t += 10) topK.record(undefined, t);
    topK.record('k', 1_000);
    expect(topK.totalRate(1_000)).toBeCloseTo(101, -1);
    expect(topK.top(3, 1_000).map((entry) => entry.key)).toEqual(['k']);
  });
});
