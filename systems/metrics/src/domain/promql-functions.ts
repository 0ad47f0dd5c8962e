/**
 * PromQL's functions, as Prometheus 2.42 computes them: `rate`/`increase`/`delta` with its
 * extrapolation to the window's edges (and a counter never extrapolated below zero) — over
 * samples, or over a rollup tier's windows (their first/last samples and reset carries),
 * `irate`/`idelta` from the last two samples, the `*_over_time` family, `deriv` and
 * `predict_linear` by least squares, `holt_winters`, `histogram_quantile` over classic `le`
 * buckets (coalesced and forced monotonic), label rewriting, date parts in UTC, and the math
 * and trigonometric functions. Every function but `last_over_time`, `sort*` and the label
 * functions drops the metric name.
 *
 * @example
 * callFunction(engine, parsePromql("rate(x[5m])") as Call, 600_000, ctx);
 */
import { compileAnchored, type LabelMatcher } from "./label-matcher.ts";
import {
  cachedWithoutName,
  LABEL_NAME_PATTERN,
  type Labels,
  labelsFromPairs,
  METRIC_NAME,
  seriesKey,
  withoutName,
} from "./labels.ts";
import { quantileOf, runningMeanOf, varianceOf } from "./promql-aggregate.ts";
import type { Call, Expr, MatrixSelector, Subquery, VectorSelector } from "./promql-ast.ts";
import type { PromqlEvaluator, QueryContext, RangeColumns, StalelessSeries } from "./promql-evaluator.ts";
import { checkDistinct, type InstantVector, PromqlEvalError, type Value } from "./promql-values.ts";
import { type CounterWindow, mergeCounters, type RollupPoint } from "./rollup.ts";

/**
 * What a range function reads: the samples [from, to) of one series (StaleNaN already
 * dropped), in place — the per-step path hands it a window's own arrays, a range query's
 * columns (`rangeColumns`) the series' whole samples with the window's bounds.
 */
export interface RangeSlice {
  ts: ArrayLike<number>;
  vs: ArrayLike<number>;
  windows: readonly RollupPoint[] | undefined;
  from: number;
  to: number;
}

/** The window a range function is evaluated over (`t`: the evaluation time itself). */
interface RangeWindow {
  rangeStart: number;
  rangeEnd: number;
  rangeMs: number;
  t: number;
}

type RangeFn = (s: RangeSlice, window: RangeWindow, args: readonly number[]) => number | undefined;

/** What Prometheus's extrapolated rate reads of a range: its sample count, ends and delta. */
interface RateInput {
  readonly n: number;
  readonly firstT: number;
  readonly first: number;
  readonly lastT: number;
  /** last − first, plus (counters) the value before each reset. */
  readonly result: number;
}

function samplesRateInput(s: RangeSlice, isCounter: boolean): RateInput {
  const { vs, from, to } = s;
  const first = vs[from]!;
  let result = vs[to - 1]! - first;
  if (isCounter) {
    let last = 0;
    for (let i = from; i < to; i++) {
      const v = vs[i]!;
      if (v < last) result += last;
      last = v;
    }
  }
  return { n: to - from, firstT: s.ts[from]!, first, lastT: s.ts[to - 1]!, result };
}

/**
 * The same from a rollup tier's windows (their first/last samples, counts and reset carries):
 * equal to the samples' own when the windows hold the same samples. Undefined when a window
 * was written before the tiers kept first/last (no rate over it rather than a wrong one).
 */
function windowsRateInput(
  windows: readonly RollupPoint[],
  from: number,
  to: number,
  isCounter: boolean,
): RateInput | undefined {
  let counter: CounterWindow | undefined = to > from ? windows[from]!.counter : undefined;
  let n = to > from ? windows[from]!.count : 0;
  for (let i = from + 1; i < to && counter !== undefined; i++) {
    counter = mergeCounters(counter, windows[i]!.counter);
    n += windows[i]!.count;
  }
  if (counter === undefined) return undefined;
  let result = counter.lastV - counter.firstV;
  if (isCounter) result += counter.resetCarry;
  return { n, firstT: counter.firstT, first: counter.firstV, lastT: counter.lastT, result };
}

function extrapolatedRate(isCounter: boolean, isRate: boolean): RangeFn {
  return (s, w) => {
    const input =
      s.windows === undefined
        ? samplesRateInput(s, isCounter)
        : windowsRateInput(s.windows, s.from, s.to, isCounter);
    if (input === undefined || input.n < 2) return undefined;
    const { n, first, result } = input;
    let durationToStart = (input.firstT - w.rangeStart) / 1000;
    const durationToEnd = (w.rangeEnd - input.lastT) / 1000;
    const sampled = (input.lastT - input.firstT) / 1000;
    const average = sampled / (n - 1);
    if (isCounter && result > 0 && first >= 0) {
      const durationToZero = sampled * (first / result);
      if (durationToZero < durationToStart) durationToStart = durationToZero;
    }
    const threshold = average * 1.1;
    let interval = sampled;
    interval += durationToStart < threshold ? durationToStart : average / 2;
    interval += durationToEnd < threshold ? durationToEnd : average / 2;
    // Prometheus's order of operations, so the answers agree to the last bit (topk ties).
    let factor = interval / sampled;
    if (isRate) factor /= w.rangeMs / 1000;
    return result * factor;
  };
}

function instantValue(isRate: boolean): RangeFn {
  return ({ ts, vs, from, to }) => {
    if (to - from < 2) return undefined;
    const last = vs[to - 1]!;
    const previous = vs[to - 2]!;
    const result = isRate && last < previous ? last : last - previous;
    const interval = ts[to - 1]! - ts[to - 2]!;
    if (interval === 0) return undefined;
    return isRate ? result / (interval / 1000) : result;
  };
}

/** Least squares of v over (t − intercept) in seconds: Prometheus's linearRegression. */
function linearRegression(s: RangeSlice, interceptMs: number): [number, number] {
  const { ts, vs, from, to } = s;
  let n = 0;
  let sumX = 0;
  let sumY = 0;
  let sumXY = 0;
  let sumX2 = 0;
  const initY = vs[from]!;
  let constY = true;
  for (let i = from; i < to; i++) {
    const v = vs[i]!;
    if (constY && i > from && v !== initY) constY = false;
    n++;
    const x = (ts[i]! - interceptMs) / 1000;
    sumX += x;
    sumY += v;
    sumXY += x * v;
    sumX2 += x * x;
  }
  if (constY) return Number.isFinite(initY) || Number.isNaN(initY) ? [0, initY] : [Number.NaN, Number.NaN];
  const covXY = sumXY - (sumX * sumY) / n;
  const varX = sumX2 - (sumX * sumX) / n;
  const slope = covXY / varX;
  return [slope, sumY / n - (slope * sumX) / n];
}

function holtWinters(s: RangeSlice, sf: number, tf: number): number | undefined {
  if (!(sf > 0 && sf < 1))
    throw new PromqlEvalError(`invalid smoothing factor. Expected: 0 < sf < 1, got: ${sf}`);
  if (!(tf > 0 && tf < 1))
    throw new PromqlEvalError(`invalid trend factor. Expected: 0 < tf < 1, got: ${tf}`);
  const { vs, from, to } = s;
  const n = to - from;
  if (n < 2) return undefined;
  let s0 = 0;
  let s1 = vs[from]!;
  let b = vs[from + 1]! - vs[from]!;
  for (let i = 1; i < n; i++) {
    const x = sf * vs[from + i]!;
    if (i > 1) b = tf * (s1 - s0) + (1 - tf) * b;
    const y = (1 - sf) * (s1 + b);
    s0 = s1;
    s1 = x + y;
  }
  return s1;
}

function sumOf({ vs, from, to }: RangeSlice): number {
  let sum = 0;
  for (let i = from; i < to; i++) sum += vs[i]!;
  return sum;
}

/** Go's reduce over the window without a seed: `better(b, a)` replaces a, and so does a NaN a. */
function extremeOf({ vs, from, to }: RangeSlice, max: boolean): number {
  let a = vs[from]!;
  for (let i = from + 1; i < to; i++) {
    const b = vs[i]!;
    if ((max ? b > a : b < a) || Number.isNaN(a)) a = b;
  }
  return a;
}

function valuesOf({ vs, from, to }: RangeSlice): number[] {
  const out: number[] = [];
  for (let i = from; i < to; i++) out.push(vs[i]!);
  return out;
}

const RANGE_FUNCTIONS: Readonly<Record<string, RangeFn>> = {
  rate: extrapolatedRate(true, true),
  increase: extrapolatedRate(true, false),
  delta: extrapolatedRate(false, false),
  irate: instantValue(true),
  idelta: instantValue(false),
  avg_over_time: (s) => runningMeanOf(s.vs, s.from, s.to),
  count_over_time: (s) => s.to - s.from,
  sum_over_time: sumOf,
  min_over_time: (s) => extremeOf(s, false),
  max_over_time: (s) => extremeOf(s, true),
  last_over_time: (s) => s.vs[s.to - 1],
  present_over_time: () => 1,
  stdvar_over_time: (s) => varianceOf(s.vs, s.from, s.to),
  stddev_over_time: (s) => Math.sqrt(varianceOf(s.vs, s.from, s.to)),
  quantile_over_time: (s, _w, [q]) => quantileOf(q!, valuesOf(s)),
  changes: ({ vs, from, to }) => {
    let changes = 0;
    for (let i = from + 1; i < to; i++) {
      const [a, b] = [vs[i - 1]!, vs[i]!];
      if (a !== b && !(Number.isNaN(a) && Number.isNaN(b))) changes++;
    }
    return changes;
  },
  resets: ({ vs, from, to }) => {
    let resets = 0;
    for (let i = from + 1; i < to; i++) if (vs[i]! < vs[i - 1]!) resets++;
    return resets;
  },
  deriv: (s) => (s.to - s.from < 2 ? undefined : linearRegression(s, s.ts[s.from]!)[0]),
  predict_linear: (s, w, [seconds]) => {
    if (s.to - s.from < 2) return undefined;
    const [slope, intercept] = linearRegression(s, w.t);
    return slope * seconds! + intercept;
  },
  holt_winters: (s, _w, [sf, tf]) => holtWinters(s, sf!, tf!),
};

const MATH_FUNCTIONS: Readonly<Record<string, (v: number) => number>> = {
  abs: Math.abs,
  ceil: Math.ceil,
  floor: Math.floor,
  exp: Math.exp,
  sqrt: Math.sqrt,
  ln: Math.log,
  log2: Math.log2,
  log10: Math.log10,
  sgn: (v) => (v > 0 ? 1 : v < 0 ? -1 : v),
  deg: (v) => (v * 180) / Math.PI,
  rad: (v) => (v * Math.PI) / 180,
  acos: Math.acos,
  acosh: Math.acosh,
  asin: Math.asin,
  asinh: Math.asinh,
  atan: Math.atan,
  atanh: Math.atanh,
  cos: Math.cos,
  cosh: Math.cosh,
  sin: Math.sin,
  sinh: Math.sinh,
  tan: Math.tan,
  tanh: Math.tanh,
};

const DATE_FUNCTIONS: Readonly<Record<string, (d: Date) => number>> = {
  day_of_month: (d) => d.getUTCDate(),
  day_of_week: (d) => d.getUTCDay(),
  day_of_year: (d) => Math.floor((d.getTime() - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86_400_000) + 1,
  days_in_month: (d) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate(),
  hour: (d) => d.getUTCHours(),
  minute: (d) => d.getUTCMinutes(),
  month: (d) => d.getUTCMonth() + 1,
  year: (d) => d.getUTCFullYear(),
};

function scalarArg(engine: PromqlEvaluator, expr: Expr, t: number, ctx: QueryContext): number {
  const value = engine.eval(expr, t, ctx);
  if (value.type !== "scalar") throw new PromqlEvalError("expected a scalar argument");
  return value.v;
}
function stringArg(expr: Expr): string {
  if (expr.kind !== "string") {
    if (expr.kind === "paren") return stringArg(expr.expr);
    throw new PromqlEvalError("expected a string literal argument");
  }
  return expr.value;
}
function vectorArg(engine: PromqlEvaluator, expr: Expr, t: number, ctx: QueryContext): InstantVector {
  const value = engine.eval(expr, t, ctx);
  if (value.type !== "vector") throw new PromqlEvalError("expected an instant vector argument");
  return value.samples;
}

function unwrap(expr: Expr): Expr {
  return expr.kind === "paren" ? unwrap(expr.expr) : expr;
}

function rangeCall(engine: PromqlEvaluator, call: Call, t: number, ctx: QueryContext): InstantVector {
  const fn = RANGE_FUNCTIONS[call.func];
  const matrixIndex = call.func === "quantile_over_time" ? 1 : 0;
  const arg = unwrap(call.args[matrixIndex]!) as MatrixSelector | Subquery;
  const step = ctx.range === undefined ? undefined : stepIndex(ctx.range, t);
  if (step !== undefined && fn !== undefined && arg.kind === "matrix" && COLUMNED.has(call.func)) {
    const literals = call.args.filter((_, i) => i !== matrixIndex).map(unwrap);
    if (literals.every((a) => a.kind === "number")) {
      let columns = ctx.columns.get(call);
      if (columns === undefined) {
        const scalars = literals.map((a) => (a.kind === "number" ? a.value : Number.NaN));
        columns = rangeColumns(engine, arg, fn, scalars, call.func === "last_over_time", ctx);
        ctx.columns.set(call, columns);
      }
      if (columns !== null) return columns.at(step);
    }
  }
  const scalars = call.args.filter((_, i) => i !== matrixIndex).map((a) => scalarArg(engine, a, t, ctx));
  const selected =
    arg.kind === "matrix" ? engine.selectRange(arg, t, ctx) : engine.selectSubquery(arg, t, ctx);
  const rangeMs = arg.rangeMs;
  if (call.func === "absent_over_time") {
    return selected.series.length > 0
      ? []
      : [{ labels: absentLabels(arg.kind === "matrix" ? arg.selector : undefined), v: 1 }];
  }
  const out: InstantVector = [];
  // predict_linear's intercept is the evaluation time itself, not the (offset) window's end.
  const window = { rangeStart: selected.rangeStart, rangeEnd: selected.rangeEnd, rangeMs, t };
  for (const series of selected.series) {
    const slice = { ts: series.ts, vs: series.vs, windows: series.windows, from: 0, to: series.vs.length };
    const v = fn!(slice, window, scalars);
    if (v === undefined) continue;
    out.push({ labels: call.func === "last_over_time" ? series.labels : withoutName(series.labels), v });
  }
  return checkDistinct(out);
}

/**
 * The range functions a range query computes for all its steps at once (`rangeColumns`): all
 * but `holt_winters`, which may throw for its factors — per step, as Prometheus does, so an
 * error elsewhere in the same step still comes first.
 */
const COLUMNED: ReadonlySet<string> = new Set(
  Object.keys(RANGE_FUNCTIONS).filter((f) => f !== "holt_winters"),
);

/** Series × steps a range function's columns may hold (8 bytes each); past it, step by step. */
const MAX_COLUMN_CELLS = 16_000_000;

/** The index of `t` among a range query's steps, or undefined when it is not one (a subquery's step). */
function stepIndex(range: NonNullable<QueryContext["range"]>, t: number): number | undefined {
  const i = Math.round((t - range.times[0]!) / range.stepMs);
  return range.times[i] === t ? i : undefined;
}

/**
 * A range function of a matrix selector at every step of a range query, as Prometheus's engine
 * and VictoriaMetrics's rollups do it: each series' samples walked once for all steps, the
 * window's bounds slid forward with two indices (no copy per step), its output labels made —
 * and checked distinct — once per series instead of once per step. The values equal the
 * per-step path's (`selectRange` + the same function over the window's samples).
 */
function rangeColumns(
  engine: PromqlEvaluator,
  arg: MatrixSelector,
  fn: RangeFn,
  scalars: readonly number[],
  keepName: boolean,
  ctx: QueryContext,
): RangeColumns | null {
  const range = ctx.range!;
  const steps = range.times.length;
  const series = engine.stalelessSeries(arg.selector, ctx);
  if (series.length * steps > MAX_COLUMN_CELLS) return null;
  const values = new Float64Array(series.length * steps);
  const defined = new Uint8Array(series.length * steps);
  // Each step's window end: its time (or the `@` time) less the offset.
  const at = engine.resolveAt(arg.selector.at, ctx);
  const ends = new Float64Array(steps);
  for (let i = 0; i < steps; i++) ends[i] = (at ?? range.times[i]!) - arg.selector.offsetMs;
  for (let j = 0; j < series.length; j++)
    fillColumn(series[j]!, fn, scalars, range.times, ends, arg.rangeMs, values, defined, j * steps);
  const labels = series.map((s) => (keepName ? s.labels : withoutName(s.labels)));
  // Distinct as a whole, every step's subset is: then no step needs the check.
  const distinct = new Set(labels.map(seriesKey)).size === labels.length;
  return {
    at(step) {
      const out: InstantVector = [];
      for (let j = 0; j < series.length; j++) {
        const k = j * steps + step;
        if (defined[k] === 1) out.push({ labels: labels[j]!, v: values[k]! });
      }
      return distinct ? out : checkDistinct(out);
    },
  };
}

/**
 * One series' row of `rangeColumns`: the window [end − range, end] slid over its samples, both
 * ends included, its bounds only moving forward. A function of its own, called per series, so
 * V8 optimizes it as a whole (a loop this long inside a function called once per query ran
 * in and out of on-stack replacement instead).
 */
function fillColumn(
  s: StalelessSeries,
  fn: RangeFn,
  scalars: readonly number[],
  times: readonly number[],
  ends: Float64Array,
  rangeMs: number,
  values: Float64Array,
  defined: Uint8Array,
  base: number,
): void {
  const ts = s.ts;
  const n = ts.length;
  const slice: RangeSlice = { ts, vs: s.vs, windows: s.windows, from: 0, to: 0 };
  const window: RangeWindow = { rangeStart: 0, rangeEnd: 0, rangeMs, t: 0 };
  let from = 0;
  let to = 0;
  for (let i = 0; i < ends.length; i++) {
    const rangeEnd = ends[i]!;
    const rangeStart = rangeEnd - rangeMs;
    while (from < n && ts[from]! < rangeStart) from++;
    if (to < from) to = from;
    while (to < n && ts[to]! <= rangeEnd) to++;
    if (to <= from) continue;
    slice.from = from;
    slice.to = to;
    window.rangeStart = rangeStart;
    window.rangeEnd = rangeEnd;
    window.t = times[i]!;
    const v = fn(slice, window, scalars);
    if (v === undefined) continue;
    values[base + i] = v;
    defined[base + i] = 1;
  }
}

/** absent()'s labels: the selector's equality matchers, unless a name appears twice. */
function absentLabels(selector: VectorSelector | undefined): Labels {
  if (selector === undefined) return [];
  const counts = new Map<string, number>();
  for (const m of selector.matchers) counts.set(m.name, (counts.get(m.name) ?? 0) + 1);
  const pairs = selector.matchers
    .filter((m: LabelMatcher) => m.type === "=" && m.name !== METRIC_NAME && counts.get(m.name) === 1)
    .map((m) => [m.name, m.value] as const);
  return labelsFromPairs(pairs);
}

/** Prometheus's bucketQuantile over classic buckets (upper bound, cumulative count). */
export function bucketQuantile(q: number, input: Array<{ upper: number; count: number }>): number {
  if (Number.isNaN(q)) return Number.NaN;
  if (q < 0) return Number.NEGATIVE_INFINITY;
  if (q > 1) return Number.POSITIVE_INFINITY;
  const sorted = [...input].sort((a, b) => a.upper - b.upper);
  if (sorted.length === 0 || sorted.at(-1)!.upper !== Number.POSITIVE_INFINITY) return Number.NaN;
  const buckets: Array<{ upper: number; count: number }> = [];
  for (const b of sorted) {
    const last = buckets.at(-1);
    if (last && last.upper === b.upper) last.count += b.count;
    else buckets.push({ ...b });
  }
  let max = Number.NEGATIVE_INFINITY;
  for (const b of buckets) {
    if (b.count > max) max = b.count;
    else if (b.count < max) b.count = max;
  }
  if (buckets.length < 2) return Number.NaN;
  const observations = buckets.at(-1)!.count;
  if (observations === 0) return Number.NaN;
  let rank = q * observations;
  let b = 0;
  while (b < buckets.length - 1 && buckets[b]!.count < rank) b++;
  if (b === buckets.length - 1) return buckets[buckets.length - 2]!.upper;
  if (b === 0 && buckets[0]!.upper <= 0) return buckets[0]!.upper;
  let start = 0;
  const end = buckets[b]!.upper;
  let count = buckets[b]!.count;
  if (b > 0) {
    start = buckets[b - 1]!.upper;
    count -= buckets[b - 1]!.count;
    rank -= buckets[b - 1]!.count;
  }
  return start + (end - start) * (rank / count);
}

function histogramQuantile(q: number, samples: InstantVector): InstantVector {
  const groups = new Map<string, { labels: Labels; buckets: Array<{ upper: number; count: number }> }>();
  for (const s of samples) {
    const le = s.labels.find(([n]) => n === "le")?.[1];
    if (le === undefined) continue;
    const upper = parseGoFloat(le);
    if (upper === undefined) continue;
    // Grouped with the name, output without it: two histograms differing only by name collide (an error, prometheus#9910).
    const key = seriesKey(s.labels.filter(([n]) => n !== "le"));
    const labels = withoutName(s.labels).filter(([n]) => n !== "le");
    let group = groups.get(key);
    if (group === undefined) {
      group = { labels, buckets: [] };
      groups.set(key, group);
    }
    group.buckets.push({ upper, count: s.v });
  }
  return checkDistinct(
    [...groups.values()].map((g) => ({ labels: g.labels, v: bucketQuantile(q, g.buckets) })),
  );
}

/** Go's strconv.ParseFloat for the spellings a label value may carry. */
export function parseGoFloat(text: string): number | undefined {
  const lower = text.toLowerCase();
  if (/^[+]?inf(inity)?$/.test(lower)) return Number.POSITIVE_INFINITY;
  if (/^-inf(inity)?$/.test(lower)) return Number.NEGATIVE_INFINITY;
  if (lower === "nan") return Number.NaN;
  if (
    !/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/.test(lower) &&
    !/^[+-]?0x[0-9a-f]+(\.[0-9a-f]*)?(p[+-]?\d+)?$/.test(lower)
  ) {
    return undefined;
  }
  const n = Number(text);
  return Number.isNaN(n) ? undefined : n;
}

function labelReplace(samples: InstantVector, args: readonly Expr[]): InstantVector {
  const [dst, replacement, src, regex] = args.slice(1).map(stringArg) as [string, string, string, string];
  let re: RegExp;
  try {
    re = compileAnchored(regex);
  } catch {
    throw new PromqlEvalError(`invalid regular expression in label_replace(): ${regex}`);
  }
  if (!LABEL_NAME_PATTERN.test(dst))
    throw new PromqlEvalError(`invalid destination label name in label_replace(): ${dst}`);
  const out = samples.map((s) => {
    const value = s.labels.find(([n]) => n === src)?.[1] ?? "";
    const match = re.exec(value);
    if (!match) return s;
    const expanded = replacement.replace(
      /\$(\$|\{(\w+)\}|(\w+))/g,
      (_all, whole: string, braced?: string, bare?: string) => {
        if (whole === "$") return "$";
        const name = braced ?? bare!;
        const group = /^\d+$/.test(name) ? match[Number(name)] : match.groups?.[name];
        return group ?? "";
      },
    );
    const rest = s.labels.filter(([n]) => n !== dst);
    return {
      labels: labelsFromPairs(expanded === "" ? rest : [...rest, [dst, expanded] as const]),
      v: s.v,
      t: s.t,
    };
  });
  return checkDistinct(out);
}

function labelJoin(samples: InstantVector, args: readonly Expr[]): InstantVector {
  const [dst, separator, ...sources] = args.slice(1).map(stringArg) as [string, string, ...string[]];
  if (!LABEL_NAME_PATTERN.test(dst))
    throw new PromqlEvalError(`invalid destination label name in label_join(): ${dst}`);
  for (const src of sources) {
    if (!LABEL_NAME_PATTERN.test(src))
      throw new PromqlEvalError(`invalid source label name in label_join(): ${src}`);
  }
  const out = samples.map((s) => {
    const joined = sources.map((src) => s.labels.find(([n]) => n === src)?.[1] ?? "").join(separator);
    const rest = s.labels.filter(([n]) => n !== dst);
    return {
      labels: labelsFromPairs(joined === "" ? rest : [...rest, [dst, joined] as const]),
      v: s.v,
      t: s.t,
    };
  });
  return checkDistinct(out);
}

function mapValues(samples: InstantVector, fn: (v: number) => number): InstantVector {
  return checkDistinct(samples.map((s) => ({ labels: cachedWithoutName(s.labels), v: fn(s.v) })));
}

function sortBy(samples: InstantVector, descending: boolean): InstantVector {
  return [...samples].sort((a, b) => {
    if (Number.isNaN(a.v)) return Number.isNaN(b.v) ? 0 : 1;
    if (Number.isNaN(b.v)) return -1;
    return descending ? b.v - a.v : a.v - b.v;
  });
}

export function callFunction(engine: PromqlEvaluator, call: Call, t: number, ctx: QueryContext): Value {
  const name = call.func;
  const args = call.args;
  if (name in RANGE_FUNCTIONS || name === "absent_over_time")
    return { type: "vector", samples: rangeCall(engine, call, t, ctx) };
  if (name in MATH_FUNCTIONS)
    return { type: "vector", samples: mapValues(vectorArg(engine, args[0]!, t, ctx), MATH_FUNCTIONS[name]!) };
  if (name in DATE_FUNCTIONS) {
    const input =
      args.length === 0 ? [{ labels: [] as Labels, v: t / 1000 }] : vectorArg(engine, args[0]!, t, ctx);
    const fn = DATE_FUNCTIONS[name]!;
    return {
      type: "vector",
      samples: mapValues(input, (v) => (Number.isFinite(v) ? fn(new Date(v * 1000)) : Number.NaN)),
    };
  }
  switch (name) {
    case "time":
      return { type: "scalar", v: t / 1000 };
    case "pi":
      return { type: "scalar", v: Math.PI };
    case "vector":
      return { type: "vector", samples: [{ labels: [], v: scalarArg(engine, args[0]!, t, ctx) }] };
    case "scalar": {
      const input = vectorArg(engine, args[0]!, t, ctx);
      return { type: "scalar", v: input.length === 1 ? input[0]!.v : Number.NaN };
    }
    case "timestamp": {
      const input = vectorArg(engine, args[0]!, t, ctx);
      return {
        type: "vector",
        samples: checkDistinct(input.map((s) => ({ labels: withoutName(s.labels), v: (s.t ?? t) / 1000 }))),
      };
    }
    case "absent": {
      const input = vectorArg(engine, args[0]!, t, ctx);
      const arg = unwrap(args[0]!);
      return {
        type: "vector",
        samples:
          input.length > 0 ? [] : [{ labels: absentLabels(arg.kind === "vector" ? arg : undefined), v: 1 }],
      };
    }
    case "clamp": {
      const input = vectorArg(engine, args[0]!, t, ctx);
      const min = scalarArg(engine, args[1]!, t, ctx);
      const max = scalarArg(engine, args[2]!, t, ctx);
      if (max < min) return { type: "vector", samples: [] };
      return { type: "vector", samples: mapValues(input, (v) => goMax(min, goMin(max, v))) };
    }
    case "clamp_min":
    case "clamp_max": {
      const input = vectorArg(engine, args[0]!, t, ctx);
      const bound = scalarArg(engine, args[1]!, t, ctx);
      return {
        type: "vector",
        samples: mapValues(input, (v) => (name === "clamp_min" ? goMax(v, bound) : goMin(v, bound))),
      };
    }
    case "round": {
      const input = vectorArg(engine, args[0]!, t, ctx);
      const toNearest = args.length > 1 ? scalarArg(engine, args[1]!, t, ctx) : 1;
      const inverse = 1 / toNearest;
      return { type: "vector", samples: mapValues(input, (v) => Math.floor(v * inverse + 0.5) / inverse) };
    }
    case "histogram_quantile": {
      const q = scalarArg(engine, args[0]!, t, ctx);
      return { type: "vector", samples: histogramQuantile(q, vectorArg(engine, args[1]!, t, ctx)) };
    }
    case "label_replace":
      return { type: "vector", samples: labelReplace(vectorArg(engine, args[0]!, t, ctx), args) };
    case "label_join":
      return { type: "vector", samples: labelJoin(vectorArg(engine, args[0]!, t, ctx), args) };
    case "sort":
    case "sort_desc":
      return { type: "vector", samples: sortBy(vectorArg(engine, args[0]!, t, ctx), name === "sort_desc") };
    default:
      throw new PromqlEvalError(`function ${name} is not implemented`);
  }
}

/** Go's math.Max/Min: NaN wins. */
function goMax(a: number, b: number): number {
  return Number.isNaN(a) || Number.isNaN(b) ? Number.NaN : Math.max(a, b);
}
function goMin(a: number, b: number): number {
  return Number.isNaN(a) || Number.isNaN(b) ? Number.NaN : Math.min(a, b);
}

export const SUPPORTED_FUNCTIONS: readonly string[] = [
  ...Object.keys(RANGE_FUNCTIONS),
  "absent_over_time",
  ...Object.keys(MATH_FUNCTIONS),
  ...Object.keys(DATE_FUNCTIONS),
];
