/**
 * The console's failover scenario, run over the node's HTTP sidecar to its result: a private
 * cluster of node processes (3 primaries, a replica of the first), a client writing every 75 ms,
 * the primary SIGKILLed — writes refused, the replica promoted, writes resumed — and every
 * process of the run gone afterwards.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { main } from "../src/main.ts";

test("the console's scenario primary-killed: a private cluster's primary SIGKILLed — writes refused, the replica promoted, writes resumed", async (t) => {
  const node = await main({ CACHE_PORT: "0", PORT: "0", LOG_LEVEL: "silent" });
  t.after(() => node.close());
  const { run } = await runScenario(node.url, "primary-killed");
  assert.equal(run.state, "done", JSON.stringify(run.error));
  const result = String(run.result);
  t.diagnostic(result);
  const m =
    /^(\d+) writes acknowledged, then the primary was SIGKILLed: writes refused for ([\d.]+) s \((\d+) writes\); the replica was promoted ([\d.]+) s after the kill .*writes resumed ([\d.]+) s after the kill; (\d+) of (\d+) acknowledged writes on the new primary/.exec(
      result,
    );
  assert.ok(m, result);
  const [, before, refusedS, refused, promotedS, resumedS, held, acked] = m.map(Number) as number[];
  assert.ok(before! >= 10, `writes were acknowledged before the kill (${before})`);
  assert.ok(refused! >= 1 && refusedS! > 0, "writes were refused while the primary was dead");
  assert.ok(promotedS! > 0.5, `no promotion before failure detection (${promotedS} s)`);
  assert.ok(resumedS! >= promotedS! - 0.5, "writes resumed once the replica was promoted");
  assert.ok(acked! > before!, "writes acknowledged after the failover");
  assert.ok(held! >= acked! - 5, `at most the last few writes before the kill lost (${held} of ${acked})`);
  const series = (name: string) => run!.points.filter((p) => p.series === name).map((p) => p.y);
  assert.equal(series("writes refused so far").at(-1), refused);
  assert.equal(series("writes acknowledged so far").at(-1), acked);
  assert.equal(series("primary killed (SIGKILL)").length, 1);
  assert.equal(series("replica promoted").length, 1);
});
