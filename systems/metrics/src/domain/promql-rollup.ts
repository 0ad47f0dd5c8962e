/**
 * PromQL over a rollup tier (MT-11/12): what min, max, sum and count — and the first and last
 * sample with the reset carry — per window can answer, rewritten so the ordinary evaluator
 * computes it, and a clear refusal for the rest.
 *
 * Answerable (exactly, for windows wholly inside the range):
 * - `max_over_time(x[r])` → the max of the windows' maxes; `min_over_time` likewise;
 * - `sum_over_time(x[r])` → the sum of their sums; `count_over_time(x[r])` → the sum of counts;
 * - `avg_over_time(x[r])` → sum of sums / sum of counts (a true mean, not a mean of means);
 * - a plain selector `x` → the newest window's mean (sum / count), looked back one window;
 * - `rate`, `increase`, `delta` → Prometheus's extrapolated rate over the windows' first and
 *   last samples, counts and reset carries (`counter` view: the windows ride beside the
 *   values, `promql-functions.ts` reads them) — the raw answer exactly when the windows hold
 *   the range's samples; no value for a series whose range holds a window written before the
 *   tiers kept first/last.
 * Everything around them (aggregations, binary operators, other functions of instant
 * vectors) is evaluated as usual. Refused on a rollup tier, naming the function: `irate`,
 * `idelta`, `deriv`, `resets`, `changes`, `last_over_time`, `quantile_over_time`, … — they
 * need the samples themselves (`irate` the last two: a second-to-last sample per window is
 * not kept) — and subqueries.
 *
 * Each rewritten selector carries a `__rollup_view__` matcher (min, max, sum, count, mean or counter)
 * that the tier's storage reads and strips. A window's point is stamped at its LAST
 * millisecond (start + width − 1): visible once complete, and a range [T − r, T] (Prometheus
 * 2.42's, both ends included) with r a multiple of the width covers exactly r / width windows
 * — stamped at the window's end, a 1 h range at an hour boundary would take two hours.
 *
 * @example
 * rewriteForRollup(parsePromql("max by (host) (max_over_time(cpu[1h]))"), "1h");
 * rollupView(matchers); // { view: "max", matchers: [...the others] }
 */
import type { SeriesData } from "./head-block.ts";
import { type LabelMatcher, labelMatcher } from "./label-matcher.ts";
import type { Expr, MatrixSelector, VectorSelector } from "./promql-ast.ts";
import type { StoredSeries } from "./promql-engine.ts";
import type { RollupPoint } from "./rollup.ts";

export type RollupView = "min" | "max" | "sum" | "count" | "mean" | "counter";

export const ROLLUP_VIEW_LABEL = "__rollup_view__";

/** A query a rollup tier cannot answer; the API answers 400 naming the query. */
export class RollupQueryError extends Error {}

const OVER_TIME_VIEW: Readonly<Record<string, RollupView>> = {
  max_over_time: "max",
  min_over_time: "min",
  sum_over_time: "sum",
  count_over_time: "count",
};

/** Answered by Prometheus's extrapolation over the windows' first/last samples (`counter` view). */
const COUNTER_FUNCTIONS: ReadonlySet<string> = new Set(["rate", "increase", "delta"]);

export const ROLLUP_FUNCTIONS = [
  ...Object.keys(OVER_TIME_VIEW),
  "avg_over_time",
  ...COUNTER_FUNCTIONS,
] as const;

function withView(selector: VectorSelector, view: RollupView): VectorSelector {
  return { ...selector, matchers: [...selector.matchers, labelMatcher("=", ROLLUP_VIEW_LABEL, view)] };
}

/** A range shorter than a window would hold no window, or part of one: refused. */
function checkRange(arg: MatrixSelector, widthMs: number, tier: string): void {
  if (arg.rangeMs < widthMs)
    throw new RollupQueryError(
      `a range of ${arg.rangeMs / 1000}s is shorter than the ${tier} tier's windows; use a range of at least ${widthMs / 1000}s`,
    );
}

/** `f_over_time(x[r])` answered as the sum over the windows of one view (sum or count). */
function summed(arg: MatrixSelector, view: RollupView, widthMs: number, tier: string): Expr {
  checkRange(arg, widthMs, tier);
  return {
    kind: "call",
    func: "sum_over_time",
    args: [{ ...arg, selector: withView(arg.selector, view) }],
  };
}

function refuse(what: string, tier: string): never {
  throw new RollupQueryError(
    `${what} cannot be answered from the ${tier} tier, which keeps min, max, sum, count and the first and last sample per window: use ${ROLLUP_FUNCTIONS.join(", ")} or a plain selector, or a step under 1m within raw retention`,
  );
}

/** The query rewritten onto rollup views; throws RollupQueryError for what the tier cannot answer. */
export function rewriteForRollup(expr: Expr, tier: string, widthMs: number): Expr {
  const walk = (e: Expr): Expr => {
    switch (e.kind) {
      case "vector":
        return withView(e, "mean");
      case "matrix":
        return refuse("a range vector outside max/min/sum/count/avg_over_time", tier);
      case "subquery":
        return refuse("a subquery", tier);
      case "number":
      case "string":
        return e;
      case "paren":
        return { ...e, expr: walk(e.expr) };
      case "unary":
        return { ...e, expr: walk(e.expr) };
      case "binary":
        return { ...e, lhs: walk(e.lhs), rhs: walk(e.rhs) };
      case "aggregate":
        return { ...e, expr: walk(e.expr), param: e.param === undefined ? undefined : walk(e.param) };
      case "call": {
        const arg = e.args[0];
        const view = OVER_TIME_VIEW[e.func];
        if (view !== undefined && arg?.kind === "matrix") {
          if (view !== "max" && view !== "min") return summed(arg, view, widthMs, tier);
          checkRange(arg, widthMs, tier);
          return { ...e, args: [{ ...arg, selector: withView(arg.selector, view) }] };
        }
        if (COUNTER_FUNCTIONS.has(e.func) && arg?.kind === "matrix") {
          checkRange(arg, widthMs, tier);
          return { ...e, args: [{ ...arg, selector: withView(arg.selector, "counter") }] };
        }
        if (e.func === "avg_over_time" && arg?.kind === "matrix") {
          return {
            kind: "binary",
            op: "/",
            lhs: summed(arg, "sum", widthMs, tier),
            rhs: summed(arg, "count", widthMs, tier),
            returnBool: false,
            matching: { card: "one-to-one", on: false, labels: [], include: [] },
          };
        }
        if (e.args.some((a) => a.kind === "subquery")) refuse(`a subquery (in ${e.func}())`, tier);
        if (e.args.some((a) => a.kind === "matrix")) refuse(`${e.func}()`, tier);
        return { ...e, args: e.args.map(walk) };
      }
    }
  };
  return walk(expr);
}

/** Splits a rewritten selector's matchers into its view and the series matchers. */
export function rollupView(matchers: readonly LabelMatcher[]): {
  view: RollupView;
  matchers: LabelMatcher[];
} {
  const tag = matchers.find((m) => m.name === ROLLUP_VIEW_LABEL);
  return {
    view: (tag?.value ?? "mean") as RollupView,
    matchers: matchers.filter((m) => m.name !== ROLLUP_VIEW_LABEL),
  };
}

function viewValue(point: RollupPoint, view: RollupView): number {
  switch (view) {
    case "min":
      return point.min;
    case "max":
      return point.max;
    case "sum":
      return point.sum;
    case "count":
      return point.count;
    case "mean":
      return point.sum / point.count;
    case "counter":
      return point.counter?.lastV ?? Number.NaN;
  }
}

/**
 * One rollup series as the evaluator's samples of a view, stamped at each window's last ms —
 * or at `untilMs` for a window still open then (rolled up from raw up to `untilMs`), so the
 * read that asked for it still sees it. The `counter` view carries the windows themselves.
 */
export function rollupSeriesData(
  series: { labels: SeriesData["labels"]; points: readonly RollupPoint[] },
  view: RollupView,
  widthMs: number,
  untilMs = Number.POSITIVE_INFINITY,
): StoredSeries {
  const data = {
    labels: series.labels,
    timestamps: series.points.map((p) => Math.min(p.t + widthMs - 1, untilMs)),
    values: Float64Array.from(series.points, (p) => viewValue(p, view)),
  };
  return view === "counter" ? { ...data, windows: series.points } : data;
}
