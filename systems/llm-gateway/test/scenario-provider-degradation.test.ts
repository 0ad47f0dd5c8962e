/**
 * The console's scenario, run to its result over HTTP: a private provider's primary slows to
 * its first token, the breaker opens, the fallback serves, the primary recovers and serves again.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { startGateway } from "./gateway-fixture.ts";

test("LG-08 LG-09 LG-10 the console's scenario provider-degradation: the slow primary's breaker opens, the fallback serves, the primary serves again after its recovery", async (t) => {
  const f = await startGateway();
  t.after(() => f.close());
  const list = (await (await fetch(`${f.gateway.url}/v1/scenarios`)).json()) as {
    scenarios: { id: string }[];
  };
  assert.ok(list.scenarios.some((s) => s.id === "provider-degradation"));
  const { run, secondStart } = await runScenario(f.gateway.url, "provider-degradation", {
    probeSecondStart: true,
  });
  assert.equal(secondStart, 409, "one run at a time");
  assert.equal(run.state, "done", JSON.stringify(run.error));
  const result = String(run.result);
  t.diagnostic(result);
  const healthy = /Healthy: (\d+) requests served by the primary, (\d+) by the fallback/.exec(result);
  const slow = /while slow, (\d+) requests were served by the fallback and (\d+) by the primary/.exec(result);
  const after = /the primary served (\d+) requests after it/.exec(result);
  assert.ok(healthy && slow && after, result);
  assert.ok(Number(healthy[1]) > 0, "the healthy primary serves");
  assert.equal(healthy[2], "0", "no fallback while the primary is healthy");
  assert.match(result, /the primary's breaker opened \d+\.\d s after it slowed/);
  assert.ok(Number(slow[1]) > Number(slow[2]), "while slow, the fallback serves most requests");
  assert.match(result, /it closed again \d+\.\d s after the recovery/);
  assert.ok(Number(after[1]) > 0, "the recovered primary serves again");
  assert.match(result, / 0 requests failed\.$/);
  // The plot: requests per second by the deployment that served them.
  const fallbackPoints = run.points.filter((p) => p.series === "fallback-mini@default");
  assert.ok(fallbackPoints.some((p) => p.y > 0));
  assert.ok(run.points.some((p) => p.series === "primary-4o@default" && p.y > 0));
});
