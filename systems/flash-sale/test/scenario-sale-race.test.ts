import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { runScenario } from "@casebook/lab/scenario-run";
import { main } from "../src/main.ts";

test("FS-01 FS-05 the console's scenario: 500 buyers race for 50 tickets through the checkout, over the live API — exactly 50 held, the rest sold out, the counter at 0", async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "casebook-fs-scenario-"));
  const running = await main({
    PORT: "0",
    LOG_LEVEL: "silent",
    CASEBOOK_DATA: dataDir,
    DATABASE_URL: "",
    REDIS_URL: "",
  });
  t.after(async () => {
    await Promise.allSettled([running.close()]);
    rmSync(dataDir, { recursive: true, force: true });
  });
  const { run } = await runScenario(running.url, "sale-race");
  assert.equal(run.state, "done", JSON.stringify(run.error));
  const result = String(run.result);
  t.diagnostic(result);
  assert.match(result, /^500 buyers for 50 tickets at once: 50 held, 450 sold out, 0 other; /);
  assert.match(result, /50 holds binding 50 of 50 tickets, the hot counter at 0 — 0 oversold\.$/);
  assert.equal(run.points.length, 500);
  assert.equal(Math.max(...run.points.map((p) => p.y)), 50, "never more held than tickets");
});
