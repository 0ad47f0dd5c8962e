/**
 * The row builders every bench repeats on top of bench-report's `benchRow`: rows of one
 * scenario with the system and scenario bound once (an optional peer value per row, tidied
 * values), counts that must stay low (errors, duplicates), percentile rows from a latency
 * summary, finding a row again, and the markdown goal lines ("… — met" / "… — NOT met").
 *
 * @example
 * const row = scenarioRows({ system: "payments", scenario: "c=8 transfer", peer: "pgbench" });
 * const rows = [
 *   row.value("throughput", "transfers/s", 1234.5, { peer: 1000 }),
 *   ...row.percentiles("latency", ["p50", "p99"], run.latencyMs, { peer: pgbench.latencyMs }),
 *   row.count("errors", run.errors),
 * ];
 * goalLine("goal single ≥ 1.0× pgbench TPS", `${ratio.toFixed(2)}×`, ratio >= 1); // "- goal … : 1.23× — met"
 */
import { type BenchResult, benchRow, type Direction, tidyValue } from "./bench-report.ts";

export interface RowOptions {
  /** The peer's value of this metric; the row then carries the ratio. Needs `peer` on the scenario. */
  peer?: number;
  direction?: Direction;
  /** Round to 3 significant digits (bench-report's `tidyValue`). Default: the scenario's `tidy`. */
  tidy?: boolean;
}

export interface ScenarioRows {
  /** One metric of the scenario. */
  value(metric: string, unit: string, value: number, options?: RowOptions): BenchResult;
  /** A count that should stay low (errors, duplicates, failures): lower-is-better, never tidied. */
  count(metric: string, value: number, options?: { unit?: string; peer?: number }): BenchResult;
  /**
   * `${prefix} p50`, `${prefix} p99`… in ms, from a summary keyed by percentile (`p999` is
   * printed `p99.9`), each beside the peer's summary when given.
   */
  percentiles<K extends string>(
    prefix: string,
    keys: readonly K[],
    latencyMs: Readonly<Record<K, number>>,
    options?: { peer?: Readonly<Record<K, number>>; unit?: string; tidy?: boolean },
  ): BenchResult[];
}

/** How a percentile key reads in a metric name: p999 → p99.9, max → max. */
export function percentileLabel(key: string): string {
  const digits = /^p(\d+)$/.exec(key)?.[1];
  if (digits === undefined || digits.length <= 2) return key;
  return `p${digits.slice(0, 2)}.${digits.slice(2)}`;
}

/**
 * Row builders for one scenario (see the module's example).
 *
 * @example
 * scenarioRows({ system: "webhooks", scenario: "drain 1000" }).count("duplicates", 0);
 */
export function scenarioRows(where: {
  system: string;
  scenario: string;
  /** The peer's name, for rows given a `peer` value. */
  peer?: string;
  /** Tidy every value unless a row says otherwise. Default false. */
  tidy?: boolean;
}): ScenarioRows {
  const { system, scenario } = where;
  const value = (metric: string, unit: string, raw: number, options: RowOptions = {}): BenchResult => {
    const tidy = options.tidy ?? where.tidy ?? false;
    const shown = (n: number) => (tidy ? tidyValue(n) : n);
    return benchRow({
      system,
      scenario,
      metric,
      unit,
      value: shown(raw),
      ...(options.direction ? { direction: options.direction } : {}),
      ...(options.peer !== undefined && where.peer !== undefined
        ? { peer: { name: where.peer, value: shown(options.peer) } }
        : {}),
    });
  };
  return {
    value,
    count: (metric, raw, options = {}) =>
      value(metric, options.unit ?? "count", raw, {
        direction: "lower-is-better",
        tidy: false,
        ...(options.peer === undefined ? {} : { peer: options.peer }),
      }),
    percentiles: (prefix, keys, latencyMs, options = {}) =>
      keys.map((key) =>
        value(`${prefix} ${percentileLabel(key)}`, options.unit ?? "ms", latencyMs[key], {
          ...(options.peer ? { peer: options.peer[key] } : {}),
          ...(options.tidy === undefined ? {} : { tidy: options.tidy }),
        }),
      ),
  };
}

/**
 * The first row matching every given field (a goal line looks its row up this way).
 *
 * @example
 * findRow(rows, { scenario: "c=8 transfer", metric: "throughput" })?.ratio;
 */
export function findRow(
  rows: readonly BenchResult[],
  match: {
    scenario?: string | ((scenario: string) => boolean);
    metric?: string;
    unit?: string;
    peer?: string;
  },
): BenchResult | undefined {
  return rows.find(
    (row) =>
      (match.scenario === undefined ||
        (typeof match.scenario === "function"
          ? match.scenario(row.scenario)
          : row.scenario === match.scenario)) &&
      (match.metric === undefined || row.metric === match.metric) &&
      (match.unit === undefined || row.unit === match.unit) &&
      (match.peer === undefined || row.peer === match.peer),
  );
}

/**
 * One markdown goal line: `- ${claim}: ${measured} — met` (or `NOT met`), then `note`.
 *
 * @example
 * goalLine("goal p99 < 2 ms in the open loop", "0.8 ms", true); // "- goal p99 < 2 ms in the open loop: 0.8 ms — met"
 */
export function goalLine(claim: string, measured: string, met: boolean, note = ""): string {
  return `- ${claim}: ${measured} — ${met ? "met" : "NOT met"}${note}`;
}
