/**
 * Comparing an answer of our query API with Prometheus's own answer to the same request — the
 * differential tests' one rule: the same result type, the same series (label sets), the same
 * timestamps and values equal within 1e-9 relative (NaN equals NaN, infinities exactly). Order
 * is not compared: Prometheus does not promise one for vectors, and both sort matrices.
 *
 * @example
 * const [ours, theirs] = [askOurs(running, key), askPrometheus(prom.url)];
 * const path = `/api/v1/query?query=up&time=1700000000`;
 * const diff = differenceOf(normalise(await ours(path)), normalise(await theirs(path)));  // undefined, or what differs
 */
import type { RunningSystem } from "../src/main.ts";

/** Prometheus's `/api/v1/query` and `/query_range` success body (and its error fields). */
export interface ApiResult {
  status: string;
  error?: string;
  errorType?: string;
  data?: {
    resultType: string;
    result:
      | Array<{
          metric: Record<string, string>;
          value?: [number, string];
          values?: Array<[number, string]>;
        }>
      | [number, string];
  };
}

/** A result reduced to what is compared: its type and, per label set (sorted), [t, v, t, v, …]. */
export interface NormalisedAnswer {
  readonly resultType: string;
  readonly series: Array<[string, number[]]>;
}

export const RELATIVE_TOLERANCE = 1e-9;

/** A path of the query API asked of our service in-process, with the tenant's key. */
export function askOurs(running: RunningSystem, key: string): (path: string) => Promise<ApiResult> {
  return async (path) =>
    (
      await running.service.app.inject({ url: path, headers: { authorization: `Bearer ${key}` } })
    ).json() as ApiResult;
}

/** The same path asked of a Prometheus over HTTP. */
export function askPrometheus(url: string): (path: string) => Promise<ApiResult> {
  return async (path) => (await (await fetch(`${url}${path}`)).json()) as ApiResult;
}

export function normalise(body: ApiResult): NormalisedAnswer {
  if (body.status !== "success" || body.data === undefined)
    return { resultType: `error ${body.errorType ?? ""}`, series: [] };
  const { resultType, result } = body.data;
  if (resultType === "scalar" || resultType === "string") {
    const [t, v] = result as [number, string];
    return { resultType, series: [["", [t, Number(v)]]] };
  }
  const series = (
    result as Array<{
      metric: Record<string, string>;
      value?: [number, string];
      values?: Array<[number, string]>;
    }>
  )
    .map((r): [string, number[]] => [
      JSON.stringify(Object.entries(r.metric).sort()),
      (r.values ?? (r.value ? [r.value] : [])).flatMap(([t, v]) => [t, Number(v)]),
    ])
    .sort((a, b) => (a[0] < b[0] ? -1 : 1));
  return { resultType, series };
}

export function sameFloat(v: number, w: number): boolean {
  return (
    (Number.isNaN(v) && Number.isNaN(w)) ||
    v === w ||
    Math.abs(v - w) <= RELATIVE_TOLERANCE * (Math.abs(v) + Math.abs(w))
  );
}

/** Undefined when both agree; else the first difference, in words (for the assertion message). */
export function differenceOf(ours: NormalisedAnswer, theirs: NormalisedAnswer): string | undefined {
  if (ours.resultType !== theirs.resultType)
    return `result type: ours ${ours.resultType}, Prometheus ${theirs.resultType}`;
  const keys = (a: NormalisedAnswer) => a.series.map(([key]) => key).join("\n");
  if (keys(ours) !== keys(theirs))
    return `series: ours\n${keys(ours) || "(none)"}\nPrometheus\n${keys(theirs) || "(none)"}`;
  for (const [i, [key, values]] of ours.series.entries()) {
    const other = theirs.series[i]![1];
    if (values.length !== other.length)
      return `${key}: ours ${values.length / 2} points, Prometheus ${other.length / 2}\nours ${JSON.stringify(values)}\nPrometheus ${JSON.stringify(other)}`;
    const k = values.findIndex((v, n) => !sameFloat(v, other[n]!));
    if (k >= 0) {
      const at = k - (k % 2);
      return `${key} at t=${values[at]}: ours ${values[at + 1]} (t=${values[at]}), Prometheus ${other[at + 1]} (t=${other[at]})`;
    }
  }
  return undefined;
}

/** True when both agree (see `differenceOf`). */
export function agree(ours: NormalisedAnswer, theirs: NormalisedAnswer): boolean {
  return differenceOf(ours, theirs) === undefined;
}
