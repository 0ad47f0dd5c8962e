/**
 * The hit-ratio bench runs end to end, tiny: bench/hit-ratio.ts as a child process, JSON
 * lines out with the report's shape (never its speed), --help, and a bad flag exiting 2.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseBenchRows, runBenchChild } from "@casebook/lab/bench-smoke";
import { policyLabels, policyNames } from "../src/domain/hit-ratio-sim.ts";

const benchFile = fileURLToPath(new URL("../bench/hit-ratio.ts", import.meta.url));
/** Bound on one bench child: the tiny run takes about a second; a hang must fail the test. */
const childTimeoutMs = 60_000;

describe("bench/hit-ratio.ts", () => {
  test("a tiny run prints one JSON row per trace x size x policy, LRU as the peer", async () => {
    const run = await runBenchChild(benchFile, ["--keys", "1000", "--requests", "5000", "--json"], {
      timeoutMs: childTimeoutMs,
    });
    assert.equal(run.code, 0, run.stderr);
    const rows = parseBenchRows(run.stdout);
    assert.equal(rows.length, 3 * 3 * policyNames.length);
    for (const row of rows) {
      assert.equal(row.system, "cache");
      assert.equal(row.unit, "%");
      assert.ok(row.value >= 0 && row.value <= 100, `${row.metric}: ${row.value}`);
      if (row.metric !== `hit ratio ${policyLabels.lru}`) assert.equal(row.peer, "LRU");
    }
  });

  test("the markdown report states the goals", async () => {
    const run = await runBenchChild(benchFile, ["--keys", "1000", "--requests", "5000"], {
      timeoutMs: childTimeoutMs,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /goal W-TinyLFU ≥ LRU on every trace and size: met/);
    assert.match(run.stdout, /\| trace +\| cache size/);
  });

  test("--help explains the traces and flags; a bad flag exits 2 naming it", async () => {
    const help = await runBenchChild(benchFile, ["--help"], { timeoutMs: childTimeoutMs });
    assert.equal(help.code, 0);
    for (const word of ["zipf", "scan", "loop", "--keys", "--requests", "--json"]) {
      assert.ok(help.stdout.includes(word), `help mentions ${word}`);
    }
    const bad = await runBenchChild(benchFile, ["--keys", "5"], { timeoutMs: childTimeoutMs });
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /--keys/);
  });
});
