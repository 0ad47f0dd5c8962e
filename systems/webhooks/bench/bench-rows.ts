/**
 * The webhooks bench's rows and goal lines. The single-process drain sits beside the
 * seed's own assumption — 60 attempts/s per worker — as its peer, so the ratio reads
 * "how many of the seed's workers one of ours replaces".
 *
 * @example
 * const rows = [...drainRows(drain, 1), ...latencyRows(latency, 350)];
 */
import { type BenchResult, benchRow } from "@casebook/lab/bench-report";
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
  const scenario = drainScenario(result.deliveries, workers);
  return [
    benchRow({
      system,
      scenario,
      metric: "throughput",
      unit: "deliveries/s",
      value: result.ratePerS,
      peer: { name: seedPeer, value: SEED_ATTEMPTS_PER_S * workers },
    }),
    benchRow({ system, scenario, metric: "drain time", unit: "s", value: result.seconds }),
    benchRow({
      system,
      scenario,
      metric: "duplicates",
      unit: "count",
      value: result.duplicates,
      direction: "lower-is-better",
    }),
    benchRow({
      system,
      scenario,
      metric: "unverified",
      unit: "count",
      value: result.unverified,
      direction: "lower-is-better",
    }),
  ];
}

export function latencyRows(result: LatencyResult, ratePerS: number): BenchResult[] {
  const scenario = latencyScenario(ratePerS);
  const ms = (metric: string, value: number) => benchRow({ system, scenario, metric, unit: "ms", value });
  return [
    ms("commit→2xx p50", result.commitTo2xxMs.p50),
    ms("commit→2xx p90", result.commitTo2xxMs.p90),
    ms("commit→2xx p99", result.commitTo2xxMs.p99),
    ms("commit→2xx max", result.commitTo2xxMs.max),
    ms("commit→fan-out p50 (relay)", result.stagesMs.relayP50),
    ms("commit→fan-out p99 (relay)", result.stagesMs.relayP99),
    ms("fan-out→attempt p50 (worker)", result.stagesMs.workerP50),
    ms("fan-out→attempt p99 (worker)", result.stagesMs.workerP99),
    benchRow({
      system,
      scenario,
      metric: "delivered",
      unit: "deliveries",
      value: result.delivered,
      direction: "higher-is-better",
    }),
    benchRow({
      system,
      scenario,
      metric: "ingest errors",
      unit: "count",
      value: result.ingest.errors + result.ingest.dropped,
      direction: "lower-is-better",
    }),
    benchRow({
      system,
      scenario,
      metric: "duplicates",
      unit: "count",
      value: result.duplicates,
      direction: "lower-is-better",
    }),
  ];
}

/** The goals checked against this run (markdown only). */
export function goalLines(rows: readonly BenchResult[], ratePerS: number): string[] {
  const lines: string[] = [];
  const single = rows.find((r) => r.metric === "throughput" && r.scenario.endsWith(", 1 worker process"));
  if (single !== undefined) {
    const factor = single.value / SEED_ATTEMPTS_PER_S;
    const met = factor >= throughputGoal ? "met" : "NOT met";
    lines.push(
      `- one worker process ≥ ${throughputGoal}× the seed's ${SEED_ATTEMPTS_PER_S} attempts/s (${throughputGoal * SEED_ATTEMPTS_PER_S}/s): ${Math.round(single.value)}/s = ${factor.toFixed(1)}× — ${met}`,
    );
  }
  const p99 = rows.find((r) => r.metric === "commit→2xx p99");
  if (p99 !== undefined) {
    const met = p99.value < p99GoalMs ? "met" : "NOT met";
    lines.push(
      `- p99 commit→2xx < ${p99GoalMs} ms at ${ratePerS} deliveries/s: ${p99.value.toFixed(1)} ms — ${met}`,
    );
  }
  return lines;
}
