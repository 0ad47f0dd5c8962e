/**
 * The values PromQL evaluates to, as in Prometheus: a scalar, a string, an instant vector
 * (one sample per series at the evaluation time) and a range vector (a matrix: the samples
 * of each series over a window). Samples here never hold StaleNaN: the selectors drop it.
 *
 * @example
 * const v: InstantVector = [{ labels: [["job", "api"]], v: 1, t: 60_000 }];
 */
import { cachedSeriesKey, type Labels } from "./labels.ts";
import type { RollupPoint } from "./rollup.ts";

export interface InstantSample {
  readonly labels: Labels;
  readonly v: number;
  /** The time of the stored sample it came from (what `timestamp()` returns); the evaluation time otherwise. */
  readonly t?: number;
}

export type InstantVector = InstantSample[];

export interface RangeSeries {
  readonly labels: Labels;
  readonly ts: readonly number[];
  readonly vs: readonly number[];
  /** On a rollup tier: the window behind each sample (what `rate` over windows reads). */
  readonly windows?: readonly RollupPoint[];
}

export type Value =
  | { readonly type: "scalar"; readonly v: number }
  | { readonly type: "string"; readonly v: string }
  | { readonly type: "vector"; readonly samples: InstantVector }
  | { readonly type: "matrix"; readonly series: readonly RangeSeries[] };

/** Thrown while evaluating (many-to-many matching, duplicate label sets, too many samples): a 422. */
export class PromqlEvalError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PromqlEvalError";
  }
}

/** Go's strconv.FormatFloat(v, 'f', -1, 64): no exponent, shortest digits, +Inf/-Inf/NaN. */
export function formatFloat(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (v === Number.POSITIVE_INFINITY) return "+Inf";
  if (v === Number.NEGATIVE_INFINITY) return "-Inf";
  const s = String(v);
  if (!/e/i.test(s)) return s;
  const [mantissa, exp] = s.split(/e/i) as [string, string];
  const e = Number(exp);
  const negative = mantissa.startsWith("-");
  const digits = mantissa.replace("-", "").replace(".", "");
  const point = (mantissa.replace("-", "").indexOf(".") + 1 || mantissa.replace("-", "").length + 1) - 1 + e;
  const body =
    point <= 0
      ? `0.${"0".repeat(-point)}${digits}`
      : point >= digits.length
        ? digits + "0".repeat(point - digits.length)
        : `${digits.slice(0, point)}.${digits.slice(point)}`;
  return (negative ? "-" : "") + body;
}

/** Prometheus refuses a result vector holding one label set twice (two series became one). */
export function checkDistinct(samples: InstantVector): InstantVector {
  if (samples.length < 2) return samples;
  const seen = new Set<string>();
  for (const s of samples) {
    const key = cachedSeriesKey(s.labels);
    if (seen.has(key)) throw new PromqlEvalError("vector cannot contain metrics with the same labelset");
    seen.add(key);
  }
  return samples;
}
