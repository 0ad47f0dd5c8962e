import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { main } from "../src/main.ts";

test("WH-17 WH-18 the console's scenario: a private receiver down for 10 s while events arrive — attempts fail and back off, then every event is delivered once it is back, nothing lost", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "casebook-wh-scenario-"));
  const running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    WEBHOOKS_WORKERS: "false",
  });
  t.after(async () => {
    await Promise.allSettled([running.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { run, secondStart } = await runScenario(running.url, "receiver-outage", { probeSecondStart: true });
  assert.equal(secondStart, 409, "one run at a time");
  assert.equal(run.state, "done", JSON.stringify(run.error));
  const result = String(run.result);
  t.diagnostic(result);
  assert.match(result, /all 8 delivered \(8 distinct at the receiver, 0 lost\)/);
  const series = (name: string) => run!.points.filter((p) => p.series === name).map((p) => p.y);
  assert.equal(series("events delivered so far").at(-1), 8, "every event delivered");
  assert.equal(series("events waiting (not yet delivered)").at(-1), 0, "none left waiting");
  assert.ok(Math.max(...series("events waiting (not yet delivered)")) >= 5, "the outage's events queued");
  const failed = series("attempts failed so far").at(-1) ?? 0;
  assert.ok(
    failed >= 10,
    `the outage's events were each retried while it lasted (${failed} failed attempts)`,
  );
  const gaps = /the longest chain retried after ([\d., ]+) s/.exec(result)![1]!.split(", ").map(Number);
  assert.ok(gaps.length >= 3, `a delivery was retried at least 3 times (${gaps})`);
  assert.ok(gaps.at(-1)! > gaps[0]!, `the backoff grows (${gaps})`);
});
