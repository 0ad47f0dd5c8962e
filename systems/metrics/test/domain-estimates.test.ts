/**
 * The design text's arithmetic (MT-01, MT-14), reproduced by functions, and MT-14's consequence
 * shown on the real head: the same metric with a user-id tag multiplies its series, and the
 * per-metric ceiling (MT-16) is what stops the index from growing with it.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { pointsPerSecond, pointsPerTier, seriesCount, seriesOverCeiling } from "../src/domain/estimates.ts";
import { HeadBlock } from "../src/domain/head-block.ts";
import { labelsFromRecord } from "../src/domain/labels.ts";

test("MT-01 100,000 hosts × 200 metrics at one point every 10 s is 2,000,000 points per second", () => {
  assert.equal(pointsPerSecond({ hosts: 100_000, metricsPerHost: 200, intervalS: 10 }), 2_000_000);
});

test("MT-10 points per series per tier: 7 d at 1 s = 604,800; 30 d at 1 min = 43,200; 1 y at 1 h = 8,760", () => {
  assert.equal(pointsPerTier({ retentionS: 7 * 86_400, resolutionS: 1 }), 604_800);
  assert.equal(pointsPerTier({ retentionS: 30 * 86_400, resolutionS: 60 }), 43_200);
  assert.equal(pointsPerTier({ retentionS: 365 * 86_400, resolutionS: 3_600 }), 8_760);
  // The text's own caveat: its agent emits one point per 10 s, so the raw tier holds a tenth of that.
  assert.equal(pointsPerTier({ retentionS: 7 * 86_400, resolutionS: 10 }), 60_480);
});

test("MT-14 5,000 hosts × 50 endpoints × 5 statuses = 1.25M series; × 2M user ids = 2.5 trillion", () => {
  assert.equal(seriesCount([5_000, 50, 5]), 1_250_000);
  assert.equal(seriesCount([5_000, 50, 5, 2_000_000]), 2_500_000_000_000);
  // With a ceiling of 1.25M series for the metric, everything past it is refused, not indexed.
  assert.equal(seriesOverCeiling([5_000, 50, 5], 1_250_000), 0);
  assert.equal(seriesOverCeiling([5_000, 50, 5, 2_000_000], 1_250_000), 2_500_000_000_000 - 1_250_000);
});

test("MT-14 on the real head (scaled down): a user-id tag multiplies the series until the metric's ceiling stops it", () => {
  const head = new HeadBlock({
    blockRangeMs: 7_200_000,
    limits: { maxSeries: 100_000, maxSeriesPerMetric: 500 },
  });
  const batch = (users: number) =>
    Array.from({ length: 10 * 5 * 2 * users }, (_, i) => ({
      labels: labelsFromRecord({
        __name__: "http_requests_total",
        host: `h${i % 10}`,
        endpoint: `/e${Math.floor(i / 10) % 5}`,
        status: String(200 + (Math.floor(i / 50) % 2)),
        ...(users > 1 ? { user_id: `u${Math.floor(i / 100)}` } : {}),
      }),
      samples: [{ t: 1_000, v: 1 }],
    }));
  const plain = head.plan(batch(1), { onLimit: "skip" });
  assert.ok(plain.ok);
  head.commit(plain);
  assert.equal(head.seriesCountOf("http_requests_total"), seriesCount([10, 5, 2]));
  const exploded = head.plan(batch(40), { onLimit: "skip" });
  assert.ok(exploded.ok);
  head.commit(exploded);
  assert.equal(seriesCount([10, 5, 2, 40]), 4_000);
  assert.equal(head.seriesCountOf("http_requests_total"), 500, "the index stops at the ceiling");
  // 100 series without user_id were there already: 400 more fit under 500, the other 3,600 are refused.
  assert.equal(exploded.limited.length, 4_000 - 400);
});
