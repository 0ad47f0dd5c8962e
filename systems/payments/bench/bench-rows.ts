/**
 * Measured runs as bench rows (lab's bench-report shape): each ledger run beside the
 * pgbench run at the same client count, so throughput and latency carry their ratio.
 *
 * @example
 * ledgerRows(singleRun, pgbenchRun, { accounts: 1_000, batchSize: 100 });
 * // transfers/s vs TPS, latency p50/p99 vs pgbench's, errors
 */
import { type BenchResult, benchRow, tidyValue } from "@casebook/lab/bench-report";
import type { LedgerRun, LoadShape } from "./ledger-load.ts";
import type { PgbenchRun } from "./pgbench.ts";
import type { SagaRun } from "./saga-load.ts";

export const system = "payments";
export const peerName = "pgbench tpcb-like";

/** The scenario label of one shape at one client count; goals look rows up by it. */
export function scenarioOf(
  shape: LoadShape,
  clients: number,
  setup: { accounts: number; batchSize: number },
) {
  const what = {
    single: `transfer, random pairs of ${setup.accounts} accounts`,
    hot: "transfer, all out of one hot account",
    batch: `transferBatch of ${setup.batchSize}, atomic per batch`,
  }[shape];
  return `c=${clients} ${what}`;
}

/**
 * The rows of one ledger run. A batch's latency is a whole batch's, so it gets no peer:
 * comparing it with one TPC-B transaction would compare different work.
 *
 * @example
 * renderBench(ledgerRows(run, peer, setup), "markdown");
 */
export function ledgerRows(
  run: LedgerRun,
  peer: PgbenchRun,
  setup: { accounts: number; batchSize: number },
): BenchResult[] {
  const scenario = scenarioOf(run.shape, run.clients, setup);
  const withPeer = run.shape !== "batch";
  const latency = run.shape === "batch" ? "batch latency" : "latency";
  const row = (metric: string, unit: string, value: number, peerValue?: number) =>
    benchRow({
      system,
      scenario,
      metric,
      unit,
      value: tidyValue(value),
      ...(peerValue === undefined ? {} : { peer: { name: peerName, value: tidyValue(peerValue) } }),
    });
  return [
    row("throughput", "transfers/s", run.transfersPerS, peer.tps),
    row(`${latency} p50`, "ms", run.report.latencyMs.p50, withPeer ? peer.latencyMs.p50 : undefined),
    row(`${latency} p99`, "ms", run.report.latencyMs.p99, withPeer ? peer.latencyMs.p99 : undefined),
    row("Node CPU per transfer", "µs", run.clientCpuUsPerTransfer),
    benchRow({
      system,
      scenario,
      metric: "errors (failed or timed out)",
      unit: "count",
      value: run.report.errors,
      direction: "lower-is-better",
    }),
  ];
}

/**
 * pgbench's own run, on its own rows: the numbers every ratio is taken against.
 *
 * @example
 * pgbenchRows(peer, 32); // TPS, latency p50 and p99, failed transactions
 */
export function pgbenchRows(run: PgbenchRun, scale: number): BenchResult[] {
  const scenario = `c=${run.clients} peer: ${peerName}, scale ${scale}`;
  const row = (metric: string, unit: string, value: number) =>
    benchRow({ system, scenario, metric, unit, value: tidyValue(value) });
  return [
    row("throughput", "transactions/s", run.tps),
    row("latency p50", "ms", run.latencyMs.p50),
    row("latency p99", "ms", run.latencyMs.p99),
    benchRow({
      system,
      scenario,
      metric: "failed transactions",
      unit: "count",
      value: run.failed,
      direction: "lower-is-better",
    }),
  ];
}

/** The scenario label of a saga run; the goal lines look rows up by it. */
export function sagaScenarioOf(run: Pick<SagaRun, "mode" | "clients" | "ratePerS" | "latencyMs">): string {
  const what = `POST /v1/payments through the saga, acquirer at ${run.latencyMs} ms`;
  return run.mode === "closed" ? `c=${run.clients} ${what}` : `open loop ${run.ratePerS}/s ${what}`;
}

/**
 * The rows of one saga run: payments/s, latency (service time in a closed loop, from the
 * intended send time in an open one), failures, and the acquirer's count of authorizations per
 * payment created and of repeated authorization calls — 1 and 0, or the system charged twice.
 * No peer: nothing else on this machine runs this saga.
 *
 * @example
 * renderBench(sagaRows(run), "markdown");
 */
export function sagaRows(run: SagaRun): BenchResult[] {
  const scenario = sagaScenarioOf(run);
  const row = (metric: string, unit: string, value: number, direction?: "lower-is-better") =>
    benchRow({
      system,
      scenario,
      metric,
      unit,
      value: tidyValue(value),
      ...(direction ? { direction } : {}),
    });
  const latency = run.mode === "open" ? "latency" : "service time";
  const perPayment = run.payments > 0 ? run.authorizations / run.payments : 0;
  return [
    row("throughput", "payments/s", run.paymentsPerS),
    row(`${latency} p50`, "ms", run.report.latencyMs.p50),
    row(`${latency} p99`, "ms", run.report.latencyMs.p99),
    row(
      "errors (not 201 captured, timed out or dropped)",
      "count",
      run.report.errors + run.report.dropped,
      "lower-is-better",
    ),
    benchRow({
      system,
      scenario,
      metric: "acquirer authorizations per payment",
      unit: "authorizations",
      value: Math.round(perPayment * 1_000) / 1_000,
      direction: "lower-is-better",
    }),
    row(
      "repeated authorization calls",
      "count",
      run.authorizationCalls - run.authorizations,
      "lower-is-better",
    ),
  ];
}
