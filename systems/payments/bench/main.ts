/**
 * `casebook bench payments`: the ledger's transfers/s and p99 on real PostgreSQL at each
 * client count, beside `pgbench -b tpcb-like` on the same server, same client counts,
 * same run. Markdown table and the goals on stdout by default, JSON lines with
 * --json; progress on stderr. `--help` lists the scenarios and flags (bench-args.ts).
 *
 * @example
 * // node systems/payments/bench/main.ts --clients 8,16 --duration-ms 3000 --json
 */
import { existsSync } from "node:fs";
import { availableParallelism } from "node:os";
import { type BenchProgram, benchLog, runBenchEntry, runBenchMain } from "@casebook/lab/bench-main";
import { type BenchResult, renderBench } from "@casebook/lab/bench-report";
import { type BenchArgs, benchHelp, parseBenchArgs } from "./bench-args.ts";
import { benchErrors } from "./bench-errors.ts";
import { ledgerRows, peerName, pgbenchRows, scenarioOf } from "./bench-rows.ts";
import { type BenchLedger, loadShapes, openBenchLedger, runLedgerLoad } from "./ledger-load.ts";
import { openPgTarget, type PgTarget } from "./pg-target.ts";
import { type Pgbench, preparePgbench } from "./pgbench.ts";

const log = benchLog;

/** The goals: single transfers ≥ 1.0× pgbench's TPS, batches ≥ 10× in transfers/s. */
const singleGoal = 1.0;
const batchGoal = 10;

/** The saga scenario runs once its orchestrator exists; until then the report says it was skipped. */
const sagaOrchestrator = new URL("../src/workers/saga-orchestrator.ts", import.meta.url);

function describeRun(target: PgTarget, pgbench: Pgbench, args: BenchArgs): string {
  const settings = Object.entries(target.settings)
    .map(([name, value]) => `${name}=${value}`)
    .join(", ");
  return [
    `payments bench against ${target.label}`,
    `settings: ${settings}`,
    `${pgbench.version}, scale ${pgbench.scale} (≥ the most clients: no two clients share a branch row by necessity)`,
    `ledger: ${args.accounts} USD accounts, batch ${args.batchSize}; Node ${process.version}, ${availableParallelism()} CPUs;` +
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
  const setup = { accounts: args.accounts, batchSize: args.batchSize };
  for (const shape of loadShapes) {
    const run = await runLedgerLoad(ledger, {
      shape,
      clients,
      durationMs: args.durationMs,
      warmupMs: args.warmupMs,
      batchSize: args.batchSize,
      log,
    });
    rows.push(...ledgerRows(run, peer, setup));
  }
  return rows;
}

/** The goals checked against this run's rows (markdown only: JSON stays rows). */
function goalLines(rows: readonly BenchResult[], args: BenchArgs): string[] {
  const setup = { accounts: args.accounts, batchSize: args.batchSize };
  const lines: string[] = [];
  for (const clients of args.clients) {
    const ratioOf = (shape: "single" | "batch") =>
      rows.find((r) => r.scenario === scenarioOf(shape, clients, setup) && r.metric === "throughput")?.ratio;
    const single = ratioOf("single");
    const batch = ratioOf("batch");
    if (single !== undefined) {
      const met = single >= singleGoal ? "met" : "NOT met";
      lines.push(
        `- c=${clients} goal single transfers ≥ ${singleGoal.toFixed(1)}× ${peerName} TPS: ${single.toFixed(2)}× — ${met}`,
      );
    }
    if (batch !== undefined) {
      const met = batch >= batchGoal ? "met" : "NOT met";
      lines.push(
        `- c=${clients} goal batch transfers/s ≥ ${batchGoal}× ${peerName} TPS: ${batch.toFixed(2)}× — ${met}`,
      );
    }
  }
  const saga = existsSync(sagaOrchestrator)
    ? "src/workers/saga-orchestrator.ts exists but the bench does not drive it yet"
    : "no src/workers/saga-orchestrator.ts yet";
  lines.push(`- end-to-end payments/s through the saga (simulator at 5 ms): not measured — ${saga}`);
  return lines;
}

async function runAll(target: PgTarget, args: BenchArgs, json: boolean): Promise<void> {
  const pgbench = await preparePgbench(target.url, { scale: Math.max(...args.clients), log });
  try {
    const ledger = await openBenchLedger(target.url, { accounts: args.accounts, log });
    try {
      const preamble = describeRun(target, pgbench, args);
      log(preamble);
      const rows: BenchResult[] = [];
      for (const clients of args.clients)
        rows.push(...(await runClientCount(clients, ledger, pgbench, args)));
      const imbalance = await ledger.imbalance();
      // A bench that lost a cent measured a broken ledger: fail instead of printing a speed.
      if (imbalance !== 0n) throw new Error(`ledger out of balance after the run: ${imbalance} minor units`);
      if (json) return print(renderBench(rows, "json"));
      print([preamble, "", renderBench(rows, "markdown"), "", ...goalLines(rows, args)].join("\n"));
    } finally {
      await ledger.drop();
    }
  } finally {
    await pgbench.drop();
  }
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
