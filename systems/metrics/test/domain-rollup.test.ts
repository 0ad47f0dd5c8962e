/**
 * Rollups as domain functions (MT-10/11; the rollup builder that runs them off the stream is
 * not built yet): each tier built from the one below equals the tier built from raw samples,
 * and keeping min, max, sum and count leaves a one-second spike visible in the 1 h point while
 * the mean hides it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ONE_HOUR_MS, ONE_MINUTE_MS, rollupOfRollups, rollupPoints } from "../src/domain/rollup.ts";
import { STALE_NAN } from "../src/domain/staleness.ts";

const T0 = Date.UTC(2026, 0, 1);

test("MT-10 each tier is built from the previous: 60 × 1 s → 1 min, 60 × 1 min → 1 h, same as from raw", () => {
  let seed = 7;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const samples = Array.from({ length: 2 * 3_600 }, (_, i) => ({
    t: T0 + i * 1_000,
    v: Math.round(random() * 1_000),
  }));
  const minute = rollupPoints(samples, ONE_MINUTE_MS);
  assert.equal(minute.length, 120);
  assert.ok(minute.every((p) => p.count === 60));
  const hour = rollupOfRollups(minute, ONE_HOUR_MS);
  assert.equal(hour.length, 2);
  assert.deepEqual(hour, rollupPoints(samples, ONE_HOUR_MS));
});

test("MT-11 a 1 s spike stays visible in the 1 h tier as its max; the mean alone would hide it", () => {
  const samples = Array.from({ length: 3_600 }, (_, i) => ({ t: T0 + i * 1_000, v: i === 1_234 ? 100 : 1 }));
  samples.splice(2_001, 0, { t: T0 + 2_000_500, v: STALE_NAN }); // a staleness marker is not a value
  const [hour] = rollupOfRollups(rollupPoints(samples, ONE_MINUTE_MS), ONE_HOUR_MS);
  assert.deepEqual(hour, { t: T0, min: 1, max: 100, sum: 3_599 + 100, count: 3_600 });
  const mean = hour!.sum / hour!.count;
  assert.ok(mean < 1.03, `the mean (${mean}) does not show the spike`);
});
