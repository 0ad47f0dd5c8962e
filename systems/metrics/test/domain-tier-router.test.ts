/**
 * MT-12 as pure functions: the query router's rule (tier by step, then by what each tier
 * holds, stitched per run of steps) and what PromQL a rollup tier answers — rewritten onto the
 * min/max/sum/count views or the windows' first/last samples, or refused naming the function.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { PromqlEngine } from "../src/domain/promql-engine.ts";
import { parsePromql } from "../src/domain/promql-parser.ts";
import {
  RollupQueryError,
  rewriteForRollup,
  rollupSeriesData,
  rollupView,
} from "../src/domain/promql-rollup.ts";
import { ONE_HOUR_MS, ONE_MINUTE_MS, rollupPoints } from "../src/domain/rollup.ts";
import {
  instantTier,
  planTiers,
  preferredTier,
  RECENT_RANGE_MS,
  type TierCoverage,
} from "../src/domain/tier-router.ts";

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 5, 1);
/** Raw 7 d; 1 min 30 d, closed up to 2 min ago; 1 h 1 y, closed up to the last hour. */
const coverage: TierCoverage = {
  raw: { fromMs: NOW - 7 * DAY, toMs: Number.MAX_SAFE_INTEGER },
  "1m": { fromMs: NOW - 30 * DAY, toMs: NOW - 2 * ONE_MINUTE_MS },
  "1h": { fromMs: NOW - 365 * DAY, toMs: NOW - ONE_HOUR_MS },
};

test("MT-12 the preferred tier follows the step: under 1 min raw, under 1 h the 1 min tier, else 1 h", () => {
  assert.equal(preferredTier(15_000), "raw");
  assert.equal(preferredTier(59_999), "raw");
  assert.equal(preferredTier(60_000), "1m");
  assert.equal(preferredTier(3_599_999), "1m");
  assert.equal(preferredTier(3_600_000), "1h");
});

test("MT-12 recent ranges stay hot, a 30-day panel is the 1 min tier, a year the 1 h tier, and a panel crossing the raw retention is stitched", () => {
  const plan = (startMs: number, endMs: number, stepMs: number) =>
    planTiers({ startMs, endMs, stepMs, coverage }).map((s) => [s.tier, s.startMs, s.endMs]);
  assert.deepEqual(plan(NOW - 6 * ONE_HOUR_MS, NOW, 15_000), [["raw", NOW - 6 * ONE_HOUR_MS, NOW]]);
  // 30 days at 10 min: the 1 min tier, and its last steps (not closed yet) from raw.
  assert.deepEqual(plan(NOW - 30 * DAY, NOW, 600_000), [
    ["1m", NOW - 30 * DAY, NOW - 10 * ONE_MINUTE_MS],
    ["raw", NOW, NOW],
  ]);
  // A year at 1 d: the 1 h tier; its newest steps from the 1 min tier, then raw.
  assert.deepEqual(plan(NOW - 364 * DAY, NOW, DAY), [
    ["1h", NOW - 364 * DAY, NOW - DAY],
    ["raw", NOW, NOW],
  ]);
  // 10 days at 30 s: the part older than 7 days from the 1 min tier (cold), the rest raw (hot).
  assert.deepEqual(plan(NOW - 10 * DAY, NOW, 30_000), [
    ["1m", NOW - 10 * DAY, NOW - 7 * DAY - 30_000],
    ["raw", NOW - 7 * DAY, NOW],
  ]);
  // Older than the 1 min retention at a 1 min step: the 1 h tier answers those steps.
  assert.deepEqual(plan(NOW - 31 * DAY, NOW - 29 * DAY, ONE_HOUR_MS / 2), [
    ["1h", NOW - 31 * DAY, NOW - 30 * DAY - ONE_HOUR_MS / 2],
    ["1m", NOW - 30 * DAY, NOW - 29 * DAY],
  ]);
});

test("MT-12 a recent range the raw tier holds whole is read raw at any step (the cheaper read there); past a day, or reaching past the raw retention, the step picks again", () => {
  const plan = (startMs: number, endMs: number, stepMs: number, reachMs?: number) =>
    planTiers({
      startMs,
      endMs,
      stepMs,
      coverage,
      ...(reachMs === undefined ? {} : { reach: { ms: reachMs, answeredBy: () => true } }),
    }).map((s) => [s.tier, s.startMs, s.endMs]);
  // A dashboard's 2.75 h at a 60 s step, and a whole day at 1 h: raw.
  const dashboard = NOW - 165 * ONE_MINUTE_MS;
  assert.deepEqual(plan(dashboard, NOW, ONE_MINUTE_MS), [["raw", dashboard, NOW]]);
  assert.deepEqual(plan(NOW - RECENT_RANGE_MS, NOW, ONE_HOUR_MS), [["raw", NOW - RECENT_RANGE_MS, NOW]]);
  // A day and a step more: the step's tier again (the 1 min tier, its unclosed steps from raw).
  assert.deepEqual(plan(NOW - RECENT_RANGE_MS - ONE_MINUTE_MS, NOW, ONE_MINUTE_MS), [
    ["1m", NOW - RECENT_RANGE_MS - ONE_MINUTE_MS, NOW - 2 * ONE_MINUTE_MS],
    ["raw", NOW - ONE_MINUTE_MS, NOW],
  ]);
  // A short range at the raw retention's edge, or whose reads reach past it: not recent.
  const edge = NOW - 7 * DAY - ONE_HOUR_MS;
  assert.deepEqual(plan(edge, edge + 2 * ONE_HOUR_MS, ONE_MINUTE_MS)[0]![0], "1m");
  assert.deepEqual(plan(NOW - ONE_HOUR_MS, NOW, ONE_MINUTE_MS, 7 * DAY)[0]![0], "1m");
});

test("MT-12 an instant query's tier follows how far back it reads: raw within the raw retention, then the finest rollup tier holding its oldest read", () => {
  assert.equal(instantTier(NOW - 5 * ONE_MINUTE_MS, coverage), "raw");
  assert.equal(instantTier(NOW - 7 * DAY, coverage), "raw");
  // max_over_time(x[30d]) now: past raw's 7 days, inside the 1 min tier's 30.
  assert.equal(instantTier(NOW - 7 * DAY - 1, coverage), "1m");
  assert.equal(instantTier(NOW - 30 * DAY, coverage), "1m");
  assert.equal(instantTier(NOW - 90 * DAY, coverage), "1h");
  // Past every retention: the coarsest tier that holds anything answers what it kept.
  assert.equal(instantTier(NOW - 2 * 365 * DAY, coverage), "1h");
  assert.equal(instantTier(NOW - 90 * DAY, { ...coverage, "1h": undefined }), "1m");
  assert.equal(instantTier(NOW - 90 * DAY, { ...coverage, "1m": undefined, "1h": undefined }), "raw");
});

test("MT-12 a panel whose ranges reach past the raw retention: its raw steps go where an instant query would, if that tier answers the query", () => {
  const plan = (reachMs: number, answers: boolean) =>
    planTiers({
      startMs: NOW - 6 * ONE_HOUR_MS,
      endMs: NOW,
      stepMs: 15_000,
      coverage,
      reach: { ms: reachMs, answeredBy: () => answers },
    }).map((s) => [s.tier, s.startMs, s.endMs, s.byReach]);
  // max_over_time(x[20d]) at a 15 s step: every step reads past raw's 7 days → the 1 min tier,
  // its steps newer than the tier has closed answered with raw's tail (byReach).
  assert.deepEqual(plan(20 * DAY, true), [["1m", NOW - 6 * ONE_HOUR_MS, NOW, true]]);
  // [30d]: the steps before now read past the 1 min tier's 30 days too → the 1 h tier.
  assert.deepEqual(plan(30 * DAY, true), [
    ["1h", NOW - 6 * ONE_HOUR_MS, NOW - 15_000, true],
    ["1m", NOW, NOW, true],
  ]);
  // A query the 1 min tier cannot answer (irate) keeps its raw steps; so does a short reach.
  assert.deepEqual(plan(20 * DAY, false), [["raw", NOW - 6 * ONE_HOUR_MS, NOW, false]]);
  assert.deepEqual(plan(5 * ONE_MINUTE_MS, true), [["raw", NOW - 6 * ONE_HOUR_MS, NOW, false]]);
  // A reach of 7 d − 3 h: only the steps more than 3 h old read past the retention.
  assert.deepEqual(plan(7 * DAY - 3 * ONE_HOUR_MS, true), [
    ["1m", NOW - 6 * ONE_HOUR_MS, NOW - 3 * ONE_HOUR_MS - 15_000, true],
    ["raw", NOW - 3 * ONE_HOUR_MS, NOW, false],
  ]);
});

test("MT-12 MT-11 over a rollup tier: max/min/sum/count/avg_over_time, rate/increase/delta and plain selectors are exact, the rest refused by name", () => {
  const labels = labelsFromRecord({ __name__: "lat", host: "a" });
  const samples = Array.from({ length: 3 * 360 }, (_, i) => ({
    t: i * 10_000,
    v: i === 500 ? 900 : (i % 17) / 3,
  }));
  const hours = rollupPoints(samples, ONE_HOUR_MS);
  const rollup = new PromqlEngine(
    {
      select: (matchers) => {
        const { view, matchers: rest } = rollupView(matchers);
        assert.ok(rest.every((m) => m.name !== "__rollup_view__"));
        return [rollupSeriesData({ labels, points: hours }, view, ONE_HOUR_MS)];
      },
    },
    { lookbackMs: ONE_HOUR_MS },
  );
  const at = 2 * ONE_HOUR_MS;
  // What each function means over the raw samples of the windows the range covers: [at − r, at).
  const inRange = (r: number) => samples.filter((x) => x.t >= at - r && x.t < at).map((x) => x.v);
  const sum = (vs: number[]) => vs.reduce((a, b) => a + b, 0);
  const expected: Array<[string, number]> = [
    ["max_over_time(lat[1h])", Math.max(...inRange(ONE_HOUR_MS))],
    ["min_over_time(lat[1h])", Math.min(...inRange(ONE_HOUR_MS))],
    ["sum_over_time(lat[1h])", sum(inRange(ONE_HOUR_MS))],
    ["count_over_time(lat[1h])", inRange(ONE_HOUR_MS).length],
    ["avg_over_time(lat[2h])", sum(inRange(2 * ONE_HOUR_MS)) / inRange(2 * ONE_HOUR_MS).length],
  ];
  // rate/increase/delta: Prometheus's own answer over the same samples — the windows' [at − r,
  // at), so without the one exactly at `at`.
  const before = samples.filter((x) => x.t < at);
  const raw = new PromqlEngine({
    select: () => [{ labels, timestamps: before.map((x) => x.t), values: before.map((x) => x.v) }],
  });
  for (const q of ["rate(lat[2h])", "increase(lat[1h])", "delta(lat[2h])"]) {
    const answer = raw.instant(parsePromql(q), at);
    expected.push([q, answer.type === "vector" ? answer.samples[0]!.v : Number.NaN]);
  }
  for (const [q, want] of expected) {
    const got = rollup.instant(rewriteForRollup(parsePromql(q), "1h", ONE_HOUR_MS), at);
    assert.ok(
      got.type === "vector" && Math.abs(got.samples[0]!.v - want) < 1e-9,
      `${q}: ${JSON.stringify(got)} vs ${want}`,
    );
  }
  // The 10 s spike is the 1 h point's max; a plain selector is the window's true mean.
  const spike = rollup.instant(
    rewriteForRollup(parsePromql("max_over_time(lat[1h])"), "1h", ONE_HOUR_MS),
    at,
  );
  assert.equal(spike.type === "vector" && spike.samples[0]!.v, 900);
  const mean = rollup.instant(rewriteForRollup(parsePromql("lat"), "1h", ONE_HOUR_MS), at);
  assert.equal(mean.type === "vector" && mean.samples[0]!.v, hours[1]!.sum / hours[1]!.count);

  for (const [q, named] of [
    ["irate(lat[5m])", /irate\(\)/],
    ["sum(deriv(lat[1h]))", /deriv\(\)/],
    ["rate(lat[30s])", /shorter than the 1m tier's windows/],
    ["quantile_over_time(0.9, lat[1h])", /quantile_over_time\(\)/],
    ["last_over_time(lat[1h])", /last_over_time\(\)/],
    ["max_over_time(lat[1h:5m])", /subquery/],
    ["max_over_time(lat[30s])", /shorter than the 1m tier's windows/],
  ] as const) {
    assert.throws(
      () => rewriteForRollup(parsePromql(q), "1m", ONE_MINUTE_MS),
      (e: unknown) => e instanceof RollupQueryError && named.test(e.message),
      q,
    );
  }
  // Operators and aggregations around answerable calls are evaluated as usual.
  const rewritten = rewriteForRollup(
    parsePromql("sum by (host) (max_over_time(lat[1h])) * 2"),
    "1h",
    ONE_HOUR_MS,
  );
  const doubled = rollup.instant(rewritten, at);
  assert.equal(doubled.type === "vector" && doubled.samples[0]!.v, 1800);
});
