/**
 * The bench's flags and report, without running it (CI never runs the bench): a typo is
 * refused, the added latency is the gateway's percentile minus the direct call's of the same
 * round, its row the median over rounds, plain proxying is compared with Portkey and full
 * features with plain proxying, and a run that measured no whole stream is reported by its
 * errors, never as a negative overhead.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { goalLines, type LevelRuns, latencyRows, type TargetRun } from "../bench/latency-rows.ts";
import { parseBenchArgs, roundOrder } from "../bench/main.ts";
import { errors } from "../src/errors.ts";

function run(ttftP50: number, totalP50: number, ok = 10, errorCount = 0, unfinished = 0): TargetRun {
  const at = (p50: number) => ({ p50, p99: p50 * 2, max: p50 * 3, count: ok });
  return {
    result: {
      ok,
      errors: errorCount,
      unfinished,
      finished: ok,
      firstError: undefined,
      cacheHits: 0,
      ttftMs: at(ttftP50),
      totalMs: at(totalP50),
    },
    bytesPerStream: 10_240,
    cpuMsPerStream: ttftP50 / 10,
  };
}

test("bench flags: defaults 50 and 500 streams; a bad value or a warmup past the run is refused", () => {
  const args = parseBenchArgs([]);
  assert.deepEqual(args.concurrency, [50, 500]);
  assert.deepEqual(args.targets, ["floor", "edge", "portkey", "plain", "full"]);
  assert.equal(args.rounds, 3);
  assert.deepEqual(parseBenchArgs(["--concurrency", "5", "--targets", "plain"]).targets, ["plain"]);
  for (const bad of [
    ["--concurrency", "0"],
    ["--targets", "litellm"],
    ["--warmup-ms", "20000", "--duration-ms", "10000"],
    ["--rounds", "0"],
  ])
    assert.throws(
      () => parseBenchArgs(bad),
      (error: unknown) => errors.is(error, "BENCH_ARGS_INVALID"),
    );
});

test("bench report: added latency is minus the direct call; plain beside Portkey, full beside plain; the goal line", () => {
  const levels: LevelRuns[] = [
    {
      concurrency: 50,
      rounds: [
        {
          direct: run(100, 1_000),
          floor: run(100.5, 1_003),
          edge: run(100.75, 1_003.5),
          portkey: run(104, 1_010),
          plain: run(101, 1_004),
          full: run(103, 1_006),
        },
      ],
    },
  ];
  const rows = latencyRows(levels);
  const plainTtft = rows.find(
    (r) => r.scenario === "50 streams, plain proxying" && r.metric === "added TTFT p50",
  );
  assert.equal(plainTtft?.value, 1);
  assert.equal(plainTtft?.peer_value, 4);
  const fullTotal = rows.find(
    (r) => r.scenario === "50 streams, full features" && r.metric === "added total p99",
  );
  assert.equal(fullTotal?.value, 12);
  assert.equal(fullTotal?.peer, "our plain proxying");
  assert.equal(fullTotal?.peer_value, 8);
  const memory = rows.find((r) => r.metric === "RSS per open stream" && r.scenario.includes("plain"));
  assert.equal(memory?.value, 10);
  const cpu = rows.find((r) => r.metric === "CPU per stream" && r.scenario.includes("plain"));
  assert.equal(cpu?.value, 10.1);
  assert.equal(cpu?.peer_value, 10.4);
  // The floor (a bare Node relay) alone: what one more process on the path adds, no peer.
  const floorTotal = rows.find(
    (r) => r.scenario === "50 streams, floor: a bare Node relay" && r.metric === "added total p50",
  );
  assert.equal(floorTotal?.value, 3);
  assert.equal(floorTotal?.peer, undefined);
  // The relay behind the shared edge: its own rows, and the goal line names it beside the bare relay.
  const edgeTotal = rows.find(
    (r) =>
      r.scenario === "50 streams, floor: the relay behind the shared edge" && r.metric === "added total p50",
  );
  assert.equal(edgeTotal?.value, 3.5);
  assert.equal(edgeTotal?.peer, undefined);
  const goals = goalLines(levels);
  assert.match(
    goals[0] ?? "",
    /added TTFT p50: ours 1 ms vs Portkey 4 ms \(1 round; a bare Node relay adds 0.5 ms; the relay behind the shared edge 0.75 ms\) — ≤ 0.5× Portkey's: met/,
  );
  assert.match(
    goals[2] ?? "",
    /added total p50: ours 4 ms vs Portkey 10 ms \(1 round; a bare Node relay adds 3 ms; the relay behind the shared edge 3.5 ms\) — ≤ 0.5× Portkey's: met/,
  );
  assert.match(goals[3] ?? "", /added total p99: ours 8 ms vs Portkey 20 ms/);
  const noisy = goalLines([
    {
      concurrency: 50,
      rounds: [{ direct: run(100, 1_000), portkey: run(99, 990), plain: run(101, 1_001) }],
    },
  ]);
  assert.match(noisy[0] ?? "", /added TTFT p50: not judged \(Portkey -1 ms: within noise\)/);
});

test("bench report: a target that measured no whole stream has an errors row (failed + unfinished at the run's end) and no latency, and the goal is not judged", () => {
  const levels: LevelRuns[] = [
    {
      concurrency: 500,
      rounds: [{ direct: run(100, 1_000), portkey: run(0, 0, 0, 7, 30), plain: run(101, 1_004) }],
    },
  ];
  const rows = latencyRows(levels);
  const failed = rows.find((r) => r.metric === "streams failed or unfinished");
  assert.equal(failed?.value, 0);
  assert.equal(failed?.peer_value, 37);
  const plainTtft = rows.find((r) => r.metric === "added TTFT p50");
  assert.equal(plainTtft?.peer, undefined);
  assert.deepEqual(goalLines(levels), [
    "goal, 500 streams: not judged (no round measured a whole stream on each; see the errors)",
  ]);
});

test("bench report: over rounds, each added latency is against its own round's direct call, and the row is their median", () => {
  // The machine slows down in round 2 (the direct call too): paired differences stay 1, 2, 3 ms.
  const levels: LevelRuns[] = [
    {
      concurrency: 50,
      rounds: [
        { direct: run(100, 1_000), portkey: run(110, 1_020), plain: run(101, 1_001) },
        { direct: run(400, 4_000), portkey: run(500, 4_300), plain: run(402, 4_002) },
        { direct: run(100, 1_000), portkey: run(104, 1_004), plain: run(103, 1_003), full: run(0, 0, 0, 2) },
      ],
    },
  ];
  const rows = latencyRows(levels);
  const value = (scenario: string, metric: string) =>
    rows.find((r) => r.scenario === `50 streams, ${scenario}` && r.metric === metric);
  assert.equal(value("simulator direct", "TTFT p50")?.value, 100);
  assert.equal(value("plain proxying", "added TTFT p50")?.value, 2);
  assert.equal(value("plain proxying", "added TTFT p50")?.peer_value, 10);
  assert.equal(value("full features", "streams failed or unfinished")?.value, 2);
  assert.equal(value("full features", "added TTFT p50"), undefined);
  assert.match(goalLines(levels)[0] ?? "", /ours 2 ms vs Portkey 10 ms \(medians of 3 rounds\)/);
  const names = (round: number) =>
    roundOrder(
      ["direct", "portkey", "plain", "full"].map((name) => ({ name }) as { name: "direct" }),
      round,
    ).map((t) => t.name);
  assert.deepEqual(names(0), ["direct", "portkey", "plain", "full"]);
  assert.deepEqual(names(1), ["direct", "plain", "full", "portkey"]);
});

test("bench report: the A/A run (the direct call again at each round's end) is the noise; a Portkey overhead within it is not judged, or not met when ours is above it", () => {
  // Rounds' direct calls differ from themselves by 3, 5 and 4 ms at TTFT p50 (median 4).
  const aaLevel = (portkeyTtft: number, plainTtft: number): LevelRuns => ({
    concurrency: 50,
    rounds: [0, 1, 2].map(() => ({
      direct: run(100, 1_000),
      portkey: run(100 + portkeyTtft, 1_000 + 40),
      plain: run(100 + plainTtft, 1_000 + 10),
    })),
    aa: [run(103, 1_001), run(95, 1_002), run(104, 1_003)],
  });
  const rows = latencyRows([aaLevel(3, 2)]);
  const noise = rows.find(
    (r) => r.scenario.includes("(A/A)") && r.metric === "TTFT p50, |difference| from the first direct run",
  );
  assert.equal(noise?.value, 4);
  const lines = (portkey: number, plain: number) => goalLines([aaLevel(portkey, plain)]);
  assert.match(
    lines(3, 2)[0] ?? "",
    /added TTFT p50: not judged \(ours 2 ms and Portkey 3 ms both within the A\/A noise/,
  );
  assert.match(
    lines(3, 9)[0] ?? "",
    /ours 9 ms vs Portkey 3 ms, within the A\/A noise of 4 ms while ours is above it — .*NOT met/,
  );
  assert.match(
    lines(20, 9)[0] ?? "",
    /ours 9 ms vs Portkey 20 ms \(medians of 3 rounds; A\/A noise 4 ms\) — ≤ 0.5× Portkey's: met/,
  );
  // Total p50: the noise is 2 ms, Portkey adds 40: judged.
  assert.match(lines(3, 2)[2] ?? "", /added total p50: ours 10 ms vs Portkey 40 ms .* met/);
});
