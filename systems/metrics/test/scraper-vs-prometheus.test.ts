/**
 * The scraper beside a real Prometheus (Debian's 2.42, lab's spawner): both scrape the same real
 * Casebook service — the rate limiter, its own process — every half second under the same job.
 * The series each one holds must be the same label sets (name, job, instance, the service's own
 * labels: the exposition parser and the target labels read the text as Prometheus does), `up`
 * 1 on both; then the rate limiter is stopped and both end its series at once (staleness
 * markers) while `up` goes to 0. Skipped when the `prometheus` package is absent
 * (CASEBOOK_REQUIRE_ENGINES=1: fail).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { apiKeyScheme } from "@casebook/kit/api-key";
import { eventually } from "@casebook/lab/eventually";
import { spawnOrSkip } from "@casebook/lab/server-engine";
import { startServerProcess } from "@casebook/lab/server-process";
import { spawnPrometheus } from "@casebook/lab/spawn-prometheus";
import { main } from "../src/main.ts";

interface VectorAnswer {
  data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
}

/** Prometheus writes two more series about each scrape than the three we write. */
const PROMETHEUS_ONLY = new Set(["scrape_series_added", "scrape_samples_post_metric_relabeling"]);
const WAIT_MS = 30_000;

test("the scraper and Prometheus, scraping the same service, hold the same series and end them together when it dies", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-scrape-vs-prom-"));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const limiter = await startServerProcess({
    name: "rate-limiter",
    entry: new URL("../../rate-limiter/src/main.ts", import.meta.url),
    env: { REDIS_URL: "", DATABASE_URL: "", CASEBOOK_DATA: join(dataDir, "rate-limiter") },
    readyTimeoutMs: 60_000,
  });
  t.after(() => limiter.stop());
  const target = new URL(limiter.url).host;
  const config = [
    "global:",
    "  scrape_interval: 500ms",
    "  scrape_timeout: 500ms",
    "scrape_configs:",
    "  - job_name: rate-limiter",
    `    static_configs: [{ targets: ["${target}"] }]`,
    "",
  ].join("\n");
  const prom = await spawnOrSkip(t, () => spawnPrometheus({ config }));
  if (!prom) return;
  t.after(() => prom.stop());
  const key = apiKeyScheme("mtk").issue(randomBytes).key;
  const running = await main({
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    METRICS_SCRAPE_TARGETS: `rate-limiter=${limiter.url}`,
    METRICS_SCRAPE_INTERVAL_MS: "500",
    METRICS_SCRAPE_API_KEY: key,
  });
  t.after(() => running.close());

  const ask = async (base: string, query: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(query)}`, { headers });
    return ((await res.json()) as VectorAnswer).data.result;
  };
  const ours = (query: string) => ask(running.url, query, { authorization: `Bearer ${key}` });
  const theirs = (query: string) => ask(prom.url, query);
  const labelSets = (result: VectorAnswer["data"]["result"]) =>
    result
      .filter((r) => !PROMETHEUS_ONLY.has(r.metric.__name__ ?? ""))
      .map((r) => JSON.stringify(Object.entries(r.metric).sort()))
      .sort();

  // A series can appear between the two scrapers' rounds (the first /metrics request creates its
  // own HTTP series): wait until both hold the same set, then show the difference if they never do.
  const selector = '{job="rate-limiter"}';
  await eventually(
    async () => {
      const [a, b] = [labelSets(await ours(selector)), labelSets(await theirs(selector))];
      return a.length >= 20 && JSON.stringify(a) === JSON.stringify(b);
    },
    { what: "the same series on both", timeoutMs: WAIT_MS, intervalMs: 250 },
  ).catch(async () => {
    assert.deepEqual(labelSets(await ours(selector)), labelSets(await theirs(selector)));
  });
  assert.deepEqual((await ours("up"))[0]?.metric, (await theirs("up"))[0]?.metric);

  await limiter.stop();
  const own = '{job="rate-limiter",__name__!~"up|scrape_.+"}';
  for (const [side, query] of [
    ["ours", ours],
    ["Prometheus", theirs],
  ] as const) {
    await eventually(async () => (await query(`up${selector}`))[0]?.value[1] === "0", {
      what: `up 0 on ${side}`,
      timeoutMs: WAIT_MS,
    });
    await eventually(async () => (await query(own)).length === 0, {
      what: `its series stale on ${side}`,
      timeoutMs: WAIT_MS,
    });
  }
});
