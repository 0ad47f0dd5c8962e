/**
 * The agent's local aggregation (MT-02) and its cardinality guard (MT-15, MT-16's agent side),
 * as pure code. Applications hand the agent records — a counter increment, a gauge value, a
 * histogram's bucket counts — and the agent keeps ONE state per series: a counter's running
 * total, a gauge's last value, a histogram's cumulative buckets. Time is cut into aligned
 * windows (10 s by default, DogStatsD's flush); when a window closes, every series touched in
 * it yields one point stamped at the window's end — 1,000 increments in a window are one
 * point, the total after them. Counters are cumulative (Prometheus's shape, so `rate()` and
 * resets work as for a scraped target), histograms become `_bucket{le}`, `_sum` and `_count`.
 *
 * The guard runs before a series exists: labels on the deny list (user ids, request ids —
 * per-user detail belongs in logs or traces) are stripped, and once a metric holds its
 * ceiling of series (or the agent its total), a record for a NEW series is folded into the
 * metric's one overflow series `{__name__="m", agent_overflow="true"}` — its value still
 * counted (a counter's total over all series stays right), its labels dropped — as
 * OpenTelemetry's SDKs fold into `otel.metric.overflow`. New series, folded records and
 * stripped labels are counted per metric / per label. A series untouched for `idleWindows`
 * windows is forgotten, freeing its place under the ceiling.
 *
 * @example
 * const agg = new AgentAggregator({ windowMs: 10_000, maxSeriesPerMetric: 1_000 });
 * for (let i = 0; i < 1_000; i++) agg.record({ kind: "counter", name: "hits_total", labels: {}, value: 1 }, t0 + i);
 * agg.closeDue(t0 + 10_000); // [{ labels: [["__name__","hits_total"]], samples: [{ t: <window end>, v: 1000 }] }]
 */
import type { SeriesSamples } from "./head-block.ts";
import { labelsFromRecord, seriesKey } from "./labels.ts";

export const DEFAULT_AGENT_WINDOW_MS = 10_000;
export const DEFAULT_AGENT_MAX_SERIES_PER_METRIC = 1_000;
export const DEFAULT_AGENT_MAX_SERIES = 50_000;
export const DEFAULT_AGENT_IDLE_WINDOWS = 30;
/** Labels that make a series per user or per request: stripped unless the operator says otherwise. */
export const DEFAULT_AGENT_DENIED_LABELS: readonly string[] = [
  "user_id",
  "userid",
  "session_id",
  "request_id",
  "trace_id",
  "email",
];
export const OVERFLOW_LABEL = "agent_overflow";

export type AgentRecord =
  | {
      readonly kind: "counter";
      readonly name: string;
      readonly labels: Readonly<Record<string, string>>;
      readonly value: number;
    }
  | {
      readonly kind: "gauge";
      readonly name: string;
      readonly labels: Readonly<Record<string, string>>;
      readonly value: number;
    }
  | {
      readonly kind: "histogram";
      readonly name: string;
      readonly labels: Readonly<Record<string, string>>;
      /** Upper bounds, ascending, without +Inf. */
      readonly bounds: readonly number[];
      /** Observations per bucket (not cumulative), bounds.length + 1 of them: the last is +Inf's. */
      readonly counts: readonly number[];
      readonly sum: number;
    };

export interface AgentAggregatorOptions {
  readonly windowMs?: number;
  readonly maxSeriesPerMetric?: number;
  readonly maxSeries?: number;
  readonly deniedLabels?: readonly string[];
  readonly idleWindows?: number;
}

/** What the guard and the aggregation counted since the start (the agent ships these as its own metrics). */
export interface AgentGuardCounts {
  /** MT-16: series first seen, per metric. */
  readonly newSeries: ReadonlyMap<string, number>;
  /** MT-15: records of a new series past a ceiling, folded into the overflow series, per metric. */
  readonly overflowRecords: ReadonlyMap<string, number>;
  /** MT-15: denied labels removed from records, per label name. */
  readonly strippedLabels: ReadonlyMap<string, number>;
  /** Records applied (before aggregation) and points emitted (after): MT-02's ratio. */
  readonly records: number;
  readonly points: number;
}

type SeriesState =
  | { kind: "counter"; total: number }
  | { kind: "gauge"; value: number }
  | { kind: "histogram"; bounds: readonly number[]; cumulative: number[]; sum: number; count: number };

interface Series {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  state: SeriesState;
  lastWindow: number;
  touched: boolean;
}

function bump(map: Map<string, number>, key: string, by = 1): void {
  map.set(key, (map.get(key) ?? 0) + by);
}

export class AgentAggregator {
  readonly windowMs: number;
  readonly #maxPerMetric: number;
  readonly #maxSeries: number;
  readonly #denied: ReadonlySet<string>;
  readonly #idleWindows: number;
  readonly #series = new Map<string, Series>();
  readonly #perMetric = new Map<string, number>();
  readonly #newSeries = new Map<string, number>();
  readonly #overflow = new Map<string, number>();
  readonly #stripped = new Map<string, number>();
  #records = 0;
  #points = 0;
  /** Index of the open window (floor(t / windowMs)); undefined before the first record. */
  #window: number | undefined;
  #closed: SeriesSamples[] = [];

  constructor(options: AgentAggregatorOptions = {}) {
    this.windowMs = options.windowMs ?? DEFAULT_AGENT_WINDOW_MS;
    this.#maxPerMetric = options.maxSeriesPerMetric ?? DEFAULT_AGENT_MAX_SERIES_PER_METRIC;
    this.#maxSeries = options.maxSeries ?? DEFAULT_AGENT_MAX_SERIES;
    this.#denied = new Set(options.deniedLabels ?? DEFAULT_AGENT_DENIED_LABELS);
    this.#idleWindows = options.idleWindows ?? DEFAULT_AGENT_IDLE_WINDOWS;
    if (!(this.windowMs >= 1)) throw new RangeError(`windowMs must be >= 1, got ${this.windowMs}`);
  }

  /** Applies one record at `nowMs`; a record of a later window first closes the open one. */
  record(record: AgentRecord, nowMs: number): void {
    this.#advance(nowMs);
    this.#window ??= Math.floor(nowMs / this.windowMs);
    this.#records++;
    const series = this.#seriesFor(record);
    series.touched = true;
    series.lastWindow = this.#window;
    const state = series.state;
    if (record.kind === "counter" && state.kind === "counter") state.total += record.value;
    else if (record.kind === "gauge" && state.kind === "gauge") state.value = record.value;
    else if (record.kind === "histogram" && state.kind === "histogram") addHistogram(state, record);
    // A record whose kind or buckets differ from the series' is ignored: the first one fixed its shape.
  }

  /** Closes the open window if `nowMs` is past its end; returns (and forgets) every point closed so far. */
  closeDue(nowMs: number): SeriesSamples[] {
    this.#advance(nowMs);
    const out = this.#closed;
    this.#closed = [];
    return out;
  }

  /** Series the agent holds now (bounded by maxSeries plus one overflow series per metric). */
  get seriesCount(): number {
    return this.#series.size;
  }

  /**
   * MT-16 per tag: distinct values of each label among the series held now, per metric — the
   * label that explodes stands out. O(series held), bounded by maxSeries; read at a scrape.
   */
  labelValues(): Map<string, Map<string, number>> {
    const seen = new Map<string, Map<string, Set<string>>>();
    for (const series of this.#series.values()) {
      const labels = seen.get(series.name) ?? new Map<string, Set<string>>();
      seen.set(series.name, labels);
      for (const [name, value] of Object.entries(series.labels)) {
        const values = labels.get(name) ?? new Set<string>();
        labels.set(name, values);
        values.add(value);
      }
    }
    return new Map(
      [...seen].map(([metric, labels]) => [metric, new Map([...labels].map(([n, v]) => [n, v.size]))]),
    );
  }

  counts(): AgentGuardCounts {
    return {
      newSeries: new Map(this.#newSeries),
      overflowRecords: new Map(this.#overflow),
      strippedLabels: new Map(this.#stripped),
      records: this.#records,
      points: this.#points,
    };
  }

  #advance(nowMs: number): void {
    if (this.#window === undefined) return;
    const current = Math.floor(nowMs / this.windowMs);
    if (current <= this.#window) return;
    this.#closeWindow(this.#window);
    this.#window = current;
  }

  #closeWindow(window: number): void {
    const t = (window + 1) * this.windowMs;
    for (const [key, series] of this.#series) {
      if (series.touched) {
        series.touched = false;
        const points = pointsOf(series, t);
        for (const point of points) this.#closed.push(point);
        this.#points += points.length;
      } else if (window - series.lastWindow >= this.#idleWindows) {
        this.#series.delete(key);
        if (series.labels[OVERFLOW_LABEL] === undefined) {
          this.#perMetric.set(series.name, (this.#perMetric.get(series.name) ?? 1) - 1);
        }
      }
    }
  }

  #seriesFor(record: AgentRecord): Series {
    let labels: Record<string, string> = {};
    for (const [name, value] of Object.entries(record.labels)) {
      if (this.#denied.has(name)) bump(this.#stripped, name);
      else labels[name] = value;
    }
    let key = `${record.name}\u0000${seriesKey(labelsFromRecord(labels))}`;
    let series = this.#series.get(key);
    if (series !== undefined) return series;
    const held = this.#perMetric.get(record.name) ?? 0;
    if (held >= this.#maxPerMetric || this.#countedSeries() >= this.#maxSeries) {
      bump(this.#overflow, record.name);
      labels = { [OVERFLOW_LABEL]: "true" };
      key = `${record.name}\u0000${OVERFLOW_LABEL}`;
      series = this.#series.get(key);
      if (series !== undefined) return series;
    } else {
      this.#perMetric.set(record.name, held + 1);
      bump(this.#newSeries, record.name);
    }
    series = { name: record.name, labels, state: initialState(record), lastWindow: 0, touched: false };
    this.#series.set(key, series);
    return series;
  }

  #countedSeries(): number {
    let n = 0;
    for (const count of this.#perMetric.values()) n += count;
    return n;
  }
}

function initialState(record: AgentRecord): SeriesState {
  if (record.kind === "counter") return { kind: "counter", total: 0 };
  if (record.kind === "gauge") return { kind: "gauge", value: 0 };
  return {
    kind: "histogram",
    bounds: [...record.bounds],
    cumulative: new Array<number>(record.bounds.length + 1).fill(0),
    sum: 0,
    count: 0,
  };
}

function addHistogram(
  state: Extract<SeriesState, { kind: "histogram" }>,
  record: Extract<AgentRecord, { kind: "histogram" }>,
): void {
  if (record.bounds.length !== state.bounds.length || record.bounds.some((b, i) => b !== state.bounds[i]))
    return;
  let running = 0;
  for (let i = 0; i < state.cumulative.length; i++) {
    running += record.counts[i] ?? 0;
    state.cumulative[i]! += running;
  }
  state.sum += record.sum;
  state.count += running;
}

function pointsOf(series: Series, t: number): SeriesSamples[] {
  const at = (name: string, extra: Record<string, string>, v: number): SeriesSamples => ({
    labels: labelsFromRecord({ ...series.labels, ...extra, __name__: name }),
    samples: [{ t, v }],
  });
  const state = series.state;
  if (state.kind === "counter") return [at(series.name, {}, state.total)];
  if (state.kind === "gauge") return [at(series.name, {}, state.value)];
  return [
    ...state.cumulative.map((v, i) =>
      at(`${series.name}_bucket`, { le: i < state.bounds.length ? String(state.bounds[i]) : "+Inf" }, v),
    ),
    at(`${series.name}_sum`, {}, state.sum),
    at(`${series.name}_count`, {}, state.count),
  ];
}
