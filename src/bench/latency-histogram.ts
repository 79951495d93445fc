/**
 * Latency recording for the benchmark: an HdrHistogram (hdr-histogram-js, pure JavaScript) of
 * microseconds, so percentiles up to p99.9 and the maximum are exact to three significant digits
 * however many operations a run records, in constant memory.
 *
 * A histogram travels between processes as HdrHistogram's compressed base64 form, so the rounds of
 * a comparison (separate processes) can be merged exactly instead of averaging percentiles.
 */
import * as hdr from 'hdr-histogram-js';

/** Slower than this is recorded as this: far beyond any call timeout the bench uses. */
const latencyUsMax = 120_000_000;
const significantDigits = 3;

/** Percentiles of one run, in milliseconds. */
export interface LatencySummary {
  readonly count: number;
  readonly meanMs: number;
  readonly p50Ms: number;
  readonly p90Ms: number;
  readonly p99Ms: number;
  readonly p999Ms: number;
  readonly maxMs: number;
}

/** One point of a percentile distribution: `percentile` in [0, 100), latency in ms. */
export interface DistributionPoint {
  readonly percentile: number;
  readonly latencyMs: number;
}

/** The distribution is sampled at 1 - 10^(-k/steps) for k = 0, 1, ...: evenly on a log axis. */
const distributionStepsPerDecade = 10;
/** Never beyond p99.9999: deeper points say nothing about a run of a few million operations. */
const distributionDecadesMax = 6;

export class LatencyHistogram {
  private readonly histogram: hdr.Histogram;

  constructor(histogram?: hdr.Histogram) {
    this.histogram = histogram ?? hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: latencyUsMax, numberOfSignificantValueDigits: significantDigits });
  }

  /** Records one latency in microseconds (clamped to [1, latencyUsMax]). */
  recordUs(latencyUs: number): void {
    this.histogram.recordValue(Math.min(latencyUsMax, Math.max(1, Math.round(latencyUs))));
  }

  get count(): number {
    return this.histogram.totalCount;
  }

  /** Adds every value of `other` to this histogram. */
  add(other: LatencyHistogram): void {
    this.histogram.add(other.histogram);
  }

  /** The latency at `percentile` (0..100) in milliseconds; 0 when nothing was recorded. */
  atPercentileMs(percentile: number): number {
    if (this.count === 0) return 0;
    return this.histogram.getValueAtPercentile(percentile) / 1000;
  }

  summary(): LatencySummary {
    return {
      count: this.count,
      meanMs: this.count === 0 ? 0 : this.histogram.mean / 1000,
      p50Ms: this.atPercentileMs(50),
      p90Ms: this.atPercentileMs(90),
      p99Ms: this.atPercentileMs(99),
      p999Ms: this.atPercentileMs(99.9),
      // The top of the maximum's bucket, as every percentile is reported: a merged or decoded
      // histogram knows only buckets, so this stays the same however the values travelled.
      maxMs: this.atPercentileMs(100),
    };
  }

  /**
   * The percentile distribution for a plot: points evenly spaced on a log axis of 1/(1 - q), up to
   * the deepest percentile the count supports, then the maximum at that same depth.
   */
  distribution(): DistributionPoint[] {
    if (this.count === 0) return [];
    const deepest = Math.min(distributionDecadesMax, Math.log10(this.count));
    const points: DistributionPoint[] = [];
    for (let step = 0; step <= distributionDecadesMax * distributionStepsPerDecade; step++) {
      const decades = step / distributionStepsPerDecade;
      if (decades > deepest) break;
      const percentile = 100 * (1 - 10 ** -decades);
      points.push({ percentile, latencyMs: this.atPercentileMs(percentile) });
    }
    points.push({ percentile: 100 * (1 - 10 ** -deepest), latencyMs: this.summary().maxMs });
    return points;
  }

  /** HdrHistogram's compressed base64 encoding (what `fromBase64` reads). */
  toBase64(): string {
    return hdr.encodeIntoCompressedBase64(this.histogram);
  }

  static fromBase64(text: string): LatencyHistogram {
    return new LatencyHistogram(hdr.decodeFromCompressedBase64(text, 32, false, latencyUsMax));
  }
}
