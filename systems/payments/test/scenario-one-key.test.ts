import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
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
  const { run } = await runScenario(running.url, "one-key-twenty-requests");
  assert.equal(run.state, "done", JSON.stringify(run));
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
