/**
 * The agent end to end (MT-02/03/04/16): the application is this test process, calling the
 * client library; the agent is its own process (`src/tools/metrics-agent.ts`, started as
 * `casebook metrics agent` would); the ingest is the real service (`main`, direct path,
 * PGlite). Windows and batches are shortened by config (200–500 ms instead of 10 s / 5 s)
 * so the scenarios fit in seconds; the mechanism is the same.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { after, before, test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { freePort } from "@casebook/lab/free-port";
import { spawnChild } from "@casebook/lab/spawn-child";
import { MetricsClient } from "../src/client/metrics-client.ts";
import { main, type RunningSystem } from "../src/main.ts";

const AGENT = new URL("../src/tools/metrics-agent.ts", import.meta.url);

let dataDir: string;
let ingestPort: number;
let ingest: RunningSystem | undefined;
let apiKey: string;

const ingestEnv = () => ({
  PORT: String(ingestPort),
  LOG_LEVEL: "silent",
  CASEBOOK_DATA: dataDir,
  METRICS_INGEST_PATH: "direct",
});

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-agent-"));
  ingestPort = await freePort();
  ingest = await main(ingestEnv());
  apiKey = ingest.bootstrap!.apiKey;
});
after(async () => {
  await ingest?.close();
  await rm(dataDir, { recursive: true, force: true });
});

interface AgentStatus {
  records: number;
  points: number;
  requests: number;
  sentSamples: number;
  sentBatches: number;
  rejectedSamples: number;
  memoryBytes: number;
  spoolBytes: number;
  spoolBatches: number;
  memoryBatches: number;
  droppedSamples: number;
  newSeries: Record<string, number>;
}

async function startAgentProcess(
  t: { after(fn: () => unknown): void },
  name: string,
  env: Record<string, string>,
) {
  const child = await spawnChild(AGENT, {
    env: {
      ...process.env,
      METRICS_AGENT_PORT: "0",
      METRICS_AGENT_INGEST_URL: `http://127.0.0.1:${ingestPort}`,
      METRICS_AGENT_API_KEY: apiKey,
      METRICS_AGENT_SPOOL_DIR: join(dataDir, `spool-${name}`),
      LOG_LEVEL: "info",
      ...env,
    },
    ready: (line) => line.includes("metrics agent listening"),
    test: t,
  });
  const url = (JSON.parse(child.readyLine) as { url: string }).url;
  const status = async () => (await (await fetch(`${url}/v1/agent/status`)).json()) as AgentStatus;
  return { child, url, status };
}

/**
 * Waits until `drained` holds, then once more after the last window surely closed: a window
 * still open holds points not yet counted, so one look could come too early.
 */
async function settled(
  status: () => Promise<AgentStatus>,
  drained: (s: AgentStatus) => boolean,
  windowMs: number,
  what: string,
): Promise<AgentStatus> {
  for (;;) {
    const first = await eventually(
      async () => {
        const s = await status();
        return drained(s) ? s : undefined;
      },
      { timeoutMs: 20_000, what },
    );
    await new Promise((resolve) => setTimeout(resolve, 3 * windowMs));
    const second = await status();
    if (drained(second) && second.points === first.points) return second;
  }
}

async function rawSamples(
  query: string,
): Promise<Array<{ metric: Record<string, string>; values: [number, string][] }>> {
  const res = await fetch(
    `http://127.0.0.1:${ingestPort}/api/v1/query?query=${encodeURIComponent(query)}&time=${Date.now() / 1000 + 60}`,
    { headers: { authorization: `Bearer ${apiKey}` } },
  );
  const body = (await res.json()) as {
    data: { result: Array<{ metric: Record<string, string>; values: [number, string][] }> };
  };
  return body.data.result;
}

test("MT-02 MT-03 MT-16 thousands of calls become one point per series per window, shipped in few compressed batches", async (t) => {
  const agent = await startAgentProcess(t, "batches", {
    METRICS_AGENT_WINDOW_MS: "500",
    METRICS_AGENT_BATCH_MS: "250",
  });
  const client = new MetricsClient({ agentUrl: agent.url, flushMs: 100 });
  const hits = client.counter("mt03_hits_total");
  const latency = client.histogram("mt03_latency_seconds", { buckets: [0.01, 0.1, 1] });
  const totals = new Map<string, number>();
  const started = Date.now();
  let calls = 0;
  while (Date.now() - started < 2_000) {
    for (let i = 0; i < 100; i++) {
      const route = `/r${calls % 10}`;
      hits.inc({ route });
      latency.observe({ route }, (calls % 7) / 50);
      totals.set(route, (totals.get(route) ?? 0) + 1);
      calls++;
    }
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  await client.close();
  const done = await settled(
    agent.status,
    (s) => s.records > 0 && s.memoryBatches === 0 && s.spoolBatches === 0 && s.sentSamples === s.points,
    500,
    "everything the agent aggregated was acknowledged",
  );
  // MT-02: every stored point is a window's; one per series per window, the counter cumulative.
  const stored = await rawSamples("mt03_hits_total[1h]");
  assert.equal(stored.length, 10);
  for (const series of stored) {
    const times = series.values.map(([t]) => t * 1_000);
    assert.ok(
      times.every((t) => t % 500 === 0),
      "stamped at window ends",
    );
    assert.equal(new Set(times).size, times.length, "one point per window");
    assert.equal(
      Number(series.values.at(-1)![1]),
      totals.get(series.metric.route!),
      "the last point is the total",
    );
  }
  const storedSamples = stored.reduce((n, s) => n + s.values.length, 0);
  assert.ok(calls >= 20 * storedSamples, `${calls} calls → ${storedSamples} points: aggregated`);
  // MT-03: requests to the ingest ≈ wall time ÷ batch interval, not calls; bodies snappy-compressed.
  assert.ok(done.requests <= Math.ceil((Date.now() - started) / 250) + 2, `${done.requests} requests`);
  assert.ok(
    calls / done.requests >= 100,
    `${calls} calls in ${done.requests} requests: two orders of magnitude fewer`,
  );
  t.diagnostic(
    `${calls} calls → ${done.records} records to the agent → ${done.points} points → ${done.requests} requests to the ingest`,
  );
  // MT-16: the agent counted each new series once (10 routes; the histogram's base series).
  assert.equal(done.newSeries.mt03_hits_total, 10);
  assert.equal(done.newSeries.mt03_latency_seconds, 10);
  const metricsText = await (await fetch(`${agent.url}/metrics`)).text();
  assert.match(metricsText, /metrics_agent_new_series\{metric="mt03_hits_total"\} 10/);
  const buckets = await rawSamples('mt03_latency_seconds_bucket{route="/r0",le="+Inf"}[1h]');
  assert.equal(Number(buckets[0]!.values.at(-1)![1]), totals.get("/r0"));
});

test("MT-04 the ingest down: app calls stay fast, the spool fills to its bound, the oldest are dropped and counted; back up, every kept sample arrives exactly once", async (t) => {
  const SPOOL_BYTES = 4_096;
  const agent = await startAgentProcess(t, "outage", {
    METRICS_AGENT_WINDOW_MS: "200",
    METRICS_AGENT_BATCH_MS: "100",
    METRICS_AGENT_RETRY_CAP_MS: "200",
    METRICS_AGENT_MEMORY_BYTES: "1024",
    METRICS_AGENT_SPOOL_BYTES: String(SPOOL_BYTES),
  });
  await ingest!.close(); // the ingest is unreachable: connection refused on its port
  ingest = undefined;
  const client = new MetricsClient({ agentUrl: agent.url, flushMs: 50 });
  const ops = client.counter("mt04_ops_total");
  const totals = new Map<string, number>();
  const callMs: number[] = [];
  let maxSpool = 0;
  let status = await agent.status();
  const started = Date.now();
  while (Date.now() - started < 30_000) {
    for (let i = 0; i < 50; i++) {
      const shard = `s${i % 20}`;
      const t0 = performance.now();
      const returned = ops.inc({ shard });
      callMs.push(performance.now() - t0);
      assert.equal(returned, undefined, "a call returns nothing to wait on");
      totals.set(shard, (totals.get(shard) ?? 0) + 1);
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
    if (callMs.length % 1_000 === 0) {
      status = await agent.status();
      maxSpool = Math.max(maxSpool, status.spoolBytes);
      if (status.droppedSamples >= 200 && Date.now() - started > 3_000) break;
    }
  }
  await client.close();
  status = await agent.status();
  maxSpool = Math.max(maxSpool, status.spoolBytes);
  assert.ok(status.droppedSamples > 0, "the oldest were dropped");
  assert.equal(status.sentSamples, 0, "nothing reached the ingest");
  assert.ok(maxSpool <= SPOOL_BYTES, `the spool stayed within its bound (${maxSpool} B)`);
  assert.ok(maxSpool >= SPOOL_BYTES / 2, `the spool filled up to near its bound (${maxSpool} B)`);
  const sorted = [...callMs].sort((a, b) => a - b);
  const p99 = sorted[Math.floor(sorted.length * 0.99)]!;
  const spent = callMs.reduce((a, b) => a + b, 0);
  assert.ok(p99 < 1, `p99 of a call ${p99.toFixed(3)} ms with the ingest down`);
  assert.ok(spent < (Date.now() - started) * 0.05, `${spent.toFixed(0)} ms in ${callMs.length} calls`);
  t.diagnostic(
    `ingest down: ${callMs.length} calls, p99 ${p99.toFixed(4)} ms, max ${sorted.at(-1)!.toFixed(3)} ms; spool max ${maxSpool} B of ${SPOOL_BYTES}; dropped ${status.droppedSamples} samples`,
  );

  ingest = await main(ingestEnv()); // back, same port, same data
  const done = await settled(
    agent.status,
    (s) => s.memoryBatches === 0 && s.spoolBatches === 0 && s.sentSamples + s.droppedSamples === s.points,
    200,
    "the spool drained: every point sent or dropped",
  );
  assert.equal(done.rejectedSamples, 0, "the ingest refused nothing (order kept across the outage)");
  const stored = await rawSamples('{__name__=~"mt04_ops_total|metrics_agent_dropped_samples_total"}[1h]');
  const storedSamples = stored.reduce((n, s) => n + s.values.length, 0);
  assert.equal(storedSamples, done.sentSamples, "each acknowledged sample stored exactly once");
  assert.equal(
    storedSamples + done.droppedSamples,
    done.points,
    "every point is stored or counted as dropped",
  );
  for (const series of stored) {
    const times = series.values.map(([t]) => t);
    assert.ok(
      times.every((t, i) => i === 0 || t > times[i - 1]!),
      "no sample twice",
    );
    if (series.metric.__name__ === "mt04_ops_total")
      assert.equal(
        Number(series.values.at(-1)![1]),
        totals.get(series.metric.shard!),
        "the newest survived: the total",
      );
  }
  const dropped = stored.find((s) => s.metric.__name__ === "metrics_agent_dropped_samples_total");
  assert.equal(dropped?.metric.reason, "spool_full");
  assert.equal(Number(dropped!.values.at(-1)![1]), done.droppedSamples, "the loss is visible at the ingest");
});
