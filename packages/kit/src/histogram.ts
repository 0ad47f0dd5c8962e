/**
 * An HDR-style latency histogram (after Gil Tene's HdrHistogram): log-linear
 * buckets that keep a fixed number of significant decimal digits at every
 * magnitude, so p99.99 of values spanning 1 µs … 1 h costs a few hundred KiB and
 * a constant-time `record`, with a bounded relative error instead of sampling.
 *
 * Layout: bucket b covers [2^b, 2^(b+1)) · subBucketCount units, split into
 * subBucketCount/2 equal sub-buckets (bucket 0 uses all subBucketCount), where
 * subBucketCount is the power of two ≥ 2·10^digits. Every sub-bucket's width is
 * ≤ max(its lowest value / 10^digits, unit), where the unit is the power of two
 * ≤ lowestDiscernibleValue: that is the error bound (relative 10^-digits with unit 1).
 *
 * Values are integers in any unit (µs by convention); fractions are truncated, as
 * HdrHistogram does when a double is cast to long.
 *
 * @example
 * const h = new Histogram({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, significantDigits: 3 });
 * h.record(1_250);                  // 1.25 ms, in µs
 * h.recordCorrected(900_000, 1_000); // a 0.9 s stall in a 1 kHz open-loop test
 * h.percentile(99.9);               // within 0.1% of the true p99.9
 */

export interface HistogramOptions {
  /** Smallest value told apart from the next one, in the recorded unit (≥ 1); default 1. */
  lowestDiscernibleValue?: number;
  /** Largest value recorded as itself; larger values are clamped to it and counted; default 1 h in µs. */
  highestTrackableValue?: number;
  /** Significant decimal digits kept at every magnitude, 1..5; default 3 (0.1% error). */
  significantDigits?: number;
}

/** The numbers a benchmark report prints. */
export interface HistogramSummary {
  readonly count: number;
  readonly min: number;
  readonly mean: number;
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly p999: number;
  readonly max: number;
  readonly clampedCount: number;
}

/** One non-empty bucket: `count` values were recorded in [lowValue, highValue]. */
export interface HistogramBucket {
  readonly lowValue: number;
  readonly highValue: number;
  readonly count: number;
}

const TWO_POW_32 = 2 ** 32;

/** Index of the highest set bit of a non-negative integer ≤ 2^53; -1 for 0. */
function highestBit(value: number): number {
  return value < TWO_POW_32 ? 31 - Math.clz32(value) : 63 - Math.clz32(Math.floor(value / TWO_POW_32));
}

function requireCount(count: number): void {
  if (!Number.isSafeInteger(count) || count < 1)
    throw new RangeError(`count must be an integer >= 1, got ${count}`);
}

function requireValue(value: number): void {
  if (!Number.isFinite(value) || value < 0)
    throw new RangeError(`value must be a finite number >= 0, got ${value}`);
}

/**
 * HDR-style histogram of non-negative integer values with bounded relative error.
 *
 * @example
 * const h = new Histogram({ significantDigits: 2 });
 * for (const us of latenciesUs) h.record(us);
 * h.summary(); // { count, min, mean, p50, p90, p99, p999, max, clampedCount }
 */
export class Histogram {
  readonly lowestDiscernibleValue: number;
  readonly highestTrackableValue: number;
  readonly significantDigits: number;
  readonly #unitMagnitude: number;
  readonly #subBucketHalfCountMagnitude: number;
  readonly #subBucketHalfCount: number;
  readonly #counts: Float64Array;
  #totalCount = 0;
  #clampedCount = 0;
  #sum = 0;
  #min = Number.POSITIVE_INFINITY;
  #max = 0;

  constructor(options: HistogramOptions = {}) {
    const lowest = options.lowestDiscernibleValue ?? 1;
    const highest = options.highestTrackableValue ?? 3_600_000_000;
    const digits = options.significantDigits ?? 3;
    if (!Number.isSafeInteger(lowest) || lowest < 1) {
      throw new RangeError(`lowestDiscernibleValue must be an integer >= 1, got ${lowest}`);
    }
    if (!Number.isSafeInteger(highest) || highest < 2 * lowest) {
      throw new RangeError(
        `highestTrackableValue must be a safe integer >= 2 * lowestDiscernibleValue, got ${highest}`,
      );
    }
    if (!Number.isInteger(digits) || digits < 1 || digits > 5) {
      throw new RangeError(`significantDigits must be an integer 1..5, got ${digits}`);
    }
    this.lowestDiscernibleValue = lowest;
    this.highestTrackableValue = highest;
    this.significantDigits = digits;
    // subBucketCount = the power of two >= 2·10^digits, so a half bucket holds >= 10^digits steps.
    const subBucketCountMagnitude = highestBit(2 * 10 ** digits - 1) + 1;
    this.#subBucketHalfCountMagnitude = subBucketCountMagnitude - 1;
    this.#subBucketHalfCount = 2 ** this.#subBucketHalfCountMagnitude;
    this.#unitMagnitude = highestBit(lowest);
    let bucketCount = 1;
    for (let untrackable = 2 ** (subBucketCountMagnitude + this.#unitMagnitude); untrackable <= highest; ) {
      untrackable *= 2;
      bucketCount++;
    }
    this.#counts = new Float64Array((bucketCount + 1) * this.#subBucketHalfCount);
  }

  /** Values recorded (clamped ones included). */
  get count(): number {
    return this.#totalCount;
  }

  /** Smallest value recorded, exact; 0 when empty. */
  get min(): number {
    return this.#totalCount === 0 ? 0 : this.#min;
  }

  /** Largest value recorded (after clamping), exact; 0 when empty. */
  get max(): number {
    return this.#max;
  }

  /** Exact mean of the recorded (clamped) values; 0 when empty. */
  get mean(): number {
    return this.#totalCount === 0 ? 0 : this.#sum / this.#totalCount;
  }

  /** Values that exceeded highestTrackableValue and were recorded as it. */
  get clampedCount(): number {
    return this.#clampedCount;
  }

  /** Records `value` `count` times; values above highestTrackableValue are clamped to it and counted. */
  record(value: number, count = 1): void {
    requireValue(value);
    requireCount(count);
    let v = Math.floor(value);
    if (v > this.highestTrackableValue) {
      v = this.highestTrackableValue;
      this.#clampedCount += count;
    }
    this.#add(this.#indexOf(v), count, v * count, v, v);
  }

  /**
   * Records `value` and back-fills the samples a stalled closed-loop measurement
   * failed to take (coordinated omission): value − I, value − 2I, … down to I, as
   * HdrHistogram's recordValueWithExpectedInterval does. Interval 0 disables it.
   * Runs in O(buckets), not O(value / interval): each bucket gets its share at once.
   */
  recordCorrected(value: number, expectedInterval: number): void {
    if (!Number.isSafeInteger(expectedInterval) || expectedInterval < 0) {
      throw new RangeError(`expectedInterval must be an integer >= 0, got ${expectedInterval}`);
    }
    this.record(value);
    const interval = expectedInterval;
    if (interval === 0) return;
    let missing = Math.floor(value) - interval;
    // Each pass fills one bucket (or the clamped top), moving strictly down: at most counts.length + 1 passes.
    while (missing >= interval) {
      if (missing > this.highestTrackableValue) {
        const n = Math.floor((missing - this.highestTrackableValue - 1) / interval) + 1;
        const top = this.highestTrackableValue;
        this.#clampedCount += n;
        this.#add(this.#indexOf(top), n, top * n, top, top);
        missing -= n * interval;
        continue;
      }
      const index = this.#indexOf(missing);
      const floor = Math.max(this.#valueFromIndex(index), interval);
      const n = Math.floor((missing - floor) / interval) + 1;
      const last = missing - (n - 1) * interval;
      this.#add(index, n, ((missing + last) * n) / 2, last, missing);
      missing = last - interval;
    }
  }

  /**
   * The value at percentile `p` (0..100), nearest-rank: the smallest recorded value
   * with at least p% of values at or below it, reported as the highest value of its
   * bucket (an upper bound within the relative error), kept within [min, max].
   */
  percentile(p: number): number {
    if (!(p >= 0 && p <= 100)) throw new RangeError(`percentile p must be in 0..100, got ${p}`);
    if (this.#totalCount === 0) return 0;
    // p·n/100 can land a hair above an integer (7.000000000000001); shave that off before ceil.
    const rank = Math.max(1, Math.ceil(((p * this.#totalCount) / 100) * (1 - 1e-12)));
    if (rank === 1) return this.#min;
    if (rank >= this.#totalCount) return this.#max;
    let seen = 0;
    for (let i = 0; i < this.#counts.length; i++) {
      seen += this.#counts[i]!;
      if (seen >= rank) {
        const high = this.#valueFromIndex(i) + this.#widthAtIndex(i) - 1;
        return Math.min(Math.max(high, this.#min), this.#max);
      }
    }
    return this.#max; // unreachable: counts sum to totalCount
  }

  /** The smallest value that lands in the same bucket as `value`. */
  lowestEquivalentValue(value: number): number {
    requireValue(value);
    return this.#valueFromIndex(this.#indexOf(Math.min(Math.floor(value), this.highestTrackableValue)));
  }

  /** The largest value that lands in the same bucket as `value`. */
  highestEquivalentValue(value: number): number {
    requireValue(value);
    const index = this.#indexOf(Math.min(Math.floor(value), this.highestTrackableValue));
    return this.lowestEquivalentValue(value) + this.#widthAtIndex(index) - 1;
  }

  /**
   * Adds `other`'s counts. With the same layout the result equals having recorded
   * both streams into one histogram; with another layout each of `other`'s buckets
   * is re-recorded at its lowest value (HdrHistogram's `add`).
   */
  merge(other: Histogram): void {
    if (other.#totalCount === 0) return;
    if (this.#sameLayout(other)) {
      for (let i = 0; i < other.#counts.length; i++) this.#counts[i]! += other.#counts[i]!;
      this.#totalCount += other.#totalCount;
      this.#sum += other.#sum;
      this.#min = Math.min(this.#min, other.#min);
      this.#max = Math.max(this.#max, other.#max);
      this.#clampedCount += other.#clampedCount;
      return;
    }
    // Another layout: re-bucket other's counts, then restore what re-bucketing blurs.
    const before = { min: this.#min, max: this.#max, sum: this.#sum, clamped: this.#clampedCount };
    for (const bucket of other.buckets()) this.record(bucket.lowValue, bucket.count);
    const reclamped = this.#clampedCount - before.clamped;
    this.#clampedCount = before.clamped + Math.max(other.#clampedCount, reclamped);
    this.#min = Math.min(before.min, other.#min, this.highestTrackableValue);
    this.#max = Math.max(before.max, Math.min(other.#max, this.highestTrackableValue));
    // Exact extremes and sum carry over when nothing had to be clamped into this range.
    if (other.#max <= this.highestTrackableValue) this.#sum = before.sum + other.#sum;
  }

  /** Forgets everything recorded. */
  reset(): void {
    this.#counts.fill(0);
    this.#totalCount = 0;
    this.#clampedCount = 0;
    this.#sum = 0;
    this.#min = Number.POSITIVE_INFINITY;
    this.#max = 0;
  }

  /** The non-empty buckets, lowest first (for exporters and custom reports). */
  *buckets(): Generator<HistogramBucket> {
    for (let i = 0; i < this.#counts.length; i++) {
      const count = this.#counts[i]!;
      if (count === 0) continue;
      const lowValue = this.#valueFromIndex(i);
      yield { lowValue, highValue: lowValue + this.#widthAtIndex(i) - 1, count };
    }
  }

  /** count, min, mean, p50, p90, p99, p99.9, max and clampedCount in one object. */
  summary(): HistogramSummary {
    return {
      count: this.count,
      min: this.min,
      mean: this.mean,
      p50: this.percentile(50),
      p90: this.percentile(90),
      p99: this.percentile(99),
      p999: this.percentile(99.9),
      max: this.max,
      clampedCount: this.clampedCount,
    };
  }

  #add(index: number, count: number, valueSum: number, low: number, high: number): void {
    this.#counts[index]! += count;
    this.#totalCount += count;
    this.#sum += valueSum;
    if (low < this.#min) this.#min = low;
    if (high > this.#max) this.#max = high;
  }

  #sameLayout(other: Histogram): boolean {
    return (
      other.#unitMagnitude === this.#unitMagnitude &&
      other.#subBucketHalfCountMagnitude === this.#subBucketHalfCountMagnitude &&
      other.#counts.length === this.#counts.length
    );
  }

  /** Counts-array index of an integer value in 0..highestTrackableValue. */
  #indexOf(value: number): number {
    const floorBit = this.#subBucketHalfCountMagnitude + this.#unitMagnitude;
    const bucketIndex = Math.max(highestBit(value), floorBit) - floorBit;
    const subBucketIndex = Math.floor(value / 2 ** (bucketIndex + this.#unitMagnitude));
    return (bucketIndex + 1) * this.#subBucketHalfCount + subBucketIndex - this.#subBucketHalfCount;
  }

  /** The lowest value of the sub-bucket at `index`. */
  #valueFromIndex(index: number): number {
    let bucketIndex = Math.floor(index / this.#subBucketHalfCount) - 1;
    let subBucketIndex = (index % this.#subBucketHalfCount) + this.#subBucketHalfCount;
    if (bucketIndex < 0) {
      subBucketIndex -= this.#subBucketHalfCount;
      bucketIndex = 0;
    }
    return subBucketIndex * 2 ** (bucketIndex + this.#unitMagnitude);
  }

  /** Width (in units) of the sub-bucket at `index`. */
  #widthAtIndex(index: number): number {
    return 2 ** (this.#unitMagnitude + Math.max(0, Math.floor(index / this.#subBucketHalfCount) - 1));
  }
}
