/**
 * What the PromQL functions need of the engine that calls them: evaluate a sub-expression and
 * read a range vector, within one query's context. It lets `promql-functions.ts` call back
 * into `promql-engine.ts` without the two importing each other.
 *
 * @example
 * function scalarArg(engine: PromqlEvaluator, expr: Expr, t: number, ctx: QueryContext) {
 *   return engine.eval(expr, t, ctx);
 * }
 */
import type { Labels } from "./labels.ts";
import type { AtModifier, Call, Expr, MatrixSelector, Subquery, VectorSelector } from "./promql-ast.ts";
import type { InstantVector, RangeSeries, Value } from "./promql-values.ts";
import type { RollupPoint } from "./rollup.ts";

/** One series as read from storage for a selector: its samples over the query's whole window. */
export interface LoadedSeries {
  readonly labels: Labels;
  readonly ts: readonly number[];
  readonly vs: ArrayLike<number>;
  /** A rollup tier's windows, one per sample (see `RangeSeries.windows`). */
  readonly windows?: readonly RollupPoint[];
}

/** A selector's series with their StaleNaN samples dropped, as range functions read them. */
export interface StalelessSeries {
  readonly labels: Labels;
  readonly ts: Float64Array;
  readonly vs: Float64Array;
  readonly windows: readonly RollupPoint[] | undefined;
}

/** A range function's value for every series at every step of a range query. */
export interface RangeColumns {
  /** The instant vector at the step with this index. */
  at(step: number): InstantVector;
}

/** Everything that is fixed for one query: its ends, the data read so far. */
export interface QueryContext {
  readonly startMs: number;
  readonly endMs: number;
  readonly windows: Map<VectorSelector, { min: number; max: number }>;
  readonly loaded: Map<VectorSelector, readonly LoadedSeries[]>;
  /** A range query's step times (undefined for an instant query). */
  readonly range?: { readonly times: readonly number[]; readonly stepMs: number };
  readonly staleless: Map<VectorSelector, readonly StalelessSeries[]>;
  /** Range functions computed for all steps (null: too large, evaluated step by step). */
  readonly columns: Map<Call, RangeColumns | null>;
  samples: number;
}

/** A range vector with the window it covered. */
export interface RangeSelection {
  series: RangeSeries[];
  rangeStart: number;
  rangeEnd: number;
}

export interface PromqlEvaluator {
  eval(expr: Expr, t: number, ctx: QueryContext): Value;
  resolveAt(at: AtModifier | undefined, ctx: QueryContext): number | undefined;
  /** The selector's series over the query's whole window, StaleNaN dropped (read once per query). */
  stalelessSeries(node: VectorSelector, ctx: QueryContext): readonly StalelessSeries[];
  selectRange(node: MatrixSelector, t: number, ctx: QueryContext): RangeSelection;
  selectSubquery(node: Subquery, t: number, ctx: QueryContext): RangeSelection;
}
