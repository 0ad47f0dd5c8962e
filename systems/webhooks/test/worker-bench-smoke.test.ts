/**
 * The benchmark runs end to end, tiny: bench/main.ts as a child process (as
 * `casebook bench webhooks` runs it) against the local PostgreSQL, worker processes, the
 * receiver, JSON lines out. This checks the output's shape — and that nothing was lost or
 * duplicated — never its speed (speed lives in the bench itself).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseBenchRows, runBenchChild } from "@casebook/lab/bench-smoke";
import { engineFree, requirePostgres } from "@casebook/lab/test-engines";

const benchMain = fileURLToPath(new URL("../bench/main.ts", import.meta.url));
/** Bound on one bench child: the tiny run takes a few seconds; a hang must fail the test. */
const childTimeoutMs = 120_000;
const tiny = [
  "--workers",
  "1",
  "--backlog",
  "60",
  "--rate",
  "30",
  "--duration-ms",
  "1000",
  "--warmup-ms",
  "0",
  "--max-in-flight",
  "8",
  "--pool",
  "2",
];

describe("bench/main.ts", () => {
  test("--help explains the scenarios, goals and flags, without touching PostgreSQL", async (t) => {
    if (engineFree(t)) return;
    const run = await runBenchChild(benchMain, ["--help"], { timeoutMs: childTimeoutMs });
    assert.equal(run.code, 0, run.stderr);
    for (const word of [
      "drain",
      "latency",
      "350",
      "60 attempts/s",
      "--json",
      "--workers",
      "--backlog",
      "--rate",
    ]) {
      assert.ok(run.stdout.includes(word), `help mentions ${word}`);
    }
  });

  test("a bad flag exits 2 naming the flag", async (t) => {
    if (engineFree(t)) return;
    const run = await runBenchChild(benchMain, ["--workers", "1,0"], { timeoutMs: childTimeoutMs });
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--workers/);
  });

  test("--json prints only rows: the drain beside the seed's 60/s, and the open-loop latencies; nothing lost or twice", async (t) => {
    if (!(await requirePostgres(t))) return;
    const run = await runBenchChild(benchMain, ["--json", ...tiny], { timeoutMs: childTimeoutMs });
    assert.equal(run.code, 0, run.stderr);
    const rows = parseBenchRows(run.stdout);
    assert.ok(rows.every((row) => row.system === "webhooks"));
    const drain = rows.find(
      (r) => r.scenario === "drain 60 deliveries, 1 worker process" && r.metric === "throughput",
    );
    assert.ok(drain && drain.value > 0, "the drain delivered");
    assert.equal(drain.peer, "seed 003: 60 attempts/s per worker");
    assert.equal(drain.peer_value, 60);
    assert.ok(drain.ratio !== undefined && drain.ratio > 0);
    const latency = (metric: string) =>
      rows.find((r) => r.scenario === "open loop 30 deliveries/s, 1 worker process" && r.metric === metric);
    assert.ok(latency("commit→2xx p99")!.value > 0, "p99 measured");
    assert.ok(latency("delivered")!.value > 0);
    for (const r of rows.filter((row) => ["duplicates", "unverified", "ingest errors"].includes(row.metric)))
      assert.equal(r.value, 0, `${r.scenario}: ${r.metric}`);
  });
});
