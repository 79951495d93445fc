/**
 * Space-Saving's guarantees (Metwally et al. 2005, Lemmas 3.4 and 4.1; Berinde et al. 2010 for
 * weights), checked against exact counts: overestimates bounded by the inherited error, errors at
 * most W/m, every key heavier than W/m monitored, and never more than m entries.
 */
import { describe, expect, it } from 'vitest';
import { SpaceSaving } from '../../src/hotkeys/space-saving.js';
import { Rng } from '../../src/raft/rng.js';

/** Checks every documented bound of `sketch` against the exact weights of the stream it saw. */
function expectBounds(sketch: SpaceSaving, exact: ReadonlyMap<string, number>): void {
  const slack = 1e-9 * sketch.totalWeight;
  const bound = sketch.totalWeight / sketch.capacity;
  const held = new Map(sketch.entries().map((entry) => [entry.key, entry]));
  expect(held.size).toBeLessThanOrEqual(sketch.capacity);
  const violations: string[] = [];
  for (const [key, weight] of exact) {
    const entry = held.get(key);
    if (entry === undefined) {
      if (weight > sketch.minCount + slack || weight > bound + slack) violations.push(`${key}: unmonitored with weight ${weight} > min ${sketch.minCount}`);
    } else {
      if (entry.count - entry.error > weight + slack) violations.push(`${key}: count - error ${entry.count - entry.error} > weight ${weight}`);
      if (weight > entry.count + slack) violations.push(`${key}: weight ${weight} > count ${entry.count}`);
      if (entry.error > bound + slack) violations.push(`${key}: error ${entry.error} > W/m ${bound}`);
    }
  }
  expect(violations).toEqual([]);
}

/** A skewed stream: key i has weight about 1/(i+1) (Zipf, s = 1) over `distinct` keys. */
function zipfKey(rng: Rng, distinct: number): string {
  const harmonic = Math.log(distinct) + 0.5772;
  const rank = Math.min(distinct - 1, Math.floor(Math.exp(rng.float() * harmonic)) - 1);
  return `k${Math.max(0, rank)}`;
}

describe('SpaceSaving', () => {
  it('holds at most `capacity` entries after 1,000,000 distinct keys', () => {
    const sketch = new SpaceSaving(64);
    for (let i = 0; i < 1_000_000; i++) sketch.add(`key-${i}`, 1);
    expect(sketch.size).toBe(64);
    expect(sketch.totalWeight).toBe(1_000_000);
    // Every count is an upper bound; with all keys distinct each is min + 1 at most.
    for (const entry of sketch.entries()) expect(entry.count - entry.error).toBeLessThanOrEqual(1);
  });

  it('keeps the error bounds on a skewed stream of unit weights', () => {
    for (const seed of [1, 2, 3]) {
      const rng = new Rng(seed);
      const sketch = new SpaceSaving(50);
      const exact = new Map<string, number>();
      for (let i = 0; i < 50_000; i++) {
        const key = zipfKey(rng, 5_000);
        sketch.add(key, 1);
        exact.set(key, (exact.get(key) ?? 0) + 1);
      }
      expectBounds(sketch, exact);
      // The heaviest key is certainly above W/m here, so it is held and ranked first.
      expect(sketch.entries()[0]!.key).toBe('k0');
    }
  });

  it('keeps the error bounds with arbitrary positive weights and after scaling', () => {
    const rng = new Rng(42);
    const sketch = new SpaceSaving(20);
    const exact = new Map<string, number>();
    for (let i = 0; i < 20_000; i++) {
      const key = zipfKey(rng, 2_000);
      const weight = 0.01 + rng.float() * 5;
      sketch.add(key, weight);
      exact.set(key, (exact.get(key) ?? 0) + weight);
    }
    expectBounds(sketch, exact);
    const order = sketch.entries().map((entry) => entry.key);
    sketch.scale(0.25);
    expect(sketch.entries().map((entry) => entry.key)).toEqual(order);
    expectBounds(sketch, new Map([...exact].map(([key, weight]) => [key, weight * 0.25])));
  });

  it('reports entries largest first, ties by key, and refuses bad input', () => {
    const sketch = new SpaceSaving(3);
    sketch.add('b', 2);
    sketch.add('a', 2);
    sketch.add('c', 5);
    expect(sketch.entries().map((entry) => entry.key)).toEqual(['c', 'a', 'b']);
    sketch.add('d', 1); // Replaces a count-2 entry: count 3, error 2.
    const d = sketch.entries().find((entry) => entry.key === 'd');
    expect(d).toEqual({ key: 'd', count: 3, error: 2 });
    expect(() => sketch.add('x', 0)).toThrow();
    expect(() => sketch.add('x', Number.NaN)).toThrow();
    expect(() => new SpaceSaving(0)).toThrow();
    sketch.scale(0);
    expect(sketch.entries().every((entry) => entry.count === 0)).toBe(true);
  });
});
