/**
 * The benchmark runs end to end, tiny: bench/main.ts as a child process (as `casebook bench
 * metrics` runs it) — the load-generator process, our service on a private nats-server, the
 * floor (the stream hop alone, on a nats-server of its own), and whichever peers are installed (Prometheus in CI; VictoriaMetrics where `victoria-metrics` is,
 * its rows absent otherwise) — JSON lines out. This checks the output's shape and that every
 * sample and query went through, never speed (speed lives in the bench itself).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { parseBenchRows, runBenchChild } from "@casebook/lab/bench-smoke";
import { findExecutable } from "@casebook/lab/executables";

const benchMain = fileURLToPath(new URL("../bench/main.ts", import.meta.url));
/** Bound on one bench child: the tiny run takes ~40 s; a hang must fail the test, not stall CI. */
const childTimeoutMs = 240_000;
const tiny = ["--hosts", "2", "--hours", "1", "--query-runs", "2", "--hosts-per-request", "1"];

function runBench(args: string[]) {
  return runBenchChild(benchMain, args, {
    unsetEnv: ["NATS_URL", "DATABASE_URL"],
    timeoutMs: childTimeoutMs,
  });
}

const skip =
  findExecutable("nats-server") === undefined ? "nats-server is not installed: our side's stream" : false;

describe("bench/main.ts", () => {
  test("--help explains the workload, the scenarios, the goals and every flag", async () => {
    const run = await runBench(["--help"]);
    assert.equal(run.code, 0, run.stderr);
    for (const word of [
      "node-exporter-like",
      "ingest",
      "storage",
      "query",
      "samples per CPU-second",
      "the floor of any design with the issue's stream hop",
      "Goals",
      "--hosts",
      "--hours",
      "--interval-s",
      "--seed",
      "--hosts-per-request",
      "--scrapes-per-request",
      "--concurrency",
      "--warm-up-percent",
      "--ingest-runs",
      "--query-runs",
      "--sides",
      "--cpu-prof-dir",
      "--floor-decode",
      "--json",
    ]) {
      assert.ok(run.stdout.includes(word), `help mentions ${word}`);
    }
  });

  test("a bad flag exits 2 naming the flag", async () => {
    const run = await runBench(["--hosts", "0"]);
    assert.equal(run.code, 2);
    assert.match(run.stderr, /--hosts/);
    const sides = await runBench(["--sides", "metrics,graphite"]);
    assert.equal(sides.code, 2);
    assert.match(sides.stderr, /--sides: graphite/);
    const decode = await runBench(["--floor-decode", "everywhere"]);
    assert.equal(decode.code, 2);
    assert.match(decode.stderr, /--floor-decode: everywhere is not one of none, ingest, every-reader/);
  });

  test("--json: ingest, storage and every panel, beside each installed peer", { skip }, async () => {
    const run = await runBench(["--json", ...tiny]);
    assert.equal(run.code, 0, run.stderr);
    const rows = parseBenchRows(run.stdout);
    assert.ok(rows.every((row) => row.system === "metrics"));
    const peers = ["prometheus", "victoria-metrics"].filter((p) => findExecutable(p) !== undefined);
    const ours = rows.filter((r) => r.scenario.startsWith("ingest: "));
    const ingest = ours.filter((r) => r.metric === "samples per CPU-second");
    assert.ok(ingest.length > 0 && ingest.every((r) => r.value > 0), "ours used CPU for the samples");
    assert.deepEqual(
      ingest.map((r) => r.peer).sort(),
      [...peers].sort(),
      "one ingest row per installed peer",
    );
    const steady = ours.filter((r) =>
      r.metric.startsWith("samples per CPU-second, steady (after the first 20%"),
    );
    assert.deepEqual(
      steady.map((r) => r.peer).sort(),
      [...peers].sort(),
      "a steady row too, after the warm-up (the sender stopped until the side was quiet)",
    );
    assert.ok(steady.every((r) => r.value > 0 && (r.peer_value ?? 1) > 0));
    const floor = rows.filter((r) => r.scenario.startsWith("ingest, the floor: the stream hop alone"));
    assert.deepEqual(
      [...new Set(floor.map((r) => r.peer))].sort(),
      [...peers, "ours (metrics) against the floor"].sort(),
      "the floor beside each installed peer, and ours beside the floor",
    );
    assert.ok(
      floor.every((r) => r.value > 0 && (r.peer_value ?? 1) > 0),
      "the floor measured, beside each",
    );
    assert.ok(
      rows
        .filter((r) => r.metric === "failed requests")
        .every((r) => r.value === 0 && (r.peer_value ?? 0) === 0),
      "every request acknowledged, on every side",
    );
    const bytes = rows.filter((r) => r.metric === "bytes per sample");
    assert.ok(
      bytes.length > 0 && bytes.every((r) => r.value > 0 && r.value < 16),
      "bytes per sample measured",
    );
    const panels = new Set(rows.filter((r) => r.scenario.startsWith("query: ")).map((r) => r.scenario));
    assert.equal(panels.size, 8, "eight panels");
    assert.ok(
      rows.filter((r) => r.metric === "errors").every((r) => r.value === 0),
      "every panel answered by ours",
    );
    for (const peer of peers) {
      assert.ok(
        rows.some((r) => r.metric === "latency p99" && r.peer === peer && r.ratio !== undefined),
        peer,
      );
    }
    assert.match(run.stderr, /load average/, "the load average is printed beside the figures");
  });

  test("--ingest-runs 3: each side measured three times on sides started afresh, its median run in the rows", {
    skip,
  }, async () => {
    const run = await runBench([
      "--json",
      ...tiny,
      "--sides",
      "metrics",
      "--scenarios",
      "ingest",
      "--ingest-runs",
      "3",
    ]);
    assert.equal(run.code, 0, run.stderr);
    for (const n of [1, 2, 3]) assert.match(run.stderr, new RegExp(`ingest run ${n} of 3`));
    // A fresh side each run: all of the samples acknowledged again, none refused as already stored.
    const acked = [...run.stderr.matchAll(/metrics: (\d+) acked in/g)].map((m) => Number(m[1]));
    assert.equal(acked.length, 3);
    assert.ok(
      acked.every((n) => n === acked[0] && n > 0),
      `acked per run: ${acked.join(", ")}`,
    );
    const byRun = /metrics: samples per CPU-second by run \(steady, else whole\): (\d+), (\d+), (\d+) —/.exec(
      run.stderr,
    );
    assert.ok(byRun, "every run's figure on stderr");
    const median = [byRun[1], byRun[2], byRun[3]].map(Number).toSorted((a, b) => a - b)[1];
    const steady = parseBenchRows(run.stdout).find(
      (r) => r.scenario.startsWith("ingest: ") && r.metric.startsWith("samples per CPU-second, steady"),
    );
    assert.ok(steady, run.stdout);
    assert.equal(Math.round(steady.value), median, "the row is the median run's");
  });
  test("--floor-decode every-reader: the floor decodes each body at the ingest and in its three consumers, its rows named for it", {
    skip:
      skip ||
      (findExecutable("prometheus") === undefined ? "prometheus is not installed: the floor's peer" : false),
  }, async () => {
    const run = await runBench([
      "--json",
      ...tiny,
      "--sides",
      "stream-floor,prometheus",
      "--scenarios",
      "ingest",
      "--floor-decode",
      "every-reader",
    ]);
    assert.equal(run.code, 0, run.stderr);
    const floor = parseBenchRows(run.stdout).filter((r) => r.scenario.startsWith("ingest, the floor"));
    assert.ok(floor.length > 0, run.stdout);
    assert.ok(
      floor.every(
        (r) =>
          r.scenario.startsWith("ingest, the floor: the stream hop and every reader decoding") &&
          r.peer === "prometheus" &&
          r.value > 0,
      ),
      JSON.stringify(floor),
    );
  });
});
