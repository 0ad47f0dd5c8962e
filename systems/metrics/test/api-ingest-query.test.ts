/**
 * The ingest and the query API end to end on one running service (PGlite, a temporary TSDB
 * directory): remote-write batches in, Prometheus's API out in Prometheus's shapes (MT-05,
 * MT-17); bad input refused whole with a 400 in Prometheus's error shape naming the field,
 * nothing stored; the staleness marker honoured by queries; a cardinality ceiling refusing
 * new series while the rest of the batch is stored (MT-16) and shown in /status/tsdb (MT-13);
 * tenants isolated; series counted per partition (MT-06).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { type Labels, labelsFromRecord } from "../src/domain/labels.ts";
import { encodeWriteRequest } from "../src/domain/remote-write.ts";
import { snappyCompress } from "../src/domain/snappy.ts";
import { STALE_NAN } from "../src/domain/staleness.ts";
import { main, type RunningSystem } from "../src/main.ts";

const T0 = Date.UTC(2026, 0, 1);
let running: RunningSystem;
let dataDir: string;
let key: string;
let limitedKey: string;
let otherKey: string;

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-api-"));
  running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    METRICS_STANDARD_LABELS: "region=eu",
    // The direct path: these tests read right after the answer, and the TSDB's refusals
    // (out of order, cardinality) come back in it; the stream path is test/stream-*.test.ts.
    METRICS_INGEST_PATH: "direct",
  });
  key = running.bootstrap!.apiKey;
  limitedKey = (await running.tenants.createIfAbsent({
    id: "limited",
    name: "limited",
    maxSeries: 50,
    maxSeriesPerMetric: 3,
  }))!.apiKey.key;
  otherKey = (await running.tenants.createIfAbsent({ id: "other", name: "other" }))!.apiKey.key;
});
after(async () => {
  await running?.close();
  await rm(dataDir, { recursive: true, force: true });
});

type Series = { labels: Labels; samples: Array<{ t: number; v: number }> };

async function remoteWrite(apiKey: string, series: Series[], raw?: Uint8Array) {
  const res = await running.service.app.inject({
    method: "POST",
    url: "/api/v1/write",
    headers: {
      authorization: `Bearer ${apiKey}`,
      "content-type": "application/x-protobuf",
      "content-encoding": "snappy",
      "x-prometheus-remote-write-version": "0.1.0",
    },
    payload: Buffer.from(raw ?? snappyCompress(encodeWriteRequest(series))),
  });
  return { status: res.statusCode, body: res.body ? JSON.parse(res.body) : undefined };
}

async function api(apiKey: string, path: string) {
  const res = await running.service.app.inject({ url: path, headers: { authorization: `Bearer ${apiKey}` } });
  return { status: res.statusCode, body: JSON.parse(res.body) };
}

const q = (expr: string, timeMs: number) =>
  `/api/v1/query?query=${encodeURIComponent(expr)}&time=${timeMs / 1000}`;

function counter(job: string, instance: string, from: number, count: number, step = 15_000): Series {
  return {
    labels: labelsFromRecord({ __name__: "http_requests_total", job, instance }),
    samples: Array.from({ length: count }, (_, i) => ({ t: from + i * step, v: i * 30 })),
  };
}

test("MT-05 remote-write batches are stored with the standard labels and answered in Prometheus's shapes", async () => {
  const write = await remoteWrite(key, [
    counter("api", "a", T0, 41),
    counter("api", "b", T0, 41),
    counter("web", "c", T0, 41),
  ]);
  assert.equal(write.status, 204, JSON.stringify(write.body));
  const end = T0 + 600_000;
  const instant = await api(key, q("sum by (job) (rate(http_requests_total[5m]))", end));
  assert.equal(instant.status, 200);
  assert.equal(instant.body.status, "success");
  assert.equal(instant.body.data.resultType, "vector");
  const byJob = Object.fromEntries(
    instant.body.data.result.map((r: { metric: { job: string }; value: [number, string] }) => [
      r.metric.job,
      r.value,
    ]),
  );
  assert.deepEqual(byJob.api, [end / 1000, "4"]);
  assert.deepEqual(byJob.web, [end / 1000, "2"]);
  const scalar = await api(key, q("scalar(count(http_requests_total))", end));
  assert.deepEqual(scalar.body.data, { resultType: "scalar", result: [end / 1000, "3"] });
  const range = await api(
    key,
    `/api/v1/query_range?query=${encodeURIComponent('http_requests_total{instance="a"}')}&start=${T0 / 1000}&end=${(T0 + 60_000) / 1000}&step=30s`,
  );
  assert.equal(range.body.data.resultType, "matrix");
  assert.deepEqual(range.body.data.result, [
    {
      metric: { __name__: "http_requests_total", instance: "a", job: "api", region: "eu" },
      values: [
        [T0 / 1000, "0"],
        [T0 / 1000 + 30, "60"],
        [T0 / 1000 + 60, "120"],
      ],
    },
  ]);
  const series = await api(key, "/api/v1/series?match[]=http_requests_total%7Bjob%3D%22web%22%7D");
  assert.deepEqual(series.body, {
    status: "success",
    data: [{ __name__: "http_requests_total", instance: "c", job: "web", region: "eu" }],
  });
  assert.deepEqual((await api(key, "/api/v1/labels")).body.data, ["__name__", "instance", "job", "region"]);
  // Grafana's way: POST with a urlencoded form, after asking for the build info.
  const form = await running.service.app.inject({
    method: "POST",
    url: "/api/v1/query",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/x-www-form-urlencoded" },
    payload: `query=${encodeURIComponent("count(http_requests_total)")}&time=${end / 1000}`,
  });
  assert.deepEqual(JSON.parse(form.body).data.result, [{ metric: {}, value: [end / 1000, "3"] }]);
  assert.equal((await api(key, "/api/v1/status/buildinfo")).body.data.version, "2.42.0");
  assert.deepEqual((await api(key, "/api/v1/label/job/values")).body.data, ["api", "web"]);
});

test("MT-05 bad input is a 400 in Prometheus's error shape naming the problem, and nothing of the batch is stored", async () => {
  const before = (await api(key, "/api/v1/status/tsdb")).body.data.headStats;
  const fresh = { labels: labelsFromRecord({ __name__: "fresh_metric" }), samples: [{ t: T0, v: 1 }] };
  const cases: Array<[Series[] | Uint8Array, string, string]> = [
    [Uint8Array.of(1, 2, 3, 4), "METRICS_WRITE_MALFORMED", ""],
    [snappyCompress(Uint8Array.of(0x0a, 0x05, 0x0a)), "METRICS_WRITE_MALFORMED", ""],
    [
      [fresh, { labels: labelsFromRecord({ __name__: "bad-name" }), samples: [{ t: T0, v: 1 }] }],
      "METRICS_WRITE_INVALID",
      "timeseries[1].labels",
    ],
    [[fresh, counter("api", "a", T0, 1)], "METRICS_WRITE_OUT_OF_ORDER", "timeseries[1]"],
    [
      [fresh, { labels: counter("api", "a", T0, 1).labels, samples: [{ t: T0 + 600_000, v: 999 }] }],
      "METRICS_WRITE_OUT_OF_ORDER",
      "timeseries[1]",
    ],
  ];
  for (const [input, code, field] of cases) {
    const res =
      input instanceof Uint8Array ? await remoteWrite(key, [], input) : await remoteWrite(key, input);
    assert.equal(res.status, 400, code);
    assert.equal(res.body.status, "error");
    assert.equal(res.body.errorType, "bad_data");
    assert.equal(res.body.code, code);
    if (field) assert.equal(res.body.field, field);
  }
  const parseError = await api(key, q("sum(rate(x[5m])", T0));
  assert.equal(parseError.status, 400);
  assert.equal(parseError.body.errorType, "bad_data");
  assert.match(parseError.body.error, /parse error/);
  assert.deepEqual((await api(key, "/api/v1/status/tsdb")).body.data.headStats, before);
  assert.deepEqual((await api(key, q("fresh_metric", T0))).body.data.result, []);
});

test("MT-05 a staleness marker written by remote-write ends the series for instant queries and rate", async () => {
  const labels = labelsFromRecord({ __name__: "target_up", job: "gone" });
  const samples = [
    { t: T0, v: 1 },
    { t: T0 + 15_000, v: 1 },
    { t: T0 + 30_000, v: STALE_NAN },
  ];
  assert.equal((await remoteWrite(key, [{ labels, samples }])).status, 204);
  assert.equal((await api(key, q("target_up", T0 + 20_000))).body.data.result.length, 1);
  assert.deepEqual(
    (await api(key, q("target_up", T0 + 45_000))).body.data.result,
    [],
    "gone at once, not 5 minutes later",
  );
  assert.deepEqual(
    (await api(key, q("count_over_time(target_up[1m])", T0 + 45_000))).body.data.result[0].value[1],
    "2",
  );
});

test("MT-16 the per-metric ceiling refuses new series (400 naming the count) while the rest of the batch is stored", async () => {
  const users = Array.from({ length: 5 }, (_, u) => ({
    labels: labelsFromRecord({ __name__: "api_calls_total", user_id: `u${u}` }),
    samples: [{ t: T0, v: 1 }],
  }));
  const healthy = {
    labels: labelsFromRecord({ __name__: "cpu_seconds_total", host: "h1" }),
    samples: [{ t: T0, v: 7 }],
  };
  const res = await remoteWrite(limitedKey, [...users, healthy]);
  assert.equal(res.status, 400);
  assert.equal(res.body.code, "METRICS_SERIES_LIMIT");
  assert.equal(res.body.refusedSeries, 2);
  assert.equal(res.body.reason, "METRIC_SERIES_LIMIT");
  assert.equal((await api(limitedKey, q("count(api_calls_total)", T0))).body.data.result[0].value[1], "3");
  assert.equal(
    (await api(limitedKey, q("cpu_seconds_total", T0))).body.data.result[0].value[1],
    "7",
    "the healthy metric flows",
  );
  const again = await remoteWrite(limitedKey, [
    { labels: users[0]!.labels, samples: [{ t: T0 + 15_000, v: 2 }] },
  ]);
  assert.equal(again.status, 204, "existing series keep taking samples");
  const status = (await api(limitedKey, "/api/v1/status/tsdb")).body.data;
  assert.equal(status.headStats.numSeries, 4);
  assert.deepEqual(status.seriesCountByMetricName[0], { name: "api_calls_total", value: 3 });
  assert.deepEqual(
    status.labelValueCountByLabelName.find((e: { name: string }) => e.name === "user_id"),
    { name: "user_id", value: 3 },
  );
});

test("MT-13 each tenant sees only its own series; unknown keys are refused", async () => {
  assert.deepEqual((await api(otherKey, q("http_requests_total", T0 + 60_000))).body.data.result, []);
  assert.deepEqual((await api(otherKey, "/api/v1/labels")).body.data, []);
  const stranger = await api("mtk_0000000000000000_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", q("up", T0));
  assert.equal(stranger.status, 401);
  assert.equal(stranger.body.status, "error");
});

test("MT-06 every stored sample is counted against its series' partition", async () => {
  const metrics = (await running.service.app.inject({ url: "/metrics" })).body;
  const partitions = metrics
    .split("\n")
    .filter((line) => line.startsWith("metrics_partition_samples_total{"));
  assert.ok(partitions.length > 1, "series spread over several partitions");
  const total = partitions.reduce((n, line) => n + Number(line.split(" ").at(-1)), 0);
  const ingested = metrics.split("\n").filter((line) => line.startsWith("metrics_ingested_samples_total{"));
  assert.equal(
    total,
    ingested.reduce((n, line) => n + Number(line.split(" ").at(-1)), 0),
  );
});
