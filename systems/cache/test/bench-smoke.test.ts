/**
 * The benchmark runs end to end, tiny: bench/main.ts as a child process (as
 * `casebook bench cache` runs it) spawning this node, a redis-server and the Node
 * socket floor, JSON lines out. It checks the output's shape, never its speed (speed
 * lives in the bench itself).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseBenchRows, runBenchChild } from "@casebook/lab/bench-smoke";
import { findExecutable } from "@casebook/lab/executables";

const benchMain = fileURLToPath(new URL("../bench/main.ts", import.meta.url));
/** Bound on one bench child: the tiny run takes ~10 s on a loaded machine; a hang must fail the test. */
const childTimeoutMs = 120_000;
const tiny = [
  ...["--duration-ms", "150", "--rounds", "1", "--keyspace", "1000", "--clients", "10"],
  ...["--hit-ratio-keys", "1000", "--hit-ratio-requests", "20000"],
  ...["--memory-keys", "2000", "--memory-values", "100"],
];

function runBench(args: string[]) {
  return runBenchChild(benchMain, args, { timeoutMs: childTimeoutMs });
}

const tools = findExecutable("redis-server") && findExecutable("redis-benchmark");
const skip = tools
  ? false
  : "redis-server or redis-benchmark is not installed (Debian redis-server, redis-tools)";

describe("bench/main.ts", () => {
  test("--help explains the scenarios, flags and goals without starting anything", async () => {
    const run = await runBench(["--help"]);
    assert.equal(run.code, 0, run.stderr);
    for (const word of ["redis-benchmark", "--duration-ms", "--rounds", "--pipeline", "--json", "0.7×"]) {
      assert.ok(run.stdout.includes(word), `help mentions ${word}`);
    }
  });

  test("a bad flag exits 2 naming the flag", async () => {
    const run = await runBench(["--rounds", "0"]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--rounds/);
  });

  test("--json prints rows with ratios against redis-server, the floor and memory", { skip }, async () => {
    const run = await runBench(["--json", ...tiny]);
    assert.equal(run.code, 0, run.stderr);
    const rows = parseBenchRows(run.stdout);
    assert.ok(rows.every((row) => row.system === "cache"));
    for (const scenario of [
      "SET -c 10",
      "GET -c 10",
      "SET -c 10 -P 16",
      "GET -c 10 -P 16",
      "PING -c 10",
      "PING -c 10, node net floor",
    ]) {
      const throughput = rows.find((r) => r.scenario === scenario && r.metric === "throughput");
      assert.ok(
        throughput && throughput.value > 0 && throughput.peer === "redis" && throughput.ratio !== undefined,
        scenario,
      );
    }
    const keys = rows.find((r) => r.scenario === "memory" && r.metric === "keys after");
    assert.ok(keys && keys.value > 0 && keys.peer_value === keys.value, "both servers hold the same keys");
    assert.ok(rows.some((r) => r.metric === "RSS after" && r.unit === "MiB"));
    assert.ok(
      rows.some((r) => r.peer === "LRU" && r.ratio !== undefined),
      "the hit-ratio study ran, beside LRU",
    );
  });
});
