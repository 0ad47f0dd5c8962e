/**
 * The agent's aggregation and cardinality guard as pure code (MT-02, MT-15, MT-16's agent
 * side): records in, one point per series per window out, new series counted, a metric's
 * series capped with the excess folded into one overflow series, denied labels stripped.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { AgentAggregator, OVERFLOW_LABEL } from "../src/domain/agent-aggregator.ts";
import type { SeriesSamples } from "../src/domain/head-block.ts";
import { labelsToRecord } from "../src/domain/labels.ts";

const T0 = Date.UTC(2026, 0, 1); // aligned on 10 s

function byName(points: SeriesSamples[]): Map<string, SeriesSamples[]> {
  const out = new Map<string, SeriesSamples[]>();
  for (const p of points) {
    const name = labelsToRecord(p.labels).__name__!;
    out.set(name, [...(out.get(name) ?? []), p]);
  }
  return out;
}

test("MT-02 1,000 increments in one 10 s window become one point holding their sum; one point per series per window", () => {
  const agg = new AgentAggregator({ windowMs: 10_000 });
  for (let i = 0; i < 1_000; i++) {
    agg.record(
      { kind: "counter", name: "http_requests_total", labels: { code: "200" }, value: 1 },
      T0 + i * 9,
    );
    agg.record({ kind: "gauge", name: "queue_depth", labels: {}, value: i }, T0 + i * 9);
  }
  assert.deepEqual(agg.closeDue(T0 + 9_999), [], "the window is still open");
  const first = agg.closeDue(T0 + 10_000);
  assert.deepEqual(first, [
    {
      labels: [
        ["__name__", "http_requests_total"],
        ["code", "200"],
      ],
      samples: [{ t: T0 + 10_000, v: 1_000 }],
    },
    { labels: [["__name__", "queue_depth"]], samples: [{ t: T0 + 10_000, v: 999 }] },
  ]);
  // The next window: the counter stays cumulative (Prometheus's shape, rate() works), the gauge is its last value.
  for (let i = 0; i < 500; i++)
    agg.record(
      { kind: "counter", name: "http_requests_total", labels: { code: "200" }, value: 2 },
      T0 + 10_000 + i,
    );
  // A record of a later window closes the open one itself, even if nobody called closeDue in between.
  agg.record(
    { kind: "counter", name: "http_requests_total", labels: { code: "200" }, value: 1 },
    T0 + 20_001,
  );
  const second = agg.closeDue(T0 + 30_000);
  assert.deepEqual(
    second.map((p) => p.samples),
    [[{ t: T0 + 20_000, v: 2_000 }], [{ t: T0 + 30_000, v: 2_001 }]],
    "an untouched gauge sends nothing; the counter one point per window",
  );
  const counts = agg.counts();
  assert.equal(counts.records, 2_501);
  assert.equal(counts.points, 4, "2,501 records became 4 points");
});

test("MT-02 a histogram's observations become cumulative _bucket{le}, _sum and _count, once per window", () => {
  const agg = new AgentAggregator({ windowMs: 1_000 });
  const bounds = [0.1, 1];
  agg.record(
    { kind: "histogram", name: "latency_seconds", labels: {}, bounds, counts: [3, 1, 1], sum: 2.5 },
    T0,
  );
  agg.record(
    { kind: "histogram", name: "latency_seconds", labels: {}, bounds, counts: [1, 0, 0], sum: 0.05 },
    T0 + 10,
  );
  const points = byName(agg.closeDue(T0 + 1_000));
  assert.deepEqual(
    points.get("latency_seconds_bucket")!.map((p) => [labelsToRecord(p.labels).le, p.samples[0]!.v]),
    [
      ["0.1", 4],
      ["1", 5],
      ["+Inf", 6],
    ],
  );
  assert.equal(points.get("latency_seconds_sum")![0]!.samples[0]!.v, 2.55);
  assert.equal(points.get("latency_seconds_count")![0]!.samples[0]!.v, 6);
});

test("MT-15 MT-16 a metric's series past the agent's ceiling fold into one overflow series; new series are counted per metric", () => {
  const agg = new AgentAggregator({ windowMs: 1_000, maxSeriesPerMetric: 3 });
  for (let i = 0; i < 10; i++)
    agg.record({ kind: "counter", name: "orders_total", labels: { sku: `sku-${i}` }, value: 1 }, T0 + i);
  agg.record({ kind: "counter", name: "orders_total", labels: { sku: "sku-0" }, value: 5 }, T0 + 20);
  agg.record({ kind: "counter", name: "logins_total", labels: { region: "eu" }, value: 1 }, T0 + 30);
  const points = agg.closeDue(T0 + 1_000);
  const orders = byName(points).get("orders_total")!;
  assert.deepEqual(
    orders.map((p) => [labelsToRecord(p.labels), p.samples[0]!.v]),
    [
      [{ __name__: "orders_total", sku: "sku-0" }, 6],
      [{ __name__: "orders_total", sku: "sku-1" }, 1],
      [{ __name__: "orders_total", sku: "sku-2" }, 1],
      [{ __name__: "orders_total", [OVERFLOW_LABEL]: "true" }, 7],
    ],
    "3 series kept, the 7 others folded into one; the metric's total (15) stays right",
  );
  assert.equal(
    orders.reduce((n, p) => n + p.samples[0]!.v, 0),
    15,
  );
  assert.equal(agg.seriesCount, 5, "3 + the overflow series + logins_total: memory bounded by the ceiling");
  const counts = agg.counts();
  assert.deepEqual(
    [...counts.newSeries],
    [
      ["orders_total", 3],
      ["logins_total", 1],
    ],
  );
  assert.deepEqual([...counts.overflowRecords], [["orders_total", 7]]);
  assert.deepEqual(
    [...agg.labelValues().get("orders_total")!],
    [
      ["sku", 3],
      [OVERFLOW_LABEL, 1],
    ],
    "per tag: the label that multiplies the series stands out",
  );
});

test("MT-15 a denied label (a user id) is stripped in the agent: its series merge instead of multiplying", () => {
  const agg = new AgentAggregator({ windowMs: 1_000, deniedLabels: ["user_id"] });
  for (let u = 0; u < 1_000; u++)
    agg.record(
      { kind: "counter", name: "checkout_total", labels: { user_id: `u${u}`, plan: "pro" }, value: 1 },
      T0,
    );
  const points = agg.closeDue(T0 + 1_000);
  assert.deepEqual(points, [
    {
      labels: [
        ["__name__", "checkout_total"],
        ["plan", "pro"],
      ],
      samples: [{ t: T0 + 1_000, v: 1_000 }],
    },
  ]);
  assert.deepEqual([...agg.counts().strippedLabels], [["user_id", 1_000]]);
  assert.deepEqual([...agg.counts().newSeries], [["checkout_total", 1]]);
});

test("MT-15 a series idle for idleWindows windows is forgotten and frees its place under the ceiling", () => {
  const agg = new AgentAggregator({ windowMs: 1_000, maxSeriesPerMetric: 1, idleWindows: 2 });
  agg.record({ kind: "gauge", name: "temp", labels: { room: "a" }, value: 1 }, T0);
  agg.closeDue(T0 + 1_000);
  agg.record({ kind: "gauge", name: "temp", labels: { room: "b" }, value: 2 }, T0 + 1_500);
  assert.deepEqual(labelsToRecord(agg.closeDue(T0 + 2_000)[0]!.labels), {
    __name__: "temp",
    [OVERFLOW_LABEL]: "true",
  });
  for (let w = 2; w <= 4; w++) agg.closeDue(T0 + w * 1_000 + 1);
  agg.record({ kind: "gauge", name: "temp", labels: { room: "b" }, value: 3 }, T0 + 5_000);
  assert.deepEqual(labelsToRecord(agg.closeDue(T0 + 6_000)[0]!.labels), { __name__: "temp", room: "b" });
});
