/**
 * The scraper beside a real Prometheus (Debian's 2.42, lab's spawner): both scrape the same real
 * Casebook service — the rate limiter, its own process — every half second under the same job.
 * The series each one holds must be the same label sets (name, job, instance, the service's own
 * labels: the exposition parser and the target labels read the text as Prometheus does), `up`
 * 1 on both; then the rate limiter is stopped and both end its series at once (staleness
 * markers) while `up` goes to 0. Then the exposition format's corners, from a small server
 * standing in for any exporter: escapes, a trailing comma, `}` and `,` inside a value, NaN and
 * ±Inf, an exposed timestamp, a histogram and a summary — both read the same series with the
 * same values, and both mark stale the series the exporter stops exposing. Skipped when the
 * `prometheus` package is absent (CASEBOOK_REQUIRE_ENGINES=1: fail).
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
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

/** An exporter's page with every corner of the text format 0.0.4 that Prometheus accepts. */
function exposition(stampMs: number, withGone: boolean): string {
  return [
    "# HELP odd_total Things with odd labels: a \\\\ backslash and a \\n newline in the help.",
    "# TYPE odd_total counter",
    'odd_total{path="/a,b}{c",quote="say \\"hi\\"",slash="C:\\\\x",nl="two\\nlines",} 42',
    "# TYPE special gauge",
    'special{kind="nan"} NaN',
    'special{kind="pinf"} +Inf',
    'special{kind="ninf"} -Inf',
    'special{kind="exp"} 1.5e3',
    `stamped 7 ${stampMs}`,
    "# TYPE lat_seconds histogram",
    'lat_seconds_bucket{le="0.1"} 1',
    'lat_seconds_bucket{le="1"} 3',
    'lat_seconds_bucket{le="+Inf"} 4',
    "lat_seconds_sum 2.5",
    "lat_seconds_count 4",
    "# TYPE rpc_seconds summary",
    'rpc_seconds{quantile="0.5"} 0.2',
    'rpc_seconds{quantile="0.99"} 0.9',
    "rpc_seconds_sum 12",
    "rpc_seconds_count 40",
    ...(withGone ? ["gone_soon 1"] : []),
    "",
  ].join("\n");
}

test("the text format's corners read the same as Prometheus reads them, and a series the exporter drops goes stale on both", async (t) => {
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-format-vs-prom-"));
  t.after(() => rm(dataDir, { recursive: true, force: true }));
  const stampMs = Date.now();
  let withGone = true;
  const exporter = createServer((_req, res) => {
    res.writeHead(200, { "content-type": "text/plain; version=0.0.4" });
    res.end(exposition(stampMs, withGone));
  });
  await new Promise<void>((resolve) => exporter.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise<void>((resolve) => exporter.close(() => resolve())));
  const target = `127.0.0.1:${(exporter.address() as { port: number }).port}`;
  const config = [
    "global:",
    "  scrape_interval: 500ms",
    "  scrape_timeout: 500ms",
    "scrape_configs:",
    "  - job_name: exporter",
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
    METRICS_SCRAPE_TARGETS: `exporter=http://${target}`,
    METRICS_SCRAPE_INTERVAL_MS: "500",
    METRICS_SCRAPE_API_KEY: key,
  });
  t.after(() => running.close());
  const ask = async (base: string, query: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${base}/api/v1/query?query=${encodeURIComponent(query)}`, { headers });
    return ((await res.json()) as VectorAnswer).data.result;
  };
  const seen = async (base: string, headers: Record<string, string> = {}) =>
    (await ask(base, '{job="exporter"}', headers))
      .filter((r) => !PROMETHEUS_ONLY.has(r.metric.__name__ ?? ""))
      .map(
        (r) =>
          `${JSON.stringify(Object.entries(r.metric).sort())} ${r.metric.__name__?.startsWith("scrape_") ? "-" : r.value[1]}`,
      )
      .sort();
  const ours = () => seen(running.url, { authorization: `Bearer ${key}` });
  const theirs = () => seen(prom.url);
  await eventually(
    async () => {
      const [a, b] = [await ours(), await theirs()];
      return a.length === 19 && JSON.stringify(a) === JSON.stringify(b);
    },
    { what: "the same series and values on both", timeoutMs: WAIT_MS, intervalMs: 250 },
  ).catch(async () => assert.deepEqual(await ours(), await theirs()));
  // Asked again, not read once: a scrape that fails in between (500 ms interval and timeout on a
  // loaded host) marks every series stale until the next one succeeds.
  const odd = (
    await eventually(
      async () => (await ask(running.url, "odd_total", { authorization: `Bearer ${key}` }))[0],
      {
        what: "odd_total on ours",
        timeoutMs: WAIT_MS,
      },
    )
  ).metric;
  assert.deepEqual(
    { path: odd.path, quote: odd.quote, slash: odd.slash, nl: odd.nl },
    { path: "/a,b}{c", quote: 'say "hi"', slash: "C:\\x", nl: "two\nlines" },
  );

  withGone = false;
  for (const [side, base, headers] of [
    ["ours", running.url, { authorization: `Bearer ${key}` }],
    ["Prometheus", prom.url, {}],
  ] as const) {
    await eventually(async () => (await ask(base, "gone_soon", headers)).length === 0, {
      what: `gone_soon stale on ${side}`,
      timeoutMs: WAIT_MS,
    });
  }
  const left = await eventually(ours, {
    what: "the 18 series left after gone_soon",
    accept: (series) => series.length === 18,
    timeoutMs: WAIT_MS,
  }).catch(ours);
  assert.equal(left.length, 18);
});
