/**
 * PromQL binary operators with Prometheus's vector matching: arithmetic and comparisons
 * between scalars and vectors, one-to-one matching on all labels but the name (or `on(…)` /
 * `ignoring(…)`), many-to-one and one-to-many with `group_left`/`group_right` (labels named in
 * the group clause copied from the "one" side), and the set operators `and`, `or`, `unless`.
 * Arithmetic and `bool` comparisons drop the metric name; a plain comparison filters and
 * keeps it.
 *
 * @example
 * // errors / on(job) group_left requests
 * binaryValues(expr, lhsValue, rhsValue);
 */
import { cachedWithoutName, type Labels, METRIC_NAME, seriesKey, withoutName } from "./labels.ts";
import { type Binary, type BinaryOp, COMPARISON_OPS, SET_OPS, type VectorMatching } from "./promql-ast.ts";
import { type InstantSample, type InstantVector, PromqlEvalError, type Value } from "./promql-values.ts";
import { remembered } from "./weak-memo.ts";

/** Go's math.Mod: the result has the sign of the dividend. */
function goMod(a: number, b: number): number {
  return a % b;
}

/** Go's math.Pow where JavaScript's ** differs: 1^y = 1 and (-1)^±Inf = 1. */
export function goPow(x: number, y: number): number {
  if (x === 1) return 1;
  if (x === -1 && !Number.isFinite(y) && !Number.isNaN(y)) return 1;
  return x ** y;
}

/** The value and whether a comparison keeps the sample. */
export function scalarOp(op: BinaryOp, l: number, r: number): [number, boolean] {
  switch (op) {
    case "+":
      return [l + r, true];
    case "-":
      return [l - r, true];
    case "*":
      return [l * r, true];
    case "/":
      return [l / r, true];
    case "%":
      return [goMod(l, r), true];
    case "^":
      return [goPow(l, r), true];
    case "atan2":
      return [Math.atan2(l, r), true];
    case "==":
      return [l, l === r];
    case "!=":
      return [l, l !== r];
    case ">":
      return [l, l > r];
    case "<":
      return [l, l < r];
    case ">=":
      return [l, l >= r];
    case "<=":
      return [l, l <= r];
    default:
      throw new PromqlEvalError(`operator "${op}" not allowed here`);
  }
}

/** Prometheus 2.42's shouldDropMetricName: the arithmetic operators but atan2, and any `bool` comparison. */
const NAME_DROPPING: ReadonlySet<BinaryOp> = new Set(["+", "-", "*", "/", "%", "^"]);
const dropsName = (op: BinaryOp, returnBool: boolean) => returnBool || NAME_DROPPING.has(op);

/** The matching signature of a series: its `on` labels, or all but the `ignoring` ones and the name. */
function signatureOf(labels: Labels, matching: VectorMatching): string {
  if (matching.on) return seriesKey(labels.filter(([name]) => matching.labels.includes(name)));
  return seriesKey(labels.filter(([name]) => name !== METRIC_NAME && !matching.labels.includes(name)));
}

/** Signatures by matching and label set: a range query matches the same series at every step. */
const signatures = new WeakMap<VectorMatching, WeakMap<Labels, string>>();

function signature(labels: Labels, matching: VectorMatching): string {
  const known = remembered(signatures, matching, () => new WeakMap<Labels, string>());
  return remembered(known, labels, () => signatureOf(labels, matching));
}

/** Result labels and their key by expression and the two sides' label sets (same reason). */
const results = new WeakMap<Binary, WeakMap<Labels, WeakMap<Labels, { labels: Labels; key: string }>>>();

function resultOf(
  lhs: Labels,
  rhs: Labels,
  op: BinaryOp,
  expr: Binary,
  matching: VectorMatching,
): { labels: Labels; key: string } {
  const byLeft = remembered(
    results,
    expr,
    () => new WeakMap<Labels, WeakMap<Labels, { labels: Labels; key: string }>>(),
  );
  const byRight = remembered(byLeft, lhs, () => new WeakMap<Labels, { labels: Labels; key: string }>());
  return remembered(byRight, rhs, () => {
    const labels = resultLabels(lhs, rhs, op, expr, matching);
    return { labels, key: seriesKey(labels) };
  });
}

function setLabel(labels: Labels, name: string, value: string | undefined): Labels {
  const rest = labels.filter(([n]) => n !== name);
  if (value === undefined || value === "") return rest;
  return [...rest, [name, value] as const].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
}

function resultLabels(
  lhs: Labels,
  rhs: Labels,
  op: BinaryOp,
  expr: Binary,
  matching: VectorMatching,
): Labels {
  let labels = dropsName(op, expr.returnBool) ? withoutName(lhs) : lhs;
  if (matching.card === "one-to-one") {
    labels = matching.on
      ? labels.filter(([name]) => matching.labels.includes(name))
      : labels.filter(([name]) => !matching.labels.includes(name));
  }
  for (const name of matching.include) {
    labels = setLabel(labels, name, rhs.find(([n]) => n === name)?.[1]);
  }
  return labels;
}

function setOperation(
  op: BinaryOp,
  lhs: InstantVector,
  rhs: InstantVector,
  matching: VectorMatching,
): InstantVector {
  const rightSigs = new Set(rhs.map((s) => signature(s.labels, matching)));
  if (op === "and") return lhs.filter((s) => rightSigs.has(signature(s.labels, matching)));
  if (op === "unless") return lhs.filter((s) => !rightSigs.has(signature(s.labels, matching)));
  const leftSigs = new Set(lhs.map((s) => signature(s.labels, matching)));
  return [...lhs, ...rhs.filter((s) => !leftSigs.has(signature(s.labels, matching)))];
}

function vectorVector(expr: Binary, lhs: InstantVector, rhs: InstantVector): InstantVector {
  const matching = expr.matching!;
  const op = expr.op;
  if (SET_OPS.has(op)) return setOperation(op, lhs, rhs, matching);
  // The "one" side is the right one, unless group_right swaps them.
  const swap = matching.card === "one-to-many";
  const [many, one] = swap ? [rhs, lhs] : [lhs, rhs];
  const oneBySig = new Map<string, InstantSample>();
  for (const s of one) {
    const sig = signature(s.labels, matching);
    if (oneBySig.has(sig)) {
      const side = swap ? "left" : "right";
      throw new PromqlEvalError(
        `found duplicate series for the match group on the ${side} hand-side of the operation: many-to-many matching not allowed: matching labels must be unique on one side`,
      );
    }
    oneBySig.set(sig, s);
  }
  const out: InstantVector = [];
  const seenOneToOne = new Set<string>();
  const seenResult = new Set<string>();
  for (const s of many) {
    const sig = signature(s.labels, matching);
    const other = oneBySig.get(sig);
    if (other === undefined) continue;
    if (matching.card === "one-to-one") {
      if (seenOneToOne.has(sig)) {
        throw new PromqlEvalError(
          "multiple matches for labels: many-to-one matching must be explicit (group_left/group_right)",
        );
      }
      seenOneToOne.add(sig);
    }
    const [l, r] = swap ? [other, s] : [s, other];
    let [value, keep] = scalarOp(op, l.v, r.v);
    if (expr.returnBool) {
      value = keep ? 1 : 0;
      keep = true;
    }
    if (!keep) continue;
    const { labels, key } = resultOf(s.labels, other.labels, op, expr, matching);
    if (matching.card !== "one-to-one") {
      if (seenResult.has(key)) {
        throw new PromqlEvalError("multiple matches for labels: grouping labels must ensure unique matches");
      }
      seenResult.add(key);
    }
    out.push({ labels, v: value });
  }
  return out;
}

function vectorScalar(
  expr: Binary,
  vector: InstantVector,
  scalar: number,
  scalarOnLeft: boolean,
): InstantVector {
  const out: InstantVector = [];
  const drop = dropsName(expr.op, expr.returnBool);
  for (const s of vector) {
    const [l, r] = scalarOnLeft ? [scalar, s.v] : [s.v, scalar];
    let [value, keep] = scalarOp(expr.op, l, r);
    // A comparison keeps the vector's value, even when the vector is on the right.
    if (COMPARISON_OPS.has(expr.op) && scalarOnLeft) value = s.v;
    if (expr.returnBool) {
      value = keep ? 1 : 0;
      keep = true;
    }
    if (keep) out.push({ labels: drop ? cachedWithoutName(s.labels) : s.labels, v: value });
  }
  return out;
}

export function binaryValues(expr: Binary, lhs: Value, rhs: Value): Value {
  if (lhs.type === "scalar" && rhs.type === "scalar") {
    const [value, keep] = scalarOp(expr.op, lhs.v, rhs.v);
    return { type: "scalar", v: expr.returnBool ? (keep ? 1 : 0) : value };
  }
  if (lhs.type === "vector" && rhs.type === "vector")
    return { type: "vector", samples: vectorVector(expr, lhs.samples, rhs.samples) };
  if (lhs.type === "vector" && rhs.type === "scalar")
    return { type: "vector", samples: vectorScalar(expr, lhs.samples, rhs.v, false) };
  if (lhs.type === "scalar" && rhs.type === "vector")
    return { type: "vector", samples: vectorScalar(expr, rhs.samples, lhs.v, true) };
  throw new PromqlEvalError("binary expression must contain only scalar and instant vector types");
}
