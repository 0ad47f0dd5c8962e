/**
 * Rollups as domain functions (MT-10/11; the rollup builder runs them off the stream, see
 * stream-rollup-builder.test): each tier built from the one below equals the tier built from
 * raw samples, keeping min, max, sum and count leaves a one-second spike visible in the 1 h
 * point while the mean hides it, and a window's first/last samples and reset carry give
 * `rate`/`increase`/`delta` equal to Prometheus's over the raw samples, counter resets included.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { labelsFromRecord } from "../src/domain/labels.ts";
import { PromqlEngine } from "../src/domain/promql-engine.ts";
import { parsePromql } from "../src/domain/promql-parser.ts";
import { rewriteForRollup, rollupSeriesData, rollupView } from "../src/domain/promql-rollup.ts";
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
  assert.deepEqual(hour, {
    t: T0,
    min: 1,
    max: 100,
    sum: 3_599 + 100,
    count: 3_600,
    // Read as a counter, the fall from 100 to 1 is a reset: 100 carried.
    counter: { firstT: T0, firstV: 1, lastT: T0 + 3_599_000, lastV: 1, resetCarry: 100 },
  });
  const mean = hour!.sum / hour!.count;
  assert.ok(mean < 1.03, `the mean (${mean}) does not show the spike`);
});

test("MT-11 MT-12 rate, increase and delta from the windows' first/last samples and reset carries equal Prometheus's answer over the raw samples — resets inside a window, two in one, at a minute seam and at an hour seam", () => {
  let seed = 11;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  // A counter every 10 s, 7 s off the minute (no sample on a window's edge), for 6 h.
  const first = T0 + 7_000;
  const resetsAt = new Map([
    [first + 95 * 10_000, "inside a minute"], // 00:15:57
    [first + 300 * 10_000, "two in one minute"], // 00:50:07 …
    [first + 302 * 10_000, "two in one minute"], // … 00:50:27
    [T0 + 2 * ONE_HOUR_MS - ONE_MINUTE_MS + 7_000 + 600_000, "at a minute seam"], // 02:00:07 + 10 min
    [T0 + 3 * ONE_HOUR_MS + 7_000, "at an hour seam"], // the hour's first sample
  ]);
  let value = 1_000_000;
  const samples = Array.from({ length: 6 * 360 }, (_, i) => {
    const t = first + i * 10_000;
    value = resetsAt.has(t) ? random() * 5 : value + Math.floor(random() * 50) / 4;
    return { t, v: value };
  });
  assert.ok([...resetsAt.keys()].every((t) => samples.some((s) => s.t === t)));
  const labels = labelsFromRecord({ __name__: "requests_total", host: "a" });
  const raw = new PromqlEngine({
    select: () => [{ labels, timestamps: samples.map((s) => s.t), values: samples.map((s) => s.v) }],
  });
  const minutes = rollupPoints(samples, ONE_MINUTE_MS);
  const tiers = [
    { tier: "1m", widthMs: ONE_MINUTE_MS, points: minutes },
    { tier: "1h", widthMs: ONE_HOUR_MS, points: rollupOfRollups(minutes, ONE_HOUR_MS) },
  ] as const;
  let compared = 0;
  let bitEqual = 0;
  for (const { tier, widthMs, points } of tiers) {
    const rollup = new PromqlEngine(
      { select: (matchers) => [rollupSeriesData({ labels, points }, rollupView(matchers).view, widthMs)] },
      { lookbackMs: widthMs },
    );
    const ranges = tier === "1m" ? ["1m", "5m", "1h", "3h"] : ["1h", "2h", "5h"];
    for (const fn of ["rate", "increase", "delta"]) {
      for (const range of ranges) {
        const query = parsePromql(`${fn}(requests_total[${range}])`);
        const rewritten = rewriteForRollup(query, tier, widthMs);
        for (let at = T0 + widthMs; at <= T0 + 6 * ONE_HOUR_MS; at += tier === "1m" ? 7 * widthMs : widthMs) {
          const want = raw.instant(query, at);
          const got = rollup.instant(rewritten, at);
          assert.ok(want.type === "vector" && got.type === "vector");
          assert.equal(got.samples.length, want.samples.length, `${tier} ${fn}[${range}] at ${at}: present`);
          if (want.samples.length === 0) continue;
          const [w, g] = [want.samples[0]!.v, got.samples[0]!.v];
          // Without resets in the range the same arithmetic on the same numbers: bit for bit;
          // with them, the values before the resets are summed in another grouping.
          assert.ok(Math.abs(g - w) <= 1e-12 * Math.abs(w), `${tier} ${fn}[${range}] at ${at}: ${g} vs ${w}`);
          compared++;
          if (g === w) bitEqual++;
        }
      }
    }
  }
  assert.ok(compared > 500, `${compared} answers compared`);
  assert.ok(bitEqual > compared / 2, `${bitEqual} of ${compared} bit-equal`);
  // The resets matter: last − first is about −1e6 (the counter restarted), the increase positive.
  const increase = raw.instant(parsePromql("increase(requests_total[6h])"), T0 + 6 * ONE_HOUR_MS);
  assert.ok(samples.at(-1)!.v - samples[0]!.v < -900_000);
  assert.ok(increase.type === "vector" && increase.samples[0]!.v > 10_000);
});

test("MT-12 a window written before the tiers kept first/last answers min/max/sum/count and no rate: a range holding it gives no value rather than a wrong one", () => {
  const samples = Array.from({ length: 360 }, (_, i) => ({ t: T0 + 7_000 + i * 10_000, v: i * 3 }));
  const [old, ...rest] = rollupPoints(samples, ONE_MINUTE_MS);
  const { counter: _dropped, ...withoutCounter } = old!;
  const points = [withoutCounter, ...rest];
  const labels = labelsFromRecord({ __name__: "c" });
  const rollup = new PromqlEngine(
    {
      select: (matchers) => [rollupSeriesData({ labels, points }, rollupView(matchers).view, ONE_MINUTE_MS)],
    },
    { lookbackMs: ONE_MINUTE_MS },
  );
  const ask = (q: string, at: number) => {
    const value = rollup.instant(rewriteForRollup(parsePromql(q), "1m", ONE_MINUTE_MS), at);
    assert.ok(value.type === "vector");
    return value.samples.map((s) => s.v);
  };
  assert.deepEqual(ask("rate(c[10m])", T0 + 10 * ONE_MINUTE_MS), [], "the old first minute in range");
  // 3 per 10 s, extrapolated to the 10 min range.
  assert.deepEqual(ask("increase(c[10m])", T0 + 11 * ONE_MINUTE_MS), [180], "only new minutes");
  assert.deepEqual(ask("count_over_time(c[10m])", T0 + 10 * ONE_MINUTE_MS), [60]);
});
