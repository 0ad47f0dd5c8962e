import assert from "node:assert/strict";
import { test } from "node:test";
import { Histogram, Registry } from "prom-client";
import { createHttpDurationHistogram, httpDurationBucketsS } from "../../src/http/metrics.ts";
import { RequestHistogram } from "../../src/http/request-histogram.ts";

const LABELS = ["method", "route", "status_code"] as const;

/** A seeded stream of durations across every bucket, bounds themselves included (le is inclusive). */
function durations(count: number): number[] {
  let state = 7;
  const out: number[] = [...httpDurationBucketsS, 0, 20];
  while (out.length < count) {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    out.push((state / 2_147_483_648) ** 3 * 12);
  }
  return out;
}

test("renders the same Prometheus text and JSON as prom-client's Histogram for the same observations", async () => {
  const ours = new Registry();
  const theirs = new Registry();
  const config = { name: "http_request_duration_seconds", help: "Time to the last byte." };
  const mine = new RequestHistogram({
    ...config,
    labelNames: LABELS,
    buckets: httpDurationBucketsS,
    registry: ours,
  });
  const oracle = new Histogram({
    ...config,
    labelNames: LABELS,
    buckets: httpDurationBucketsS,
    registers: [theirs],
  });
  const sets = [
    ["GET", "/:code", "302"],
    ["POST", "/v1/links", "201"],
    ["GET", "/v1/links/:id", "404"],
  ] as const;
  const kept = sets.map((set) => mine.labels(...set));
  durations(3_000).forEach((seconds, i) => {
    const set = sets[i % sets.length]!;
    if (i % 2 === 0) kept[i % sets.length]!.observe(seconds);
    else mine.observe({ method: set[0], route: set[1], status_code: set[2] }, seconds);
    oracle.labels(...set).observe(seconds);
  });
  assert.equal(await ours.metrics(), await theirs.metrics());
  // prom-client's JSON lines carry `exemplar` (null: exemplars are off); ours have none to carry.
  const withoutExemplars = (await theirs.getMetricsAsJSON()).map((metric) => ({
    ...metric,
    values: metric.values.map((line) => {
      const { exemplar: _none, ...rest } = line as typeof line & { exemplar?: unknown };
      return rest;
    }),
  }));
  assert.deepEqual(await ours.getMetricsAsJSON(), withoutExemplars);
});

test("a label set is its own series; a child kept across reset() counts from zero again", async () => {
  const registry = new Registry();
  const duration = createHttpDurationHistogram(registry);
  const redirect = duration.labels("GET", "/:code", "302");
  redirect.observe(0.0004);
  duration.observe({ method: "GET", route: "/:code", status_code: "404" }, 0.002);
  let text = await registry.metrics();
  assert.match(
    text,
    /^http_request_duration_seconds_count\{method="GET",route="\/:code",status_code="302"\} 1$/m,
  );
  assert.match(
    text,
    /^http_request_duration_seconds_bucket\{le="0\.001",method="GET",route="\/:code",status_code="302"\} 1$/m,
  );
  assert.match(
    text,
    /^http_request_duration_seconds_bucket\{le="0\.001",method="GET",route="\/:code",status_code="404"\} 0$/m,
  );
  registry.resetMetrics();
  redirect.observe(0.03);
  text = await registry.metrics();
  assert.match(
    text,
    /^http_request_duration_seconds_count\{method="GET",route="\/:code",status_code="302"\} 1$/m,
  );
  assert.match(
    text,
    /^http_request_duration_seconds_sum\{method="GET",route="\/:code",status_code="302"\} 0\.03$/m,
  );
  assert.match(
    text,
    /^http_request_duration_seconds_count\{method="GET",route="\/:code",status_code="404"\} 0$/m,
  );
});

test("a wrong label count, a value that is not a finite number and unordered buckets are refused", () => {
  const registry = new Registry();
  const duration = createHttpDurationHistogram(registry);
  assert.throws(() => duration.labels("GET", "/:code"), /takes 3 label values, got 2/);
  const child = duration.labels("GET", "/:code", "302");
  for (const bad of [Number.NaN, Number.POSITIVE_INFINITY]) {
    assert.throws(() => child.observe(bad), /is not a finite number/);
  }
  assert.throws(
    () => new RequestHistogram({ name: "x", help: "x", labelNames: [], buckets: [1, 0.5], registry }),
    /finite and ascending/,
  );
  assert.throws(() => createHttpDurationHistogram(registry), /already been registered/);
});
