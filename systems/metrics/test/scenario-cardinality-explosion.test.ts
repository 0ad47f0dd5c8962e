/**
 * The console's cardinality-explosion scenario, run over the live API to its result (issue 22:
 * "a user-id tag appears: the limit trips, the owner's alert fires, ingest stays up"): a tenant
 * made for the run writes steady series, then a fresh user_id per sample; its ceiling admits new
 * series up to 100 and refuses the rest, the owner's CardinalityLimitReached alert fires off the
 * stream (and its notification reaches the webhook receiver), every write is answered 204 and
 * every steady sample stored; the demo tenant sees none of it; a second start is refused.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { eventually } from "@casebook/lab/eventually";
import { runScenario } from "@casebook/lab/scenario-run";
import { main } from "../src/main.ts";
import { CARDINALITY_SCENARIO_METRIC } from "../src/scenarios/cardinality-explosion-scenario.ts";

interface Notification {
  status: string;
  groupLabels: { alertname: string };
  alerts: Array<{ labels: Record<string, string> }>;
}

test("MT-16 the console's scenario: a user_id tag appears — the tenant's ceiling refuses the new series, the owner's alert fires, ingest keeps answering", async (t) => {
  const notifications: Notification[] = [];
  const receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      notifications.push(JSON.parse(Buffer.concat(chunks).toString("utf8")) as Notification);
      res.writeHead(204).end();
    });
  });
  receiver.listen(0, "127.0.0.1");
  await once(receiver, "listening");
  const dataDir = await mkdtemp(join(tmpdir(), "casebook-metrics-scenario-"));
  const running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    METRICS_PARTITIONS: "4",
    METRICS_ALERT_INTERVAL_MS: "1000",
    METRICS_ALERT_WEBHOOK_URL: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/alerts`,
  });
  t.after(async () => {
    await Promise.allSettled([running.close()]);
    receiver.close();
    await rm(dataDir, { recursive: true, force: true });
  });
  let sawPartial = false;
  const { run, secondStart } = await runScenario(running.url, "cardinality-explosion", {
    probeSecondStart: true,
    onRunning: (r) => {
      if (r.points.length > 0) sawPartial = true;
    },
  });
  assert.equal(run.state, "done", JSON.stringify(run.error));
  assert.equal(secondStart, 409, "one run at a time");
  assert.ok(sawPartial, "points arrived while the run was running");
  const result = String(run.result);
  t.diagnostic(result);
  const m =
    /^20 steady series, then (\d+) samples each with a fresh user_id: (\d+) new series admitted up to the ceiling of 100 per metric, (\d+) refused; the owner's CardinalityLimitReached alert fired at ([\d.]+) s.*; ingest answered (\d+) of (\d+) writes 204 .*kept every sample \((\d+) of (\d+) each\), tenant (\S+)\.$/.exec(
      result,
    );
  assert.ok(m, result);
  const [users, admitted, refused, , answered204, writes, kept, ticks] = m
    .slice(1, 9)
    .map(Number) as number[];
  const tenant = m[9]!;
  // The ceiling is 100 series of the metric; the 20 steady ones count against it.
  assert.equal(admitted, 80);
  assert.equal(refused, users! - 80, "every user_id beyond the ceiling refused, none lost in between");
  assert.equal(answered204, writes, "ingest answered every write 204 through the explosion");
  assert.equal(kept, ticks, "no steady sample was refused beside the new series");
  // The owner's alert, as its webhook receiver got it: this tenant, this metric, the per-metric ceiling.
  // The run saw the evaluator's state; the notification follows through its queue and a POST.
  const fired = await eventually(
    () =>
      notifications.find((n) => n.status === "firing" && n.alerts.some((a) => a.labels.tenant === tenant)),
    { what: "the owner's firing notification at the receiver", timeoutMs: 10_000 },
  );
  assert.deepEqual(fired.alerts[0]!.labels, {
    alertname: "CardinalityLimitReached",
    audience: "tenant-owner",
    limit: "metric_series_limit",
    metric: CARDINALITY_SCENARIO_METRIC,
    severity: "warning",
    tenant,
  });
  // The plot's lines: stored series climb to the ceiling and stay; the alert line ends at it.
  const line = (name: string) => run.points.filter((p) => p.series === name).map((p) => p.y);
  assert.equal(Math.max(...line("series stored")), 100);
  assert.equal(line("owner's CardinalityLimitReached (at the ceiling: firing)").at(-1), 100);
  // Its own tenant only: the demo tenant holds none of it.
  const demo = await fetch(
    `${running.url}/api/v1/query?query=${encodeURIComponent(`count(${CARDINALITY_SCENARIO_METRIC})`)}`,
    { headers: { authorization: `Bearer ${running.bootstrap!.apiKey}` } },
  );
  assert.deepEqual(((await demo.json()) as { data: { result: unknown[] } }).data.result, []);
});
