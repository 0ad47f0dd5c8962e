/**
 * Measured runs as bench rows (lab's bench-report shape): each ledger run beside the
 * pgbench run at the same client count, so throughput and latency carry their ratio.
 *
 * @example
 * ledgerRows(singleRun, pgbenchRun, { accounts: 1_000 });
 * // transfers/s vs TPS, latency p50/p99 vs pgbench's, errors
 */
import type { BenchResult } from "@casebook/lab/bench-report";
import { scenarioRows } from "@casebook/lab/bench-rows";
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
    single: `transfer, random pairs of ${setup.accounts} accounts, group commit`,
    "single-serial": `transfer, random pairs of ${setup.accounts} accounts, one transaction each`,
    hot: "transfer, all out of one hot account, group commit",
    batch: `batch of ${setup.batchSize} (createTransfers, a result per transfer)`,
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
export function ledgerRows(run: LedgerRun, peer: PgbenchRun, setup: { accounts: number }): BenchResult[] {
  const row = scenarioRows({
    system,
    scenario: scenarioOf(run.shape, run.clients, { ...setup, batchSize: run.batchSize }),
    peer: peerName,
    tidy: true,
  });
  const withPeer = run.shape !== "batch";
  const latency = run.shape === "batch" ? "batch latency" : "latency";
  return [
    row.value("throughput", "transfers/s", run.transfersPerS, { peer: peer.tps }),
    ...row.percentiles(
      latency,
      ["p50", "p99"],
      run.report.latencyMs,
      withPeer ? { peer: peer.latencyMs } : {},
    ),
    row.value("Node CPU per transfer", "µs", run.clientCpuUsPerTransfer),
    row.count("errors (failed or timed out)", run.report.errors),
  ];
}

/**
 * pgbench's own run, on its own rows: the numbers every ratio is taken against.
 *
 * @example
 * pgbenchRows(peer, 32); // TPS, latency p50 and p99, failed transactions
 */
export function pgbenchRows(run: PgbenchRun, scale: number): BenchResult[] {
  const row = scenarioRows({
    system,
    scenario: `c=${run.clients} peer: ${peerName}, scale ${scale}`,
    tidy: true,
  });
  return [
    row.value("throughput", "transactions/s", run.tps),
    ...row.percentiles("latency", ["p50", "p99"], run.latencyMs),
    row.count("failed transactions", run.failed),
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
  const row = scenarioRows({ system, scenario: sagaScenarioOf(run), tidy: true });
  const latency = run.mode === "open" ? "latency" : "service time";
  const perPayment = run.payments > 0 ? run.authorizations / run.payments : 0;
  return [
    row.value("throughput", "payments/s", run.paymentsPerS),
    ...row.percentiles(latency, ["p50", "p99"], run.report.latencyMs),
    row.count("errors (not 201 captured, timed out or dropped)", run.report.errors + run.report.dropped),
    row.value(
      "acquirer authorizations per payment",
      "authorizations",
      Math.round(perPayment * 1_000) / 1_000,
      {
        direction: "lower-is-better",
        tidy: false,
      },
    ),
    row.count("repeated authorization calls", run.authorizationCalls - run.authorizations),
  ];
}
