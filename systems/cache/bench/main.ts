/**
 * `casebook bench cache`: this node beside redis-server, measured by Redis's own
 * redis-benchmark, in one run: SET and GET unpipelined (-c 50) and pipelined (-P 16),
 * interleaved rounds (ours, redis, redis, ours, …) with medians reported, then memory:
 * RSS and used_memory before and after, per key. Markdown on stdout (JSON lines with
 * --json), progress on stderr. `--help` lists the flags (bench/bench-args.ts).
 *
 * @example
 * // node systems/cache/bench/main.ts --duration-ms 2000 --rounds 3
 */
import { execFileSync } from "node:child_process";
import { availableParallelism } from "node:os";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { type BenchResult, median, renderBench } from "@casebook/lab/bench-report";
import { goalLine, scenarioRows as rowsOf } from "@casebook/lab/bench-rows";
import { cacheErrors } from "../src/errors.ts";
import { type BenchArgs, benchHelp, parseBenchArgs } from "./bench-args.ts";
import { type BenchServer, type BenchTargets, openBenchTargets } from "./bench-targets.ts";
import { runHitRatioBench } from "./hit-ratio.ts";
import { runMemoryMatrix } from "./memory-matrix.ts";
import {
  type BenchmarkRow,
  CALIBRATION_REQUESTS,
  calibrateRequests,
  runRedisBenchmark,
} from "./redis-benchmark-run.ts";

const log = benchLog;
const TESTS = ["SET", "GET"] as const;
const MIB = 1024 * 1024;

type Medians = Map<string, BenchmarkRow>;
type Side = "ours" | "redis" | "floor";

function medians(tests: readonly string[], runs: readonly Map<string, BenchmarkRow>[]): Medians {
  const result: Medians = new Map();
  for (const test of tests) {
    const rows = runs.map((run) => run.get(test)).filter((row): row is BenchmarkRow => row !== undefined);
    if (rows.length === 0)
      throw cacheErrors.create("CACHE_BENCH_TOOL_FAILED", { detail: `no ${test} result` });
    result.set(test, {
      rps: median(rows.map((r) => r.rps)),
      p50Ms: median(rows.map((r) => r.p50Ms)),
      p99Ms: median(rows.map((r) => r.p99Ms)),
    });
  }
  return result;
}

interface Scenario {
  /** redis-benchmark test names as it prints them (SET, GET, PING_MBULK). */
  readonly tests: readonly string[];
  readonly pipeline: number;
  readonly sides: readonly Side[];
}

interface ScenarioResult {
  readonly label: string;
  readonly tests: readonly string[];
  readonly bySide: Partial<Record<Side, Medians>>;
}

function portOf(targets: BenchTargets, side: Side): number {
  return side === "ours" ? targets.ours.port : side === "redis" ? targets.redis.port : targets.floor.port;
}

/** Calibrates on our node, then runs interleaved rounds on every side with the same request count. */
async function runScenario(
  targets: BenchTargets,
  args: BenchArgs,
  scenario: Scenario,
): Promise<ScenarioResult> {
  const label = scenario.pipeline === 1 ? `-c ${args.clients}` : `-c ${args.clients} -P ${scenario.pipeline}`;
  const base = {
    command: targets.benchmark,
    tests: scenario.tests.map((t) => t.toLowerCase()),
    clients: args.clients,
    pipeline: scenario.pipeline,
    keyspace: args.keyspace,
    dataBytes: args.dataBytes,
  };
  const calibration = await runRedisBenchmark(
    { ...base, port: targets.ours.port, requests: CALIBRATION_REQUESTS },
    5_000,
  );
  const slowest = Math.min(...[...calibration.values()].map((row) => row.rps));
  const requests = calibrateRequests(slowest, args.durationMs);
  const plannedMs = scenario.tests.length * args.durationMs;
  const runs = new Map<Side, Map<string, BenchmarkRow>[]>(scenario.sides.map((side) => [side, []]));
  for (let round = 0; round < args.rounds; round++) {
    // Alternate the order, so a drift in the machine's load does not favour one side.
    const order = round % 2 === 0 ? scenario.sides : [...scenario.sides].reverse();
    for (const side of order) {
      log(
        `${scenario.tests.join(",")} ${label}: round ${round + 1}/${args.rounds}, ${side}, ${requests} requests per test`,
      );
      runs
        .get(side)!
        .push(await runRedisBenchmark({ ...base, port: portOf(targets, side), requests }, plannedMs));
    }
  }
  const bySide: Partial<Record<Side, Medians>> = {};
  for (const [side, sideRuns] of runs) bySide[side] = medians(scenario.tests, sideRuns);
  return { label, tests: scenario.tests, bySide };
}

function scenarioRows(result: ScenarioResult): BenchResult[] {
  return result.tests.flatMap((test) => {
    const redis = result.bySide.redis!.get(test)!;
    const name = test === "PING_MBULK" ? "PING" : test;
    const rowsFor = (side: "ours" | "floor") => {
      const mine = result.bySide[side]?.get(test);
      if (mine === undefined) return [];
      const scenario =
        side === "ours" ? `${name} ${result.label}` : `${name} ${result.label}, node net floor`;
      const row = rowsOf({ system: "cache", scenario, peer: "redis" });
      return [
        row.value("throughput", "req/s", mine.rps, { peer: redis.rps }),
        row.value("latency p50", "ms", mine.p50Ms, { peer: redis.p50Ms }),
        row.value("latency p99", "ms", mine.p99Ms, { peer: redis.p99Ms }),
      ];
    };
    return [...rowsFor("ours"), ...rowsFor("floor")];
  });
}

type Memory = Awaited<ReturnType<BenchServer["memory"]>>;

function memoryRows(
  before: { ours: Memory; redis: Memory },
  after: { ours: Memory; redis: Memory },
): BenchResult[] {
  const rows = rowsOf({ system: "cache", scenario: "memory", peer: "redis" });
  const row = (metric: string, unit: string, ours: number, redis: number) =>
    rows.value(metric, unit, ours, { peer: redis });
  const perKey = (side: "ours" | "redis", field: "rssBytes" | "usedBytes") =>
    after[side].keys === 0 ? 0 : (after[side][field] - before[side][field]) / after[side].keys;
  return [
    row("RSS before", "MiB", before.ours.rssBytes / MIB, before.redis.rssBytes / MIB),
    row("RSS after", "MiB", after.ours.rssBytes / MIB, after.redis.rssBytes / MIB),
    row("used_memory after", "MiB", after.ours.usedBytes / MIB, after.redis.usedBytes / MIB),
    rows.value("keys after", "count", after.ours.keys, {
      peer: after.redis.keys,
      direction: "higher-is-better",
    }),
    row("RSS growth per key", "B", perKey("ours", "rssBytes"), perKey("redis", "rssBytes")),
    row("used_memory growth per key", "B", perKey("ours", "usedBytes"), perKey("redis", "usedBytes")),
  ];
}

function goalLines(rows: readonly BenchResult[], args: BenchArgs): string[] {
  const ratio = (scenario: string) =>
    rows.find((r) => r.scenario === scenario && r.metric === "throughput")?.ratio;
  const lines: string[] = [];
  for (const [label, goal] of [
    [`-c ${args.clients}`, 0.7],
    [`-c ${args.clients} -P ${args.pipeline}`, 0.35],
  ] as const) {
    for (const test of TESTS) {
      const value = ratio(`${test} ${label}`);
      if (value === undefined) continue;
      lines.push(
        goalLine(`goal ${test} ${label} ≥ ${goal}× redis-server`, `${value.toFixed(2)}×`, value >= goal),
      );
    }
  }
  const floor = ratio(`PING -c ${args.clients}, node net floor`);
  const ping = ratio(`PING -c ${args.clients}`);
  if (floor !== undefined && ping !== undefined) {
    lines.push(
      `- ceiling: a node:net server that parses nothing answers PING at ${floor.toFixed(2)}× redis-server here; this node at ${ping.toFixed(2)}×`,
    );
  }
  return lines;
}

function redisVersion(): string {
  try {
    return (
      execFileSync("redis-server", ["--version"], { encoding: "utf8", timeout: 5_000 }).split(" ")[2] ??
      "unknown"
    );
  } catch {
    return "unknown";
  }
}

async function runAndPrint(targets: BenchTargets, args: BenchArgs, json: boolean): Promise<void> {
  const preamble =
    `cache bench: redis-benchmark -t set,get -r ${args.keyspace} -d ${args.dataBytes}, ${args.rounds} interleaved rounds, medians; ` +
    `peer redis-server ${redisVersion()}; Node ${process.version}; ${availableParallelism()} CPUs shared with the benchmark client`;
  log(preamble);
  const before = { ours: await targets.ours.memory(), redis: await targets.redis.memory() };
  const unpipelined = await runScenario(targets, args, {
    tests: TESTS,
    pipeline: 1,
    sides: ["ours", "redis"],
  });
  const pipelined = await runScenario(targets, args, {
    tests: TESTS,
    pipeline: args.pipeline,
    sides: ["ours", "redis"],
  });
  // PING against Node's socket floor: how close to redis-server any node:net server can get here.
  const ping = await runScenario(targets, args, {
    tests: ["PING_MBULK"],
    pipeline: 1,
    sides: ["ours", "redis", "floor"],
  });
  log(`filling all ${args.keyspace} keys on both servers for the memory rows`);
  await Promise.all([
    targets.ours.fill(args.keyspace, args.dataBytes),
    targets.redis.fill(args.keyspace, args.dataBytes),
  ]);
  const after = { ours: await targets.ours.memory(), redis: await targets.redis.memory() };
  const rows = [
    ...scenarioRows(unpipelined),
    ...scenarioRows(pipelined),
    ...scenarioRows(ping),
    ...memoryRows(before, after),
  ];
  const hitRatio =
    args.hitRatioRequests > 0
      ? runHitRatioBench({
          keys: args.hitRatioKeys,
          requests: args.hitRatioRequests,
          seed: "cache-bench",
          log,
        })
      : undefined;
  const matrix = args.memoryKeys.some((n) => n > 0)
    ? await runMemoryMatrix({ keyCounts: args.memoryKeys, valueSizes: args.memoryValues, log })
    : undefined;
  if (json) return print(renderBench([...rows, ...(hitRatio?.rows ?? []), ...(matrix?.rows ?? [])], "json"));
  const study = hitRatio ? ["", `hit ratio (CA-24), ${args.hitRatioKeys} keys:`, "", hitRatio.markdown] : [];
  const memory = matrix
    ? ["", matrix.preamble, "", renderBench(matrix.rows, "markdown"), "", ...matrix.goals]
    : [];
  print(
    [preamble, "", renderBench(rows, "markdown"), "", ...goalLines(rows, args), ...study, ...memory].join(
      "\n",
    ),
  );
}

function print(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

/** `casebook bench cache`: flags, help, both servers, the run, cleanup (see lab's bench-main). */
export const benchProgram: BenchProgram<BenchArgs, BenchTargets> = {
  name: "cache",
  parseArgs: parseBenchArgs,
  isArgsError: (error): error is Error => cacheErrors.is(error, "CACHE_BENCH_ARGS_INVALID"),
  help: benchHelp,
  openTarget: () => openBenchTargets(log),
  run: runAndPrint,
};

export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(benchProgram, argv);
}

if (import.meta.main) runBenchEntry(benchProgram);
