/**
 * The plots' arithmetic over a window of scrapes: counter rates
 * (resets included), gauges, histogram quantiles, gaps for failed scrapes, and the bounds.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { parsePromText } from "@casebook/kit/prom-text";
import type { PlotDeclaration } from "../src/console-declaration.ts";
import { bucketQuantile, maxLinesPerSeries, ScrapeWindow } from "../src/scrape-window.ts";

const counterPlot: PlotDeclaration = {
  title: "Decisions per second, by outcome",
  unit: "decisions/s",
  series: [{ metric: "d_total", fn: "rate", by: "outcome" }],
};

test("a counter plots as its per-second increase between scrapes, by label; a reset counts from zero", () => {
  const window = new ScrapeWindow(10);
  const scrape = (atMs: number, allowed: number, limited: number) =>
    window.push(
      atMs,
      parsePromText(`d_total{outcome="allowed"} ${allowed}\nd_total{outcome="limited"} ${limited}\n`).samples,
    );
  scrape(1_000, 10, 0);
  scrape(3_000, 30, 4);
  scrape(5_000, 6, 4); // the system restarted: allowed reset to 0, then 6
  const plot = window.plot(counterPlot);
  assert.deepEqual(plot.times, [1, 3, 5]);
  assert.deepEqual(plot.lines, [
    { label: "allowed", values: [null, 10, 3] },
    { label: "limited", values: [null, 2, 0] },
  ]);
});

test("a failed scrape is a gap in every line, and the window drops its oldest scrape first", () => {
  const window = new ScrapeWindow(3);
  window.push(1_000, parsePromText("g 1\n").samples);
  window.push(2_000, undefined);
  window.push(3_000, parsePromText("g 3\n").samples);
  window.push(4_000, parsePromText("g 4\n").samples);
  assert.equal(window.size, 3);
  const plot = window.plot({
    title: "G",
    unit: "things",
    series: [{ metric: "g", fn: "value", label: "g" }],
  });
  assert.deepEqual(plot.times, [2, 3, 4]);
  assert.deepEqual(plot.lines, [{ label: "g", values: [null, 3, 4] }]);
  assert.throws(() => new ScrapeWindow(1), RangeError);
});

test("a histogram's quantile comes from its buckets' increase between scrapes, scaled (s → ms)", () => {
  const window = new ScrapeWindow(5);
  const buckets = (a: number, b: number, inf: number) =>
    parsePromText(`lat_bucket{le="0.01"} ${a}\nlat_bucket{le="0.1"} ${b}\nlat_bucket{le="+Inf"} ${inf}\n`)
      .samples;
  window.push(0, buckets(0, 0, 0));
  window.push(1_000, buckets(50, 100, 100)); // 50 under 10 ms, 50 in (10, 100] ms
  window.push(2_000, buckets(50, 100, 100)); // nothing observed: no value
  const plot = window.plot({
    title: "Latency",
    unit: "ms",
    series: [{ metric: "lat", fn: "quantile", q: 0.99, scale: 1000, label: "p99" }],
  });
  const [, p99, idle] = plot.lines[0]!.values;
  assert.ok(Math.abs(p99! - 98.2) < 1e-9, `p99 ${p99}`); // 10 + 90 × (99 − 50) / 50
  assert.equal(idle, null);
  assert.equal(bucketQuantile(0.5, []), undefined);
  assert.equal(
    bucketQuantile(0.99, [
      [0.1, 1],
      [Number.POSITIVE_INFINITY, 100],
    ]),
    0.1,
    "past the last bound: it",
  );
});

test("a label with many values keeps the first lines and folds the rest into 'other'", () => {
  const window = new ScrapeWindow(3);
  const text = (n: number) =>
    Array.from({ length: maxLinesPerSeries + 3 }, (_, i) => `c_total{t="t${i}"} ${n}`).join("\n");
  window.push(0, parsePromText(text(0)).samples);
  window.push(1_000, parsePromText(text(2)).samples);
  const plot = window.plot({ title: "C", unit: "c/s", series: [{ metric: "c_total", fn: "rate", by: "t" }] });
  assert.equal(plot.lines.length, maxLinesPerSeries + 1);
  assert.deepEqual(plot.lines.at(-1), { label: "other", values: [null, 6] });
});
