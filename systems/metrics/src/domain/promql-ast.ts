/**
 * The PromQL syntax tree: what `promql-parser.ts` builds and `promql-engine.ts` evaluates.
 * Node kinds and their fields follow Prometheus's own AST (promql/parser/ast.go) so a reader
 * who knows one knows the other; durations and timestamps are in milliseconds.
 *
 * @example
 * // rate(http_requests_total{job="api"}[5m]) parses to
 * // { kind: "call", func: "rate", args: [{ kind: "matrix", selector: { kind: "vector", name: "http_requests_total", … }, rangeMs: 300000 }] }
 */
import type { LabelMatcher } from "./label-matcher.ts";

export type ValueType = "scalar" | "vector" | "matrix" | "string";

/** `@ <time>`, `@ start()`, `@ end()`: the time a selector or subquery is pinned to. */
export type AtModifier = { kind: "time"; ms: number } | { kind: "start" } | { kind: "end" };

export interface VectorSelector {
  readonly kind: "vector";
  readonly name: string | undefined;
  readonly matchers: readonly LabelMatcher[];
  readonly offsetMs: number;
  readonly at: AtModifier | undefined;
}

export interface MatrixSelector {
  readonly kind: "matrix";
  readonly selector: VectorSelector;
  readonly rangeMs: number;
}

export interface Subquery {
  readonly kind: "subquery";
  readonly expr: Expr;
  readonly rangeMs: number;
  /** Undefined: the default evaluation interval. */
  readonly stepMs: number | undefined;
  readonly offsetMs: number;
  readonly at: AtModifier | undefined;
}

export interface NumberLiteral {
  readonly kind: "number";
  readonly value: number;
}

export interface StringLiteral {
  readonly kind: "string";
  readonly value: string;
}

export interface Paren {
  readonly kind: "paren";
  readonly expr: Expr;
}

export interface Unary {
  readonly kind: "unary";
  readonly op: "-" | "+";
  readonly expr: Expr;
}

export type BinaryOp =
  | "+"
  | "-"
  | "*"
  | "/"
  | "%"
  | "^"
  | "atan2"
  | "=="
  | "!="
  | ">"
  | "<"
  | ">="
  | "<="
  | "and"
  | "or"
  | "unless";

export interface VectorMatching {
  /** one-to-one, many-to-one (group_left), one-to-many (group_right), many-to-many (set operators). */
  readonly card: "one-to-one" | "many-to-one" | "one-to-many" | "many-to-many";
  /** True for `on(...)`, false for `ignoring(...)` (or neither). */
  readonly on: boolean;
  readonly labels: readonly string[];
  /** Labels named in group_left(...)/group_right(...): copied from the "one" side. */
  readonly include: readonly string[];
}

export interface Binary {
  readonly kind: "binary";
  readonly op: BinaryOp;
  readonly lhs: Expr;
  readonly rhs: Expr;
  readonly returnBool: boolean;
  /** Present when both sides are vectors. */
  readonly matching: VectorMatching | undefined;
}

export type AggregateOp =
  | "sum"
  | "avg"
  | "count"
  | "min"
  | "max"
  | "group"
  | "stddev"
  | "stdvar"
  | "topk"
  | "bottomk"
  | "count_values"
  | "quantile";

export interface Aggregate {
  readonly kind: "aggregate";
  readonly op: AggregateOp;
  readonly expr: Expr;
  readonly param: Expr | undefined;
  readonly grouping: readonly string[];
  readonly without: boolean;
}

export interface Call {
  readonly kind: "call";
  readonly func: string;
  readonly args: readonly Expr[];
}

export type Expr =
  | VectorSelector
  | MatrixSelector
  | Subquery
  | NumberLiteral
  | StringLiteral
  | Paren
  | Unary
  | Binary
  | Aggregate
  | Call;

export const COMPARISON_OPS: ReadonlySet<BinaryOp> = new Set(["==", "!=", ">", "<", ">=", "<="]);
export const SET_OPS: ReadonlySet<BinaryOp> = new Set(["and", "or", "unless"]);

/**
 * Every vector selector in `expr` (those under range selectors and subqueries included): the
 * only places a query reads series from, so a series none of them matches can never change
 * its answer.
 */
export function vectorSelectorsOf(expr: Expr): VectorSelector[] {
  switch (expr.kind) {
    case "vector":
      return [expr];
    case "matrix":
      return [expr.selector];
    case "subquery":
    case "paren":
    case "unary":
      return vectorSelectorsOf(expr.expr);
    case "binary":
      return [...vectorSelectorsOf(expr.lhs), ...vectorSelectorsOf(expr.rhs)];
    case "aggregate":
      return [...vectorSelectorsOf(expr.expr), ...(expr.param ? vectorSelectorsOf(expr.param) : [])];
    case "call":
      return expr.args.flatMap(vectorSelectorsOf);
    case "number":
    case "string":
      return [];
  }
}
