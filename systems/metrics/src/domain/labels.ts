/**
 * Series identity (MT-13): a series is a metric name (`__name__`) plus one combination of
 * label values. Labels are kept sorted by name, so one combination has exactly one canonical
 * key, whatever order a client sent them in. The rules are Prometheus's: metric names
 * `[a-zA-Z_:][a-zA-Z0-9_:]*`, label names `[a-zA-Z_][a-zA-Z0-9_]*`, names starting with `__`
 * reserved (only `__name__` may be sent), no duplicate names, and an empty value means the
 * label is absent (dropped, as Prometheus does).
 *
 * @example
 * const labels = labelsFromRecord({ job: "api", __name__: "up" });
 * labels;                  // [["__name__", "up"], ["job", "api"]]
 * seriesKey(labels);       // "__name__\xffup\xffjob\xffapi"
 * metricNameOf(labels);    // "up"
 */
import { remembered } from "./weak-memo.ts";

/** A label set sorted by name, without empty values. */
export type Labels = ReadonlyArray<readonly [string, string]>;

export const METRIC_NAME = "__name__";
export const METRIC_NAME_PATTERN = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
export const LABEL_NAME_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** Bounds on one series' labels (Prometheus's defaults are unlimited; Mimir's are these orders). */
export const LABEL_LIMITS = { maxLabels: 40, maxNameChars: 128, maxValueChars: 2_048 } as const;

const SEP = "\xff";

function byName(a: readonly [string, string], b: readonly [string, string]): number {
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0;
}

/** Sorted labels from a record, empty values dropped (no validation: see `labelProblem`). */
export function labelsFromRecord(record: Readonly<Record<string, string>>): Labels {
  return Object.entries(record)
    .filter(([, value]) => value !== "")
    .sort(byName);
}

/** Sorted labels from pairs, empty values dropped (duplicates kept, for `labelProblem` to name). */
export function labelsFromPairs(pairs: Iterable<readonly [string, string]>): Labels {
  return [...pairs].filter(([, value]) => value !== "").sort(byName);
}

export function labelsToRecord(labels: Labels): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of labels) out[name] = value;
  return out;
}

/** Escapes the separator's character class in a value: ÿ → þý, þ → þþ (prefix-free). */
const ESCAPE = "\xfe";

function escapedValue(value: string): string {
  if (value.indexOf(SEP) === -1 && value.indexOf(ESCAPE) === -1) return value;
  let out = "";
  for (const c of value) out += c === SEP ? `${ESCAPE}\xfd` : c === ESCAPE ? `${ESCAPE}${ESCAPE}` : c;
  return out;
}

/**
 * The canonical key of a label set: equal label sets, equal keys — and different ones,
 * different keys. Prometheus joins names and values with the byte 0xff, which never occurs in
 * UTF-8; here the join is over UTF-16 text, where ÿ (U+00FF) is an ordinary character a value
 * may hold, so a value's ÿ (and þ, the escape) is escaped: `{a="1ÿbÿ2"}` and `{a="1", b="2"}`
 * were one key, so one series. Names are ASCII. A value with neither character keeps the key
 * it always had (the rollup tier stores keys; partitions hash them).
 */
export function seriesKey(labels: Labels): string {
  let key = "";
  for (const [name, value] of labels) key += (key === "" ? "" : SEP) + name + SEP + escapedValue(value);
  return key;
}

const keys = new WeakMap<Labels, string>();

/**
 * `seriesKey`, remembered per label set (labels are never changed once made): a range query
 * meets the same series' label set at every step, and keys it once.
 */
export function cachedSeriesKey(labels: Labels): string {
  return remembered(keys, labels, () => seriesKey(labels));
}

/**
 * Prometheus's `labels.Compare`: pair by pair, name then value, then the shorter first — the
 * order its storage returns series in, which decides ties wherever input order matters
 * (`topk`/`bottomk`).
 */
export function compareLabels(a: Labels, b: Labels): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const [an, av] = a[i]!;
    const [bn, bv] = b[i]!;
    if (an !== bn) return an < bn ? -1 : 1;
    if (av !== bv) return av < bv ? -1 : 1;
  }
  return a.length - b.length;
}

export function labelValue(labels: Labels, name: string): string | undefined {
  for (const [n, v] of labels) if (n === name) return v;
  return undefined;
}

export function metricNameOf(labels: Labels): string | undefined {
  return labelValue(labels, METRIC_NAME);
}

export function withoutName(labels: Labels): Labels {
  return labels.filter(([name]) => name !== METRIC_NAME);
}

const nameless = new WeakMap<Labels, Labels>();

/** `withoutName`, remembered per label set: the same object back for the same series at every step. */
export function cachedWithoutName(labels: Labels): Labels {
  return remembered(nameless, labels, () =>
    labels.some(([name]) => name === METRIC_NAME) ? withoutName(labels) : labels,
  );
}

/** What is wrong with a sorted label set, or undefined when it is a valid series. */
export function labelProblem(labels: Labels): { reason: string; label?: string } | undefined {
  const name = metricNameOf(labels);
  if (name === undefined) return { reason: "the series has no metric name (__name__)" };
  if (!METRIC_NAME_PATTERN.test(name))
    return { reason: `metric name "${name}" is not valid`, label: METRIC_NAME };
  if (labels.length > LABEL_LIMITS.maxLabels) {
    return { reason: `${labels.length} labels, more than ${LABEL_LIMITS.maxLabels}` };
  }
  for (let i = 0; i < labels.length; i++) {
    const [n, v] = labels[i]!;
    if (i > 0 && labels[i - 1]![0] === n) return { reason: `duplicate label name "${n}"`, label: n };
    if (n.length > LABEL_LIMITS.maxNameChars || !LABEL_NAME_PATTERN.test(n)) {
      return { reason: `label name "${n.slice(0, 64)}" is not valid`, label: n.slice(0, 64) };
    }
    if (n.startsWith("__") && n !== METRIC_NAME) return { reason: `label name "${n}" is reserved`, label: n };
    if (v.length > LABEL_LIMITS.maxValueChars) {
      return { reason: `label "${n}" value longer than ${LABEL_LIMITS.maxValueChars} characters`, label: n };
    }
    if (!v.isWellFormed()) return { reason: `label "${n}" value is not valid UTF-8`, label: n };
  }
  return undefined;
}

/** Prometheus's rendering: `up{instance="a", job="b"}`. */
export function formatSeries(labels: Labels): string {
  const name = metricNameOf(labels) ?? "";
  const rest = withoutName(labels).map(([n, v]) => `${n}=${JSON.stringify(v)}`);
  return rest.length === 0 ? name || "{}" : `${name}{${rest.join(", ")}}`;
}
