/**
 * MT-01 / MT-08 with the query path saturated: the metrics service as its own process (rules
 * with `for: 2s` at a 1 s interval, plain-HTTP notifications to a receiver here), an hour of
 * 400 counters written to it, then a separate process sending heavy range queries back to back
 * (`query-load-child.ts`, several at once, bounded by time) — dashboards stampeding the very
 * process that runs the evaluator. One alert's condition turns true before the stampede and
 * another's during it; each firing notification must arrive within `for:` + the evaluation
 * interval + MT-01's 1 min, measured from the stream's ack of the crossing sample. The
 * evaluator reads the stream into its own window, so the queries cost it CPU time on the shared
 * event loop, not a seat in a queue behind them: the two lags are printed side by side.
 */
import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { startMisbehavingServer } from "@casebook/lab/misbehaving-http-server";
import { startServerProcess } from "@casebook/lab/server-process";
import { spawnChild } from "@casebook/lab/spawn-child";
import type { AlertmanagerWebhook } from "../src/domain/alertmanager-payload.ts";

const ENTRY = new URL("../src/main.ts", import.meta.url);
const ADMIN_TOKEN = "saturated-admin-token-0123456789";
const FOR_MS = 2_000;
const INTERVAL_MS = 1_000;
/** MT-01: alerts may lag by up to 1 min — on top of the rule's own `for:` and interval. */
const MT01_BOUND_MS = 60_000;
const SERIES = 400;
const STEP_MS = 15_000;
const POINTS = 240; // one hour at 15 s
const CONCURRENCY = 6;
const RULES = `groups:
  - name: saturation
    interval: 1s
    rules:
      - alert: GaugeHigh
        expr: sat_gauge > 100
        for: 2s
`;

test("MT-01 MT-08 an alert fires on time with the query path saturated by a separate process's heavy range queries", async (t) => {
  const dir = await mkdtemp(join(tmpdir(), "casebook-metrics-saturated-"));
  const stops: Array<() => Promise<unknown>> = [];
  t.after(async () => {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });
  const receiver = await startMisbehavingServer();
  stops.push(() => receiver.close());
  const received = () =>
    receiver.received.map((r) => ({ atMs: r.atMs, body: JSON.parse(r.body) as AlertmanagerWebhook }));
  const rules = join(dir, "rules.yml");
  await writeFile(rules, RULES);
  const metrics = await startServerProcess({
    name: "metrics",
    entry: ENTRY,
    env: {
      CASEBOOK_DATA: join(dir, "data"),
      METRICS_ADMIN_TOKEN: ADMIN_TOKEN,
      METRICS_BOOTSTRAP_TENANT: "off",
      METRICS_PARTITIONS: "4",
      METRICS_ALERT_RULE_FILES: rules,
      METRICS_ALERT_WEBHOOK_URL: receiver.url("/ok"),
    },
    readyTimeoutMs: 60_000,
  });
  stops.push(() => metrics.stop());
  const created = await fetch(`${metrics.url}/v1/admin/tenants`, {
    method: "POST",
    headers: { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ id: "acme", name: "Acme" }),
  });
  assert.equal(created.status, 201, await created.clone().text());
  const key = ((await created.json()) as { apiKey: { key: string } }).apiKey.key;
  const push = async (timeseries: unknown[]) => {
    const res = await fetch(`${metrics.url}/api/v1/push`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ timeseries }),
    });
    assert.equal(res.status, 204, await res.text());
    return Date.now();
  };

  // An hour of counters: what the dashboards chew on.
  const endMs = Math.floor((Date.now() - 60_000) / STEP_MS) * STEP_MS;
  const startMs = endMs - (POINTS - 1) * STEP_MS;
  for (let first = 0; first < SERIES; first += 40) {
    await push(
      Array.from({ length: 40 }, (_, j) => ({
        labels: { __name__: "sat_requests_total", series: String(first + j), mod: String((first + j) % 10) },
        samples: Array.from({ length: POINTS }, (_, k) => ({
          t: startMs + k * STEP_MS,
          v: k * (1 + ((first + j) % 7)),
        })),
      })),
    );
  }
  await eventually(
    async () => {
      const res = await fetch(
        `${metrics.url}/api/v1/query?query=count(sat_requests_total)&time=${endMs / 1000}`,
        {
          headers: { authorization: `Bearer ${key}` },
        },
      );
      const body = (await res.json()) as { data: { result: Array<{ value: [number, string] }> } };
      return body.data.result[0]?.value[1] === String(SERIES) ? true : undefined;
    },
    { what: "the hour of counters stored by the hot writer", timeoutMs: 120_000 },
  );

  const gauge = (instance: string, v: number) => [
    { labels: { __name__: "sat_gauge", instance }, samples: [{ t: Date.now(), v }] },
  ];
  const lagOf = async (instance: string, ackedAtMs: number) => {
    const firing = await eventually(
      () =>
        received().find((r) => r.body.status === "firing" && r.body.alerts[0]?.labels.instance === instance),
      {
        what: `the firing notification of ${instance}`,
        timeoutMs: FOR_MS + INTERVAL_MS + MT01_BOUND_MS + 30_000,
      },
    );
    return firing.atMs - ackedAtMs;
  };

  // Quiet: the baseline lag.
  await push(gauge("quiet", 5));
  const quietLagMs = await lagOf("quiet", await push(gauge("quiet", 150)));

  // Saturated: the stampede starts, then the condition turns true.
  const load = await spawnChild(new URL("./query-load-child.ts", import.meta.url), {
    args: [metrics.url, key, String(CONCURRENCY), "180000", String(startMs / 1000), String(endMs / 1000)],
    ready: "saturated",
    readyTimeoutMs: 180_000,
    test: t,
  });
  await push(gauge("stampede", 5));
  const loadedLagMs = await lagOf("stampede", await push(gauge("stampede", 150)));
  load.send("stop");
  const stats = JSON.parse(await load.nextLine(180_000)) as {
    queries: number;
    failures: number;
    p50Ms: number;
    maxMs: number;
  };
  const loadavg = (await import("node:fs")).readFileSync("/proc/loadavg", "utf8").trim();
  t.diagnostic(
    `MT-01 lag, sample acked → firing notification received (for: 2s, interval 1s): quiet ${quietLagMs} ms, ` +
      `saturated ${loadedLagMs} ms; the stampede: ${CONCURRENCY} at once, ${stats.queries} range queries ` +
      `(${SERIES} series × ${POINTS} steps) answered, p50 ${stats.p50Ms} ms, max ${stats.maxMs} ms, ${stats.failures} failed; load ${loadavg}`,
  );
  assert.ok(stats.queries >= CONCURRENCY, "the query path was busy while the alert fired");
  const bound = FOR_MS + INTERVAL_MS + MT01_BOUND_MS;
  assert.ok(quietLagMs <= bound, `quiet: ${quietLagMs} ms ≤ for + interval + 1 min`);
  assert.ok(loadedLagMs <= bound, `saturated: ${loadedLagMs} ms ≤ for + interval + 1 min`);
});
