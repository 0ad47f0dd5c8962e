/**
 * A short in-memory window of one system's scrapes, and the plots its declaration asks for,
 * computed over it: counters as per-second rates between consecutive scrapes, gauges as they
 * are, histogram quantiles from the buckets' increase between scrapes (as PromQL's
 * `histogram_quantile(q, rate(…[interval]))`). No second time-series store: the window is
 * bounded (`maxScrapes`), the oldest scrape dropped first, and a failed scrape is kept as a
 * gap so a plot shows the outage rather than joining over it.
 *
 * @example
 * const window = new ScrapeWindow(150);
 * window.push(Date.now(), parsePromText(text).samples);
 * window.plot(declaration.plots[0]); // { title, unit, times: [...], lines: [{ label, values }] }
 */

import type { Sample } from "@casebook/kit/prom-text";
import type { PlotDeclaration, SeriesDeclaration } from "./console-declaration.ts";

export interface Scrape {
  atMs: number;
  /** Undefined: the scrape failed (a gap in every line). */
  samples: readonly Sample[] | undefined;
}

export interface PlotLine {
  label: string;
  /** One value a scrape, aligned with `times`; null where there is no value (a gap). */
  values: (number | null)[];
}

export interface PlotData {
  title: string;
  unit: string;
  /** Unix seconds of each scrape in the window. */
  times: number[];
  lines: PlotLine[];
}

/** Lines one series may split into (`by`); more label values are summed into "other". */
export const maxLinesPerSeries = 8;

export class ScrapeWindow {
  readonly #scrapes: Scrape[] = [];
  readonly #maxScrapes: number;

  constructor(maxScrapes: number) {
    if (!Number.isInteger(maxScrapes) || maxScrapes < 2)
      throw new RangeError("maxScrapes must be an integer ≥ 2");
    this.#maxScrapes = maxScrapes;
  }

  push(atMs: number, samples: readonly Sample[] | undefined): void {
    this.#scrapes.push({ atMs, samples });
    if (this.#scrapes.length > this.#maxScrapes) this.#scrapes.shift();
  }

  get size(): number {
    return this.#scrapes.length;
  }

  plot(declaration: PlotDeclaration): PlotData {
    const scrapes = this.#scrapes;
    const lines = declaration.series.flatMap((series) => seriesLines(series, scrapes));
    return {
      title: declaration.title,
      unit: declaration.unit,
      times: scrapes.map((s) => s.atMs / 1000),
      lines,
    };
  }
}

/** The lines of one series over the window: one per `by` value, or one summed line. */
export function seriesLines(series: SeriesDeclaration, scrapes: readonly Scrape[]): PlotLine[] {
  const points = scrapes.map((scrape, i) => pointAt(series, scrapes[i - 1], scrape));
  const labels: string[] = [];
  for (const point of points) {
    for (const key of point?.keys() ?? []) if (!labels.includes(key)) labels.push(key);
  }
  const kept = labels.slice(0, maxLinesPerSeries);
  const folded = labels.length > kept.length;
  const scale = series.scale ?? 1;
  const lines = kept.map((key) => ({
    label: lineLabel(series, key),
    values: points.map((point) => scaled(point?.get(key), scale)),
  }));
  if (folded) {
    lines.push({
      label: lineLabel(series, "other"),
      values: points.map((point) =>
        point === undefined
          ? null
          : scaled(
              [...point].filter(([k]) => !kept.includes(k)).reduce((sum, [, v]) => sum + v, 0),
              scale,
            ),
      ),
    });
  }
  return lines;
}

function lineLabel(series: SeriesDeclaration, key: string): string {
  if (series.by !== undefined) return key === "" ? `(no ${series.by})` : key;
  return series.label ?? series.metric;
}

function scaled(value: number | undefined, scale: number): number | null {
  return value === undefined || !Number.isFinite(value) ? null : value * scale;
}

/** The series' values at `current` (by line key), or undefined when it cannot be computed there. */
function pointAt(
  series: SeriesDeclaration,
  previous: Scrape | undefined,
  current: Scrape,
): Map<string, number> | undefined {
  if (current.samples === undefined) return undefined;
  if (series.fn === "value") return sumBy(series, current.samples, series.metric);
  if (previous?.samples === undefined) return undefined;
  const seconds = (current.atMs - previous.atMs) / 1000;
  if (seconds <= 0) return undefined;
  if (series.fn === "rate") {
    const before = sumBy(series, previous.samples, series.metric);
    const now = sumBy(series, current.samples, series.metric);
    return new Map([...now].map(([key, value]) => [key, increase(before.get(key), value) / seconds]));
  }
  return quantileBy(series, previous.samples, current.samples);
}

/** A counter's increase; a reset (the system restarted) counts from zero. */
function increase(before: number | undefined, now: number): number {
  if (before === undefined || now < before) return now;
  return now - before;
}

function matches(series: SeriesDeclaration, sample: Sample, name: string): boolean {
  if (sample.name !== name) return false;
  for (const [label, value] of Object.entries(series.where ?? {})) {
    if (sample.labels[label] !== value) return false;
  }
  return true;
}

function sumBy(series: SeriesDeclaration, samples: readonly Sample[], name: string): Map<string, number> {
  const sums = new Map<string, number>();
  for (const sample of samples) {
    if (!matches(series, sample, name)) continue;
    const key = series.by === undefined ? "" : (sample.labels[series.by] ?? "");
    sums.set(key, (sums.get(key) ?? 0) + sample.value);
  }
  return sums;
}

/** Per line key, the q-quantile of what was observed between the two scrapes. */
function quantileBy(
  series: SeriesDeclaration,
  previous: readonly Sample[],
  current: readonly Sample[],
): Map<string, number> {
  const bucketName = `${series.metric}_bucket`;
  const collect = (samples: readonly Sample[]) => {
    const byKey = new Map<string, Map<number, number>>();
    for (const sample of samples) {
      if (!matches(series, sample, bucketName)) continue;
      const le = Number(sample.labels.le === "+Inf" ? Number.POSITIVE_INFINITY : sample.labels.le);
      if (Number.isNaN(le)) continue;
      const key = series.by === undefined ? "" : (sample.labels[series.by] ?? "");
      const buckets = byKey.get(key) ?? new Map<number, number>();
      buckets.set(le, (buckets.get(le) ?? 0) + sample.value);
      byKey.set(key, buckets);
    }
    return byKey;
  };
  const before = collect(previous);
  const result = new Map<string, number>();
  for (const [key, buckets] of collect(current)) {
    const old = before.get(key);
    const deltas = [...buckets]
      .map(([le, count]) => [le, increase(old?.get(le), count)] as const)
      .sort((a, b) => a[0] - b[0]);
    const value = bucketQuantile(series.q ?? 0.5, deltas);
    if (value !== undefined) result.set(key, value);
  }
  return result;
}

/**
 * The q-quantile of cumulative buckets `[le, count]` (sorted by le), interpolated linearly
 * inside its bucket; undefined when nothing was observed. Past the last finite bound it is
 * that bound, as Prometheus answers.
 */
export function bucketQuantile(
  q: number,
  buckets: readonly (readonly [number, number])[],
): number | undefined {
  const total = buckets.at(-1)?.[1] ?? 0;
  if (total <= 0) return undefined;
  const rank = q * total;
  let lowerLe = 0;
  let lowerCount = 0;
  for (const [le, count] of buckets) {
    if (count >= rank) {
      if (le === Number.POSITIVE_INFINITY) return lowerLe;
      if (count === lowerCount) return le;
      return lowerLe + ((le - lowerLe) * (rank - lowerCount)) / (count - lowerCount);
    }
    lowerLe = le;
    lowerCount = count;
  }
  return lowerLe;
}
