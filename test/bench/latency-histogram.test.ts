/** The bench's percentile reporting: HdrHistogram percentiles, merging across processes, the plotted distribution. */
import { describe, expect, it } from 'vitest';
import { LatencyHistogram } from '../../src/bench/latency-histogram.js';

/** 1 ms, 2 ms, ..., `count` ms. */
function uniformMs(count: number): LatencyHistogram {
  const histogram = new LatencyHistogram();
  for (let ms = 1; ms <= count; ms++) histogram.recordUs(ms * 1000);
  return histogram;
}

describe('LatencyHistogram', () => {
  it('reports p50, p90, p99, p99.9 and max within three significant digits', () => {
    const summary = uniformMs(10_000).summary();
    expect(summary.count).toBe(10_000);
    const near = (actual: number, expected: number): void => expect(Math.abs(actual - expected) / expected).toBeLessThan(0.001);
    near(summary.p50Ms, 5_000);
    near(summary.p90Ms, 9_000);
    near(summary.p99Ms, 9_900);
    near(summary.p999Ms, 9_990);
    near(summary.maxMs, 10_000);
    near(summary.meanMs, 5_000.5);
  });

  it('keeps sub-millisecond latencies apart (microsecond resolution)', () => {
    const histogram = new LatencyHistogram();
    for (let i = 0; i < 99; i++) histogram.recordUs(120);
    histogram.recordUs(250_000);
    const summary = histogram.summary();
    expect(summary.p50Ms).toBeCloseTo(0.12, 3);
    expect(summary.p99Ms).toBeCloseTo(0.12, 3);
    expect(summary.maxMs).toBeGreaterThan(249);
  });

  it('an empty histogram summarises to zeros and has no distribution', () => {
    const histogram = new LatencyHistogram();
    expect(histogram.summary()).toEqual({ count: 0, meanMs: 0, p50Ms: 0, p90Ms: 0, p99Ms: 0, p999Ms: 0, maxMs: 0 });
    expect(histogram.distribution()).toEqual([]);
  });

  it('clamps values it cannot hold instead of throwing', () => {
    const histogram = new LatencyHistogram();
    histogram.recordUs(0);
    histogram.recordUs(-5);
    histogram.recordUs(10 ** 12);
    expect(histogram.count).toBe(3);
    expect(histogram.summary().maxMs).toBeGreaterThanOrEqual(119_000);
  });

  it('survives the base64 round trip and merges exactly', () => {
    const low = uniformMs(1_000);
    const high = new LatencyHistogram();
    for (let ms = 1_001; ms <= 2_000; ms++) high.recordUs(ms * 1000);
    const decoded = LatencyHistogram.fromBase64(low.toBase64());
    expect(decoded.summary()).toEqual(low.summary());

    const merged = new LatencyHistogram();
    merged.add(decoded);
    merged.add(LatencyHistogram.fromBase64(high.toBase64()));
    expect(merged.summary()).toEqual(uniformMs(2_000).summary());
  });

  it('the distribution rises monotonically and ends at the maximum', () => {
    const histogram = uniformMs(100_000);
    const points = histogram.distribution();
    expect(points[0]).toEqual({ percentile: 0, latencyMs: histogram.atPercentileMs(0) });
    for (let i = 1; i < points.length; i++) {
      expect(points[i]!.percentile).toBeGreaterThanOrEqual(points[i - 1]!.percentile);
      expect(points[i]!.latencyMs).toBeGreaterThanOrEqual(points[i - 1]!.latencyMs);
    }
    const last = points[points.length - 1]!;
    expect(last.latencyMs).toBe(histogram.summary().maxMs);
    // 100,000 values support percentiles down to 1 in 100,000 and no deeper.
    expect(last.percentile).toBeCloseTo(99.999, 6);
    expect(points.some((point) => Math.abs(point.percentile - 99) < 1e-9)).toBe(true);
  });
});
