/**
 * A real Prometheus (Debian's 2.42, started by lab's spawner on a free port) scrapes this
 * service's own /metrics every half second and remote-writes everything into its ingest (MT-05,
 * end to end, snappy and protobuf from Prometheus's own client); then the same PromQL asked of
 * both at the same past time — instant and range — must agree (differential, within 1e-9
 * relative). Skipped when the `prometheus` package is absent (CASEBOOK_REQUIRE_ENGINES=1: fail).
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { spawnOrSkip } from "@casebook/lab/server-engine";
import { spawnPrometheus } from "@casebook/lab/spawn-prometheus";
import { main } from "../src/main.ts";
import { agree, askOurs, askPrometheus, differenceOf, normalise } from "./prometheus-answers.ts";

const INSTANT_QUERIES = [
  "up",
  'count by (job) ({job="metrics"})',
  "sum(rate(process_cpu_seconds_total[15s]))",
  "max_over_time(process_resident_memory_bytes[10s])",
  "count_over_time(up[15s])",
  'histogram_quantile(0.5, sum by (le) (rate(http_request_duration_seconds_bucket{route="/metrics"}[15s])))',
  "sum_over_time(scrape_duration_seconds[10s]) / count_over_time(scrape_duration_seconds[10s])",
  "topk(3, process_resident_memory_bytes)",
  "scrape_samples_scraped > bool 10",
];

test("MT-05 a real Prometheus remote-writes into the ingest, and the same PromQL answers the same on both", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-prom-"));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const running = await main({ PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent", CASEBOOK_DATA: dataDir });
  t.after(() => running.close());
  const key = running.bootstrap!.apiKey;
  const target = new URL(running.url).host;
  const config = [
    "global:",
    "  scrape_interval: 500ms",
    "scrape_configs:",
    "  - job_name: metrics",
    `    static_configs: [{ targets: ["${target}"] }]`,
    "remote_write:",
    `  - url: ${running.url}/api/v1/write`,
    `    authorization: { credentials: ${key} }`,
    "    queue_config: { batch_send_deadline: 500ms, min_backoff: 100ms, max_backoff: 1s }",
    "",
  ].join("\n");
  const prom = await spawnOrSkip(t, () => spawnPrometheus({ config }));
  if (!prom) return;
  t.after(() => prom.stop());

  const ours = askOurs(running, key);
  const theirs = askPrometheus(prom.url);
  // Enough history for the windowed queries, asked 2 s back: 15 s for the instant ones, 16 s for
  // the range (8 s before its start, its 8 s window): 40 scrapes of `up` received here, 20 s at
  // one scrape per 500 ms. Every window still holds 10 to 30 samples of each series, so the
  // functions (rate, *_over_time, histogram_quantile) meet the same extrapolation and boundary
  // cases as with 1 s scrapes; the wait is what shrank, not what is compared.
  await eventually(
    async () => {
      const res = await ours(
        `/api/v1/query?query=${encodeURIComponent('count_over_time(up{job="metrics"}[1m])')}`,
      );
      return (normalise(res).series[0]?.[1][1] ?? 0) >= 40;
    },
    { what: "40 scrapes remote-written", timeoutMs: 90_000, intervalMs: 250 },
  );
  const latest = await ours(`/api/v1/query?query=${encodeURIComponent('timestamp(up{job="metrics"})')}`);
  const at = normalise(latest).series[0]![1][1]! - 2;
  for (const query of INSTANT_QUERIES) {
    const path = `/api/v1/query?query=${encodeURIComponent(query)}&time=${at}`;
    // Remote-write shards deliver series in any order: poll until every sample before `at` is here.
    const answer = await eventually(
      async () => {
        const [a, b] = [normalise(await ours(path)), normalise(await theirs(path))];
        return a.series.length > 0 && agree(a, b) ? a : undefined;
      },
      { what: `the same answer to ${query}`, timeoutMs: 20_000, intervalMs: 250 },
    ).catch(async () => {
      const [a, b] = [normalise(await ours(path)), normalise(await theirs(path))];
      assert.fail(`${query}: ${differenceOf(a, b) ?? "no series"}`);
    });
    assert.ok(answer.series.length > 0, query);
  }
  const range = `/api/v1/query_range?query=${encodeURIComponent("rate(process_cpu_seconds_total[8s])")}&start=${at - 8}&end=${at}&step=2`;
  const [a, b] = [normalise(await ours(range)), normalise(await theirs(range))];
  assert.ok(a.series.length > 0, "range: no series");
  assert.equal(differenceOf(a, b), undefined, "range");
});
