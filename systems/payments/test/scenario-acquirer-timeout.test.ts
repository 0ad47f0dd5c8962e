/**
 * The console's fault scenario, run over the live API to its result: a private acquirer simulator
 * charges and never answers; the payment is pending, the saga's status query by the same key finds
 * the charge, the payment is captured, and the acquirer holds exactly one charge.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { main } from "../src/main.ts";

test("PY-06 the console's scenario: the acquirer's answer to a charge is lost — pending, a status query by the key, captured, one charge", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "payments-timeout-scenario-"));
  const running = await main({ PORT: "0", CASEBOOK_DATA: dir, LOG_LEVEL: "silent" });
  t.after(async () => {
    await running.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const { run } = await runScenario(running.url, "acquirer-timeout");
  assert.equal(run.state, "done", JSON.stringify(run.error));
  const result = String(run.result);
  t.diagnostic(result);
  assert.match(result, /\(1 hung response\)/);
  assert.match(result, /the payment went pending \(HTTP 202\) at [\d.]+ s → .*captured at [\d.]+ s;/);
  assert.match(
    result,
    /acquirer calls: authorize unknown at [\d.]+ s, query approved at [\d.]+ s, capture captured at/,
  );
  assert.match(
    result,
    /at the acquirer: 1 authorization \(1 attempt, captured\), 1 capture — no double charge\.$/,
  );
  const series = new Set(run.points.map((p) => p.series));
  for (const name of [
    "acquirer calls: authorize → unknown",
    "acquirer calls: query → approved",
    "acquirer calls: capture → captured",
    "charges at the acquirer",
  ])
    assert.ok(series.has(name), `${name} plotted (${[...series]})`);
  const charges = run.points.filter((p) => p.series === "charges at the acquirer").map((p) => p.y);
  assert.equal(Math.max(...charges), 1, "never more than one charge");
  const unknownAt = run.points.find((p) => p.series === "acquirer calls: authorize → unknown")!.x;
  const queryAt = run.points.find((p) => p.series === "acquirer calls: query → approved")!.x;
  assert.ok(queryAt >= unknownAt, "the status query came after the timeout");
});
