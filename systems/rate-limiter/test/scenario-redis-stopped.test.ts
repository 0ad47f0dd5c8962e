import assert from "node:assert/strict";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { main } from "../src/main.ts";

test("RL-11 RL-12 the console's scenario: a private Redis stopped under a fail-open and a fail-closed policy — every outage check of reads allowed locally, every billing check refused, Redis deciding again after its restart", async (t) => {
  const running = await main({ PORT: "0", LOG_LEVEL: "silent" });
  t.after(() => running.close());
  const list = (await (await fetch(`${running.url}/v1/scenarios`)).json()) as { scenarios: { id: string }[] };
  assert.ok(list.scenarios.some((s) => s.id === "redis-stopped"));
  const { run, secondStart } = await runScenario(running.url, "redis-stopped", { probeSecondStart: true });
  assert.equal(secondStart, 409, "one run at a time");
  assert.equal(run.state, "done", JSON.stringify(run.error));
  const result = String(run.result);
  t.diagnostic(result);
  const open = /fail-open policy allowed (\d+) of (\d+) checks from the local limiter/.exec(result);
  const closed = /fail-closed policy refused (\d+) of (\d+) as unavailable/.exec(result);
  assert.ok(open && closed, result);
  assert.ok(Number(open[2]) > 0 && Number(closed[2]) > 0, "checks ran during the outage");
  assert.equal(open[1], open[2], "fail-open: every outage check allowed by the local limiter");
  assert.equal(closed[1], closed[2], "fail-closed: every outage check refused");
  assert.match(result, /Redis decided both again \d+\.\d s after its restart/);
  const last = (series: string) => run!.points.filter((p) => p.series === series).at(-1)?.y ?? 0;
  // The plot's story: both "allowed" lines climb together but while Redis is away, where billing's
  // stays flat and its "refused" line climbs instead (until Redis answers again after the restart).
  const readsAllowed = last("reads (fail-open): allowed");
  const billingAllowed = last("billing (fail-closed): allowed");
  const billingRefused = last("billing (fail-closed): refused, unavailable");
  assert.equal(last("reads (fail-open): refused, unavailable"), 0, "fail-open never answers unavailable");
  assert.equal(
    billingAllowed + billingRefused,
    readsAllowed,
    "each tick checks both; reads are always let through",
  );
  assert.ok(billingRefused >= Number(closed[2]), "billing refused every outage check");
});
