import assert from "node:assert/strict";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { main } from "../src/main.ts";

test("RL-07 the console's scenario: the same burst at a minute boundary under each algorithm, run over the live API — fixed window lets 2× the limit through, the log exactly the limit", async (t) => {
  const running = await main({ PORT: "0", LOG_LEVEL: "silent" });
  t.after(() => running.close());
  const { run, secondStart } = await runScenario(running.url, "boundary-burst", { probeSecondStart: true });
  assert.equal(secondStart, 409, "a second start while one runs is refused");
  assert.equal(run.state, "done", JSON.stringify(run.error));
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
