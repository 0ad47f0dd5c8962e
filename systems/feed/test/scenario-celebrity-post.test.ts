/**
 * The console's scenario over the service's HTTP API, run to its result: a celebrity's post
 * reaches every follower's list under pure push only as the fan-out progresses, while under
 * the hybrid every sampled follower sees it at their first read (FD-05, FD-06, FD-08).
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { main } from "../src/main.ts";

test("FD-05 FD-06 FD-08 the console's celebrity-post scenario: pure push reaches the followers as its fan-out runs; the hybrid shows the post at every sampled follower's first read", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "casebook-feed-scenario-"));
  const running = await main(
    { PORT: "0", LOG_LEVEL: "silent", CASEBOOK_DATA: dataDir },
    { startWorker: false },
  );
  t.after(async () => {
    await Promise.allSettled([running.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });
  const listed = (
    (await (await fetch(`${running.url}/v1/scenarios`)).json()) as { scenarios: { id: string }[] }
  ).scenarios;
  assert.deepEqual(
    listed.map((s) => s.id),
    ["celebrity-post"],
  );
  const { run, secondStart } = await runScenario(running.url, "celebrity-post", { probeSecondStart: true });
  assert.equal(secondStart, 409, "one run at a time");
  assert.equal(run.state, "done", JSON.stringify(run.error));
  const result = String(run.result);
  t.diagnostic(result);
  const series = (prefix: string) => run!.points.filter((p) => p.series.startsWith(prefix));
  const push = series("pure push");
  const hybrid = series("hybrid");
  // Push: the share grows batch by batch (pages of 1 000 of 20 000 followers) to every follower.
  assert.ok(push.length >= 10, `the push line has a point per batch (${push.length})`);
  for (let i = 1; i < push.length; i++)
    assert.ok(push[i]!.y >= push[i - 1]!.y && push[i]!.x >= push[i - 1]!.x);
  assert.equal(push.at(-1)!.y, 100, "every follower's list has it in the end");
  assert.ok(
    push.some((p) => p.y > 0 && p.y < 100),
    "push reached some followers before others",
  );
  assert.match(
    result,
    /20,000 followers\. Pure push: .*50 of 50 sampled followers saw it at their next read after it/,
  );
  // Hybrid: the celebrity is above the line derived from the measured rate, so pulled.
  assert.match(
    result,
    /the celebrity in the pull tier\): 1 list written \(the author's own\); 50 of 50 sampled followers saw it at their first read/,
  );
  assert.ok(hybrid.length >= 2);
  assert.ok(
    hybrid.slice(1).every((p) => p.y === 100),
    "every sampled follower sees it from the first read on",
  );
  assert.equal(run.progress, 1);
});
