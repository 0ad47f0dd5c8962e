/**
 * The frequency sketch behind W-TinyLFU's admission: a count-min sketch never
 * underestimates (until it ages), saturates at 15 per counter, halves on reset — by hand
 * and automatically after `sampleSize` increments — and its doorkeeper keeps first
 * sightings out of the counters without breaking the no-underestimate rule.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { CountMinSketch, MAX_COUNTER } from "../src/domain/count-min-sketch.ts";
import { hashKey } from "../src/domain/key-hash.ts";
import { policyErrors } from "../src/errors.ts";

/** Counts each key in `stream` into a sketch and into an exact map. */
function countBoth(sketch: CountMinSketch, stream: readonly number[]): Map<number, number> {
  const exact = new Map<number, number>();
  for (const key of stream) {
    sketch.increment(hashKey(key));
    exact.set(key, (exact.get(key) ?? 0) + 1);
  }
  return exact;
}

describe("count-min sketch", () => {
  test("never underestimates before aging (capped at 15), with and without a doorkeeper", () => {
    fc.assert(
      fc.property(
        fc.array(fc.nat(500), { maxLength: 2_000, size: "max" }),
        fc.integer({ min: 8, max: 256 }),
        fc.boolean(),
        (stream, width, doorkeeper) => {
          const sketch = new CountMinSketch({ width, sampleSize: 1_000_000, doorkeeper });
          const exact = countBoth(sketch, stream);
          const cap = MAX_COUNTER + (doorkeeper ? 1 : 0);
          for (const [key, count] of exact) {
            const estimate = sketch.frequency(hashKey(key));
            assert.ok(estimate >= Math.min(count, cap), `key ${key}: ${estimate} < ${count}`);
          }
          assert.equal(sketch.resets, 0);
        },
      ),
      { numRuns: 200, seed: 4 },
    );
  });

  test("with room, estimates are exact for most keys (the error is collisions, not noise)", () => {
    const sketch = CountMinSketch.forCapacity(1_000);
    const stream = Array.from({ length: 5_000 }, (_, i) => i % 1_000);
    const exact = countBoth(sketch, stream);
    let exactHits = 0;
    for (const [key, count] of exact) if (sketch.frequency(hashKey(key)) === count) exactHits++;
    assert.ok(exactHits >= 990, `${exactHits} of 1,000 keys estimated exactly`);
  });

  test("a counter saturates at 15", () => {
    const sketch = new CountMinSketch({ width: 64, sampleSize: 1_000 });
    for (let i = 0; i < 100; i++) sketch.increment(hashKey("hot"));
    assert.equal(sketch.frequency(hashKey("hot")), MAX_COUNTER);
  });

  test("reset halves every estimate (floor) and the addition count", () => {
    fc.assert(
      fc.property(fc.array(fc.nat(200), { maxLength: 1_500, size: "max" }), (stream) => {
        const sketch = new CountMinSketch({ width: 128, sampleSize: 1_000_000 });
        const exact = countBoth(sketch, stream);
        const before = new Map([...exact.keys()].map((key) => [key, sketch.frequency(hashKey(key))]));
        const additions = sketch.additions;
        sketch.reset();
        for (const [key, estimate] of before) {
          assert.equal(sketch.frequency(hashKey(key)), Math.floor(estimate / 2), `key ${key}`);
        }
        assert.ok(sketch.additions <= additions / 2, `${sketch.additions} > ${additions} / 2`);
        assert.equal(sketch.resets, 1);
      }),
      { numRuns: 100, seed: 5 },
    );
  });

  test("ages by itself after sampleSize increments: yesterday's hot key fades", () => {
    const sketch = new CountMinSketch({ width: 1_024, sampleSize: 100 });
    for (let i = 0; i < 12; i++) sketch.increment(hashKey("old-hot"));
    assert.equal(sketch.frequency(hashKey("old-hot")), 12);
    for (let i = 0; i < 88; i++) sketch.increment(hashKey(`new:${i}`)); // the 100th increment resets
    assert.equal(sketch.resets, 1);
    assert.equal(sketch.frequency(hashKey("old-hot")), 6);
    // Each later reset comes after fewer than sampleSize increments: the halved count is carried over.
    for (let i = 0; sketch.resets < 3 && i < 1_000; i++) sketch.increment(hashKey(`newer:${i}`));
    assert.equal(sketch.resets, 3);
    assert.equal(sketch.frequency(hashKey("old-hot")), 1);
  });

  test("the doorkeeper keeps first sightings out of the counters and is cleared by reset", () => {
    const sketch = new CountMinSketch({ width: 256, sampleSize: 1_000_000, doorkeeper: true });
    sketch.increment(hashKey("once"));
    assert.equal(sketch.frequency(hashKey("once")), 1, "seen once: the doorkeeper bit only");
    sketch.increment(hashKey("once"));
    assert.equal(sketch.frequency(hashKey("once")), 2, "seen twice: doorkeeper + one counter");
    sketch.reset();
    assert.equal(sketch.frequency(hashKey("once")), 0, "counter 1 halves to 0, doorkeeper cleared");
  });

  test("sizing: forCapacity gives 4 counters per row per entry, bounded; bad options are refused", () => {
    assert.equal(CountMinSketch.forCapacity(1_000).width, 4_096);
    assert.equal(CountMinSketch.forCapacity(1).width, 64);
    assert.throws(
      () => new CountMinSketch({ width: 0, sampleSize: 10 }),
      (e) => policyErrors.is(e, "CACHE_POLICY_CONFIG_INVALID"),
    );
    assert.throws(
      () => new CountMinSketch({ width: 2 ** 30, sampleSize: 10 }),
      (e) => policyErrors.is(e, "CACHE_POLICY_CONFIG_INVALID"),
    );
  });
});
