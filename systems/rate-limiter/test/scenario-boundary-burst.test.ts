import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { ScenarioRun } from "@casebook/infra/http/scenario-runs";
import { main } from "../src/main.ts";

test("RL-07 the console's scenario: the same burst at a minute boundary under each algorithm, run over the live API — fixed window lets 2× the limit through, the log exactly the limit", async (t) => {
  const running = await main({ PORT: "0", LOG_LEVEL: "silent" });
  t.after(() => running.close());
  const base = `${running.url}/v1/scenarios/boundary-burst/runs`;
  const start = await fetch(base, { method: "POST" });
  assert.equal(start.status, 202);
  const { runId } = (await start.json()) as { runId: string };
  const again = await fetch(base, { method: "POST" });
  assert.equal(again.status, 409, "a second start while one runs is refused");
  let run: ScenarioRun | undefined;
  for (let i = 0; i < 400; i++) {
    run = (await (await fetch(`${base}/${runId}`)).json()) as ScenarioRun;
    if (run.state !== "running") break;
    await sleep(25);
  }
  assert.equal(run?.state, "done", JSON.stringify(run?.error));
  assert.equal(run.points.length, 6 * 200);
  const result = String(run.result);
  assert.match(result, /fixed-window 200\b/);
  assert.match(result, /sliding-window-log 100\b/);
  const last = (series: string) => run!.points.filter((p) => p.series === series).at(-1)!.y;
  assert.equal(last("fixed-window"), 200);
  assert.equal(last("sliding-window-log"), 100);
  // A bucket: its capacity at once, then its rate — 100 plus 2 s of refill at 100/60 per s.
  for (const bucket of ["token-bucket", "gcra"]) {
    assert.ok(
      last(bucket) >= 100 && last(bucket) <= 100 + Math.ceil((2 * 100) / 60),
      `${bucket} ${last(bucket)}`,
    );
  }
});
