/** The design text's arithmetic (FD-02, FD-05, FD-12) and the derived thresholds (FD-07, FD-08), reproduced. */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  averagePerS,
  dailyListWrites,
  dailyReads,
  fanoutSeconds,
  listMemoryBytes,
} from "../src/domain/estimates.ts";
import { deriveThresholds, tierOf } from "../src/domain/tiers.ts";

test("FD-02 100M DAU × 10 opens ≈ 12k reads/s average (35k peak ≈ 3×); 20M posts × 200 followers ≈ 46k list writes/s; 30M writes for one celebrity post", () => {
  const reads = dailyReads(100e6, 10);
  assert.equal(reads, 1e9);
  assert.equal(Math.round(averagePerS(reads) / 1000), 12);
  // "near 35k at peak": a peak factor of ~3 over the average.
  assert.ok(Math.abs((averagePerS(reads) * 3) / 1000 - 35) < 1);
  const writes = dailyListWrites(20e6, 200);
  assert.equal(writes, 4e9);
  assert.equal(Math.round(averagePerS(writes) / 1000), 46);
  assert.equal(dailyListWrites(1, 30e6), 30e6);
});

test("FD-05 one post by a 30M-follower author takes ≈ 650 s (≈ 11 min) of the whole 46k/s fan-out capacity", () => {
  const s = fanoutSeconds(30e6, 46_000);
  assert.ok(s > 645 && s < 660, String(s));
  assert.equal(Math.round(s / 60), 11);
});

test("FD-12 20 B × 800 entries = 16 KB per user; × 100M users ≈ 1.6 TB (the text's assumed bytes; measured ones in timeline-memory.test.ts)", () => {
  assert.equal(listMemoryBytes(1, 800, 20), 16_000);
  assert.equal(listMemoryBytes(100e6, 800, 20), 1.6e12);
});

test("FD-07 the threshold is derived from capacity and the delay target, not a constant: 46k/s × 1 s ≠ 1M; 30M needs 650 s", () => {
  const t = deriveThresholds({ fanoutWritesPerS: 46_000, delayTargetMs: 1_000, activeShare: 0.3 });
  assert.equal(t.fullPushMax, 46_000);
  assert.equal(t.activePushMax, 153_333);
  // The text's "order of 1M" corresponds to a ~22 s delay target at the same capacity.
  assert.equal(
    deriveThresholds({ fanoutWritesPerS: 46_000, delayTargetMs: 21_740, activeShare: 1 }).fullPushMax,
    1_000_040,
  );
});

test("FD-08 three tiers from follower counts: full push ≤ capacity × target, push to active followers up to fullPushMax / activeShare, pull above; an author crosses tiers as followers grow", () => {
  const t = deriveThresholds({ fanoutWritesPerS: 40_000, delayTargetMs: 1_000, activeShare: 0.3 });
  assert.equal(tierOf(200, t), "push");
  assert.equal(tierOf(40_000, t), "push");
  assert.equal(tierOf(40_001, t), "push-active");
  assert.equal(tierOf(133_333, t), "push-active");
  assert.equal(tierOf(133_334, t), "pull");
  // The same author over time:
  assert.deepEqual(
    [1_000, 50_000, 2_000_000].map((n) => tierOf(n, t)),
    ["push", "push-active", "pull"],
  );
  // The delay of each tier's largest post stays within the target: X / capacity ≤ 1 s.
  assert.ok(fanoutSeconds(t.fullPushMax, 40_000) <= 1);
  assert.ok(fanoutSeconds(t.activePushMax * 0.3, 40_000) <= 1);
  assert.throws(
    () => deriveThresholds({ fanoutWritesPerS: 0, delayTargetMs: 1, activeShare: 1 }),
    RangeError,
  );
});
