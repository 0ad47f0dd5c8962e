/**
 * `casebook bench payments`: the ledger's transfers/s and p99 on real PostgreSQL at each
 * client count, beside `pgbench -b tpcb-like` on the same server, same client counts,
 * same run; then payments/s end to end through the saga (the service and the acquirer
 * simulator as child processes, HTTP load), closed loop at the same client counts and an
 * open loop for p50/p99. Markdown table and the goals on stdout by default, JSON
 * lines with --json; progress on stderr. `--help` lists the scenarios and flags (bench-args.ts).
 *
 * @example
 * // node systems/payments/bench/main.ts --clients 8,16 --duration-ms 3000 --json
 * // node systems/payments/bench/main.ts --scenarios saga --saga-latency-ms 5
 */
import { availableParallelism, loadavg } from "node:os";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { type BenchResult, renderBench } from "@casebook/lab/bench-report";
import { goalLine } from "@casebook/lab/bench-rows";
import { type BenchArgs, benchHelp, parseBenchArgs } from "./bench-args.ts";
import { benchErrors } from "./bench-errors.ts";
import { ledgerRows, peerName, pgbenchRows, sagaRows, sagaScenarioOf, scenarioOf } from "./bench-rows.ts";
import {
  type BenchLedger,
  type LoadShape,
  loadShapes,
  openBenchLedger,
  runLedgerLoad,
} from "./ledger-load.ts";
import { openPgTarget, type PgTarget } from "./pg-target.ts";
import { type Pgbench, preparePgbench } from "./pgbench.ts";
import { openSagaBench, type SagaRun } from "./saga-load.ts";

const log = benchLog;

/** Issue 14's goals: single ≥ 1.5× pgbench's TPS, hot ≥ 1.0×, batches ≥ 10× in transfers/s. */
const singleGoal = 1.5;
const hotGoal = 1.0;
const batchGoal = 10;
/** The group-committed p99 may be at most this many times the serial p99. */
const p99Goal = 2;

/** PY-19's peak: 1 000 payments/s, the number one process's payments/s is read against. */
const peakPaymentsPerS = 1_000;
/** The open loop's default rate, as a share of the best closed-loop payments/s: latency below saturation. */
const openLoopShare = 0.5;

function describeTarget(target: PgTarget): string[] {
  const settings = Object.entries(target.settings)
    .map(([name, value]) => `${name}=${value}`)
    .join(", ");
  return [
    `payments bench against ${target.label}`,
    `settings: ${settings}`,
    `Node ${process.version}, ${availableParallelism()} CPUs, ${loadLine()}`,
  ];
}

/** The machine's load average now: figures taken on a shared, loaded machine say so. */
function loadLine(): string {
  const [one, five, fifteen] = loadavg().map((value) => value.toFixed(2));
  return `load average ${one} / ${five} / ${fifteen} (1 / 5 / 15 min)`;
}

function describeLedger(pgbench: Pgbench, args: BenchArgs): string {
  return [
    `${pgbench.version}, scale ${pgbench.scale} (≥ the most clients: no two clients share a branch row by necessity)`,
    `ledger: ${args.accounts} USD accounts, batches of ${args.batchSize.join(", ")};` +
      ` ${args.durationMs} ms measured per run (pgbench -T ${pgbenchSeconds(args)} s), ${args.warmupMs} ms warmup (ours)`,
  ].join("\n");
}

function pgbenchSeconds(args: BenchArgs): number {
  return Math.max(1, Math.round(args.durationMs / 1_000));
}

async function runClientCount(
  clients: number,
  ledger: BenchLedger,
  pgbench: Pgbench,
  args: BenchArgs,
): Promise<BenchResult[]> {
  log(`pgbench tpcb-like, ${clients} clients`);
  const peer = await pgbench.run({ clients, durationS: pgbenchSeconds(args) });
  const rows = pgbenchRows(peer, pgbench.scale);
  const setup = { accounts: args.accounts };
  for (const shape of loadShapes) {
    for (const batchSize of shape === "batch" ? args.batchSize : [1]) {
      const run = await runLedgerLoad(ledger, {
        shape,
        clients,
        durationMs: args.durationMs,
        warmupMs: args.warmupMs,
        batchSize,
        log,
      });
      rows.push(...ledgerRows(run, peer, setup));
    }
  }
  return rows;
}

/** The goals checked against this run's rows (markdown only: JSON stays rows). */
function ledgerGoalLines(rows: readonly BenchResult[], args: BenchArgs): string[] {
  const lines: string[] = [];
  for (const clients of args.clients) {
    const find = (shape: LoadShape, metric: string, batchSize = 1) =>
      rows.find(
        (r) =>
          r.scenario === scenarioOf(shape, clients, { accounts: args.accounts, batchSize }) &&
          r.metric === metric,
      );
    const ratioLine = (label: string, goal: number, row: BenchResult | undefined) => {
      if (row?.ratio === undefined) return;
      const claim = `c=${clients} goal ${label} ≥ ${goal}× ${peerName} TPS`;
      lines.push(goalLine(claim, `${row.ratio.toFixed(2)}×`, row.ratio >= goal));
    };
    ratioLine("single transfers (group commit)", singleGoal, find("single", "throughput"));
    ratioLine("hot account (group commit)", hotGoal, find("hot", "throughput"));
    for (const size of args.batchSize)
      ratioLine(`batches of ${size}`, batchGoal, find("batch", "throughput", size));
    const grouped = find("single", "latency p99")?.value;
    const serial = find("single-serial", "latency p99")?.value;
    if (grouped !== undefined && serial !== undefined && serial > 0) {
      const claim = `c=${clients} goal group-commit p99 ≤ ${p99Goal}× the serial p99 (${serial.toFixed(1)} ms; not at equal throughput)`;
      lines.push(goalLine(claim, `${(grouped / serial).toFixed(2)}×`, grouped <= p99Goal * serial));
    }
  }
  return lines;
}

interface Part {
  preamble: string[];
  rows: BenchResult[];
  goals: string[];
}

async function runLedgerPart(target: PgTarget, args: BenchArgs): Promise<Part> {
  const pgbench = await preparePgbench(target.url, { scale: Math.max(...args.clients), log });
  try {
    const ledger = await openBenchLedger(target.url, { accounts: args.accounts, log });
    try {
      const preamble = describeLedger(pgbench, args);
      log(preamble);
      const rows: BenchResult[] = [];
      for (const clients of args.clients)
        rows.push(...(await runClientCount(clients, ledger, pgbench, args)));
      const imbalance = await ledger.imbalance();
      // A bench that lost a cent measured a broken ledger: fail instead of printing a speed.
      if (imbalance !== 0n) throw new Error(`ledger out of balance after the run: ${imbalance} minor units`);
      return { preamble: [preamble], rows, goals: ledgerGoalLines(rows, args) };
    } finally {
      await ledger.drop();
    }
  } finally {
    await pgbench.drop();
  }
}

/** A run that charged a key twice, or lost a payment, measured a broken system: fail, print no speed. */
function checkOneChargePerPayment(run: SagaRun): void {
  if (run.authorizations !== run.payments || run.authorizationCalls !== run.authorizations) {
    throw new Error(
      `${sagaScenarioOf(run)}: ${run.payments} payments, ${run.authorizations} authorizations, ${run.authorizationCalls} authorization calls`,
    );
  }
}

async function runSagaPart(target: PgTarget, args: BenchArgs): Promise<Part> {
  const bench = await openSagaBench(target.url, {
    latencyMs: args.sagaLatencyMs,
    acquirerRatePerS: args.acquirerRatePerS,
    log,
  });
  try {
    const description = `${bench.description}; ${args.durationMs} ms measured per run, ${args.warmupMs} ms warmup`;
    log(description);
    const runs: SagaRun[] = [];
    for (const clients of args.sagaClients) {
      log(`saga, closed loop, ${clients} clients`);
      runs.push(await bench.runClosed({ clients, durationMs: args.durationMs, warmupMs: args.warmupMs }));
    }
    const best = Math.max(...runs.map((run) => run.paymentsPerS));
    const ratePerS =
      args.sagaRatePerS > 0 ? args.sagaRatePerS : Math.max(1, Math.round(best * openLoopShare));
    log(`saga, open loop, ${ratePerS} payments/s`);
    const open = await bench.runOpen({ ratePerS, durationMs: args.durationMs, warmupMs: args.warmupMs });
    runs.push(open);
    for (const run of runs) checkOneChargePerPayment(run);
    return {
      preamble: [description],
      rows: runs.flatMap(sagaRows),
      goals: sagaGoalLines(best, open),
    };
  } finally {
    await bench.close();
  }
}

function sagaGoalLines(bestPerS: number, open: SagaRun): string[] {
  const times = bestPerS > 0 ? (peakPaymentsPerS / bestPerS).toFixed(1) : "∞";
  return [
    `- end-to-end payments/s through the saga (simulator at ${open.latencyMs} ms): best ${bestPerS.toFixed(0)}/s on one service process;` +
      ` PY-19's peak of ${peakPaymentsPerS}/s is ${times}× that (replicas are stateless, but they share this machine and its database)`,
    `- open loop at ${open.ratePerS}/s: p50 ${open.report.latencyMs.p50.toFixed(1)} ms, p99 ${open.report.latencyMs.p99.toFixed(1)} ms` +
      ` (floor: 2 acquirer calls × ${open.latencyMs} ms)`,
    "- every run: one acquirer authorization per payment, no repeated authorization call (checked, the bench fails otherwise)",
  ];
}

async function runAll(target: PgTarget, args: BenchArgs, json: boolean): Promise<void> {
  const preamble = describeTarget(target);
  log(preamble.join("\n"));
  const parts: Part[] = [];
  if (args.scenarios.includes("ledger")) parts.push(await runLedgerPart(target, args));
  if (args.scenarios.includes("saga")) parts.push(await runSagaPart(target, args));
  const rows = parts.flatMap((part) => part.rows);
  if (json) return print(renderBench(rows, "json"));
  const head = [...preamble, ...parts.flatMap((part) => part.preamble)];
  const after = `after the run: ${loadLine()}`;
  print(
    [...head, "", renderBench(rows, "markdown"), "", ...parts.flatMap((part) => part.goals), after].join(
      "\n",
    ),
  );
}

function print(text: string): void {
  process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

/** `casebook bench payments`: flags, help, the engine, the run, cleanup (see lab's bench-main). */
export const benchProgram: BenchProgram<BenchArgs, PgTarget> = {
  name: "payments",
  parseArgs: parseBenchArgs,
  isArgsError: (error): error is Error => benchErrors.is(error),
  help: benchHelp,
  openTarget: () => openPgTarget({ env: process.env, log }),
  run: runAll,
};

/** Runs the bench; resolves the exit code (0 ok, 2 bad flags; a failure rejects). */
export function main(argv: readonly string[]): Promise<number> {
  return runBenchMain(benchProgram, argv);
}

if (import.meta.main) runBenchEntry(benchProgram);
