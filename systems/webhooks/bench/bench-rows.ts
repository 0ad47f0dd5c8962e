/**
 * The webhooks bench's rows and goal lines. The single-process drain sits beside the
 * seed's own assumption — 60 attempts/s per worker — as its peer, so the ratio reads
 * "how many of the seed's workers one of ours replaces".
 *
 * @example
 * const rows = [...drainRows(drain, 1), ...latencyRows(latency, 350)];
 */
import type { BenchResult } from "@casebook/lab/bench-report";
import { findRow, goalLine, scenarioRows } from "@casebook/lab/bench-rows";
import type { DrainResult } from "./drain-run.ts";
import type { LatencyResult } from "./latency-run.ts";

const system = "webhooks";
/** WH-05: the seed's measured attempts per second of one worker. */
export const SEED_ATTEMPTS_PER_S = 60;
export const seedPeer = "seed 003: 60 attempts/s per worker";
/** The goals. */
export const throughputGoal = 20;
export const p99GoalMs = 250;

export function drainScenario(deliveries: number, workers: number): string {
  return `drain ${deliveries} deliveries, ${workers} worker process${workers === 1 ? "" : "es"}`;
}

export function latencyScenario(ratePerS: number): string {
  return `open loop ${ratePerS} deliveries/s, 1 worker process`;
}

export function drainRows(result: DrainResult, workers: number): BenchResult[] {
  const row = scenarioRows({ system, scenario: drainScenario(result.deliveries, workers), peer: seedPeer });
  return [
    row.value("throughput", "deliveries/s", result.ratePerS, { peer: SEED_ATTEMPTS_PER_S * workers }),
    row.value("drain time", "s", result.seconds),
    row.count("duplicates", result.duplicates),
    row.count("unverified", result.unverified),
  ];
}

export function latencyRows(result: LatencyResult, ratePerS: number): BenchResult[] {
  const row = scenarioRows({ system, scenario: latencyScenario(ratePerS) });
  const ms = (metric: string, value: number) => row.value(metric, "ms", value);
  return [
    ...row.percentiles("commit→2xx", ["p50", "p90", "p99", "max"], result.commitTo2xxMs),
    ms("commit→fan-out p50 (relay)", result.stagesMs.relayP50),
    ms("commit→fan-out p99 (relay)", result.stagesMs.relayP99),
    ms("fan-out→attempt p50 (worker)", result.stagesMs.workerP50),
    ms("fan-out→attempt p99 (worker)", result.stagesMs.workerP99),
    row.value("delivered", "deliveries", result.delivered, { direction: "higher-is-better" }),
    row.count("ingest errors", result.ingest.errors + result.ingest.dropped),
    row.count("duplicates", result.duplicates),
  ];
}

/** The goals checked against this run (markdown only). */
export function goalLines(rows: readonly BenchResult[], ratePerS: number): string[] {
  const lines: string[] = [];
  const single = findRow(rows, { metric: "throughput", scenario: (s) => s.endsWith(", 1 worker process") });
  if (single !== undefined) {
    const factor = single.value / SEED_ATTEMPTS_PER_S;
    lines.push(
      goalLine(
        `one worker process ≥ ${throughputGoal}× the seed's ${SEED_ATTEMPTS_PER_S} attempts/s (${throughputGoal * SEED_ATTEMPTS_PER_S}/s)`,
        `${Math.round(single.value)}/s = ${factor.toFixed(1)}×`,
        factor >= throughputGoal,
      ),
    );
  }
  const p99 = findRow(rows, { metric: "commit→2xx p99" });
  if (p99 !== undefined) {
    lines.push(
      goalLine(
        `p99 commit→2xx < ${p99GoalMs} ms at ${ratePerS} deliveries/s`,
        `${p99.value.toFixed(1)} ms`,
        p99.value < p99GoalMs,
      ),
    );
  }
  return lines;
}
