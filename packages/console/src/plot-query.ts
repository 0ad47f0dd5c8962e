/**
 * A declared plot series as PromQL, and the metrics system's answer back into the console's
 * plot lines — the same plot the in-memory window draws (`scrape-window.ts`), computed by the
 * query API instead:
 *
 * - `value` → `sum by (by) (metric{job="…",where…})` (one summed line without `by`);
 * - `rate` → `sum by (by) (rate(metric{…}[range]))`;
 * - `quantile` → `histogram_quantile(q, sum by (le, by) (rate(metric_bucket{…}[range])))`.
 *
 * The range spans four scrapes of the metrics system (Grafana's `$__rate_interval` rule), never
 * less than two steps, so every window holds samples enough for a rate. Lines are sorted by
 * label, at most `maxLinesPerSeries`, the rest summed into "other", as the window does;
 * NaN, ±Inf and missing steps are gaps (null).
 *
 * @example
 * seriesQuery("rate-limiter", { metric: "ratelimit_decisions_total", fn: "rate", by: "outcome" }, 20);
 * // 'sum by (outcome) (rate(ratelimit_decisions_total{job="rate-limiter"}[20s]))'
 */
import type { SeriesDeclaration } from "./console-declaration.ts";
import { maxLinesPerSeries, type PlotLine } from "./scrape-window.ts";

/** One series of a query_range answer (resultType matrix): values are [unix s, "float"]. */
export interface MatrixSeries {
  metric: Record<string, string>;
  values: Array<[number, string]>;
}

export function seriesQuery(job: string, series: SeriesDeclaration, rangeS: number): string {
  const matchers = [`job="${promqlString(job)}"`];
  for (const [label, value] of Object.entries(series.where ?? {}))
    matchers.push(`${label}="${promqlString(value)}"`);
  const selector = (name: string) => `${name}{${matchers.join(",")}}`;
  const by = series.by === undefined ? "" : ` by (${series.by})`;
  const range = `[${rangeS}s]`;
  if (series.fn === "value") return `sum${by} (${selector(series.metric)})`;
  if (series.fn === "rate") return `sum${by} (rate(${selector(series.metric)}${range}))`;
  const groups = series.by === undefined ? "le" : `le, ${series.by}`;
  return `histogram_quantile(${series.q ?? 0.5}, sum by (${groups}) (rate(${selector(`${series.metric}_bucket`)}${range})))`;
}

/** The rate range for a scrape interval and a plot step: four scrapes, at least two steps, whole seconds. */
export function rateRangeS(scrapeIntervalMs: number, stepMs: number): number {
  return Math.ceil(Math.max(4 * scrapeIntervalMs, 2 * stepMs) / 1000);
}

/** The answer's series as plot lines aligned with `times` (unix seconds). */
export function matrixLines(
  series: SeriesDeclaration,
  matrix: readonly MatrixSeries[],
  times: readonly number[],
): PlotLine[] {
  const at = new Map(times.map((t, i) => [t, i]));
  const scale = series.scale ?? 1;
  const lines = matrix
    .map((result) => {
      const values: (number | null)[] = times.map(() => null);
      for (const [t, text] of result.values) {
        const i = at.get(t);
        const value = Number(text);
        if (i !== undefined && Number.isFinite(value)) values[i] = value * scale;
      }
      return { label: lineLabel(series, result.metric), values };
    })
    .sort((a, b) => (a.label < b.label ? -1 : a.label > b.label ? 1 : 0));
  if (lines.length <= maxLinesPerSeries) return lines;
  const rest = lines.slice(maxLinesPerSeries);
  const other = times.map((_, i) => {
    const present = rest
      .map((line) => line.values[i])
      .filter((v): v is number => v !== null && v !== undefined);
    return present.length === 0 ? null : present.reduce((sum, v) => sum + v, 0);
  });
  return [...lines.slice(0, maxLinesPerSeries), { label: lineLabel(series, undefined), values: other }];
}

/** The same legends as the window: the `by` value, "(no by)" when absent, "other"; else the series' label. */
function lineLabel(series: SeriesDeclaration, metric: Record<string, string> | undefined): string {
  if (series.by === undefined) return series.label ?? series.metric;
  if (metric === undefined) return "other";
  const value = metric[series.by] ?? "";
  return value === "" ? `(no ${series.by})` : value;
}

/** A PromQL string literal's content: backslash, quote and newline escaped. */
function promqlString(value: string): string {
  return value.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n");
}
