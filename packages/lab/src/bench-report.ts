/**
 * Bench results as rows, printed as an aligned markdown table for people or as JSON
 * lines for machines (`casebook bench --json`): one object per line with exactly
 * the keys `system, scenario, metric, unit, value` and, when a peer ran beside us,
 * `peer, peer_value, ratio` (ratio = ours / peer). The table adds a verdict in
 * words ("1.8× faster"), which needs to know whether higher or lower is better.
 *
 * @example
 * const rows = [
 *   benchRow({ system: "cache", scenario: "get 1 KiB", metric: "throughput", unit: "req/s", value: 91_000,
 *              peer: { name: "redis", value: 50_000 } }),
 * ];
 * console.log(renderBench(rows, benchFormat(process.argv)));
 * // | system | scenario  | metric     | unit  |  value | peer  | peer value | ratio | verdict     |
 * // | ------ | --------- | ---------- | ----- | -----: | ----- | ---------: | ----: | ----------- |
 * // | cache  | get 1 KiB | throughput | req/s | 91,000 | redis |     50,000 |  1.82 | 1.8× faster |
 */
import { labErrors } from "./lab-errors.ts";
import type { LoadReport } from "./load-generator.ts";

/** One line of `--json` output: exactly these keys, peer ones only when a peer ran. */
export interface BenchRow {
  system: string;
  scenario: string;
  metric: string;
  unit: string;
  value: number;
  peer?: string;
  peer_value?: number;
  ratio?: number;
}

export type Direction = "higher-is-better" | "lower-is-better";

/**
 * A measured value as a report shows it: whole numbers from 100 up, else 3 significant
 * digits (noise below that is not information).
 *
 * @example
 * tidyValue(104_055.7); // 104056
 * tidyValue(2.0634);    // 2.06
 */
export function tidyValue(value: number): number {
  if (Math.abs(value) >= 100) return Math.round(value);
  return Number(value.toPrecision(3));
}

/**
 * The middle of a bench's repeated runs (the mean of the two middle ones for an even count; NaN
 * for none): on a shared 2-core machine one 5 s run can read 30% off the next, so benches judge
 * goals on the median of interleaved runs, never on one.
 *
 * @example
 * median([31_550, 27_100, 33_020]); // 31550
 */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The run whose `score` is the median, whole — a real run, not a mix of two (the lower middle
 * one of an even count): a side's row comes from one run, all its figures from the same one.
 * Throws RangeError for no runs.
 *
 * @example
 * medianBy([{ perS: 62_294 }, { perS: 27_149 }, { perS: 48_925 }], (run) => run.perS); // { perS: 48_925 }
 */
export function medianBy<T>(runs: readonly T[], score: (run: T) => number): T {
  const sorted = runs.toSorted((a, b) => score(a) - score(b));
  const middle = sorted[(sorted.length - 1) >> 1];
  if (middle === undefined) throw new RangeError("medianBy: no runs");
  return middle;
}

/** A row and what the table needs to word it; `toJsonLine` prints only the row's keys. */
export interface BenchResult extends BenchRow {
  direction: Direction;
}

export interface Comparison {
  /** ours / peer, as the JSON `ratio`. */
  ratio: number;
  /** How many times better we are (> 1 better, < 1 worse), whichever the direction. */
  advantage: number;
  /** "1.8× faster", "2.5× slower", "on par". */
  verdict: string;
}

export interface BenchRowInput {
  system: string;
  scenario: string;
  metric: string;
  unit: string;
  value: number;
  /** Inferred from the unit when omitted (time and size: lower; per second: higher). */
  direction?: Direction;
  peer?: { name: string; value: number };
  /** Words for better and worse; by default from the unit ("faster"/"slower", "smaller"/"larger"). */
  words?: [better: string, worse: string];
}

const TIME_UNITS = new Set(["ns", "µs", "us", "ms", "s", "min"]);
const SIZE_UNITS = new Set(["B", "bytes", "KB", "KiB", "MB", "MiB", "GB", "GiB"]);
/** Within this factor of each other two results are reported as on par, not as "1.0× faster". */
const ON_PAR_WITHIN = 1.005;

function isRate(unit: string): boolean {
  return /\/s$|^rps$|^qps$/i.test(unit);
}

function inferDirection(unit: string): Direction | undefined {
  if (TIME_UNITS.has(unit) || SIZE_UNITS.has(unit)) return "lower-is-better";
  if (isRate(unit)) return "higher-is-better";
  return undefined;
}

function defaultWords(unit: string): [string, string] {
  if (TIME_UNITS.has(unit) || isRate(unit)) return ["faster", "slower"];
  if (SIZE_UNITS.has(unit)) return ["smaller", "larger"];
  return ["better", "worse"];
}

function formatFactor(factor: number): string {
  return factor >= 10 ? factor.toFixed(0) : factor.toFixed(1);
}

/**
 * Compares our value with the peer's. Undefined when either is not a positive finite
 * number (a ratio with 0 means nothing).
 *
 * @example
 * compare(5, 9, "lower-is-better");       // { ratio: 0.556, advantage: 1.8, verdict: "1.8× better" }
 * compare(5, 9, "lower-is-better", ["faster", "slower"]).verdict; // "1.8× faster"
 */
export function compare(
  ours: number,
  peer: number,
  direction: Direction,
  words: [string, string] = ["better", "worse"],
): Comparison | undefined {
  if (!(ours > 0 && peer > 0 && Number.isFinite(ours) && Number.isFinite(peer))) return undefined;
  const ratio = ours / peer;
  const advantage = direction === "higher-is-better" ? ratio : 1 / ratio;
  const [better, worse] = words;
  let verdict: string;
  if (advantage < ON_PAR_WITHIN && advantage > 1 / ON_PAR_WITHIN) verdict = "on par";
  else if (advantage >= 1) verdict = `${formatFactor(advantage)}× ${better}`;
  else verdict = `${formatFactor(1 / advantage)}× ${worse}`;
  return { ratio, advantage, verdict };
}

function requireText(name: string, value: string): void {
  if (typeof value !== "string" || value.trim() === "") {
    throw labErrors.create("LAB_BENCH_INVALID", {
      detail: `${name} must be a non-empty string`,
      fields: { name },
    });
  }
}

function requireNumber(name: string, value: number): void {
  if (!Number.isFinite(value)) {
    throw labErrors.create("LAB_BENCH_INVALID", {
      detail: `${name} must be a finite number (JSON has no NaN or Infinity), got ${value}`,
      fields: { name, value: String(value) },
    });
  }
}

/** Builds a validated row, with peer_value and ratio when a peer ran. */
export function benchRow(input: BenchRowInput): BenchResult {
  for (const key of ["system", "scenario", "metric", "unit"] as const) requireText(key, input[key]);
  requireNumber("value", input.value);
  const direction = input.direction ?? inferDirection(input.unit);
  if (!direction) {
    throw labErrors.create("LAB_BENCH_INVALID", {
      detail: `cannot tell whether higher or lower ${input.unit} is better; pass direction`,
      fields: { name: "direction", unit: input.unit },
    });
  }
  const row: BenchResult = { ...pickRow(input), direction };
  if (!input.peer) return row;
  requireText("peer", input.peer.name);
  requireNumber("peer_value", input.peer.value);
  const comparison = compare(input.value, input.peer.value, direction);
  return {
    ...row,
    peer: input.peer.name,
    peer_value: input.peer.value,
    // 4 decimals: enough to rank, without float noise such as 1.7999999999999998.
    ...(comparison ? { ratio: Math.round(comparison.ratio * 10_000) / 10_000 } : {}),
  };
}

function pickRow(row: Pick<BenchRow, "system" | "scenario" | "metric" | "unit" | "value">): BenchRow {
  const { system, scenario, metric, unit, value } = row;
  return { system, scenario, metric, unit, value };
}

/** One JSON line with exactly the row keys, in the documented order. */
export function toJsonLine(row: BenchRow): string {
  const out: BenchRow = pickRow(row);
  if (row.peer !== undefined && row.peer_value !== undefined) {
    out.peer = row.peer;
    out.peer_value = row.peer_value;
    if (row.ratio !== undefined) out.ratio = row.ratio;
  }
  return JSON.stringify(out);
}

/** Human number: thousands grouped, about 3 significant digits below 100. */
export function formatNumber(value: number): string {
  const abs = Math.abs(value);
  const digits = abs >= 100 || Number.isInteger(value) ? 0 : abs >= 10 ? 1 : abs >= 1 ? 2 : 3;
  return value.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

function cell(text: string): string {
  return text.replaceAll("|", "\\|");
}

/** The verdict for one row ("1.8× faster"), or "" without a peer. */
export function verdictOf(row: BenchResult): string {
  if (row.peer_value === undefined) return "";
  if (row.peer_value === row.value) return "on par";
  return compare(row.value, row.peer_value, row.direction, defaultWords(row.unit))?.verdict ?? "n/a";
}

/** An aligned markdown table; the peer columns appear only when some row has a peer. */
export function renderMarkdown(rows: BenchResult[]): string {
  const withPeer = rows.some((r) => r.peer !== undefined);
  const header = ["system", "scenario", "metric", "unit", "value"];
  const numeric = [false, false, false, false, true];
  if (withPeer) {
    header.push("peer", "peer value", "ratio", "verdict");
    numeric.push(false, true, true, false);
  }
  const body = rows.map((r) => {
    const cells = [r.system, r.scenario, r.metric, r.unit, formatNumber(r.value)];
    if (withPeer) {
      const peerValue = r.peer_value === undefined ? "" : formatNumber(r.peer_value);
      cells.push(r.peer ?? "", peerValue, r.ratio === undefined ? "" : r.ratio.toFixed(2), verdictOf(r));
    }
    return cells.map(cell);
  });
  const widths = header.map((h, i) => Math.max(h.length, 3, ...body.map((cells) => cells[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join(" | ")} |`;
  const rule = `| ${widths.map((w, i) => (numeric[i] ? `${"-".repeat(w - 1)}:` : "-".repeat(w))).join(" | ")} |`;
  return [line(header), rule, ...body.map(line)].join("\n");
}

export type BenchFormat = "markdown" | "json";

/** "json" when the command line has `--json`, else "markdown". */
export function benchFormat(argv: readonly string[]): BenchFormat {
  return argv.includes("--json") ? "json" : "markdown";
}

/** The rows as the format asks: the markdown table, or one JSON object per line. */
export function renderBench(rows: BenchResult[], format: BenchFormat): string {
  return format === "json" ? rows.map(toJsonLine).join("\n") : renderMarkdown(rows);
}

/**
 * The standard rows of one load run: achieved throughput, latency percentiles
 * (p50, p90, p99, p99.9, max) and the error count, each beside the peer's run when given.
 *
 * @example
 * rowsFromLoad({ system: "cache", scenario: "get 1 KiB" }, ours, { name: "redis", report: theirs });
 */
export function rowsFromLoad(
  where: { system: string; scenario: string },
  ours: LoadReport,
  peer?: { name: string; report: LoadReport },
): BenchResult[] {
  const metrics: Array<{
    metric: string;
    unit: string;
    pick: (r: LoadReport) => number;
    direction?: Direction;
  }> = [
    { metric: "throughput", unit: "req/s", pick: (r) => r.achievedRatePerS },
    { metric: "latency p50", unit: "ms", pick: (r) => r.latencyMs.p50 },
    { metric: "latency p90", unit: "ms", pick: (r) => r.latencyMs.p90 },
    { metric: "latency p99", unit: "ms", pick: (r) => r.latencyMs.p99 },
    { metric: "latency p99.9", unit: "ms", pick: (r) => r.latencyMs.p999 },
    { metric: "latency max", unit: "ms", pick: (r) => r.latencyMs.max },
    { metric: "errors", unit: "count", pick: (r) => r.errors + r.dropped, direction: "lower-is-better" },
  ];
  return metrics.map(({ metric, unit, pick, direction }) =>
    benchRow({
      ...where,
      metric,
      unit,
      value: pick(ours),
      ...(direction ? { direction } : {}),
      ...(peer ? { peer: { name: peer.name, value: pick(peer.report) } } : {}),
    }),
  );
}
