/**
 * The head block (MT-17): the newest samples of every series, in memory, as Gorilla chunks —
 * one open chunk per series taking appends and the sealed ones behind it. A chunk is cut at
 * 120 samples or when it would cross a block boundary (`blockRangeMs`, 2 h as in
 * Prometheus), so compaction moves whole chunks into an immutable block and never splits one.
 *
 * Appends are two-phase so a batch is all or nothing (the ingest's rule: nothing partial is
 * committed from a rejected batch):
 *
 * 1. `plan(batch)` checks every sample and every new series without changing anything: a
 *    timestamp below the series' last (out of order) or equal with another value (duplicate),
 *    below `minValidT` (already persisted), and the cardinality ceilings (MT-16: a new series
 *    past the tenant's or its metric's limit is refused, the existing ones keep flowing).
 *    New series get their refs here, so the WAL can record them before the head changes.
 * 2. `commit(plan)` applies it. The caller writes the plan to the WAL between the two and
 *    keeps any other append out (the TSDB's append lock).
 *
 * An exact repeat of the last sample (same time, same value) is accepted and skipped, as
 * Prometheus does, so a retried remote-write batch is not an error.
 *
 * @example
 * const head = new HeadBlock({ blockRangeMs: 7_200_000, limits: { maxSeries: 1_000, maxSeriesPerMetric: 100 } });
 * const plan = head.plan([{ labels: [["__name__", "up"]], samples: [{ t: 1000, v: 1 }] }]);
 * if (plan.ok) head.commit(plan);
 * head.select([labelMatcher("=", "__name__", "up")], 0, 2000); // [{ labels, timestamps: [1000], values: [1] }]
 */
import { assert } from "@casebook/kit/assert";
import { decodeChunkInto, GorillaChunkEncoder, type SealedChunk } from "./gorilla-chunk.ts";
import type { LabelMatcher } from "./label-matcher.ts";
import { type Labels, METRIC_NAME, metricNameOf, seriesKey } from "./labels.ts";
import { PostingsIndex } from "./postings-index.ts";
import { columnsOf, type SampleColumns, type SeriesSamples } from "./sample-columns.ts";

export type { Sample, SeriesSamples } from "./sample-columns.ts";

/** Samples of one series in a time range, oldest first: what a query reads. */
export interface SeriesData {
  readonly labels: Labels;
  readonly timestamps: readonly number[];
  readonly values: ArrayLike<number>;
}

export interface CardinalityLimits {
  /** Series the tenant may hold in the head at once (MT-16). */
  readonly maxSeries: number;
  /** Series one metric name may hold at once (MT-16's per-metric ceiling). */
  readonly maxSeriesPerMetric: number;
}

export type AppendRefusalCode =
  | "OUT_OF_ORDER"
  | "DUPLICATE_TIMESTAMP"
  | "TOO_OLD"
  | "SERIES_LIMIT"
  | "METRIC_SERIES_LIMIT";

export interface AppendOptions {
  /** New series past a ceiling: refuse the whole batch (default), or leave them out (`limited`). */
  readonly onLimit?: "refuse" | "skip";
  /**
   * `skip`: a sample at or before its series' newest is taken as already stored and left
   * out — for a redelivered stream message, whose series reach the head in order (MT-07), so
   * what is not newer was applied by the delivery that crashed before its ack.
   */
  readonly stored?: "refuse" | "skip";
  /** `skip`: a sample before the head's start (`minValidT`) is left out instead of refusing the batch. */
  readonly tooOld?: "refuse" | "skip";
}

/** A series of a column batch: its labels, and its key when the caller has it already. */
export interface ColumnSeries {
  readonly labels: Labels;
  readonly key?: string;
}

export interface AppendRefusal {
  readonly ok: false;
  readonly code: AppendRefusalCode;
  /** Index of the offending entry in the batch. */
  readonly index: number;
  readonly labels: Labels;
  readonly detail: string;
}

interface PlannedSeries {
  readonly ref: number;
  readonly labels: Labels;
  readonly key: string;
  readonly isNew: boolean;
  /**
   * The batch's samples to append, in order, exact repeats already skipped: `[from, to)`
   * index pairs into the batch's columns (one pair for a series sent once, in order).
   */
  readonly spans: number[];
  lastT: number;
  lastV: number;
}

export interface AppendPlan {
  readonly ok: true;
  /** New series refused by a cardinality ceiling and left out (plan option `onLimit: "skip"`). */
  readonly limited: ReadonlyArray<{ index: number; labels: Labels; code: AppendRefusalCode; detail: string }>;
  /** New series, with the refs `commit` will give them (the WAL records these first). */
  readonly newSeries: ReadonlyArray<{ ref: number; labels: Labels }>;
  readonly entries: readonly PlannedSeries[];
  /** The columns the entries' spans index. */
  readonly timestamps: Float64Array;
  readonly values: Float64Array;
  readonly sampleCount: number;
  /** Samples to store per entry of the batch, by its index (a batch of several senders' shares counts each). */
  readonly samplesByIndex: readonly number[];
  /** Head generation the plan was made against: a commit on a changed head is a bug. */
  readonly generation: number;
}

interface HeadSeries {
  readonly ref: number;
  readonly labels: Labels;
  readonly key: string;
  readonly metric: string;
  readonly sealed: SealedChunk[];
  open: GorillaChunkEncoder | undefined;
  lastT: number;
  lastV: number;
}

export class HeadBlock {
  readonly #blockRangeMs: number;
  readonly #limits: CardinalityLimits;
  readonly #byKey = new Map<string, HeadSeries>();
  readonly #byRef = new Map<number, HeadSeries>();
  readonly #perMetric = new Map<string, number>();
  readonly #index = new PostingsIndex();
  #nextRef = 1;
  #generation = 0;
  #sampleCount = 0;
  /** Samples below this are refused: they belong to a persisted block. */
  minValidT = Number.NEGATIVE_INFINITY;

  constructor(options: { blockRangeMs: number; limits: CardinalityLimits }) {
    assert(options.blockRangeMs > 0, "head: block range must be positive");
    this.#blockRangeMs = options.blockRangeMs;
    this.#limits = options.limits;
  }

  get seriesCount(): number {
    return this.#byKey.size;
  }
  get sampleCount(): number {
    return this.#sampleCount;
  }
  get index(): PostingsIndex {
    return this.#index;
  }
  /** Chunks held, sealed and open. */
  get chunkCount(): number {
    let n = 0;
    for (const series of this.#byRef.values())
      n += series.sealed.length + (series.open === undefined ? 0 : 1);
    return n;
  }
  seriesCountOf(metric: string): number {
    return this.#perMetric.get(metric) ?? 0;
  }

  /**
   * Checks a whole batch; changes nothing. A new series past a cardinality ceiling refuses
   * the batch, or with `onLimit: "skip"` is left out and listed in `limited` while the rest
   * goes on (Mimir's way: an exploding metric must not stop the tenant's other series).
   */
  plan(batch: readonly SeriesSamples[], options: AppendOptions = {}): AppendPlan | AppendRefusal {
    return this.planColumns(
      columnsOf(batch, (labels) => ({ labels })),
      options,
    );
  }

  /** `plan` of a batch in columns (the stream's consumers decode into these). */
  planColumns(batch: SampleColumns<ColumnSeries>, options: AppendOptions = {}): AppendPlan | AppendRefusal {
    const limited: Array<{ index: number; labels: Labels; code: AppendRefusalCode; detail: string }> = [];
    const skipped = new Set<string>();
    const planned = new Map<string, PlannedSeries>();
    const newPerMetric = new Map<string, number>();
    let newTotal = 0;
    let nextRef = this.#nextRef;
    let sampleCount = 0;
    const { offsets, timestamps, values } = batch;
    const samplesByIndex = new Array<number>(batch.series.length).fill(0);
    const skipStored = options.stored === "skip";
    const skipTooOld = options.tooOld === "skip";
    for (let index = 0; index < batch.series.length; index++) {
      const { labels, key: known } = batch.series[index]!;
      const key = known ?? seriesKey(labels);
      if (skipped.has(key)) continue;
      let entry = planned.get(key);
      const existing = this.#byKey.get(key);
      if (entry === undefined) {
        if (existing === undefined) {
          const metric = metricNameOf(labels) ?? "";
          const refusal = this.#limitRefusal(metric, newTotal, newPerMetric.get(metric) ?? 0);
          if (refusal && options.onLimit === "skip") {
            limited.push({ index, labels, ...refusal });
            skipped.add(key);
            continue;
          }
          if (refusal) return { ok: false, code: refusal.code, index, labels, detail: refusal.detail };
          newTotal++;
          newPerMetric.set(metric, (newPerMetric.get(metric) ?? 0) + 1);
        }
        entry = {
          ref: existing?.ref ?? nextRef++,
          labels,
          key,
          isNew: existing === undefined,
          spans: [],
          lastT: existing?.lastT ?? Number.NEGATIVE_INFINITY,
          lastV: existing?.lastV ?? 0,
        };
        planned.set(key, entry);
      }
      const storedT = skipStored && existing !== undefined ? existing.lastT : Number.NEGATIVE_INFINITY;
      let lastT = entry.lastT;
      let lastV = entry.lastV;
      let runFrom = -1;
      const to = offsets[index + 1]!;
      for (let j = offsets[index]!; j < to; j++) {
        const t = timestamps[j]!;
        const v = values[j]!;
        let take = true;
        if (t <= storedT) take = false;
        else if (t < this.minValidT) {
          if (!skipTooOld) {
            const detail = `sample at ${t} is older than the head's start ${this.minValidT}`;
            return { ok: false, code: "TOO_OLD", index, labels, detail };
          }
          take = false;
        } else if (t === lastT) {
          if (!(Object.is(v, lastV) || sameBits(v, lastV))) {
            const detail = `a different value at the same timestamp ${t}`;
            return { ok: false, code: "DUPLICATE_TIMESTAMP", index, labels, detail };
          }
          take = false;
        } else if (t < lastT) {
          const detail = `sample at ${t} is older than the series' last at ${lastT}`;
          return { ok: false, code: "OUT_OF_ORDER", index, labels, detail };
        }
        if (take) {
          if (runFrom === -1) runFrom = j;
          lastT = t;
          lastV = v;
          sampleCount++;
          samplesByIndex[index]!++;
        } else if (runFrom !== -1) {
          entry.spans.push(runFrom, j);
          runFrom = -1;
        }
      }
      if (runFrom !== -1) entry.spans.push(runFrom, to);
      entry.lastT = lastT;
      entry.lastV = lastV;
    }
    const entries = [...planned.values()];
    const newSeries = entries.filter((e) => e.isNew).map((e) => ({ ref: e.ref, labels: e.labels }));
    return {
      ok: true,
      limited,
      newSeries,
      entries,
      timestamps,
      values,
      sampleCount,
      samplesByIndex,
      generation: this.#generation,
    };
  }

  #limitRefusal(metric: string, newTotal: number, newOfMetric: number) {
    if (this.#byKey.size + newTotal >= this.#limits.maxSeries) {
      return {
        code: "SERIES_LIMIT" as const,
        detail: `the tenant holds its limit of ${this.#limits.maxSeries} series`,
      };
    }
    if (this.seriesCountOf(metric) + newOfMetric >= this.#limits.maxSeriesPerMetric) {
      const detail = `metric ${metric} holds its limit of ${this.#limits.maxSeriesPerMetric} series`;
      return { code: "METRIC_SERIES_LIMIT" as const, detail };
    }
    return undefined;
  }

  /** Applies a plan made by `plan()` on this very head state. */
  commit(plan: AppendPlan): void {
    assert(plan.generation === this.#generation, "head: a plan is committed on the state it was made on");
    for (const entry of plan.entries) {
      const series = entry.isNew
        ? this.#create(entry.ref, entry.labels, entry.key)
        : this.#byKey.get(entry.key);
      assert(series !== undefined, "head: a planned series exists");
      const { spans } = entry;
      for (let k = 0; k < spans.length; k += 2)
        for (let j = spans[k]!; j < spans[k + 1]!; j++)
          this.#append(series, plan.timestamps[j]!, plan.values[j]!);
    }
    this.#sampleCount += plan.sampleCount;
    this.#generation++;
  }

  /** Replays one WAL series record (restart): the ref is the one the WAL holds. */
  replaySeries(ref: number, labels: Labels): void {
    const key = seriesKey(labels);
    const existing = this.#byKey.get(key);
    // The same series under another ref (an old segment left beside a checkpoint): one series.
    if (existing !== undefined) {
      if (existing.ref !== ref) this.#replayAlias.set(ref, existing.ref);
      return;
    }
    this.#create(ref, labels, key);
  }

  /** WAL refs that name a series created under another ref (replay only). */
  readonly #replayAlias = new Map<number, number>();

  /** Replays one WAL sample; skips what a block already holds and what the head has (idempotent). */
  replaySample(ref: number, t: number, v: number): boolean {
    const series = this.#byRef.get(this.#replayAlias.get(ref) ?? ref);
    if (series === undefined || t < this.minValidT || t <= series.lastT) return false;
    this.#append(series, t, v);
    this.#sampleCount++;
    this.#generation++;
    return true;
  }

  #create(ref: number, labels: Labels, key: string): HeadSeries {
    assert(ref >= this.#nextRef, "head: refs only grow");
    const metric = metricNameOf(labels) ?? "";
    const series: HeadSeries = {
      ref,
      labels,
      key,
      metric,
      sealed: [],
      open: undefined,
      lastT: Number.NEGATIVE_INFINITY,
      lastV: 0,
    };
    this.#byKey.set(key, series);
    this.#byRef.set(ref, series);
    this.#perMetric.set(metric, this.seriesCountOf(metric) + 1);
    this.#index.add(ref, labels);
    this.#nextRef = ref + 1;
    return series;
  }

  #append(series: HeadSeries, t: number, v: number): void {
    let open = series.open;
    if (open !== undefined && (open.full || this.#boundaryOf(open.minT) <= t)) {
      series.sealed.push(open.seal());
      open = undefined;
    }
    if (open === undefined) {
      open = new GorillaChunkEncoder();
      series.open = open;
    }
    open.append(t, v);
    series.lastT = t;
    series.lastV = v;
    this.#widenRange(t);
  }

  #boundaryOf(t: number): number {
    return Math.floor(t / this.#blockRangeMs) * this.#blockRangeMs + this.#blockRangeMs;
  }

  /** Samples of every matching series in [mint, maxt], series in ref order. */
  select(matchers: readonly LabelMatcher[], mint: number, maxt: number): SeriesData[] {
    const out: SeriesData[] = [];
    for (const ref of this.#index.select(matchers)) {
      const series = this.#byRef.get(ref)!;
      const data = samplesIn(chunksOf(series), mint, maxt);
      if (data.timestamps.length > 0) out.push({ labels: series.labels, ...data });
    }
    return out;
  }

  /**
   * Oldest and newest sample time in the head, or undefined when empty. Kept as it changes
   * (every append asks it, to decide on compaction): a scan of every series only after a
   * truncation.
   */
  timeRange(): { mint: number; maxt: number } | undefined {
    if (!this.#rangeKnown) {
      const scanned = this.#scanRange();
      this.#mint = scanned?.mint ?? Number.POSITIVE_INFINITY;
      this.#maxt = scanned?.maxt ?? Number.NEGATIVE_INFINITY;
      this.#rangeKnown = true;
    }
    return this.#mint > this.#maxt ? undefined : { mint: this.#mint, maxt: this.#maxt };
  }

  // The range as two numbers widened in place: an object per appended sample was most of what
  // the hot writer allocated.
  #mint = Number.POSITIVE_INFINITY;
  #maxt = Number.NEGATIVE_INFINITY;
  /** False after a truncation: the next `timeRange` scans. */
  #rangeKnown = true;

  #widenRange(t: number): void {
    if (t < this.#mint) this.#mint = t;
    if (t > this.#maxt) this.#maxt = t;
  }

  #scanRange(): { mint: number; maxt: number } | undefined {
    let mint = Number.POSITIVE_INFINITY;
    let maxt = Number.NEGATIVE_INFINITY;
    for (const series of this.#byKey.values()) {
      const first = series.sealed[0]?.minT ?? series.open?.minT;
      if (first !== undefined) mint = Math.min(mint, first);
      if (series.lastT > maxt) maxt = series.lastT;
    }
    return mint === Number.POSITIVE_INFINITY ? undefined : { mint, maxt };
  }

  /**
   * Seals and returns (without removing) every chunk that ends before `boundary`: what a
   * block about to be written holds, still readable here until `truncateBefore`. The open
   * chunk never straddles a boundary, so it is either taken whole or left.
   */
  sealedBefore(boundary: number): Array<{ labels: Labels; chunks: SealedChunk[] }> {
    assert(boundary % this.#blockRangeMs === 0, "head: compaction at a block boundary");
    const out: Array<{ labels: Labels; chunks: SealedChunk[] }> = [];
    for (const series of this.#byRef.values()) {
      if (series.open !== undefined && series.open.maxT < boundary) {
        series.sealed.push(series.open.seal());
        series.open = undefined;
      }
      const old = series.sealed.filter((chunk) => chunk.maxT < boundary);
      if (old.length > 0) out.push({ labels: series.labels, chunks: old });
    }
    return out;
  }

  /**
   * Takes every chunk that ends before `boundary` out of the head (after `sealedBefore` gave
   * them to a block: compaction), raises `minValidT` to it, and drops series left with no samples.
   */
  truncateBefore(boundary: number): Array<{ labels: Labels; chunks: SealedChunk[] }> {
    assert(boundary % this.#blockRangeMs === 0, "head: truncation at a block boundary");
    const taken: Array<{ labels: Labels; chunks: SealedChunk[] }> = [];
    const emptied: number[] = [];
    for (const series of this.#byRef.values()) {
      if (series.open !== undefined && series.open.maxT < boundary) {
        series.sealed.push(series.open.seal());
        series.open = undefined;
      }
      const old = series.sealed.filter((chunk) => chunk.maxT < boundary);
      if (old.length > 0) {
        taken.push({ labels: series.labels, chunks: old });
        series.sealed.splice(0, old.length);
        for (const chunk of old) this.#sampleCount -= chunk.count;
      }
      if (series.sealed.length === 0 && series.open === undefined) emptied.push(series.ref);
    }
    for (const ref of emptied) {
      const series = this.#byRef.get(ref)!;
      this.#byRef.delete(ref);
      this.#byKey.delete(series.key);
      this.#perMetric.set(series.metric, this.seriesCountOf(series.metric) - 1);
      if (this.seriesCountOf(series.metric) === 0) this.#perMetric.delete(series.metric);
    }
    this.#index.remove(emptied);
    this.minValidT = Math.max(this.minValidT, boundary);
    this.#rangeKnown = false;
    this.#generation++;
    return taken;
  }

  /** Every live series with its samples (a WAL checkpoint rewrites these). */
  *entries(): Generator<{
    ref: number;
    labels: Labels;
    timestamps: readonly number[];
    values: ArrayLike<number>;
  }> {
    for (const series of this.#byRef.values()) {
      yield { ref: series.ref, labels: series.labels, ...samplesIn(chunksOf(series), -Infinity, Infinity) };
    }
  }

  /** Series count per metric name: the cardinality the guard counts (`/status/tsdb`). */
  seriesPerMetric(): Map<string, number> {
    return new Map(this.#perMetric);
  }

  static readonly NAME_LABEL = METRIC_NAME;
}

function chunksOf(series: HeadSeries): SealedChunk[] {
  return series.open === undefined || series.open.count === 0
    ? series.sealed
    : [...series.sealed, series.open.seal()];
}

/**
 * Decodes the chunks overlapping [mint, maxt] and keeps the samples inside it. Values stay in
 * a Float64Array: a plain array may canonicalise NaNs and lose StaleNaN's payload.
 */
export function samplesIn(
  chunks: readonly SealedChunk[],
  mint: number,
  maxt: number,
): { timestamps: number[]; values: Float64Array } {
  let room = 0;
  for (const chunk of chunks) if (!(chunk.maxT < mint || chunk.minT > maxt)) room += chunk.count;
  const timestamps: number[] = [];
  const values = new Float64Array(room);
  for (const chunk of chunks) {
    if (chunk.maxT < mint || chunk.minT > maxt) continue;
    decodeChunkInto(chunk, mint, maxt, timestamps, values);
  }
  return { timestamps, values: timestamps.length === room ? values : values.slice(0, timestamps.length) };
}

const bitsView = new DataView(new ArrayBuffer(16));
function sameBits(a: number, b: number): boolean {
  bitsView.setFloat64(0, a);
  bitsView.setFloat64(8, b);
  return bitsView.getBigUint64(0) === bitsView.getBigUint64(8);
}
