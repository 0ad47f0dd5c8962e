/**
 * The bench's drain-ceiling scenario runs end to end, tiny: bench/main.ts as a child process
 * (as `casebook bench flash-sale --drain-only` runs it) on this machine's PostgreSQL and
 * Redis, payments and its acquirer simulator as their own processes, JSON lines out. This
 * checks the report's shape and the one promise the rows carry — the acquirer's busiest
 * second never above the configured rate — never its speed (speed lives in the bench).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseBenchRows, runBenchChild } from "@casebook/lab/bench-smoke";
import { requirePostgres, requireRedis } from "@casebook/lab/test-engines";

const benchMain = fileURLToPath(new URL("../bench/main.ts", import.meta.url));

test("FS-15 the bench's drain ceiling, tiny: a row per step (charges sustained, the window's bound, p99, the acquirer's busiest second ≤ the rate), payments' saga beside, the ceiling", async (t) => {
  const pgUrl = await requirePostgres(t);
  const redisUrl = pgUrl && (await requireRedis(t));
  if (!pgUrl || !redisUrl) return;
  process.env.DATABASE_URL = pgUrl;
  process.env.REDIS_URL = redisUrl;
  const run = await runBenchChild(
    benchMain,
    [
      "--drain-only",
      "--drain-rates",
      "20,40",
      "--drain-seconds",
      "1",
      "--drain-in-flight",
      "4",
      "--drain-saga-clients",
      "2",
      "--drain-saga-ms",
      "1000",
      "--json",
    ],
    // A hang guard, not a speed claim: ~30 s at load ~20.
    { timeoutMs: 180_000 },
  );
  assert.equal(run.code, 0, run.stderr.slice(-2_000));
  const rows = parseBenchRows(run.stdout);
  const steps = rows.filter((r) => r.scenario.startsWith("charge queue → payments at a configured 20/s"));
  assert.deepEqual(
    steps.map((r) => r.metric),
    [
      "charges sustained",
      "the window's bound R / (1 s + mean call)",
      "p99 of a charge call",
      "acquirer authorizations, busiest second",
    ],
  );
  for (const r of rows.filter((x) => x.metric === "acquirer authorizations, busiest second"))
    assert.ok(r.value <= Number(r.peer_value), `${r.scenario}: ${r.value} > ${r.peer_value}`);
  assert.ok(
    rows.some((r) => r.scenario.startsWith("payments' saga") && r.metric === "payments" && r.value > 0),
  );
  const ceiling = rows.find((r) => r.scenario.startsWith("drain ceiling"));
  assert.ok(ceiling && ceiling.value > 0 && ceiling.peer === "payments' saga, closed loop");
});
