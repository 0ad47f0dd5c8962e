/**
 * The scraper end to end (issue 22): metrics in process, scraping a real Casebook service —
 * the rate limiter, started as its own process through its real entry — and a target nobody
 * listens on. Its series arrive through the ingest (the stream, the hot writer) with job and
 * instance labels and the three scrape series, readable with the key METRICS_SCRAPE_API_KEY
 * registered; `/api/v1/targets` shows both in Prometheus's shape; when the rate limiter dies,
 * `up` goes to 0 and its series end at once (staleness markers), not five minutes later.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { apiKeyScheme } from "@casebook/kit/api-key";
import { eventually } from "@casebook/lab/eventually";
import { freePort } from "@casebook/lab/free-port";
import { type ServerProcess, startServerProcess } from "@casebook/lab/server-process";
import { main, type RunningSystem } from "../src/main.ts";

const key = apiKeyScheme("mtk").issue(randomBytes).key;
/** The rate limiter's start on a loaded machine (TypeScript stripping, its own metrics). */
const READY_TIMEOUT_MS = 60_000;
const WAIT_MS = 20_000;

let dataDir: string;
let limiter: ServerProcess;
let running: RunningSystem;
let deadPort: number;

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-scraper-"));
  limiter = await startServerProcess({
    name: "rate-limiter",
    entry: new URL("../../rate-limiter/src/main.ts", import.meta.url),
    env: { REDIS_URL: "", DATABASE_URL: "", CASEBOOK_DATA: join(dataDir, "rate-limiter") },
    readyTimeoutMs: READY_TIMEOUT_MS,
  });
  deadPort = await freePort();
  running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    METRICS_SCRAPE_TARGETS: `rate-limiter=${limiter.url},nobody=http://127.0.0.1:${deadPort}`,
    // A scrape's timeout is its interval: a second, so a loaded machine's stalls do not fail scrapes.
    METRICS_SCRAPE_INTERVAL_MS: "1000",
    METRICS_SCRAPE_API_KEY: key,
  });
});
after(async () => {
  await running?.close();
  await limiter?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

interface VectorAnswer {
  status: string;
  data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> };
}

async function query(promql: string, timeS?: number, bearer = key): Promise<VectorAnswer["data"]["result"]> {
  const params = new URLSearchParams({
    query: promql,
    ...(timeS === undefined ? {} : { time: String(timeS) }),
  });
  const res = await fetch(`${running.url}/api/v1/query?${params}`, {
    headers: { authorization: `Bearer ${bearer}` },
  });
  const body = (await res.json()) as VectorAnswer;
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.data.result;
}

const sampleOf = async (promql: string) => (await query(promql))[0]?.value[1];
const OWN_SERIES = '{job="rate-limiter",__name__!~"up|scrape_.+"}';

test("a real Casebook service's /metrics arrives through the ingest with job, instance and the scrape series", async () => {
  await eventually(() => sampleOf('up{job="rate-limiter"}'), {
    what: "up 1 for the rate limiter",
    timeoutMs: WAIT_MS,
    accept: (v) => v === "1",
  });
  const own = await eventually(() => query(`count by (job, instance) (${OWN_SERIES})`), {
    what: "the rate limiter's own series",
    timeoutMs: WAIT_MS,
    accept: (r) => r.length === 1 && Number(r[0]!.value[1]) >= 10,
  });
  assert.deepEqual(own[0]!.metric, { job: "rate-limiter", instance: new URL(limiter.url).host });
  await eventually(() => sampleOf('scrape_samples_scraped{job="rate-limiter"}'), {
    what: "a scrape that counted its samples",
    timeoutMs: WAIT_MS,
    accept: (v) => Number(v) >= 10,
  });
  // A scrape's series are hashed to partitions and written by each partition's writer: one
  // of them visible does not make the others so yet — wait for this one too.
  await eventually(() => sampleOf('scrape_duration_seconds{job="rate-limiter"}'), {
    what: "a scrape that timed itself",
    timeoutMs: WAIT_MS,
    accept: (v) => Number(v) > 0,
  });
  // Between two scrapes a failed one (a loaded machine) marks every series stale: wait, don't sample once.
  await eventually(() => query('process_cpu_user_seconds_total{job="rate-limiter"}'), {
    what: "its process metric, by its own name",
    timeoutMs: WAIT_MS,
    accept: (r) => r.length === 1,
  });
  const demo = running.bootstrap!.apiKey;
  await eventually(() => query('up{job="rate-limiter"}', undefined, demo), {
    what: "the key printed at start to see them too",
    timeoutMs: WAIT_MS,
    accept: (r) => r.length === 1,
  });
  await eventually(() => sampleOf('up{job="nobody"}'), {
    what: "up 0 for a dead target",
    timeoutMs: WAIT_MS,
    accept: (v) => v === "0",
  });
});

test("/api/v1/targets shows each target's health in Prometheus's shape, to the scrape tenant only", async () => {
  const targets = async () => {
    const res = await fetch(`${running.url}/api/v1/targets`, { headers: { authorization: `Bearer ${key}` } });
    assert.equal(res.status, 200);
    return (await res.json()) as {
      data: { activeTargets: Array<Record<string, unknown>>; droppedTargets: unknown[] };
    };
  };
  const body = await eventually(targets, {
    what: "the rate limiter's last scrape to have worked",
    timeoutMs: WAIT_MS,
    accept: (b) => b.data.activeTargets[0]?.health === "up",
  });
  const [ours, nobody] = body.data.activeTargets;
  assert.deepEqual(ours!.labels, { instance: new URL(limiter.url).host, job: "rate-limiter" });
  assert.equal(ours!.scrapeUrl, `${limiter.url}/metrics`);
  assert.equal(ours!.health, "up");
  assert.equal(ours!.lastError, "");
  assert.equal(ours!.scrapeInterval, "1s");
  assert.equal(ours!.scrapeTimeout, "1s", "at most the interval, as Prometheus defaults it");
  assert.equal(nobody!.health, "down");
  assert.match(String(nobody!.lastError), /ECONNREFUSED|connect/);
  assert.deepEqual(body.data.droppedTargets, []);
  const bad = await fetch(`${running.url}/api/v1/targets?state=sleepy`, {
    headers: { authorization: `Bearer ${key}` },
  });
  assert.equal(bad.status, 400);
  assert.equal(((await bad.json()) as { errorType: string }).errorType, "bad_data");
  const stranger = await fetch(`${running.url}/api/v1/targets`);
  assert.equal(stranger.status, 401);
});

test("the target dies: up goes to 0 and its series end at once (staleness markers), not after the 5 min lookback", async () => {
  let aliveS = 0;
  await eventually(
    () => {
      aliveS = Date.now() / 1000;
      return query(`count(${OWN_SERIES})`, aliveS);
    },
    { what: "its series while it lives", timeoutMs: WAIT_MS, accept: (r) => r.length === 1 },
  );
  await limiter.stop();
  await eventually(() => sampleOf('up{job="rate-limiter"}'), {
    what: "up 0 once it died",
    timeoutMs: WAIT_MS,
    accept: (v) => v === "0",
  });
  await eventually(() => query(`count(${OWN_SERIES})`), {
    what: "its series to be stale",
    timeoutMs: WAIT_MS,
    accept: (r) => r.length === 0,
  });
  assert.equal(
    (await query(`count(${OWN_SERIES})`, aliveS)).length,
    1,
    "before its death they are still there",
  );
  const own = await (await fetch(`${running.url}/metrics`)).text();
  assert.match(own, /^metrics_scrape_stale_markers_total\{job="rate-limiter"\} [1-9]\d*$/m);
  assert.match(own, /^metrics_scrapes_total\{job="rate-limiter",result="failed"\} [1-9]\d*$/m);
});
