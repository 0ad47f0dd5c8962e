/**
 * Measured runs as bench rows (lab's bench-report shape), ours beside the peer's
 * run when one is given, so every row carries its ratio.
 *
 * @example
 * contenderRows("closed c=50: Limiter.check", ours, peer);
 * // decisions/s, latency p50/p99/p99.9, errors, Node CPU and Redis time per decision, allowed share
 */
import type { BenchResult, BenchRowInput } from "@casebook/lab/bench-report";
import { scenarioRows } from "@casebook/lab/bench-rows";
import type { Measured } from "./measure.ts";

export const system = "rate-limiter";

type Pick = (m: Measured) => number | undefined;

interface Metric {
  readonly metric: string;
  readonly unit: string;
  readonly pick: Pick;
  readonly direction?: BenchRowInput["direction"];
}

const metrics: readonly Metric[] = [
  { metric: "throughput", unit: "decisions/s", pick: (m) => m.report.achievedRatePerS },
  { metric: "latency p50", unit: "ms", pick: (m) => m.report.latencyMs.p50 },
  { metric: "latency p99", unit: "ms", pick: (m) => m.report.latencyMs.p99 },
  { metric: "latency p99.9", unit: "ms", pick: (m) => m.report.latencyMs.p999 },
  {
    metric: "errors (failed, timed out or dropped)",
    unit: "count",
    pick: (m) => m.report.errors + m.report.dropped,
    direction: "lower-is-better",
  },
  { metric: "Node CPU per decision", unit: "µs", pick: (m) => m.clientCpuUsPerDecision },
  { metric: "Redis time per decision", unit: "µs", pick: (m) => m.serverUsPerDecision },
];

/**
 * The rows of one scenario: every metric of `ours`, with the peer's value and the
 * ratio when `peer` ran; a metric missing on either side (Redis time on a shared
 * Redis) is left out rather than guessed.
 *
 * @example
 * renderBench(contenderRows("open 20000/s", ours, peer), "markdown");
 */
export function contenderRows(scenario: string, ours: Measured, peer?: Measured): BenchResult[] {
  const row = scenarioRows({ system, scenario, ...(peer ? { peer: peer.contender } : {}), tidy: true });
  const rows: BenchResult[] = [];
  for (const { metric, unit, pick, direction } of metrics) {
    const value = pick(ours);
    const peerValue = peer ? pick(peer) : undefined;
    if (value === undefined || (peer && peerValue === undefined)) continue;
    rows.push(
      row.value(metric, unit, value, {
        ...(direction ? { direction } : {}),
        ...(peerValue === undefined ? {} : { peer: peerValue }),
      }),
    );
  }
  rows.push(allowedRow(scenario, "allowed share", ours));
  return rows;
}

/**
 * How many decisions allowed: context for the numbers (a refusal writes nothing in
 * our script), not a score, so it never carries a peer ratio.
 *
 * @example
 * allowedRow("closed c=50", "allowed share, rate-limiter-flexible", peerRun);
 */
export function allowedRow(scenario: string, metric: string, run: Measured): BenchResult {
  return scenarioRows({ system, scenario, tidy: true }).value(metric, "%", run.allowedPct, {
    direction: "higher-is-better",
  });
}
