/**
 * The PromQL evaluator: instant queries at one time and range queries as the same evaluation
 * at each step, over a storage port that returns the samples of matching series in a window.
 * Semantics are Prometheus 2.42's, checked by its own test files (test/promql-conformance):
 *
 * - An instant selector takes each series' newest sample in [t − 5 m, t] (the lookback); a
 *   staleness marker there ends the series (it is not returned).
 * - A range selector takes the samples in [t − range, t], markers dropped.
 * - `offset` shifts the time read; `@` pins it (`@ start()`/`@ end()` to the query's ends).
 * - A subquery evaluates its expression at steps aligned to multiples of its step.
 *
 * Each selector's data is read once per query, for the whole window the query needs, then
 * sliced per step by binary search. Bounded by `maxSamples` (samples held at once).
 *
 * @example
 * const engine = new PromqlEngine({ select: (matchers, mint, maxt) => tsdb.select(matchers, mint, maxt) });
 * engine.instant(parsePromql("sum(rate(x[5m]))"), 600_000);           // { type: "vector", samples: [...] }
 * engine.range(parsePromql("up"), { startMs: 0, endMs: 3_600_000, stepMs: 60_000 }); // { type: "matrix", … }
 */
import type { SeriesData } from "./head-block.ts";
import type { LabelMatcher } from "./label-matcher.ts";
import { cachedSeriesKey, compareLabels, type Labels, withoutName } from "./labels.ts";
import { aggregate } from "./promql-aggregate.ts";
import type { AtModifier, Expr, MatrixSelector, Subquery, VectorSelector } from "./promql-ast.ts";
import { binaryValues } from "./promql-binary.ts";
import type { LoadedSeries, PromqlEvaluator, QueryContext, StalelessSeries } from "./promql-evaluator.ts";
import { callFunction } from "./promql-functions.ts";
import {
  checkDistinct,
  type InstantVector,
  PromqlEvalError,
  type RangeSeries,
  type Value,
} from "./promql-values.ts";
import type { RollupPoint } from "./rollup.ts";
import { isStaleNaN } from "./staleness.ts";

/** A series as storage returns it; a rollup tier's may carry its windows, one per sample. */
export type StoredSeries = SeriesData & { readonly windows?: readonly RollupPoint[] };

export interface PromqlStorage {
  select(matchers: readonly LabelMatcher[], mint: number, maxt: number): readonly StoredSeries[];
}

export interface PromqlEngineOptions {
  /** Prometheus's lookback delta: 5 minutes. */
  readonly lookbackMs?: number;
  /** Step of a subquery written without one (`x[1h:]`): Prometheus's default evaluation interval, 1 minute. */
  readonly defaultStepMs?: number;
  /** Samples a query may hold in its selectors' data at once. */
  readonly maxSamples?: number;
  /** Steps a range query may have (Prometheus refuses more than 11,000). */
  readonly maxSteps?: number;
}

export const DEFAULT_LOOKBACK_MS = 300_000;
export const MAX_RANGE_STEPS = 11_000;

/** First index whose timestamp is > x. */
function upperBound(ts: readonly number[], x: number): number {
  let lo = 0;
  let hi = ts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ts[mid]! <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
/** First index whose timestamp is >= x. */
function lowerBound(ts: readonly number[], x: number): number {
  let lo = 0;
  let hi = ts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ts[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class PromqlEngine implements PromqlEvaluator {
  readonly #storage: PromqlStorage;
  readonly lookbackMs: number;
  readonly defaultStepMs: number;
  readonly #maxSamples: number;
  readonly #maxSteps: number;

  constructor(storage: PromqlStorage, options: PromqlEngineOptions = {}) {
    this.#storage = storage;
    this.lookbackMs = options.lookbackMs ?? DEFAULT_LOOKBACK_MS;
    this.defaultStepMs = options.defaultStepMs ?? 60_000;
    this.#maxSamples = options.maxSamples ?? 50_000_000;
    this.#maxSteps = options.maxSteps ?? MAX_RANGE_STEPS;
  }

  /** Evaluates `expr` at one time. */
  instant(expr: Expr, timeMs: number): Value {
    const ctx = this.#context(expr, timeMs, timeMs);
    return this.eval(expr, timeMs, ctx);
  }

  /** Evaluates `expr` at every step of [start, end]; the result is always a matrix. */
  range(expr: Expr, range: { startMs: number; endMs: number; stepMs: number }): Value {
    const { startMs, endMs, stepMs } = range;
    if (!(stepMs > 0))
      throw new PromqlEvalError("zero or negative query resolution step widths are not accepted");
    if (endMs < startMs) throw new PromqlEvalError("end timestamp must not be before start time");
    if ((endMs - startMs) / stepMs > this.#maxSteps) {
      throw new PromqlEvalError(`exceeded maximum resolution of ${this.#maxSteps} points per timeseries`);
    }
    const times: number[] = [];
    for (let t = startMs; t <= endMs; t += stepMs) times.push(t);
    const ctx = this.#context(expr, startMs, endMs, { times, stepMs });
    const bySeries = new Map<string, { labels: Labels; ts: number[]; vs: number[] }>();
    for (const t of times) {
      const value = this.eval(expr, t, ctx);
      const samples =
        value.type === "scalar"
          ? [{ labels: [] as Labels, v: value.v }]
          : value.type === "vector"
            ? value.samples
            : undefined;
      if (samples === undefined)
        throw new PromqlEvalError(
          `invalid expression type "${value.type === "matrix" ? "range vector" : "string"}" for range query, must be Scalar or instant Vector`,
        );
      appendStep(bySeries, t, samples);
    }
    return { type: "matrix", series: [...bySeries.values()] };
  }

  #context(expr: Expr, startMs: number, endMs: number, range?: QueryContext["range"]): QueryContext {
    const ctx: QueryContext = {
      startMs,
      endMs,
      windows: new Map(),
      loaded: new Map(),
      ...(range === undefined ? {} : { range }),
      staleless: new Map(),
      columns: new Map(),
      samples: 0,
    };
    this.#collectWindows(expr, startMs, endMs, ctx);
    return ctx;
  }

  resolveAt(at: AtModifier | undefined, ctx: QueryContext): number | undefined {
    if (at === undefined) return undefined;
    return at.kind === "time" ? at.ms : at.kind === "start" ? ctx.startMs : ctx.endMs;
  }

  /** The window each selector must read, from the query's ends, offsets, @, ranges and subqueries. */
  #collectWindows(expr: Expr, from: number, to: number, ctx: QueryContext): void {
    const widen = (node: VectorSelector, min: number, max: number) => {
      const w = ctx.windows.get(node);
      ctx.windows.set(node, w ? { min: Math.min(w.min, min), max: Math.max(w.max, max) } : { min, max });
    };
    switch (expr.kind) {
      case "vector": {
        const at = this.resolveAt(expr.at, ctx);
        const [lo, hi] = at === undefined ? [from, to] : [at, at];
        widen(expr, lo - expr.offsetMs - this.lookbackMs, hi - expr.offsetMs);
        return;
      }
      case "matrix": {
        const s = expr.selector;
        const at = this.resolveAt(s.at, ctx);
        const [lo, hi] = at === undefined ? [from, to] : [at, at];
        widen(s, lo - s.offsetMs - expr.rangeMs, hi - s.offsetMs);
        return;
      }
      case "subquery": {
        const at = this.resolveAt(expr.at, ctx);
        const [lo, hi] = at === undefined ? [from, to] : [at, at];
        this.#collectWindows(expr.expr, lo - expr.offsetMs - expr.rangeMs, hi - expr.offsetMs, ctx);
        return;
      }
      case "paren":
      case "unary":
        this.#collectWindows(expr.expr, from, to, ctx);
        return;
      case "binary":
        this.#collectWindows(expr.lhs, from, to, ctx);
        this.#collectWindows(expr.rhs, from, to, ctx);
        return;
      case "aggregate":
        this.#collectWindows(expr.expr, from, to, ctx);
        if (expr.param) this.#collectWindows(expr.param, from, to, ctx);
        return;
      case "call":
        for (const arg of expr.args) this.#collectWindows(arg, from, to, ctx);
        return;
      default:
        return;
    }
  }

  #load(node: VectorSelector, ctx: QueryContext): readonly LoadedSeries[] {
    let loaded = ctx.loaded.get(node);
    if (loaded === undefined) {
      const window = ctx.windows.get(node) ?? { min: ctx.startMs - this.lookbackMs, max: ctx.endMs };
      // In Prometheus's series order: it decides which of equal values topk/bottomk keep.
      loaded = this.#storage
        .select(node.matchers, window.min, window.max)
        .map((s) => ({ labels: s.labels, ts: s.timestamps, vs: s.values, windows: s.windows }))
        .sort((a, b) => compareLabels(a.labels, b.labels));
      ctx.samples += loaded.reduce((n, s) => n + s.ts.length, 0);
      if (ctx.samples > this.#maxSamples) {
        throw new PromqlEvalError(
          "query processing would load too many samples into memory in query execution",
        );
      }
      ctx.loaded.set(node, loaded);
    }
    return loaded;
  }

  stalelessSeries(node: VectorSelector, ctx: QueryContext): readonly StalelessSeries[] {
    let prepared = ctx.staleless.get(node);
    if (prepared === undefined) {
      prepared = this.#load(node, ctx).map((loaded) => {
        const n = loaded.ts.length;
        let kept = 0;
        for (let i = 0; i < n; i++) if (!isStaleNaN(loaded.vs[i]!)) kept++;
        if (kept === n && loaded.vs instanceof Float64Array)
          return {
            labels: loaded.labels,
            ts: new Float64Array(loaded.ts),
            vs: loaded.vs,
            windows: loaded.windows,
          };
        const ts = new Float64Array(kept);
        const vs = new Float64Array(kept);
        const windows: RollupPoint[] | undefined = loaded.windows === undefined ? undefined : [];
        for (let i = 0, k = 0; i < n; i++) {
          const v = loaded.vs[i]!;
          if (isStaleNaN(v)) continue;
          ts[k] = loaded.ts[i]!;
          vs[k++] = v;
          windows?.push(loaded.windows![i]!);
        }
        return { labels: loaded.labels, ts, vs, windows };
      });
      ctx.staleless.set(node, prepared);
    }
    return prepared;
  }

  /** The instant vector a selector gives at time t. */
  selectInstant(node: VectorSelector, t: number, ctx: QueryContext): InstantVector {
    const ref = (this.resolveAt(node.at, ctx) ?? t) - node.offsetMs;
    const out: InstantVector = [];
    for (const series of this.#load(node, ctx)) {
      const i = upperBound(series.ts, ref) - 1;
      if (i < 0) continue;
      const sampleT = series.ts[i]!;
      const v = series.vs[i]!;
      if (sampleT < ref - this.lookbackMs || isStaleNaN(v)) continue;
      out.push({ labels: series.labels, v, t: sampleT });
    }
    return out;
  }

  /** The range vector a range selector gives at time t, with the window it covered. */
  selectRange(
    node: MatrixSelector,
    t: number,
    ctx: QueryContext,
  ): { series: RangeSeries[]; rangeStart: number; rangeEnd: number } {
    const s = node.selector;
    const rangeEnd = (this.resolveAt(s.at, ctx) ?? t) - s.offsetMs;
    const rangeStart = rangeEnd - node.rangeMs;
    const series: RangeSeries[] = [];
    for (const loaded of this.#load(s, ctx)) {
      const from = lowerBound(loaded.ts, rangeStart);
      const to = upperBound(loaded.ts, rangeEnd);
      if (to <= from) continue;
      const ts: number[] = [];
      const vs: number[] = [];
      // A rollup tier's windows, kept beside their samples.
      const windows: RollupPoint[] | undefined = loaded.windows === undefined ? undefined : [];
      for (let i = from; i < to; i++) {
        const v = loaded.vs[i]!;
        if (isStaleNaN(v)) continue;
        ts.push(loaded.ts[i]!);
        vs.push(v);
        windows?.push(loaded.windows![i]!);
      }
      if (ts.length === 0) continue;
      series.push(
        windows === undefined
          ? { labels: loaded.labels, ts, vs }
          : { labels: loaded.labels, ts, vs, windows },
      );
    }
    return { series, rangeStart, rangeEnd };
  }

  /** The range vector a subquery gives at time t: its expression at aligned steps in [t − range, t]. */
  selectSubquery(
    node: Subquery,
    t: number,
    ctx: QueryContext,
  ): { series: RangeSeries[]; rangeStart: number; rangeEnd: number } {
    const stepMs = node.stepMs ?? this.defaultStepMs;
    const rangeEnd = (this.resolveAt(node.at, ctx) ?? t) - node.offsetMs;
    const rangeStart = rangeEnd - node.rangeMs;
    // Go's integer division truncates toward zero; the first step is the first multiple at or after the start.
    let first = Math.trunc(rangeStart / stepMs) * stepMs;
    if (first < rangeStart) first += stepMs;
    const bySeries = new Map<string, { labels: Labels; ts: number[]; vs: number[] }>();
    for (let step = first; step <= rangeEnd; step += stepMs) {
      const value = this.eval(node.expr, step, ctx);
      const samples =
        value.type === "scalar"
          ? [{ labels: [] as Labels, v: value.v }]
          : value.type === "vector"
            ? value.samples
            : [];
      appendStep(bySeries, step, samples);
    }
    return { series: [...bySeries.values()], rangeStart, rangeEnd };
  }

  eval(expr: Expr, t: number, ctx: QueryContext): Value {
    switch (expr.kind) {
      case "number":
        return { type: "scalar", v: expr.value };
      case "string":
        return { type: "string", v: expr.value };
      case "paren":
        return this.eval(expr.expr, t, ctx);
      case "vector":
        return { type: "vector", samples: this.selectInstant(expr, t, ctx) };
      case "matrix":
        return { type: "matrix", series: this.selectRange(expr, t, ctx).series };
      case "subquery":
        return { type: "matrix", series: this.selectSubquery(expr, t, ctx).series };
      case "unary": {
        const value = this.eval(expr.expr, t, ctx);
        if (expr.op === "+") return value;
        if (value.type === "scalar") return { type: "scalar", v: -value.v };
        if (value.type !== "vector") throw new PromqlEvalError("unary minus on a non-numeric value");
        return {
          type: "vector",
          samples: checkDistinct(value.samples.map((s) => ({ labels: withoutName(s.labels), v: -s.v }))),
        };
      }
      case "binary":
        return binaryValues(expr, this.eval(expr.lhs, t, ctx), this.eval(expr.rhs, t, ctx));
      case "aggregate": {
        const param = expr.param === undefined ? undefined : this.eval(expr.param, t, ctx);
        const input = this.eval(expr.expr, t, ctx);
        if (input.type !== "vector") throw new PromqlEvalError("aggregation over a non-vector");
        return { type: "vector", samples: aggregate(expr, input.samples, param) };
      }
      case "call":
        return callFunction(this, expr, t, ctx);
    }
  }
}

/** Adds one step's samples to the series being assembled (a range query's or a subquery's). */
function appendStep(
  bySeries: Map<string, { labels: Labels; ts: number[]; vs: number[] }>,
  t: number,
  samples: InstantVector,
): void {
  for (const sample of samples) {
    const key = cachedSeriesKey(sample.labels);
    let series = bySeries.get(key);
    if (series === undefined) {
      series = { labels: sample.labels, ts: [], vs: [] };
      bySeries.set(key, series);
    }
    series.ts.push(t);
    series.vs.push(sample.v);
  }
}
