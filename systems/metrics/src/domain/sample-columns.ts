/**
 * A batch of samples in columns: the series in one array, every sample's time and value in two
 * typed arrays, series `i`'s samples at `[offsets[i], offsets[i + 1])`. What the ingest decodes
 * a request into and what the stream's consumers decode a message into — one object per series
 * (an interned one, found again by its bytes: `series-interner.ts`), none per sample, so the
 * garbage collector sees a few arrays per request instead of an object per sample in each of
 * the four places a sample is read. Values stay in a Float64Array, which keeps a NaN's payload
 * (Prometheus's StaleNaN); times are integer milliseconds, exact in a float64.
 *
 * @example
 * const batch = columnsOf([{ labels, samples: [{ t: 1000, v: 1 }] }], (labels) => ({ labels, key: seriesKey(labels) }));
 * batch.timestamps[batch.offsets[0]]; // 1000
 * seriesSamplesOf(batch);             // back to one object per sample, for the paths that want them
 */
import { type Labels, seriesKey } from "./labels.ts";

export interface Sample {
  readonly t: number;
  readonly v: number;
}

/** A series' samples as objects: the agent's, the scraper's and the tests' form. */
export interface SeriesSamples {
  readonly labels: Labels;
  readonly samples: readonly Sample[];
}

export interface SampleColumns<S extends { readonly labels: Labels }> {
  readonly series: readonly S[];
  /** `series.length + 1` entries from 0: series i's samples are `[offsets[i], offsets[i + 1])`. */
  readonly offsets: Uint32Array;
  readonly timestamps: Float64Array;
  readonly values: Float64Array;
}

/** A series with its canonical key (`seriesKey`), made once when a label set is first met. */
export interface KeyedSeries {
  readonly labels: Labels;
  readonly key: string;
}

export const keyedSeries = (labels: Labels): KeyedSeries => ({ labels, key: seriesKey(labels) });

/** Columns of `series` (one object per sample → one per series), `entry` naming each series. */
export function columnsOf<S extends { readonly labels: Labels }>(
  series: readonly SeriesSamples[],
  entry: (labels: Labels, index: number) => S,
): SampleColumns<S> {
  let total = 0;
  for (const s of series) total += s.samples.length;
  const offsets = new Uint32Array(series.length + 1);
  const timestamps = new Float64Array(total);
  const values = new Float64Array(total);
  let at = 0;
  for (let i = 0; i < series.length; i++) {
    offsets[i] = at;
    for (const { t, v } of series[i]!.samples) {
      timestamps[at] = t;
      values[at] = v;
      at++;
    }
  }
  offsets[series.length] = at;
  return { series: series.map((s, i) => entry(s.labels, i)), offsets, timestamps, values };
}

/** One object per sample again (the agent's and the tests' form; the direct path's TSDB input). */
export function seriesSamplesOf(batch: SampleColumns<{ readonly labels: Labels }>): SeriesSamples[] {
  const out: SeriesSamples[] = new Array(batch.series.length);
  for (let i = 0; i < batch.series.length; i++) {
    const from = batch.offsets[i]!;
    const to = batch.offsets[i + 1]!;
    const samples = new Array<{ t: number; v: number }>(to - from);
    for (let j = from; j < to; j++) samples[j - from] = { t: batch.timestamps[j]!, v: batch.values[j]! };
    out[i] = { labels: batch.series[i]!.labels, samples };
  }
  return out;
}

/** Samples in the batch. */
export function sampleCountOf(batch: SampleColumns<{ readonly labels: Labels }>): number {
  return batch.offsets[batch.series.length]!;
}

/** The batches one after the other, as one batch (a run of stream messages merged into one append). */
export function concatColumns<S extends { readonly labels: Labels }>(
  batches: ReadonlyArray<SampleColumns<S>>,
): SampleColumns<S> {
  if (batches.length === 1) return batches[0]!;
  let seriesCount = 0;
  let total = 0;
  for (const batch of batches) {
    seriesCount += batch.series.length;
    total += sampleCountOf(batch);
  }
  const series: S[] = [];
  const offsets = new Uint32Array(seriesCount + 1);
  const timestamps = new Float64Array(total);
  const values = new Float64Array(total);
  let at = 0;
  for (const batch of batches) {
    const count = sampleCountOf(batch);
    for (let i = 0; i < batch.series.length; i++) {
      offsets[series.length] = at + batch.offsets[i]!;
      series.push(batch.series[i]!);
    }
    timestamps.set(batch.timestamps.subarray(0, count), at);
    values.set(batch.values.subarray(0, count), at);
    at += count;
  }
  offsets[seriesCount] = at;
  return { series, offsets, timestamps, values };
}
