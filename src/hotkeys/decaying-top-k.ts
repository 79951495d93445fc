/**
 * Request rates of the hottest keys: Space-Saving (space-saving.ts) over exponentially decayed
 * counts, so the report follows what is hot now rather than since start-up.
 *
 * Decay: a request at time t counts 2^(-(now - t) / halfLifeMs) at time now. Forward decay
 * (Cormode, Shkapenyuk, Srivastava, Xu, "Forward Decay", ICDE 2009) makes that cheap: a request
 * adds weight e^(lambda (t - L)) for a landmark L, and every stored number is read multiplied by
 * e^(-lambda (now - L)). Since that factor is the same for every key, the sketch sees an ordinary
 * weighted stream, and Space-Saving's guarantees hold for the decayed counts exactly. When the
 * weights grow large the landmark moves to now and everything is scaled down once.
 *
 * Rates: for a steady rate r, the decayed count tends to r / lambda; before that, at age a (time
 * since the first request), it is (r / lambda)(1 - e^(-lambda a)). So
 *
 *   rate = lambda * decayedCount / (1 - e^(-lambda * max(a, minAgeMs)))
 *
 * is unbiased for a steady rate from the first second on, rather than creeping up over several
 * half-lives. The same factor turns the error bound into a rate:
 *
 *   estimate - errorRate <= true decayed rate <= estimate,   errorRate <= keyedRate / capacity
 *
 * where keyedRate is the rate of all requests recorded with a key. Requests recorded without a
 * key count in the total rate only.
 *
 * Pure: time is always passed in (any monotonic milliseconds); a time earlier than one already
 * seen is taken as that time, so a clock that steps back cannot produce negative ages.
 */
import assert from 'node:assert/strict';
import { SpaceSaving } from './space-saving.js';

export interface DecayingTopKOptions {
  /** Keys tracked: the memory bound and the error bound's divisor. */
  readonly capacity: number;
  /** A request's weight halves every this many milliseconds. */
  readonly halfLifeMs: number;
}

export interface KeyRate {
  readonly key: string;
  /** Estimated requests per second; never below the key's true decayed rate. */
  readonly requestsPerSecond: number;
  /** How far `requestsPerSecond` may exceed the true decayed rate. */
  readonly errorPerSecond: number;
}

/** Before this much history, rates are counted over this long (one request is not a rate yet). */
const minAgeMs = 1_000;
/** Move the landmark once weights reach e^this, far below the double range (e^709). */
const maxLandmarkExponent = 40;

export class DecayingTopK {
  private readonly sketch: SpaceSaving;
  /** lambda, per millisecond. */
  private readonly decayPerMs: number;
  // Invariant: firstMs <= landmarkMs <= lastMs once a request was recorded (all NaN before).
  private firstMs = Number.NaN;
  private landmarkMs = Number.NaN;
  private lastMs = Number.NaN;
  /** Weight of requests recorded without a key, on the same landmark as the sketch. */
  private unkeyedWeight = 0;

  constructor(options: DecayingTopKOptions) {
    assert(Number.isFinite(options.halfLifeMs) && options.halfLifeMs > 0, 'halfLifeMs must be positive');
    this.sketch = new SpaceSaving(options.capacity);
    this.decayPerMs = Math.LN2 / options.halfLifeMs;
  }

  get capacity(): number {
    return this.sketch.capacity;
  }

  /** Keys held: at most `capacity`, however many distinct keys were recorded. */
  get size(): number {
    return this.sketch.size;
  }

  /** Records one request at `nowMs`; `key` undefined counts it in the total rate only. */
  record(key: string | undefined, nowMs: number): void {
    const now = this.advance(nowMs);
    const weight = Math.exp(this.decayPerMs * (now - this.landmarkMs));
    if (key === undefined) this.unkeyedWeight += weight;
    else this.sketch.add(key, weight);
  }

  /** All requests per second (keyed or not), decayed. 0 before the first request. */
  totalRate(nowMs: number): number {
    return (this.sketch.totalWeight + this.unkeyedWeight) * this.rateFactor(nowMs);
  }

  /** The `limit` hottest keys, hottest first. */
  top(limit: number, nowMs: number): KeyRate[] {
    assert(Number.isSafeInteger(limit) && limit >= 0, 'limit must be a non-negative integer');
    const factor = this.rateFactor(nowMs);
    return this.sketch
      .entries()
      .slice(0, limit)
      .map((entry) => ({ key: entry.key, requestsPerSecond: entry.count * factor, errorPerSecond: entry.error * factor }));
  }

  /** Converts stored (landmark-relative) weight into requests per second at `nowMs`. */
  private rateFactor(nowMs: number): number {
    if (Number.isNaN(this.lastMs)) return 0;
    const now = Math.max(nowMs, this.lastMs);
    const decay = Math.exp(-this.decayPerMs * (now - this.landmarkMs));
    const warmUp = 1 - Math.exp(-this.decayPerMs * Math.max(now - this.firstMs, minAgeMs));
    return (decay * this.decayPerMs * 1_000) / warmUp;
  }

  /** Moves time forward to `nowMs` (never back) and the landmark with it when weights grow large. */
  private advance(nowMs: number): number {
    assert(Number.isFinite(nowMs), 'time must be a finite number of milliseconds');
    if (Number.isNaN(this.lastMs)) {
      this.firstMs = nowMs;
      this.landmarkMs = nowMs;
      this.lastMs = nowMs;
    }
    const now = Math.max(nowMs, this.lastMs);
    this.lastMs = now;
    if (this.decayPerMs * (now - this.landmarkMs) > maxLandmarkExponent) {
      const factor = Math.exp(-this.decayPerMs * (now - this.landmarkMs));
      this.sketch.scale(factor);
      this.unkeyedWeight *= factor;
      this.landmarkMs = now;
    }
    return now;
  }
}
