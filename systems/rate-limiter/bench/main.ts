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
import { type BenchResult, benchFormat, renderBench } from "@casebook/lab/bench-report";
import { type BenchArgs, benchHelp, parseBenchArgs } from "./bench-args.ts";
import { benchErrors } from "./bench-errors.ts";
import { peerName } from "./contenders.ts";
import { openRedisTarget, type RedisTarget } from "./redis-target.ts";
import { runAlgorithmsScenario } from "./scenario-algorithms.ts";
import { runClosedScenario } from "./scenario-closed.ts";
import { runMemoryScenario } from "./scenario-memory.ts";
import { runOpenScenario } from "./scenario-open.ts";

const log = (line: string) => process.stderr.write(`${line}\n`);

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
  return [...closed, ...open, ...memory];
}

/** The goals, checked against this run's rows (markdown only: JSON stays rows). */
function goalLines(rows: readonly BenchResult[]): string[] {
  const throughput = rows.find(
    (r) =>
      r.scenario.endsWith(": Limiter.check") && r.scenario.startsWith("closed") && r.metric === "throughput",
  );
  const p99 = rows.find(
    (r) =>
      r.scenario.startsWith("open") && r.scenario.endsWith(": Limiter.check") && r.metric === "latency p99",
  );
  const lines: string[] = [];
  if (throughput?.ratio !== undefined) {
    const met = throughput.ratio >= 1.2 ? "met" : "NOT met";
    lines.push(
      `- goal Limiter.check ≥ 1.2× ${peerName} (closed loop): ${throughput.ratio.toFixed(2)}× — ${met}`,
    );
  }
  const floor = rows.find(
    (r) =>
      r.scenario.startsWith("open") && r.scenario.includes("harness floor") && r.metric === "latency p99",
  );
  if (p99) {
    const met = p99.value < 2 ? "met" : "NOT met";
    const harness = floor ? ` (the harness alone, a no-op decision: ${floor.value} ms)` : "";
    lines.push(`- goal p99 < 2 ms in the open loop: ${p99.value} ms — ${met}${harness}`);
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

/** Runs the bench; resolves the exit code (0 ok, 1 failed, 2 bad flags). */
export async function main(argv: readonly string[]): Promise<number> {
  let args: BenchArgs;
  try {
    args = parseBenchArgs(argv);
  } catch (error) {
    if (!benchErrors.is(error)) throw error;
    log(`rate-limiter bench: ${error.message}`);
    return 2;
  }
  if (args.help) {
    print(benchHelp);
    return 0;
  }
  const target = await openRedisTarget({ env: process.env, log });
  // Ctrl-C still deletes the run's keys and stops a spawned Redis.
  const interrupted = (signal: NodeJS.Signals) => {
    log(`${signal}: cleaning up`);
    void target.close().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  };
  process.once("SIGINT", interrupted);
  process.once("SIGTERM", interrupted);
  try {
    await runAndPrint(target, args, benchFormat(argv) === "json");
    return 0;
  } finally {
    await target.close();
    process.off("SIGINT", interrupted);
    process.off("SIGTERM", interrupted);
  }
}

if (import.meta.main) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      log(
        `rate-limiter bench failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
      );
      process.exitCode = 1;
    },
  );
}
