/**
 * PromQL aggregation operators as Prometheus 2.42 computes them: groups by the `by` labels
 * (or all but the `without` ones and the metric name); `avg` as a running mean that survives
 * float overflow; `stddev`/`stdvar` by Welford's method; `min`/`max` replacing a NaN;
 * `topk`/`bottomk` keeping whole series (names included), NaN ranked last; `quantile` by
 * linear interpolation between ranks; `count_values` adding the value as a label.
 *
 * @example
 * aggregate({ kind: "aggregate", op: "sum", grouping: ["job"], without: false, expr, param: undefined }, samples, undefined);
 */
import { type Labels, METRIC_NAME, seriesKey } from "./labels.ts";
import type { Aggregate } from "./promql-ast.ts";
import {
  formatFloat,
  type InstantSample,
  type InstantVector,
  PromqlEvalError,
  type Value,
} from "./promql-values.ts";
import { remembered } from "./weak-memo.ts";

interface Group {
  labels: Labels;
  samples: InstantSample[];
}

function groupLabels(labels: Labels, expr: Aggregate): Labels {
  return expr.without
    ? labels.filter(([name]) => name !== METRIC_NAME && !expr.grouping.includes(name))
    : labels.filter(([name]) => expr.grouping.includes(name));
}

/** Each aggregation's groups by input label set: a range query groups the same series at every step. */
const groupsOf = new WeakMap<Aggregate, WeakMap<Labels, { labels: Labels; key: string }>>();

function groupOf(labels: Labels, expr: Aggregate): { labels: Labels; key: string } {
  const known = remembered(groupsOf, expr, () => new WeakMap<Labels, { labels: Labels; key: string }>());
  return remembered(known, labels, () => {
    const grouped = groupLabels(labels, expr);
    return { labels: grouped, key: seriesKey(grouped) };
  });
}

/** Prometheus's `quantile`: NaN for no values, ±Inf outside [0, 1], linear between ranks. */
export function quantileOf(q: number, values: number[]): number {
  if (values.length === 0) return Number.NaN;
  if (q < 0) return Number.NEGATIVE_INFINITY;
  if (q > 1) return Number.POSITIVE_INFINITY;
  const sorted = [...values].sort((a, b) => (Number.isNaN(a) ? -1 : Number.isNaN(b) ? 1 : a - b));
  const rank = q * (sorted.length - 1);
  const lower = Math.max(0, Math.floor(rank));
  const upper = Math.min(sorted.length - 1, lower + 1);
  const weight = rank - Math.floor(rank);
  return sorted[lower]! * (1 - weight) + sorted[upper]! * weight;
}

/** The running mean of Prometheus's avg and avg_over_time, Inf-safe. */
export function runningMean(values: readonly number[]): number {
  return runningMeanOf(values, 0, values.length);
}

/** `runningMean` of values[from, to). */
export function runningMeanOf(values: ArrayLike<number>, from: number, to: number): number {
  let mean = 0;
  let count = 0;
  for (let i = from; i < to; i++) {
    const v = values[i]!;
    count++;
    if (count === 1) {
      mean = v;
      continue;
    }
    if (!Number.isFinite(mean) && !Number.isNaN(mean)) {
      if (!Number.isFinite(v) && !Number.isNaN(v) && mean > 0 === v > 0) continue;
      if (Number.isFinite(v)) continue;
    }
    mean += v / count - mean / count;
  }
  return mean;
}

/** Welford's variance (population), as Prometheus's stdvar. */
export function variance(values: readonly number[]): number {
  return varianceOf(values, 0, values.length);
}

/** `variance` of values[from, to). */
export function varianceOf(values: ArrayLike<number>, from: number, to: number): number {
  let count = 0;
  let mean = 0;
  let aux = 0;
  for (let i = from; i < to; i++) {
    const v = values[i]!;
    count++;
    const delta = v - mean;
    mean += delta / count;
    aux += delta * (v - mean);
  }
  return aux / count;
}

function reduce(op: Aggregate["op"], values: number[]): number {
  switch (op) {
    case "sum":
      return values.reduce((a, b) => a + b, 0);
    case "avg":
      return runningMean(values);
    case "count":
      return values.length;
    case "group":
      return 1;
    case "min":
      return values.reduce((a, b) => (Number.isNaN(a) || b < a ? b : a));
    case "max":
      return values.reduce((a, b) => (Number.isNaN(a) || b > a ? b : a));
    case "stdvar":
      return variance(values);
    case "stddev":
      return Math.sqrt(variance(values));
    default:
      throw new PromqlEvalError(`aggregation ${op} has no plain reduction`);
  }
}

/**
 * topk/bottomk as Prometheus 2.42 selects them — a heap of k fed in input order with Go's
 * `container/heap` moves: a sample enters when the heap is not full, or beats the root, or
 * the root is NaN; then the root is popped (swap with the last, sift down) and the sample
 * pushed (append, sift up). Which of EQUAL values survive follows from those moves (not from
 * a stable sort), so it must be the same moves for the same answer. NaN ranks last.
 */
function topOrBottom(op: "topk" | "bottomk", k: number, group: Group): InstantVector {
  if (k < 1) return [];
  // less(i, j): heap[i] belongs nearer the root (evicted first). NaN is always "less".
  const heap: InstantSample[] = [];
  const less = (i: number, j: number) => {
    const [a, b] = [heap[i]!.v, heap[j]!.v];
    return Number.isNaN(a) || (op === "topk" ? a < b : a > b);
  };
  const swap = (i: number, j: number) => {
    [heap[i], heap[j]] = [heap[j]!, heap[i]!];
  };
  const up = (start: number) => {
    for (let j = start; j > 0; ) {
      const parent = (j - 1) >> 1;
      if (!less(j, parent)) break;
      swap(parent, j);
      j = parent;
    }
  };
  const down = (n: number) => {
    for (let i = 0; ; ) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const j = left + 1 < n && less(left + 1, left) ? left + 1 : left;
      if (!less(j, i)) break;
      swap(i, j);
      i = j;
    }
  };
  for (const s of group.samples) {
    const root = heap[0]?.v ?? Number.NaN;
    const beats = op === "topk" ? root < s.v : root > s.v;
    if (heap.length >= k && !beats && !Number.isNaN(root)) continue;
    if (heap.length >= k) {
      if (k === 1) {
        heap[0] = s;
        continue;
      }
      swap(0, heap.length - 1);
      down(heap.length - 1);
      heap.pop();
    }
    heap.push(s);
    up(heap.length - 1);
  }
  // Output best first, NaN last (Prometheus sorts the heap in reverse).
  const sign = op === "topk" ? -1 : 1;
  return heap
    .sort((a, b) => {
      if (Number.isNaN(a.v)) return Number.isNaN(b.v) ? 0 : 1;
      if (Number.isNaN(b.v)) return -1;
      return sign * (a.v - b.v);
    })
    .map((s) => ({ labels: s.labels, v: s.v }));
}

/**
 * count_values: the value becomes a label of each sample first, and a grouping label, so equal
 * values count together even when the label's name was already a grouping label.
 */
function countValues(expr: Aggregate, samples: InstantVector, param: Value | undefined): InstantVector {
  const name = param?.type === "string" ? param.v : "";
  if (!/^[a-zA-Z_][a-zA-Z0-9_]*$/.test(name)) throw new PromqlEvalError(`invalid label name "${name}"`);
  const grouping = expr.without ? expr.grouping.filter((n) => n !== name) : [...expr.grouping, name];
  const relabelled = samples.map((s) => ({
    labels: [...s.labels.filter(([n]) => n !== name), [name, formatFloat(s.v)] as const].sort((a, b) =>
      a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0,
    ),
    v: s.v,
  }));
  return aggregate({ ...expr, op: "count", grouping }, relabelled, undefined);
}

export function aggregate(expr: Aggregate, samples: InstantVector, param: Value | undefined): InstantVector {
  if (expr.op === "count_values") return countValues(expr, samples, param);
  const groups = new Map<string, Group>();
  for (const sample of samples) {
    const { labels, key } = groupOf(sample.labels, expr);
    let group = groups.get(key);
    if (group === undefined) {
      group = { labels, samples: [] };
      groups.set(key, group);
    }
    group.samples.push(sample);
  }
  const out: InstantVector = [];
  const scalarParam = param?.type === "scalar" ? param.v : Number.NaN;
  for (const group of groups.values()) {
    switch (expr.op) {
      case "topk":
      case "bottomk": {
        const k = Number.isNaN(scalarParam) ? 0 : Math.trunc(Math.min(scalarParam, 2 ** 53));
        out.push(...topOrBottom(expr.op, k, group));
        break;
      }
      case "quantile":
        out.push({
          labels: group.labels,
          v: quantileOf(
            scalarParam,
            group.samples.map((s) => s.v),
          ),
        });
        break;
      default:
        out.push({
          labels: group.labels,
          v: reduce(
            expr.op,
            group.samples.map((s) => s.v),
          ),
        });
    }
  }
  return out;
}
