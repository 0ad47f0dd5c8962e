/**
 * The benchmark runs end to end, tiny: bench/main.ts as a child process (as
 * `casebook bench payments` runs it) with a throw-away PostgreSQL, pgbench beside the
 * ledger, then the saga through the service and simulator processes, JSON lines out.
 * This checks the output's shape, never its speed (speed lives in the bench itself).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseBenchRows, runBenchChild } from "@casebook/lab/bench-smoke";
import { findPostgresBinDir } from "@casebook/lab/executables";
import { findPgbench } from "../bench/pgbench.ts";

const benchMain = fileURLToPath(new URL("../bench/main.ts", import.meta.url));
/** Bound on one bench child: the tiny run takes ~25 s; a hang must fail the test, not stall CI. */
const childTimeoutMs = 120_000;
const tiny = [
  "--clients",
  "2",
  "--saga-clients",
  "2",
  "--duration-ms",
  "1000",
  "--warmup-ms",
  "100",
  "--accounts",
  "50",
  "--batch-size",
  "10",
];

/** Runs the bench without DATABASE_URL, so it spawns (and stops) its own engine. */
function runBench(args: string[]) {
  return runBenchChild(benchMain, args, { unsetEnv: ["DATABASE_URL"], timeoutMs: childTimeoutMs });
}

const skip =
  findPostgresBinDir() === undefined
    ? "no PostgreSQL server binaries (initdb): the bench cannot spawn its PostgreSQL"
    : findPgbench() === undefined
      ? "pgbench is not installed: the bench has no peer to run"
      : false;

describe("bench/main.ts", () => {
  test("--help explains the scenarios, goals and flags, without touching PostgreSQL", async () => {
    const run = await runBench(["--help"]);
    assert.equal(run.code, 0, run.stderr);
    for (const word of [
      "pgbench",
      "single",
      "hot",
      "batch",
      "--json",
      "--clients",
      "--duration-ms",
      "saga",
      "--scenarios",
      "--saga-latency-ms",
      "--saga-rate-per-s",
      "--saga-clients",
    ]) {
      assert.ok(run.stdout.includes(word), `help mentions ${word}`);
    }
  });

  test("a bad flag exits 2 naming the flag", async () => {
    const run = await runBench(["--clients", "8,0"]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--clients/);
    const scenario = await runBench(["--scenarios", "ledger,sagas"]);
    assert.equal(scenario.code, 2);
    assert.match(scenario.stderr, /--scenarios: sagas/);
  });

  test("--json prints only rows: pgbench, every ledger shape with its ratio, then the saga", {
    skip,
  }, async () => {
    const run = await runBench(["--json", ...tiny]);
    assert.equal(run.code, 0, run.stderr);
    const rows = parseBenchRows(run.stdout);
    assert.ok(rows.every((row) => row.system === "payments"));
    const throughput = (prefix: string) =>
      rows.find((r) => r.scenario.startsWith(prefix) && r.metric === "throughput");
    const peer = throughput("c=2 peer: pgbench tpcb-like");
    assert.ok(peer && peer.value > 0, "pgbench committed transactions");
    for (const prefix of [
      "c=2 transfer, random pairs",
      "c=2 transfer, random pairs of 50 accounts, one transaction each",
      "c=2 transfer, all out of one hot",
      "c=2 batch of 10",
    ]) {
      const row = throughput(prefix);
      assert.ok(row && row.value > 0, `${prefix}: transfers committed`);
      assert.equal(row.peer, "pgbench tpcb-like");
      assert.equal(row.peer_value, peer.value, `${prefix}: beside the same pgbench run`);
      assert.ok(row.ratio !== undefined && row.ratio > 0, `${prefix}: a ratio`);
    }
    assert.ok(
      rows.some((r) => r.scenario.startsWith("c=2 transfer, random") && r.metric === "latency p99" && r.peer),
      "single-transfer p99 beside pgbench's",
    );
    assert.ok(
      rows
        .filter((r) => r.metric.startsWith("errors") && !r.scenario.includes("through the saga"))
        .every((r) => r.value === 0),
      "no transfer failed",
    );
    assert.match(run.stderr, /private PostgreSQL/, "it said what it ran against");
    assert.match(run.stderr, /fsync=on/, "it printed the server settings");
    const saga = (prefix: string, metric: string) =>
      rows.find(
        (r) =>
          r.scenario.startsWith(prefix) && r.scenario.includes("through the saga") && r.metric === metric,
      );
    for (const prefix of ["c=2 POST /v1/payments", "open loop"]) {
      assert.ok((saga(prefix, "throughput")?.value ?? 0) > 0, `${prefix}: payments went through the saga`);
      assert.equal(
        saga(prefix, "acquirer authorizations per payment")?.value,
        1,
        `${prefix}: one authorization each`,
      );
      assert.equal(
        saga(prefix, "repeated authorization calls")?.value,
        0,
        `${prefix}: no key authorized twice`,
      );
    }
    assert.ok(saga("open loop", "latency p99"), "the open loop reports p99 from the intended send time");
  });
});
