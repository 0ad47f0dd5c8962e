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
import type { Expr, MatrixSelector, Subquery, VectorSelector } from "./promql-ast.ts";
import type { RangeSeries, Value } from "./promql-values.ts";

/** One series as read from storage for a selector: its samples over the query's whole window. */
export interface LoadedSeries {
  readonly labels: Labels;
  readonly ts: readonly number[];
  readonly vs: ArrayLike<number>;
}

/** Everything that is fixed for one query: its ends, the data read so far. */
export interface QueryContext {
  readonly startMs: number;
  readonly endMs: number;
  readonly windows: Map<VectorSelector, { min: number; max: number }>;
  readonly loaded: Map<VectorSelector, readonly LoadedSeries[]>;
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
  selectRange(node: MatrixSelector, t: number, ctx: QueryContext): RangeSelection;
  selectSubquery(node: Subquery, t: number, ctx: QueryContext): RangeSelection;
}
