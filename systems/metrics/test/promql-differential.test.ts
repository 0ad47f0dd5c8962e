/**
 * The differential against Prometheus (issue 22's proof): one seeded set of series
 * (`generated-series.ts`: counters with resets, wandering gauges, a histogram with `le`
 * buckets, series that stop, a series with a hole, several jobs and instances) is written to
 * both — by remote-write into our ingest, and into a Prometheus 2.42 (Debian) as TSDB blocks by
 * `promtool tsdb create-blocks-from openmetrics` (lab's spawner backfills its data dir, then
 * starts it) — and a corpus of PromQL queries is asked of both, each at five instants (mid-span
 * off the sample grid, 2 and 6 min after the `batch` series stopped, the last sample, 4.5 min
 * past it) and as one range query (off-grid start, 53 s step). Every answer must agree:
 * the same series, timestamps and values within 1e-9 relative (`prometheus-answers.ts`).
 * Skipped when the `prometheus` package is absent (CASEBOOK_REQUIRE_ENGINES=1: fail).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { spawnOrSkip } from "@casebook/lab/server-engine";
import { spawnPrometheus } from "@casebook/lab/spawn-prometheus";
import { encodeWriteRequest } from "../src/domain/remote-write.ts";
import { snappyCompress } from "../src/domain/snappy.ts";
import { main } from "../src/main.ts";
import { generateSeries } from "./generated-series.ts";
import { type ApiResult, askOurs, askPrometheus, differenceOf, normalise } from "./prometheus-answers.ts";

/** The corpus: what dashboards and alert rules ask, grouped by the feature each exercises. */
const DIFFERENTIAL_QUERIES: readonly string[] = [
  // selectors: the four matcher types, the name as a matcher, offset
  'http_requests_total{job="api"}',
  'http_requests_total{job!="api",code="500"}',
  'http_requests_total{method=~"G.*",instance!~"b.*"}',
  '{__name__=~"memory_.*|temperature_.*",job="web"}',
  "batch_last_run_timestamp_seconds",
  "queue_depth",
  "memory_usage_bytes offset 10m",
  // counters and gauges over ranges
  "rate(http_requests_total[5m])",
  'increase(http_requests_total{code="500"}[10m])',
  "irate(http_requests_total[2m])",
  "rate(batch_processed_total[5m])",
  "delta(temperature_celsius[10m])",
  "idelta(memory_usage_bytes[5m])",
  "deriv(memory_usage_bytes[10m])",
  "predict_linear(temperature_celsius[15m], 600)",
  "resets(http_requests_total[30m])",
  "changes(up[30m])",
  "rate(http_requests_total[5m] offset 15m)",
  // aggregations, by and without
  "sum by (job) (rate(http_requests_total[5m]))",
  "avg without (instance, method) (rate(http_requests_total[5m]))",
  "min by (instance) (memory_usage_bytes)",
  "max without (instance) (temperature_celsius)",
  "count by (code) (http_requests_total)",
  "topk(3, rate(http_requests_total[5m]))",
  "bottomk by (job) (1, memory_usage_bytes)",
  "quantile by (job) (0.9, temperature_celsius)",
  "stddev(memory_usage_bytes)",
  'count_values("v", up)',
  "group by (job) (up)",
  // histograms
  "histogram_quantile(0.9, sum by (le) (rate(request_duration_seconds_bucket[5m])))",
  'histogram_quantile(0.5, rate(request_duration_seconds_bucket{job="api"}[10m]))',
  "sum(rate(request_duration_seconds_sum[5m])) / sum(rate(request_duration_seconds_count[5m]))",
  // binary operators and vector matching
  'rate(http_requests_total{code="500"}[5m]) / ignoring (code) rate(http_requests_total{code="200"}[5m])',
  "sum by (job, instance) (rate(http_requests_total[5m])) * on (job, instance) group_left (version) build_info",
  "memory_usage_bytes + on (job, instance) temperature_celsius",
  "memory_usage_bytes - memory_usage_bytes offset 5m",
  "up == 0",
  "temperature_celsius > bool 37",
  "temperature_celsius and on (instance) (up == 1)",
  'http_requests_total{code="500"} unless on (job) (up == 0)',
  "queue_depth or temperature_celsius",
  // *_over_time
  "avg_over_time(temperature_celsius[10m])",
  "max_over_time(memory_usage_bytes[15m])",
  "min_over_time(memory_usage_bytes[15m])",
  "sum_over_time(queue_depth[10m])",
  "count_over_time(batch_last_run_timestamp_seconds[10m])",
  "quantile_over_time(0.75, temperature_celsius[10m])",
  "stddev_over_time(temperature_celsius[10m])",
  "last_over_time(queue_depth[10m])",
  "present_over_time(queue_depth[10m])",
  // subqueries
  "max_over_time(rate(http_requests_total[2m])[10m:1m])",
  "avg_over_time(sum(memory_usage_bytes)[15m:30s])",
  "deriv(avg(temperature_celsius)[10m:])",
  // absent, label functions, scalars and vectors, time
  "absent(nonexistent_metric)",
  'absent(nonexistent_metric{job="x"})',
  "absent_over_time(batch_last_run_timestamp_seconds[5m])",
  'label_replace(up, "host", "$1", "instance", "(.*):.*")',
  'label_join(build_info, "id", "-", "job", "version")',
  "scalar(sum(up))",
  "vector(1) + scalar(count(up))",
  "sum(up) * 2",
  "time() - batch_last_run_timestamp_seconds",
  "timestamp(batch_last_run_timestamp_seconds)",
  "clamp_max(temperature_celsius, 37)",
  "round(memory_usage_bytes / 1024, 0.1)",
  "-temperature_celsius",
  // more matching, @, math, dates, nested ranges
  "http_requests_total / on (job, instance) group_left up",
  "up + on (job, instance) group_right (version) build_info",
  "avg by (instance) (temperature_celsius) > bool scalar(avg(temperature_celsius))",
  "memory_usage_bytes @ end()",
  "rate(http_requests_total[5m] @ start())",
  "holt_winters(temperature_celsius[10m], 0.5, 0.5)",
  "sort_desc(memory_usage_bytes)",
  "histogram_quantile(0.99, sum by (job, le) (increase(request_duration_seconds_bucket[10m])))",
  "count_over_time(queue_depth[3m])",
  "sum without (code, method) (increase(http_requests_total[15m]))",
  "sgn(delta(memory_usage_bytes[5m])) * abs(deriv(temperature_celsius[5m]))",
  "max_over_time(up[1h:5m] offset 10m)",
  "day_of_month(batch_last_run_timestamp_seconds) + hour(batch_last_run_timestamp_seconds)",
  "quantile(0.5, rate(http_requests_total[5m]))",
];

const MINUTE_MS = 60_000;

test("MT-17 MT-13 MT-05 the same generated series in ours and in Prometheus 2.42: a corpus of PromQL queries agrees at five instants and over a range, and so do the series and label endpoints and the error types", async (t) => {
  // 1 h of samples every 15 s, ending ~30 min ago (inside Prometheus's 15 d retention).
  const startMs = Math.floor(Date.now() / MINUTE_MS) * MINUTE_MS - 90 * MINUTE_MS;
  const data = generateSeries({ seed: "promql-differential", startMs, samples: 240 });
  // A subquery without a step uses the evaluation interval: Prometheus's default is 1 min
  // (ours too); lab's spawner sets 15 s, so this config sets the default back.
  const prom = await spawnOrSkip(t, () =>
    spawnPrometheus({ backfill: data.openMetrics(), config: "global:\n  evaluation_interval: 1m\n" }),
  );
  if (!prom) return;
  t.after(() => prom.stop());

  const dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-diff-"));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    // Stored before the 204: the queries need not wait for the stream's consumers.
    METRICS_INGEST_PATH: "direct",
  });
  t.after(() => running.close());
  const key = running.bootstrap!.apiKey;
  const perRequest = 60;
  for (let from = 0; from < 240; from += perRequest) {
    const slab = data.series.map((s) => ({
      labels: s.labels,
      samples: s.samples.filter(
        (p) => p.t >= startMs + from * 15_000 && p.t < startMs + (from + perRequest) * 15_000,
      ),
    }));
    const response = await running.service.app.inject({
      method: "POST",
      url: "/api/v1/write",
      headers: {
        authorization: `Bearer ${key}`,
        "content-type": "application/x-protobuf",
        "content-encoding": "snappy",
      },
      payload: Buffer.from(snappyCompress(encodeWriteRequest(slab.filter((s) => s.samples.length > 0)))),
    });
    assert.equal(response.statusCode, 204, response.body);
  }

  const ours = askOurs(running, key);
  const theirs = askPrometheus(prom.url);
  const instants = [
    startMs + 20 * MINUTE_MS + 7_500,
    data.stopMs + 2 * MINUTE_MS,
    data.stopMs + 6 * MINUTE_MS,
    data.endMs,
    data.endMs + 4.5 * MINUTE_MS,
  ];
  const range = { start: startMs + 5 * MINUTE_MS + 7_000, end: data.endMs + 6 * MINUTE_MS, step: 53 };
  const disagreements: string[] = [];
  const empty: string[] = [];
  for (const query of DIFFERENTIAL_QUERIES) {
    const q = encodeURIComponent(query);
    const paths = [
      ...instants.map((at) => `/api/v1/query?query=${q}&time=${at / 1000}`),
      `/api/v1/query_range?query=${q}&start=${range.start / 1000}&end=${range.end / 1000}&step=${range.step}`,
    ];
    let seriesSeen = 0;
    for (const path of paths) {
      const [a, b] = await Promise.all([ours(path), theirs(path)]);
      const [na, nb] = [normalise(a), normalise(b)];
      const difference = differenceOf(na, nb);
      if (difference !== undefined)
        disagreements.push(
          `${query}  [${path.split("?")[0]} ${path.split("&").slice(1).join(" ")}]\n  ${difference}`,
        );
      seriesSeen += nb.series.length;
    }
    if (seriesSeen === 0) empty.push(query);
  }
  // The metadata endpoints (what Grafana's query editor asks) and the error shape, same data.
  const [from, to, afterStop] = [startMs / 1000, data.endMs / 1000, (data.stopMs + 6 * MINUTE_MS) / 1000];
  const metadata = [
    `/api/v1/series?match[]=up&match[]=${encodeURIComponent('{job="batch"}')}&start=${from}&end=${to}`,
    `/api/v1/series?match[]=${encodeURIComponent('{job="batch"}')}&start=${afterStop}&end=${to}`,
    "/api/v1/labels",
    "/api/v1/labels?match[]=build_info",
    "/api/v1/label/job/values",
    `/api/v1/label/le/values?match[]=${encodeURIComponent('request_duration_seconds_bucket{job="api"}')}`,
  ];
  const sortedJson = (body: ApiResult) =>
    JSON.stringify({
      status: body.status,
      data: (body.data as unknown as unknown[]).map((x) => JSON.stringify(x)).sort(),
    });
  for (const path of metadata) {
    const [a, b] = await Promise.all([ours(path), theirs(path)]);
    if (sortedJson(a) !== sortedJson(b))
      disagreements.push(`${path}\n  ours ${sortedJson(a)}\n  Prometheus ${sortedJson(b)}`);
  }
  for (const path of [
    "/api/v1/query?query=sum(",
    "/api/v1/query?query=rate(up)",
    "/api/v1/query_range?query=up&start=10&end=5&step=1",
    "/api/v1/query_range?query=up&start=5&end=10&step=0",
  ]) {
    const [a, b] = await Promise.all([ours(path), theirs(path)]);
    if (a.status !== "error" || a.status !== b.status || a.errorType !== b.errorType)
      disagreements.push(`${path}\n  ours ${a.status} ${a.errorType}, Prometheus ${b.status} ${b.errorType}`);
  }
  assert.deepEqual(empty, [], "every query answers something somewhere (else it proves nothing)");
  assert.equal(
    disagreements.length,
    0,
    `${disagreements.length} disagreements:\n${disagreements.join("\n")}`,
  );
  assert.ok(DIFFERENTIAL_QUERIES.length >= 40);
});
