/**
 * The plots' two sources (issue 23). The arithmetic: each declared series as PromQL, the rate
 * range, the answer back into lines. Then for real: the rate limiter as its own process, metrics
 * as its own process scraping it with a key, the console in this process told both — its plots
 * come from metrics' query API (`source: "metrics"`) with the same lines the window draws, and
 * when metrics is killed they come from the window again.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { apiKeyScheme } from "@casebook/kit/api-key";
import { eventually } from "@casebook/lab/eventually";
import { startServerProcess } from "@casebook/lab/server-process";
import { main } from "../src/main.ts";
import { MetricsSource, parseIntervalMs } from "../src/metrics-source.ts";
import { matrixLines, rateRangeS, seriesQuery } from "../src/plot-query.ts";
import { maxLinesPerSeries } from "../src/scrape-window.ts";

test("each declared series as PromQL over the system's job, where-labels escaped", () => {
  assert.equal(
    seriesQuery("rate-limiter", { metric: "d_total", fn: "rate", by: "outcome" }, 20),
    'sum by (outcome) (rate(d_total{job="rate-limiter"}[20s]))',
  );
  assert.equal(
    seriesQuery("cache", { metric: "keys", fn: "value", where: { db: 'a"b\\' } }, 8),
    'sum (keys{job="cache",db="a\\"b\\\\"})',
  );
  assert.equal(
    seriesQuery("pay", { metric: "lat_seconds", fn: "quantile", q: 0.99, by: "route" }, 8),
    'histogram_quantile(0.99, sum by (le, route) (rate(lat_seconds_bucket{job="pay"}[8s])))',
  );
  assert.equal(rateRangeS(5_000, 2_000), 20, "four scrapes");
  assert.equal(rateRangeS(250, 2_000), 4, "never less than two steps");
  assert.deepEqual(["5s", "1m30s", "250ms", "", "5 s"].map(parseIntervalMs), [
    5_000,
    90_000,
    250,
    undefined,
    undefined,
  ]);
});

test("an answer becomes lines aligned with the steps: gaps for missing steps and NaN, scaled, folded past the bound", () => {
  const times = [10, 12, 14];
  const lines = matrixLines(
    { metric: "d", fn: "rate", by: "outcome", scale: 2 },
    [
      {
        metric: { outcome: "limited" },
        values: [
          [12, "1"],
          [14, "NaN"],
        ],
      },
      {
        metric: { outcome: "allowed" },
        values: [
          [10, "3"],
          [12, "+Inf"],
          [14, "4"],
        ],
      },
      { metric: {}, values: [[10, "1"]] },
    ],
    times,
  );
  assert.deepEqual(lines, [
    { label: "(no outcome)", values: [2, null, null] },
    { label: "allowed", values: [6, null, 8] },
    { label: "limited", values: [null, 2, null] },
  ]);
  const many = Array.from({ length: maxLinesPerSeries + 2 }, (_, i) => ({
    metric: { k: `v${String(i).padStart(2, "0")}` },
    values: [[10, "1"]] as Array<[number, string]>,
  }));
  const folded = matrixLines({ metric: "d", fn: "value", by: "k" }, many, [10]);
  assert.equal(folded.length, maxLinesPerSeries + 1);
  assert.deepEqual(folded.at(-1), { label: "other", values: [2] });
  assert.deepEqual(
    matrixLines({ metric: "d", fn: "value", label: "all" }, [{ metric: {}, values: [[10, "5"]] }], [10]),
    [{ label: "all", values: [5] }],
  );
});

test("metrics is a source only for the systems it scrapes, only while it answers; a failed query rejects", async () => {
  let targetsUp = true;
  const asked: string[] = [];
  const fakeFetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = new URL(String(input));
    assert.equal(new Headers(init?.headers).get("authorization"), "Bearer k");
    asked.push(url.pathname + url.search);
    if (url.pathname === "/api/v1/targets") {
      if (!targetsUp) throw new TypeError("fetch failed");
      const targets = [
        { labels: { job: "cache" }, scrapeInterval: "5s" },
        { labels: { job: "odd" }, scrapeInterval: "soon" },
      ];
      return Response.json({ status: "success", data: { activeTargets: targets } });
    }
    if (url.searchParams.get("query")?.includes("broken")) return new Response("{}", { status: 503 });
    return Response.json({
      status: "success",
      data: {
        resultType: "matrix",
        result: [
          {
            metric: {},
            values: [
              [96, "2"],
              [98, "3"],
            ],
          },
        ],
      },
    });
  }) as typeof fetch;
  const source = new MetricsSource({
    url: "http://metrics.test/",
    apiKey: "k",
    intervalMs: 2_000,
    spanMs: 4_000,
    log: { warn() {} },
    fetch: fakeFetch,
    now: () => 100_500,
  });
  assert.equal(source.serves("cache"), false, "nothing before the first answer");
  await source.refresh();
  assert.equal(source.serves("cache"), true);
  assert.equal(source.serves("odd"), false, "a target whose interval does not parse is left out");
  assert.equal(source.serves("payments"), false, "not scraped by metrics: the window");
  const plot = await source.plot("cache", {
    title: "Keys",
    unit: "keys",
    series: [{ metric: "keys", fn: "rate", label: "k" }],
  });
  assert.deepEqual(plot, {
    title: "Keys",
    unit: "keys",
    times: [96, 98, 100],
    lines: [{ label: "k", values: [2, 3, null] }],
  });
  assert.match(
    asked.at(-1)!,
    /query=sum\+%28rate%28keys%7Bjob%3D%22cache%22%7D%5B20s%5D%29%29&start=96&end=100&step=2$/,
  );
  await assert.rejects(
    source.plot("cache", { title: "B", unit: "b", series: [{ metric: "broken", fn: "value" }] }),
    /metrics answered 503/,
  );
  targetsUp = false;
  await source.refresh();
  assert.equal(source.serves("cache"), false, "metrics down: every plot from the window");
});

interface PlotsAnswer {
  source: string;
  plots: Array<{
    title: string;
    times: number[];
    lines: Array<{ label: string; values: (number | null)[] }>;
  }>;
}

test("the plots read metrics' query API while it scrapes the system, and the window once metrics is gone", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "casebook-console-metrics-"));
  t.after(() => rmSync(dataDir, { recursive: true, force: true }));
  const root = new URL("../../../", import.meta.url);
  const limiter = await startServerProcess({
    name: "rate-limiter",
    entry: new URL("systems/rate-limiter/src/main.ts", root),
    env: { REDIS_URL: "", DATABASE_URL: "", CASEBOOK_DATA: join(dataDir, "rate-limiter") },
    readyTimeoutMs: 60_000,
  });
  t.after(() => limiter.stop());
  const key = apiKeyScheme("mtk").issue(randomBytes).key;
  const metrics = await startServerProcess({
    name: "metrics",
    entry: new URL("systems/metrics/src/main.ts", root),
    env: {
      DATABASE_URL: "",
      NATS_URL: "",
      CASEBOOK_DATA: join(dataDir, "metrics"),
      METRICS_SCRAPE_TARGETS: `rate-limiter=${limiter.url}`,
      METRICS_SCRAPE_INTERVAL_MS: "500",
      METRICS_SCRAPE_API_KEY: key,
    },
    readyTimeoutMs: 60_000,
  });
  t.after(() => metrics.stop());
  const running = await main(
    {
      ...process.env,
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "silent",
      CASEBOOK_CONSOLE_SYSTEMS: JSON.stringify([{ name: "rate-limiter", url: limiter.url }]),
      CASEBOOK_CONSOLE_SCRAPE_INTERVAL: "500ms",
      CASEBOOK_CONSOLE_WINDOW_SCRAPES: "40",
      CASEBOOK_CONSOLE_METRICS_URL: metrics.url,
      CASEBOOK_CONSOLE_METRICS_API_KEY: key,
    },
    { skipWebBuild: true },
  );
  t.after(() => running.close());
  const load = setInterval(() => {
    void fetch(`${limiter.url}/v1/check`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ descriptors: { ip: "203.0.113.9", user: "42", route: "/v1/payments" } }),
      signal: AbortSignal.timeout(2_000),
    })
      .then((r) => r.body?.cancel())
      .catch(() => {});
  }, 100);
  t.after(() => clearInterval(load));

  const plots = async () =>
    (await (await fetch(`${running.url}/api/systems/rate-limiter/plots`)).json()) as PlotsAnswer;
  const decisions = (answer: PlotsAnswer) => answer.plots[0]!.lines.find((l) => l.label === "allowed");
  const moving = (answer: PlotsAnswer) =>
    (decisions(answer)?.values.filter((v) => v !== null && v > 0).length ?? 0) >= 2;
  const fromMetrics = await eventually(plots, {
    what: "decisions/s from metrics' query API",
    timeoutMs: 60_000,
    intervalMs: 250,
    accept: (a) => a.source === "metrics" && moving(a),
  });
  assert.equal(fromMetrics.plots[0]!.title, "Decisions per second, by outcome");
  const times = fromMetrics.plots[0]!.times;
  assert.equal(times[1]! - times[0]!, 0.5, "the console's step");
  assert.equal(times.at(-1)! - times[0]!, 20, "the window's span: 40 scrapes of 500 ms");

  await metrics.stop();
  const fromWindow = await eventually(plots, {
    what: "the plots from the window once metrics is gone",
    timeoutMs: 30_000,
    intervalMs: 250,
    accept: (a) => a.source === "window" && moving(a),
  });
  assert.deepEqual(
    fromWindow.plots.map((p) => p.title),
    fromMetrics.plots.map((p) => p.title),
  );
});
