/**
 * `casebook bench rate-limiter`: our limiter beside rate-limiter-flexible and beside
 * the floor (one EVALSHA of the design text's script), on one Redis, in one run.
 * Markdown table on stdout by default, JSON lines with --json; progress on stderr.
 * `--help` lists the scenarios and flags (bench/bench-args.ts).
 *
 * @example
 * // node systems/rate-limiter/bench/main.ts --duration-ms 2000 --json
 */
import { createRequire } from "node:module";
import { availableParallelism } from "node:os";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { type BenchResult, renderBench } from "@casebook/lab/bench-report";
import { goalLine } from "@casebook/lab/bench-rows";
import { type BenchArgs, benchHelp, parseBenchArgs } from "./bench-args.ts";
import { benchErrors } from "./bench-errors.ts";
import { peerName } from "./contenders.ts";
import { openRedisTarget, type RedisTarget } from "./redis-target.ts";
import { runAlgorithmsScenario } from "./scenario-algorithms.ts";
import { runBurstScenario } from "./scenario-burst.ts";
import { equalWorkLabel, runClosedScenario } from "./scenario-closed.ts";
import { runMemoryScenario } from "./scenario-memory.ts";
import { runOpenScenario } from "./scenario-open.ts";

const log = benchLog;

function packageVersion(name: string): string {
  try {
    return (createRequire(import.meta.url)(`${name}/package.json`) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

function describeRun(target: RedisTarget): string {
  return [
    `rate-limiter bench against ${target.label}`,
    `peer ${peerName} ${packageVersion(peerName)}, ioredis ${packageVersion("ioredis")}, Node ${process.version}, ${availableParallelism()} CPUs`,
  ].join("; ");
}

async function runScenarios(target: RedisTarget, args: BenchArgs): Promise<BenchResult[]> {
  const common = { durationMs: args.durationMs, warmupMs: args.warmupMs, users: args.users, log };
  // Memory runs first, on a Redis holding none of the other scenarios' keys: their expiry
  // (2-4 s TTLs) frees memory during the measurement and once took 36 B/key off a growth.
  const memory = args.only.includes("memory") ? await runMemoryScenario(target, common) : [];
  const closed = args.only.includes("closed")
    ? await runClosedScenario(target, { ...common, concurrency: args.concurrency })
    : [];
  const open = args.only.includes("open")
    ? await runOpenScenario(target, { ...common, ratePerS: args.ratePerS })
    : [];
  const burst = args.only.includes("burst") ? await runBurstScenario(target, { log }) : [];
  return [...closed, ...open, ...burst, ...memory];
}

/** The goals, checked against this run's rows (markdown only: JSON stays rows). */
function goalLines(rows: readonly BenchResult[]): string[] {
  const throughput = rows.find(
    (r) =>
      r.scenario.endsWith(`: ${equalWorkLabel}`) &&
      r.scenario.startsWith("closed") &&
      r.metric === "throughput",
  );
  const p99 = rows.find(
    (r) =>
      r.scenario.startsWith("open") &&
      r.scenario.endsWith(`: ${equalWorkLabel}`) &&
      r.metric === "latency p99",
  );
  const lines: string[] = [];
  if (throughput?.ratio !== undefined) {
    const claim = `goal Limiter.check ≥ 1.2× ${peerName} (closed loop, fixed window against fixed window)`;
    lines.push(goalLine(claim, `${throughput.ratio.toFixed(2)}×`, throughput.ratio >= 1.2));
  }
  const floor = rows.find(
    (r) =>
      r.scenario.startsWith("open") && r.scenario.includes("harness floor") && r.metric === "latency p99",
  );
  if (p99) {
    const harness = floor ? ` (the harness alone, a no-op decision: ${floor.value} ms)` : "";
    lines.push(goalLine("goal p99 < 2 ms in the open loop", `${p99.value} ms`, p99.value < 2, harness));
  }
  return lines;
}

async function runAndPrint(target: RedisTarget, args: BenchArgs, json: boolean): Promise<void> {
  const preamble = describeRun(target);
  if (json) log(preamble);
  if (args.algorithms) {
    const common = { durationMs: Math.max(100, Math.round(args.durationMs / 5)), users: args.users, log };
    const result = await runAlgorithmsScenario(target, {
      ...common,
      warmupMs: Math.round(args.warmupMs / 5),
      concurrency: args.concurrency,
    });
    if (json) return print(renderBench([...result.modelRows, ...result.measuredRows], "json"));
    return print(
      `${preamble}\n\n${result.comparisonMarkdown}\n${renderBench(result.measuredRows, "markdown")}`,
    );
  }
  const rows = await runScenarios(target, args);
  if (json) return print(renderBench(rows, "json"));
  print([preamble, "", renderBench(rows, "markdown"), "", ...goalLines(rows)].join("\n"));
}

function print(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

/** `casebook bench rate-limiter`: flags, help, the engine, the run, cleanup (see lab's bench-main). */
export const benchProgram: BenchProgram<BenchArgs, RedisTarget> = {
  name: "rate-limiter",
  parseArgs: parseBenchArgs,
  isArgsError: (error): error is Error => benchErrors.is(error),
  help: benchHelp,
  openTarget: () => openRedisTarget({ env: process.env, log }),
  run: runAndPrint,
};

/** Runs the bench; resolves the exit code (0 ok, 2 bad flags; a failure rejects). */
export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(benchProgram, argv);
}

if (import.meta.main) runBenchEntry(benchProgram);
