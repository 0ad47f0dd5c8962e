/**
 * The bench's rows from its runs: per concurrency, the simulator called directly (the
 * baseline), the latency each gateway ADDS to it (its percentile minus the direct run's:
 * TTFT and total, p50 and p99) — plain proxying beside Portkey, full features beside plain
 * proxying (the features' cost) — and the memory each gateway holds per open stream. The
 * goal line: plain proxying adds at most half of Portkey's overhead at p50 and at p99.
 *
 * @example
 * const rows = latencyRows([{ concurrency: 50, runs: { direct, portkey, plain, full } }]);
 * goalLines(rows); // ["50 streams: TTFT p50 0.9 ms vs Portkey 2.4 ms (≤ 0.5×: met)", …]
 */
import { type BenchResult, benchRow } from "@casebook/lab/bench-report";
import type { TargetName } from "./bench-targets.ts";
import type { LatencyMs, RunResult } from "./stream-load-child.ts";

const SYSTEM = "llm-gateway";
export const GOAL_FACTOR = 0.5;

export interface TargetRun {
  readonly result: RunResult;
  /** RSS mid-run minus RSS idle before it, divided by the streams held open. */
  readonly bytesPerStream: number;
}

export interface LevelRuns {
  readonly concurrency: number;
  readonly runs: Partial<Record<TargetName, TargetRun>>;
}

const POINTS = [
  ["TTFT p50", "ttftMs", "p50"],
  ["TTFT p99", "ttftMs", "p99"],
  ["total p50", "totalMs", "p50"],
  ["total p99", "totalMs", "p99"],
] as const;

function at(run: TargetRun, key: "ttftMs" | "totalMs", point: keyof LatencyMs): number {
  return run.result[key][point];
}

function round(value: number): number {
  return Math.round(value * 100) / 100;
}

/** `run`'s percentile minus the direct run's: what the hop through the gateway costs. */
export function added(
  run: TargetRun,
  direct: TargetRun,
  key: "ttftMs" | "totalMs",
  point: "p50" | "p99",
): number {
  return round(at(run, key, point) - at(direct, key, point));
}

/** A run with no stream measured to its end has no percentile to compare: its errors row says why. */
function measured(run: TargetRun | undefined): TargetRun | undefined {
  return run !== undefined && run.result.ok > 0 && run.result.ttftMs.count > 0 ? run : undefined;
}

function errorRows(concurrency: number, runs: LevelRuns["runs"]): BenchResult[] {
  // A stream still running when its run ended failed to finish in time: counted with the errors.
  const failed = (run: TargetRun) => run.result.errors + run.result.unfinished;
  const rows: BenchResult[] = [];
  const scenario = (what: string) => `${concurrency} streams, ${what}`;
  const { portkey, plain, full } = runs;
  const portkeyPeer = portkey ? { peer: { name: "portkey 1.15.2", value: failed(portkey) } } : {};
  if (plain)
    rows.push(
      benchRow({
        system: SYSTEM,
        scenario: scenario("plain proxying"),
        metric: "streams failed or unfinished",
        unit: "streams",
        direction: "lower-is-better",
        value: failed(plain),
        ...portkeyPeer,
      }),
    );
  if (full)
    rows.push(
      benchRow({
        system: SYSTEM,
        scenario: scenario("full features"),
        metric: "streams failed or unfinished",
        unit: "streams",
        direction: "lower-is-better",
        value: failed(full),
      }),
    );
  return rows;
}

export function latencyRows(levels: readonly LevelRuns[]): BenchResult[] {
  const rows: BenchResult[] = [];
  for (const level of levels) {
    const { concurrency } = level;
    rows.push(...errorRows(concurrency, level.runs));
    const direct = measured(level.runs.direct);
    const portkey = measured(level.runs.portkey);
    const plain = measured(level.runs.plain);
    const full = measured(level.runs.full);
    if (!direct) continue;
    const scenario = (what: string) => `${concurrency} streams, ${what}`;
    for (const [metric, key, point] of POINTS) {
      rows.push(
        benchRow({
          system: SYSTEM,
          scenario: scenario("simulator direct"),
          metric,
          unit: "ms",
          value: round(at(direct, key, point)),
        }),
      );
    }
    for (const [metric, key, point] of POINTS) {
      if (!plain) break;
      rows.push(
        benchRow({
          system: SYSTEM,
          scenario: scenario("plain proxying"),
          metric: `added ${metric}`,
          unit: "ms",
          value: added(plain, direct, key, point),
          ...(portkey ? { peer: { name: "portkey 1.15.2", value: added(portkey, direct, key, point) } } : {}),
        }),
      );
    }
    for (const [metric, key, point] of POINTS) {
      if (!full) break;
      rows.push(
        benchRow({
          system: SYSTEM,
          scenario: scenario("full features"),
          metric: `added ${metric}`,
          unit: "ms",
          value: added(full, direct, key, point),
          ...(plain ? { peer: { name: "our plain proxying", value: added(plain, direct, key, point) } } : {}),
        }),
      );
    }
    const kib = (run: TargetRun) => round(run.bytesPerStream / 1024);
    if (plain)
      rows.push(
        benchRow({
          system: SYSTEM,
          scenario: scenario("plain proxying"),
          metric: "RSS per open stream",
          unit: "KiB",
          value: kib(plain),
          ...(portkey ? { peer: { name: "portkey 1.15.2", value: kib(portkey) } } : {}),
        }),
      );
    if (full)
      rows.push(
        benchRow({
          system: SYSTEM,
          scenario: scenario("full features"),
          metric: "RSS per open stream",
          unit: "KiB",
          value: kib(full),
        }),
      );
  }
  return rows;
}

/** One line per concurrency and percentile: plain proxying's added TTFT and total against Portkey's × 0.5. */
export function goalLines(levels: readonly LevelRuns[]): string[] {
  const lines: string[] = [];
  for (const { concurrency, runs } of levels) {
    const [direct, portkey, plain] = [measured(runs.direct), measured(runs.portkey), measured(runs.plain)];
    if (!direct || !portkey || !plain) {
      lines.push(`goal, ${concurrency} streams: not judged (a run measured no whole stream; see its errors)`);
      continue;
    }
    for (const [metric, key, point] of POINTS) {
      const ours = added(plain, direct, key, point);
      const theirs = added(portkey, direct, key, point);
      if (theirs <= 0) {
        // Portkey's percentile at or under the direct call's: its overhead is below this run's noise.
        lines.push(
          `goal, ${concurrency} streams, added ${metric}: not judged (Portkey ${theirs} ms: within noise)`,
        );
        continue;
      }
      const met = ours <= GOAL_FACTOR * theirs;
      lines.push(
        `goal, ${concurrency} streams, added ${metric}: ours ${ours} ms vs Portkey ${theirs} ms — ≤ ${GOAL_FACTOR}× Portkey's: ${met ? "met" : "NOT met"}`,
      );
    }
  }
  return lines;
}
