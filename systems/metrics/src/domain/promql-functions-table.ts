/**
 * The PromQL functions this engine knows, with their argument and return types, as
 * Prometheus 2.42 declares them (promql/parser/functions.go): the parser checks calls against
 * this table, so `rate(up)` fails at parse time with Prometheus's message, not at run time.
 * `optional` is how many trailing arguments may be left out (-1: any number more of the last).
 *
 * @example
 * FUNCTIONS.get("rate"); // { args: ["matrix"], returns: "vector", optional: 0 }
 */
import type { ValueType } from "./promql-ast.ts";

export interface FunctionSignature {
  readonly args: readonly ValueType[];
  readonly returns: ValueType;
  readonly optional: number;
}

const v = "vector" as const;
const m = "matrix" as const;
const s = "scalar" as const;
const str = "string" as const;

const sig = (args: ValueType[], returns: ValueType = v, optional = 0): FunctionSignature => ({
  args,
  returns,
  optional,
});

const MATH = ["abs", "ceil", "floor", "exp", "sqrt", "ln", "log2", "log10", "sgn", "deg", "rad", "timestamp"];
const TRIG = ["acos", "acosh", "asin", "asinh", "atan", "atanh", "cos", "cosh", "sin", "sinh", "tan", "tanh"];
const OVER_TIME = [
  "avg_over_time",
  "count_over_time",
  "sum_over_time",
  "min_over_time",
  "max_over_time",
  "last_over_time",
  "present_over_time",
  "stddev_over_time",
  "stdvar_over_time",
  "absent_over_time",
  "changes",
  "resets",
  "delta",
  "deriv",
  "idelta",
  "increase",
  "irate",
  "rate",
];
const DATE = [
  "day_of_month",
  "day_of_week",
  "day_of_year",
  "days_in_month",
  "hour",
  "minute",
  "month",
  "year",
];

export const FUNCTIONS: ReadonlyMap<string, FunctionSignature> = new Map<string, FunctionSignature>([
  ...MATH.map((name) => [name, sig([v])] as const),
  ...TRIG.map((name) => [name, sig([v])] as const),
  ...OVER_TIME.map((name) => [name, sig([m])] as const),
  ...DATE.map((name) => [name, sig([v], v, 1)] as const),
  ["absent", sig([v])],
  ["clamp", sig([v, s, s])],
  ["clamp_max", sig([v, s])],
  ["clamp_min", sig([v, s])],
  ["histogram_quantile", sig([s, v])],
  ["holt_winters", sig([m, s, s])],
  ["label_replace", sig([v, str, str, str, str])],
  ["label_join", sig([v, str, str, str], v, -1)],
  ["pi", sig([], s)],
  ["predict_linear", sig([m, s])],
  ["quantile_over_time", sig([s, m])],
  ["round", sig([v, s], v, 1)],
  ["scalar", sig([v], s)],
  ["sort", sig([v])],
  ["sort_desc", sig([v])],
  ["time", sig([], s)],
  ["vector", sig([s])],
]);
