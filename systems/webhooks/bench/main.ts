/**
 * `casebook bench webhooks`: end-to-end deliveries/s (commit → the receiver's 2xx) with 1, 2
 * and 4 worker processes draining a backlog, beside the seed's 60 attempts/s per worker;
 * and commit→2xx p50/p99 at the seed's peak of 350 tasks/s, open loop. Real PostgreSQL,
 * a fresh schema per run. Markdown table and the goals on stdout by default, JSON
 * lines with --json; progress on stderr. `--help` lists the scenarios and flags.
 *
 * @example
 * // node systems/webhooks/bench/main.ts --workers 1,4 --backlog 50000 --json
 */
import { availableParallelism } from "node:os";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { type BenchResult, renderBench } from "@casebook/lab/bench-report";
import { type BenchArgs, benchHelp, parseBenchArgs } from "./bench-args.ts";
import { benchErrors } from "./bench-errors.ts";
import { drainRows, goalLines, latencyRows } from "./bench-rows.ts";
import { runDrain } from "./drain-run.ts";
import { runLatency } from "./latency-run.ts";
import { openPgTarget, type PgTarget } from "./pg-target.ts";

const log = benchLog;

function describeRun(target: PgTarget, args: BenchArgs): string {
  const settings = Object.entries(target.settings)
    .map(([name, value]) => `${name}=${value}`)
    .join(", ");
  return [
    `webhooks bench against ${target.label}`,
    `settings: ${settings}`,
    `workers: ${args.maxInFlight} sends in flight and ${args.pool} connections per process; ${args.subscriptions} subscriptions per event,` +
      ` ${args.payloadBytes} B payloads; receiver on 127.0.0.1 (verifies every signature); Node ${process.version}, ${availableParallelism()} CPUs`,
  ].join("\n");
}

async function runAll(target: PgTarget, args: BenchArgs, json: boolean): Promise<void> {
  const preamble = describeRun(target, args);
  log(preamble);
  const worker = { maxInFlight: args.maxInFlight, poolMax: args.pool };
  const common = { subscriptions: args.subscriptions, payloadBytes: args.payloadBytes, worker, log };
  const rows: BenchResult[] = [];
  for (const workers of args.workers) {
    const drain = await runDrain(target, { ...common, workers, backlog: args.backlog });
    log(
      `drain, ${workers} process(es): ${Math.round(drain.ratePerS)} deliveries/s, ${drain.seconds.toFixed(1)} s`,
    );
    rows.push(...drainRows(drain, workers));
  }
  const latency = await runLatency(target, {
    ...common,
    ratePerS: args.rate,
    durationMs: args.durationMs,
    warmupMs: args.warmupMs,
  });
  rows.push(...latencyRows(latency, args.rate));
  if (json) return print(renderBench(rows, "json"));
  print([preamble, "", renderBench(rows, "markdown"), "", ...goalLines(rows, args.rate)].join("\n"));
}

function print(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

/** `casebook bench webhooks`: flags, help, the engine, the run, cleanup (see lab's bench-main). */
export const benchProgram: BenchProgram<BenchArgs, PgTarget> = {
  name: "webhooks",
  parseArgs: parseBenchArgs,
  isArgsError: (error): error is Error => benchErrors.is(error, "WEBHOOKS_BENCH_ARGS_INVALID"),
  help: benchHelp,
  openTarget: () => openPgTarget({ env: process.env }),
  run: runAll,
};

/** Runs the bench; resolves the exit code (0 ok, 2 bad flags; a failure rejects). */
export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(benchProgram, argv);
}

if (import.meta.main) runBenchEntry(benchProgram);
