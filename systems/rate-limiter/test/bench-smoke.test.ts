/**
 * The benchmark runs end to end, tiny: bench/main.ts as a child process (as
 * `casebook bench rate-limiter` runs it) with a throw-away redis-server, every
 * scenario, JSON lines out. This checks the output's shape, never its speed
 * (speed lives in the bench itself).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseBenchRows, runBenchChild } from "@casebook/lab/bench-smoke";
import { findExecutable } from "@casebook/lab/executables";

const benchMain = fileURLToPath(new URL("../bench/main.ts", import.meta.url));
/** Bound on one bench child: the tiny run takes ~10 s; a hang must fail the test, not stall CI. */
const childTimeoutMs = 90_000;
const tiny = ["--duration-ms", "300", "--warmup-ms", "100", "--users", "2000"];

/** Runs the bench without REDIS_URL, so it spawns (and stops) its own engine. */
function runBench(args: string[]) {
  return runBenchChild(benchMain, args, { unsetEnv: ["REDIS_URL"], timeoutMs: childTimeoutMs });
}

const redisServer = findExecutable("redis-server");
const skip = redisServer ? false : "redis-server is not installed: the bench cannot spawn its Redis";

describe("bench/main.ts", () => {
  test("--help explains the scenarios and flags, without touching Redis", async () => {
    const run = await runBench(["--help"]);
    assert.equal(run.code, 0, run.stderr);
    for (const word of ["closed", "open", "burst", "memory", "--json", "--duration-ms", "--algorithms"]) {
      assert.ok(run.stdout.includes(word), `help mentions ${word}`);
    }
  });

  test("a bad flag exits 2 naming the flag", async () => {
    const run = await runBench(["--duration-ms", "5"]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--duration-ms/);
  });

  test("--json prints only rows, with ratios against rate-limiter-flexible", { skip }, async () => {
    const run = await runBench(["--json", ...tiny]);
    assert.equal(run.code, 0, run.stderr);
    const rows = parseBenchRows(run.stdout);
    assert.ok(rows.every((row) => row.system === "rate-limiter"));
    const peerRatios = rows.filter((row) => row.peer === "rate-limiter-flexible" && row.ratio !== undefined);
    for (const scenario of ["closed", "open", "memory"]) {
      assert.ok(
        peerRatios.some((row) => row.scenario.startsWith(scenario)),
        `a ${scenario} row with a ratio against the peer`,
      );
    }
    const throughput = rows.find(
      (r) => r.scenario.endsWith(": fixed window 10 per 2 s, Limiter.check") && r.metric === "throughput",
    );
    assert.ok(throughput && throughput.value > 0, "Limiter.check made decisions");
    assert.ok(throughput.peer === "rate-limiter-flexible", "fixed window against the peer's fixed window");
    for (const size of [50, 3000]) {
      const allowed = rows.find((r) => r.scenario.startsWith(`burst of ${size},`) && r.metric === "allowed");
      const bound = rows.find((r) => r.scenario === allowed?.scenario && r.metric.startsWith("bound"));
      assert.ok(allowed && bound, `the burst of ${size} printed allowed and its bound`);
    }
    assert.ok(
      rows.some((r) => r.scenario.includes("redis-benchmark")) || !findExecutable("redis-benchmark"),
      "the redis-benchmark floor ran",
    );
    assert.ok(rows.some((r) => r.metric === "memory for 50 million keys" && r.unit === "GB"));
    assert.match(run.stderr, /private redis-server/, "it said what it ran against");
  });

  test("--algorithms --json gives RL-07 rows for every algorithm", { skip }, async () => {
    const run = await runBench(["--algorithms", "--json", ...tiny]);
    assert.equal(run.code, 0, run.stderr);
    const rows = parseBenchRows(run.stdout);
    for (const algorithm of ["token-bucket", "fixed-window", "sliding-window-log", "gcra"]) {
      assert.ok(
        rows.some((r) => r.scenario.endsWith(`: ${algorithm}`) && r.metric === "throughput, Redis"),
        `${algorithm} measured on Redis`,
      );
    }
    const fixed = rows.find(
      (r) => r.scenario.endsWith(": fixed-window") && r.metric === "max admitted in any 60 s",
    );
    assert.equal(fixed?.value, 200, "the comparison shows 2 × the limit across a window boundary");
  });
});
