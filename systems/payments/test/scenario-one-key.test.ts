import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import type { ScenarioRun } from "@casebook/infra/http/scenario-runs";
import { main } from "../src/main.ts";

test("PY-01 the console's scenario: 20 concurrent requests with one Idempotency-Key over the live API make one payment", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "payments-scenario-"));
  const running = await main({ PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent" });
  t.after(async () => {
    await running.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const list = (await (await fetch(`${running.url}/v1/scenarios`)).json()) as { scenarios: { id: string }[] };
  assert.deepEqual(
    list.scenarios.map((s: { id: string }) => s.id),
    ["one-key-twenty-requests", "acquirer-timeout"],
  );
  const start = await fetch(`${running.url}/v1/scenarios/one-key-twenty-requests/runs`, { method: "POST" });
  assert.equal(start.status, 202);
  const { runId } = (await start.json()) as { runId: string };
  let run: ScenarioRun | undefined;
  for (let i = 0; i < 600; i++) {
    run = (await (
      await fetch(`${running.url}/v1/scenarios/one-key-twenty-requests/runs/${runId}`)
    ).json()) as ScenarioRun;
    if (run?.state !== "running") break;
    await sleep(50);
  }
  assert.equal(run?.state, "done", JSON.stringify(run));
  assert.equal(run.points.length, 20);
  assert.equal(run.progress, 1);
  const result = String(run.result);
  const counts =
    /^20 concurrent requests with one Idempotency-Key: 1 payment stored; (\d+) answers carry its id \(2\d\d(?:\/2\d\d)*\), (\d+) say "in progress" \(409\), 0 other\.$/.exec(
      result,
    );
  assert.ok(counts, result);
  assert.equal(Number(counts[1]) + Number(counts[2]), 20);
  assert.ok(Number(counts[1]) >= 1, "the request that made the payment answers with it");
});
