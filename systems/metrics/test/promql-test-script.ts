/**
 * Runs Prometheus's PromQL test-script format (promql/testdata/*.test, v2.42.0): `load <step>`
 * blocks of series written in expanding notation (`0+10x5`, `1x3`, `_`, `_x2`, `stale`),
 * `clear`, and `eval[_fail|_ordered] instant at <time> <expr>` with the expected samples.
 * As Prometheus's own runner does, each eval also runs as a range query from t − 1 m to
 * t + 1 m at a 1 m step and must give the same answer at t; values compare within a relative
 * 1e-6 (NaN equals NaN).
 *
 * @example
 * const report = runTestScript(readFileSync("functions.test", "utf8"));
 * report.passed; report.failed[0]; // { line, expr, reason }
 */

import { parsePromDurationMs } from "@casebook/kit/prom-duration";
import { HeadBlock, type SeriesSamples } from "../src/domain/head-block.ts";
import { type Labels, labelsFromPairs, seriesKey } from "../src/domain/labels.ts";
import { PromqlEngine } from "../src/domain/promql-engine.ts";
import { parsePromql } from "../src/domain/promql-parser.ts";
import type { InstantVector, Value } from "../src/domain/promql-values.ts";
import { STALE_NAN } from "../src/domain/staleness.ts";

export interface CaseFailure {
  readonly line: number;
  readonly expr: string;
  readonly reason: string;
}

export interface ScriptReport {
  readonly total: number;
  readonly passed: number;
  readonly failed: CaseFailure[];
}

const roomy = { maxSeries: 10_000_000, maxSeriesPerMetric: 10_000_000 };
const HEAD_RANGE_MS = 1_000 * 86_400_000;

/** `name{a="b", c="d"}` (either part optional) → sorted labels. */
export function parseSeriesDescriptor(text: string): { labels: Labels; rest: string } {
  let i = 0;
  const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(text)?.[0];
  const pairs: Array<[string, string]> = [];
  if (name) {
    pairs.push(["__name__", name]);
    i = name.length;
  }
  if (text[i] === "{") {
    i++;
    for (;;) {
      while (text[i] === " " || text[i] === ",") i++;
      if (text[i] === "}") {
        i++;
        break;
      }
      const label = /^[a-zA-Z_][a-zA-Z0-9_]*/.exec(text.slice(i))![0];
      i += label.length;
      while (text[i] === " ") i++;
      if (text[i] !== "=") throw new Error(`bad series descriptor: ${text}`);
      i++;
      while (text[i] === " ") i++;
      const quoted = /^"(?:[^"\\]|\\.)*"/.exec(text.slice(i))![0];
      pairs.push([label, JSON.parse(quoted) as string]);
      i += quoted.length;
    }
  }
  return { labels: labelsFromPairs(pairs), rest: text.slice(i).trim() };
}

function parseNumber(text: string): number {
  const lower = text.toLowerCase();
  if (/^[+]?inf$/.test(lower)) return Number.POSITIVE_INFINITY;
  if (lower === "-inf") return Number.NEGATIVE_INFINITY;
  if (lower === "nan") return Number.NaN;
  const n = Number(text);
  if (Number.isNaN(n)) throw new Error(`bad number ${text}`);
  return n;
}

/** Expanding notation → values per step (undefined = no sample at that step). */
export function expandValues(text: string): Array<number | "stale" | undefined> {
  // "stale" stays a word until it becomes a sample object: an array of doubles may canonicalise the NaN.
  const out: Array<number | "stale" | undefined> = [];
  for (const item of text.split(/\s+/).filter(Boolean)) {
    if (item === "_") out.push(undefined);
    else if (/^_x\d+$/.test(item)) for (let i = 0; i < Number(item.slice(2)); i++) out.push(undefined);
    else if (item === "stale") out.push("stale");
    else {
      const m = /^([-+]?(?:[\d.]+(?:e[-+]?\d+)?|inf|nan))(?:([-+][\d.]+(?:e[-+]?\d+)?)?x(\d+))?$/i.exec(item);
      if (!m) throw new Error(`bad value ${item}`);
      let cur = parseNumber(m[1]!);
      if (m[3] === undefined) {
        out.push(cur);
        continue;
      }
      const step = m[2] === undefined ? 0 : Number(m[2]);
      out.push(cur);
      for (let i = 0; i < Number(m[3]); i++) {
        cur += step;
        out.push(cur);
      }
    }
  }
  return out;
}

function almostEqual(a: number, b: number): boolean {
  if (Number.isNaN(a) && Number.isNaN(b)) return true;
  if (a === b) return true;
  const diff = Math.abs(a - b);
  const minNormal = 2.2250738585072014e-308;
  if (a === 0 || b === 0 || diff < minNormal) return diff < 1e-6 * minNormal;
  return diff / (Math.abs(a) + Math.abs(b)) < 1e-6;
}

interface Expected {
  readonly scalar: number | undefined;
  readonly samples: Array<{ labels: Labels; v: number }>;
}

function compare(expected: Expected, value: Value, ordered: boolean): string | undefined {
  if (value.type === "scalar") {
    const want = expected.scalar;
    if (want === undefined) return `got scalar ${value.v}, expected a vector`;
    return almostEqual(want, value.v) ? undefined : `expected scalar ${want} but got ${value.v}`;
  }
  if (value.type !== "vector") return `got a ${value.type} result`;
  if (expected.scalar !== undefined) return `expected scalar ${expected.scalar}, got a vector`;
  return compareVector(expected, value.samples, ordered);
}

function compareVector(expected: Expected, samples: InstantVector, ordered: boolean): string | undefined {
  const want = new Map(expected.samples.map((s, pos) => [seriesKey(s.labels), { ...s, pos }]));
  const seen = new Set<string>();
  for (let pos = 0; pos < samples.length; pos++) {
    const s = samples[pos]!;
    const key = seriesKey(s.labels);
    const exp = want.get(key);
    if (exp === undefined) return `unexpected metric ${JSON.stringify(s.labels)} in result`;
    if (ordered && exp.pos !== pos)
      return `metric ${JSON.stringify(s.labels)} at position ${pos}, expected ${exp.pos}`;
    if (!almostEqual(exp.v, s.v)) return `expected ${exp.v} for ${JSON.stringify(s.labels)} but got ${s.v}`;
    seen.add(key);
  }
  for (const [key, exp] of want)
    if (!seen.has(key)) return `expected metric ${JSON.stringify(exp.labels)} not found`;
  return undefined;
}

function parseTime(text: string): number {
  if (text === "0") return 0;
  const ms = parsePromDurationMs(text);
  if (ms === undefined) throw new Error(`bad time ${text}`);
  return ms;
}

export function runTestScript(script: string): ScriptReport {
  const lines = script.split("\n");
  let head = new HeadBlock({ blockRangeMs: HEAD_RANGE_MS, limits: roomy });
  const failed: CaseFailure[] = [];
  let total = 0;
  let i = 0;
  const block = (): string[] => {
    const out: string[] = [];
    while (i < lines.length && /^\s+\S/.test(lines[i]!)) out.push(lines[i++]!.trim());
    return out;
  };
  while (i < lines.length) {
    const line = lines[i]!.trim();
    const lineNo = ++i;
    if (line === "" || line.startsWith("#")) continue;
    if (line === "clear") {
      head = new HeadBlock({ blockRangeMs: HEAD_RANGE_MS, limits: roomy });
      continue;
    }
    const load = /^load\s+(\S+)$/.exec(line);
    if (load) {
      const stepMs = parsePromDurationMs(load[1]!)!;
      // A series listed twice in one load takes its last definition, as Prometheus's runner
      // does (it keeps the definitions in a map keyed by the series).
      const bySeries = new Map<string, { labels: Labels; samples: Map<number, number> }>();
      for (const def of block()) {
        const { labels, rest } = parseSeriesDescriptor(def);
        const entry = { labels, samples: new Map<number, number>() };
        bySeries.set(seriesKey(labels), entry);
        expandValues(rest).forEach((v, k) => {
          if (v !== undefined) entry.samples.set(k * stepMs, v === "stale" ? STALE_NAN : v);
        });
      }
      const batch: SeriesSamples[] = [...bySeries.values()].map(({ labels, samples }) => ({
        labels,
        samples: [...samples].sort((a, b) => a[0] - b[0]).map(([t, v]) => ({ t, v })),
      }));
      const plan = head.plan(batch);
      if (!plan.ok) throw new Error(`load at line ${lineNo} refused: ${plan.detail}`);
      head.commit(plan);
      continue;
    }
    const ev = /^eval(_fail|_ordered)?\s+instant\s+at\s+(\S+)\s+(.+)$/.exec(line);
    if (!ev) throw new Error(`line ${lineNo}: unknown command ${line}`);
    total++;
    const [, mode, at, exprText] = ev as unknown as [string, string | undefined, string, string];
    const expected: Expected = { scalar: undefined, samples: [] };
    let scalar: number | undefined;
    for (const exp of block()) {
      if (/^[-+]?(\d|\.\d|inf|nan)/i.test(exp) && !exp.includes("{"))
        scalar = parseNumber(exp.split(/\s+/)[0]!);
      else {
        const { labels, rest } = parseSeriesDescriptor(exp);
        expected.samples.push({ labels, v: parseNumber(rest.split(/\s+/)[0]!) });
      }
    }
    const reason = evalCase(head, exprText, parseTime(at), mode, { ...expected, scalar });
    if (reason !== undefined) failed.push({ line: lineNo, expr: exprText, reason });
  }
  return { total, passed: total - failed.length, failed };
}

function evalCase(
  head: HeadBlock,
  exprText: string,
  t: number,
  mode: string | undefined,
  expected: Expected,
): string | undefined {
  const engine = new PromqlEngine({ select: (m, mint, maxt) => head.select(m, mint, maxt) });
  let instant: Value;
  try {
    const expr = parsePromql(exprText);
    instant = engine.instant(expr, t);
    if (mode === "_fail") return "expected an error, got a result";
    const mismatch = compare(expected, instant, mode === "_ordered");
    if (mismatch) return mismatch;
    if (mode === "_ordered") return undefined;
    const ranged = engine.range(expr, { startMs: t - 60_000, endMs: t + 60_000, stepMs: 60_000 });
    if (ranged.type !== "matrix") return "range query gave no matrix";
    const atT: InstantVector = [];
    for (const series of ranged.series) {
      const k = series.ts.indexOf(t);
      if (k >= 0) atT.push({ labels: series.labels, v: series.vs[k]! });
    }
    const rangeValue: Value =
      instant.type === "scalar"
        ? { type: "scalar", v: atT[0]?.v ?? Number.NaN }
        : { type: "vector", samples: atT };
    const rangeMismatch = compare(expected, rangeValue, false);
    return rangeMismatch && `range mode: ${rangeMismatch}`;
  } catch (error) {
    if (mode === "_fail") return undefined;
    return `error: ${(error as Error).message}`;
  }
}
