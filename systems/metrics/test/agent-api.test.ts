/**
 * The agent's own edge, in process: a bad record is a 400 naming its field and nothing of the
 * flush is applied; MT-15's guard seen through the agent's API (a user id stripped, a
 * metric's series capped into the overflow series, both counted); and the client library
 * with the agent itself away — calls return at once, the flushes fail and are merged back,
 * and when the agent comes up on that port every increment arrives.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { freePort } from "@casebook/lab/free-port";
import { MetricsClient } from "../src/client/metrics-client.ts";
import { labelsToRecord } from "../src/domain/labels.ts";
import { type RunningAgent, startAgent } from "../src/tools/metrics-agent.ts";

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), "casebook-metrics-agent-api-"));
});
after(() => rm(dir, { recursive: true, force: true }));

async function agentOn(port: number, env: Record<string, string> = {}): Promise<RunningAgent> {
  return startAgent({
    METRICS_AGENT_PORT: String(port),
    METRICS_AGENT_API_KEY: "mtk_not_used_here",
    METRICS_AGENT_INGEST_URL: "http://127.0.0.1:9", // nothing listens: batches stay spooled
    METRICS_AGENT_SPOOL_DIR: join(dir, `spool-${port}`),
    METRICS_AGENT_BATCH_MS: "60000",
    LOG_LEVEL: "silent",
    ...env,
  });
}

test("a bad record is a 400 naming its field; nothing of that flush is applied", async (t) => {
  const agent = await agentOn(0);
  t.after(() => agent.close());
  const send = (records: unknown[]) =>
    agent.service.app.inject({ method: "POST", url: "/v1/records", payload: { records } });
  const good = { kind: "counter", name: "ok_total", labels: {}, value: 1 };
  const cases: Array<[unknown, string]> = [
    [{ kind: "counter", name: "1bad", labels: {}, value: 1 }, "records[1].name"],
    [{ kind: "counter", name: "c_total", labels: { "bad-label": "x" }, value: 1 }, "records[1].labels"],
    [{ kind: "counter", name: "c_total", labels: {}, value: -1 }, "records[1].value"],
    [
      { kind: "histogram", name: "h", labels: {}, bounds: [1, 0.5], counts: [0, 0, 0], sum: 0 },
      "records[1].bounds",
    ],
    [{ kind: "histogram", name: "h", labels: {}, bounds: [1], counts: [0], sum: 0 }, "records[1].counts"],
  ];
  for (const [bad, field] of cases) {
    const res = await send([good, bad]);
    assert.equal(res.statusCode, 400, JSON.stringify(bad));
    assert.equal(res.json().field, field);
  }
  const shape = await send([{ kind: "summary", name: "x", labels: {}, value: 1 }]);
  assert.equal(shape.statusCode, 400);
  assert.equal(agent.aggregator.counts().records, 0, "no record of a refused flush was applied");
});

test("MT-15 through the agent: a user_id label is stripped, a metric past its ceiling folds into its overflow series, both counted", async (t) => {
  const agent = await agentOn(0, {
    METRICS_AGENT_MAX_SERIES_PER_METRIC: "5",
    METRICS_AGENT_WINDOW_MS: "100",
  });
  t.after(() => agent.close());
  const records = Array.from({ length: 50 }, (_, i) => ({
    kind: "counter",
    name: "signups_total",
    labels: { user_id: `u${i}`, campaign: `c${i}` },
    value: 1,
  }));
  const res = await agent.service.app.inject({ method: "POST", url: "/v1/records", payload: { records } });
  assert.equal(res.statusCode, 202);
  const status = (await agent.service.app.inject({ url: "/v1/agent/status" })).json();
  assert.deepEqual(status.strippedLabels, { user_id: 50 });
  assert.deepEqual(status.newSeries, { signups_total: 5 });
  assert.deepEqual(status.overflowRecords, { signups_total: 45 });
  assert.equal(status.series, 6, "5 series and the overflow series, not 50");
  assert.deepEqual(status.labelValues, { signups_total: { campaign: 5, agent_overflow: 1 } });
  await new Promise((resolve) => setTimeout(resolve, 150));
  const points = agent.aggregator.closeDue(Date.now());
  assert.ok(points.every((p) => labelsToRecord(p.labels).user_id === undefined));
  assert.equal(
    points.reduce((n, p) => n + p.samples[0]!.v, 0),
    50,
    "the metric's total is kept",
  );
  const text = (await agent.service.app.inject({ url: "/metrics" })).body;
  assert.match(text, /metrics_agent_overflow_records\{metric="signups_total"\} 45/);
  assert.match(text, /metrics_agent_label_values\{metric="signups_total",label="campaign"\} 5/);
});

test("MT-04 the agent itself away: the application's calls return at once, flushes are merged back, nothing lost when it comes up", async () => {
  const port = await freePort();
  const client = new MetricsClient({ agentUrl: `http://127.0.0.1:${port}`, flushMs: 20 });
  const hits = client.counter("away_hits_total");
  const started = performance.now();
  for (let i = 0; i < 5_000; i++) hits.inc({ shard: String(i % 5) });
  assert.ok(performance.now() - started < 500, "5,000 calls without waiting on anything");
  await eventually(() => client.stats().failedFlushes >= 3, {
    what: "flushes failing while the agent is away",
  });
  for (let i = 0; i < 5_000; i++) hits.inc({ shard: String(i % 5) });
  assert.equal(client.stats().pendingSeries, 5, "failed flushes merged back: still one entry per series");
  const agent = await agentOn(port, { METRICS_AGENT_WINDOW_MS: "100" });
  try {
    await eventually(() => agent.aggregator.counts().records > 0 && client.stats().pendingSeries === 0, {
      what: "the client's flush taken by the agent",
    });
    await client.close();
    await new Promise((resolve) => setTimeout(resolve, 150));
    const points = agent.aggregator.closeDue(Date.now());
    const total = new Map<string, number>();
    for (const p of points) total.set(labelsToRecord(p.labels).shard!, p.samples.at(-1)!.v);
    assert.deepEqual([...total.values()], [2_000, 2_000, 2_000, 2_000, 2_000], "every increment arrived");
  } finally {
    await agent.close();
  }
});
