import assert from "node:assert/strict";
import { test } from "node:test";
import { Histogram, type HistogramOptions } from "../src/histogram.ts";
import { type RandomSource, seededRandom } from "../src/random.ts";

const HOUR_US = 3_600_000_000;

/** Log-uniform integers in [1, maxValue]: latency-like data spanning every magnitude. */
function logUniform(rng: RandomSource, n: number, maxValue = HOUR_US): number[] {
  return Array.from({ length: n }, () => Math.max(1, Math.floor(Math.exp(rng.next() * Math.log(maxValue)))));
}

/** Exact nearest-rank percentile of sorted values. */
function exactPercentile(sorted: readonly number[], p: number): number {
  const rank = Math.max(1, Math.ceil(((p * sorted.length) / 100) * (1 - 1e-12)));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

function filled(values: readonly number[], options?: HistogramOptions): Histogram {
  const h = new Histogram(options);
  for (const v of values) h.record(v);
  return h;
}

const PERCENTILES = [0, 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.99, 99.999, 100];

test("relative error of every percentile stays within 10^-digits of the exact value (seeded data)", () => {
  for (const digits of [1, 2, 3, 4]) {
    const values = logUniform(seededRandom(`hist-${digits}`), 50_000);
    const h = filled(values, { significantDigits: digits });
    const sorted = [...values].sort((a, b) => a - b);
    for (const p of PERCENTILES) {
      const exact = exactPercentile(sorted, p);
      const got = h.percentile(p);
      const error = Math.abs(got - exact) / exact;
      assert.ok(error <= 10 ** -digits, `digits ${digits} p${p}: got ${got}, exact ${exact}, error ${error}`);
      assert.ok(got >= exact, "reported as the bucket's upper bound");
    }
  }
});

test("the error bound also holds for narrow, heavy-tailed and repeated data", () => {
  const rng = seededRandom("shapes");
  const datasets = [
    Array.from({ length: 20_000 }, () => 1_000 + Math.floor(rng.next() * 50)), // narrow band
    Array.from({ length: 20_000 }, () => Math.min(1e9, Math.floor(100 / (1 - rng.next()) ** 2))), // Pareto tail
    Array.from({ length: 5_000 }, (_, i) => (i % 3 === 0 ? 7 : 123_456_789)), // two spikes
  ];
  for (const values of datasets) {
    const h = filled(values, { significantDigits: 3 });
    const sorted = [...values].sort((a, b) => a - b);
    for (const p of PERCENTILES) {
      const exact = exactPercentile(sorted, p);
      assert.ok(Math.abs(h.percentile(p) - exact) / exact <= 1e-3, `p${p}: ${h.percentile(p)} vs ${exact}`);
    }
  }
});

test("small values are exact: bucket 0 has unit width up to 2·10^digits", () => {
  const h = new Histogram({ significantDigits: 3 });
  for (let v = 0; v < 2_048; v++) {
    assert.equal(h.lowestEquivalentValue(v), v);
    assert.equal(h.highestEquivalentValue(v), v);
  }
  assert.equal(h.lowestEquivalentValue(2_049), 2_048);
  assert.equal(h.highestEquivalentValue(2_049), 2_049);
  assert.equal(h.lowestEquivalentValue(1_000_000), 999_936);
  assert.equal(h.highestEquivalentValue(1_000_000), 1_000_447);
  for (const v of [0, 1, 5, 1_999]) {
    const one = filled([v]);
    assert.deepEqual([one.percentile(50), one.min, one.max], [v, v, v]);
  }
});

test("bucket widths never exceed lowest value / 10^digits across the whole range", () => {
  const h = new Histogram({ significantDigits: 2, highestTrackableValue: HOUR_US });
  for (let v = 1; v <= HOUR_US; v = Math.ceil(v * 1.07) + 1) {
    const low = h.lowestEquivalentValue(v);
    const high = h.highestEquivalentValue(v);
    assert.ok(low <= v && v <= high, `${low} <= ${v} <= ${high}`);
    assert.ok(high - low <= Math.max(0, low / 100), `width ${high - low + 1} at ${low}`);
  }
});

test("count, min, max and mean are exact", () => {
  const values = logUniform(seededRandom("stats"), 10_000, 1_000_000);
  const h = filled(values);
  assert.equal(h.count, values.length);
  assert.equal(h.min, Math.min(...values));
  assert.equal(h.max, Math.max(...values));
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  assert.ok(Math.abs(h.mean - mean) < 1e-9 * mean);
  h.record(500, 1_000_000);
  assert.equal(h.count, values.length + 1_000_000);
});

test("merge equals recording both streams into one histogram", () => {
  const rng = seededRandom("merge");
  const a = logUniform(rng, 20_000);
  const b = logUniform(rng, 7_000, 5_000);
  const left = filled(a);
  const combined = filled([...a, ...b]);
  left.merge(filled(b));
  assert.deepEqual([...left.buckets()], [...combined.buckets()]);
  assert.deepEqual(left.summary(), combined.summary());
  for (const p of PERCENTILES) assert.equal(left.percentile(p), combined.percentile(p), `p${p}`);
  const empty = new Histogram();
  empty.merge(combined);
  assert.deepEqual(empty.summary(), combined.summary());
  empty.merge(new Histogram());
  assert.deepEqual(empty.summary(), combined.summary());
});

test("merge across different layouts keeps exact extremes and stays within the coarser error", () => {
  const values = logUniform(seededRandom("cross"), 20_000, 10_000_000);
  const fine = filled(values, { significantDigits: 3 });
  const coarse = new Histogram({ significantDigits: 2 });
  coarse.merge(fine);
  const sorted = [...values].sort((a, b) => a - b);
  assert.equal(coarse.count, values.length);
  assert.equal(coarse.min, sorted[0]);
  assert.equal(coarse.max, sorted.at(-1));
  assert.ok(Math.abs(coarse.mean - fine.mean) < 1e-9 * fine.mean);
  for (const p of PERCENTILES) {
    const exact = exactPercentile(sorted, p);
    assert.ok(Math.abs(coarse.percentile(p) - exact) / exact <= 1e-2 + 1e-3, `p${p}`);
  }
});

test("values above the highest trackable value are clamped to it and counted", () => {
  const h = new Histogram({ highestTrackableValue: 1_000_000, significantDigits: 2 });
  h.record(10);
  h.record(5_000_000);
  h.record(Number.MAX_SAFE_INTEGER, 3);
  assert.equal(h.count, 5);
  assert.equal(h.clampedCount, 4);
  assert.equal(h.max, 1_000_000);
  assert.equal(h.percentile(100), 1_000_000);
  assert.equal(h.percentile(0), 10);
  assert.equal(h.mean, (10 + 4 * 1_000_000) / 5);
  // A clamped histogram merged elsewhere keeps its clamp count.
  const other = new Histogram({ highestTrackableValue: 1_000_000, significantDigits: 2 });
  other.merge(h);
  assert.equal(other.clampedCount, 4);
  const narrower = new Histogram({ highestTrackableValue: 100_000, significantDigits: 2 });
  narrower.merge(h);
  assert.equal(narrower.clampedCount, 4);
  assert.equal(narrower.max, 100_000);
});

test("zero is recordable, fractions are truncated, and bad input is a RangeError", () => {
  const h = new Histogram();
  h.record(0);
  h.record(41.9);
  assert.deepEqual([h.min, h.max, h.count], [0, 41, 2]);
  for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => h.record(bad), { name: "RangeError", message: /value/ });
  }
  for (const bad of [0, -1, 1.5, Number.NaN]) {
    assert.throws(() => h.record(1, bad), { name: "RangeError", message: /count/ });
  }
  for (const bad of [-0.1, 100.1, Number.NaN]) {
    assert.throws(() => h.percentile(bad), { name: "RangeError", message: /percentile/ });
  }
  assert.throws(() => h.recordCorrected(10, -1), /expectedInterval/);
  assert.throws(() => h.recordCorrected(10, 1.5), /expectedInterval/);
});

test("an empty histogram answers zeros; reset() empties a full one", () => {
  const h = new Histogram();
  assert.deepEqual(h.summary(), {
    count: 0,
    min: 0,
    mean: 0,
    p50: 0,
    p90: 0,
    p99: 0,
    p999: 0,
    max: 0,
    clampedCount: 0,
  });
  h.record(5_000);
  h.record(Number.MAX_SAFE_INTEGER);
  h.reset();
  assert.deepEqual(h.summary(), new Histogram().summary());
  assert.deepEqual([...h.buckets()], []);
  h.record(7);
  assert.equal(h.min, 7);
});

test("options are validated", () => {
  assert.throws(() => new Histogram({ lowestDiscernibleValue: 0 }), /lowestDiscernibleValue/);
  assert.throws(() => new Histogram({ lowestDiscernibleValue: 1.5 }), /lowestDiscernibleValue/);
  assert.throws(
    () => new Histogram({ lowestDiscernibleValue: 10, highestTrackableValue: 19 }),
    /highestTrackable/,
  );
  assert.throws(() => new Histogram({ highestTrackableValue: 2 ** 53 }), /highestTrackable/);
  assert.throws(() => new Histogram({ significantDigits: 0 }), /significantDigits/);
  assert.throws(() => new Histogram({ significantDigits: 6 }), /significantDigits/);
});

test("with a coarser lowest discernible value the error is at most max(value / 10^digits, that unit)", () => {
  const values = logUniform(seededRandom("unit"), 20_000);
  const h = filled(values, { lowestDiscernibleValue: 1_000, significantDigits: 2 });
  const sorted = [...values].sort((a, b) => a - b);
  for (const p of PERCENTILES) {
    const exact = exactPercentile(sorted, p);
    const got = h.percentile(p);
    assert.ok(Math.abs(got - exact) <= Math.max(exact / 100, 1_000), `p${p}: ${got} vs ${exact}`);
  }
  // Below the unit values are indistinguishable: 1..511 share a bucket (unit 2^9 = 512 <= 1000).
  assert.equal(h.lowestEquivalentValue(1), 0);
  assert.equal(h.highestEquivalentValue(1), 511);
});

/** HdrHistogram's recordValueWithExpectedInterval, literally: one record per missing sample. */
function naiveCorrected(h: Histogram, value: number, interval: number): void {
  h.record(value);
  if (interval <= 0) return;
  for (let missing = value - interval; missing >= interval; missing -= interval) h.record(missing);
}

test("recordCorrected back-fills exactly what HdrHistogram's per-sample loop would", () => {
  const rng = seededRandom("co");
  for (const interval of [1, 3, 100, 1_000, 12_345]) {
    const fast = new Histogram({ highestTrackableValue: 10_000_000, significantDigits: 2 });
    const slow = new Histogram({ highestTrackableValue: 10_000_000, significantDigits: 2 });
    for (let i = 0; i < 50; i++) {
      const value = Math.floor(rng.next() * 400_000);
      fast.recordCorrected(value, interval);
      naiveCorrected(slow, value, interval);
    }
    assert.deepEqual([...fast.buckets()], [...slow.buckets()], `interval ${interval}`);
    assert.deepEqual(fast.summary(), slow.summary(), `interval ${interval}`);
  }
});

test("recordCorrected: a stall above the range back-fills clamped samples; short values add nothing", () => {
  const fast = new Histogram({ highestTrackableValue: 100_000, significantDigits: 2 });
  const slow = new Histogram({ highestTrackableValue: 100_000, significantDigits: 2 });
  fast.recordCorrected(1_000_000, 1_000);
  naiveCorrected(slow, 1_000_000, 1_000);
  assert.deepEqual(fast.summary(), slow.summary());
  assert.equal(fast.count, 1_000);
  assert.equal(fast.clampedCount, 900, "1_000_000 itself and the 899 samples 999_000 … 101_000");

  const h = new Histogram();
  h.recordCorrected(500, 1_000);
  h.recordCorrected(1_000, 1_000);
  h.recordCorrected(1_999, 1_000);
  h.recordCorrected(2_000, 0);
  assert.equal(h.count, 4, "nothing missing when a value is under two intervals");
});

test("coordinated omission: a 1 s stall in a 1 kHz test moves p50 only when corrected", () => {
  // 10 s at 1 request/ms, all 1 ms, except one request that stalls for 1 s.
  const naive = new Histogram();
  const corrected = new Histogram();
  for (let i = 0; i < 10_000; i++) {
    naive.record(1_000);
    corrected.recordCorrected(1_000, 1_000);
  }
  naive.record(1_000_000);
  corrected.recordCorrected(1_000_000, 1_000);
  assert.equal(naive.percentile(99), 1_000, "the stall hides: p99 looks like 1 ms");
  assert.equal(corrected.count, 11_000);
  assert.ok(corrected.percentile(99) > 800_000, `corrected p99 ${corrected.percentile(99)}`);
});

test("a huge interval ratio back-fills in bounded time (per bucket, not per sample)", () => {
  const h = new Histogram({ significantDigits: 3 });
  h.recordCorrected(HOUR_US, 1); // 3.6 billion synthetic samples
  assert.equal(h.count, HOUR_US);
  assert.equal(h.min, 1);
  assert.equal(h.max, HOUR_US);
  assert.ok(Math.abs(h.percentile(50) - HOUR_US / 2) / (HOUR_US / 2) <= 1e-3);
  assert.ok(Math.abs(h.mean - (HOUR_US + 1) / 2) < 1);
});
