/**
 * A Prometheus histogram whose labelled child observes in a bucket search and three additions:
 * the request-duration histogram every request of every service writes to. prom-client's own
 * `Histogram` validates and hashes the label set, and keys its buckets by the bound's decimal
 * string, on every `observe()` — on url-shortener's redirect that was a quarter of its own
 * per-request work (issue 18's profile). Here the label set is resolved once, by `labels()`, to a
 * series kept in a map; what a request pays is the child's `observe(seconds)`.
 *
 * It registers in a prom-client `Registry` like any metric and renders the same text: series in
 * creation order, each as cumulative `_bucket{le=…}` lines, `+Inf`, `_sum` and `_count`
 * (test/http/request-histogram.test.ts compares it line for line with prom-client's).
 *
 * @example
 * const duration = new RequestHistogram({ name: "http_request_duration_seconds", help: "…", labelNames: ["method", "route", "status_code"], buckets: [0.001, 0.01, 0.1], registry });
 * const ok = duration.labels("GET", "/:code", "302"); // once; keep it
 * ok.observe(0.0004); // per request
 */
import type { Metric, Registry } from "prom-client";

/** One series' observer: keep it for a label set seen on every request. */
export interface HistogramChild {
  observe(value: number): void;
}

interface Series {
  readonly labels: Readonly<Record<string, string>>;
  /** Observations per bucket (not cumulative); the last slot is above every bound (+Inf only). */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

export interface RequestHistogramOptions<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly labelNames: readonly L[];
  /** Upper bounds, ascending, finite (`+Inf` is always added). */
  readonly buckets: readonly number[];
  readonly registry: Registry;
}

type BucketLine = {
  value: number;
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  metricName: string;
};

export class RequestHistogram<L extends string> {
  readonly name: string;
  readonly help: string;
  readonly type = "histogram" as const;
  readonly aggregator = "sum" as const;
  readonly #labelNames: readonly L[];
  readonly #bounds: Float64Array;
  /** By the label values' JSON: made once per label set, in creation order (the text's order). */
  readonly #series = new Map<string, Series>();

  constructor(options: RequestHistogramOptions<L>) {
    const { buckets } = options;
    buckets.forEach((bound, i) => {
      if (!Number.isFinite(bound) || (i > 0 && bound <= buckets[i - 1]!)) {
        throw new RangeError(`buckets must be finite and ascending: ${buckets.join(", ")}`);
      }
    });
    this.name = options.name;
    this.help = options.help;
    this.#labelNames = [...options.labelNames];
    this.#bounds = Float64Array.from(buckets);
    // A metric to the registry by shape (name, help, type, get, reset): prom-client's base class is not exported.
    options.registry.registerMetric(this as unknown as Metric);
  }

  /** The child of one label set, values in `labelNames` order. */
  labels(...values: string[]): HistogramChild {
    if (values.length !== this.#labelNames.length) {
      throw new TypeError(`${this.name} takes ${this.#labelNames.length} label values, got ${values.length}`);
    }
    const key = JSON.stringify(values);
    let series = this.#series.get(key);
    if (series === undefined) {
      const labels: Record<string, string> = {};
      this.#labelNames.forEach((name, i) => {
        labels[name] = values[i]!;
      });
      series = { labels, counts: new Float64Array(this.#bounds.length + 1), sum: 0, count: 0 };
      this.#series.set(key, series);
    }
    const bounds = this.#bounds;
    const observed = series;
    const name = this.name;
    return {
      observe(value: number) {
        if (!Number.isFinite(value)) throw new TypeError(`${name}: value ${value} is not a finite number`);
        let i = 0;
        while (i < bounds.length && value > bounds[i]!) i += 1;
        observed.counts[i]! += 1;
        observed.sum += value;
        observed.count += 1;
      },
    };
  }

  /** One observation under a label set given by name (a map lookup: keep `labels()`'s child on a hot path). */
  observe(labels: Readonly<Record<L, string>>, value: number): void {
    this.labels(...this.#labelNames.map((name) => labels[name])).observe(value);
  }

  /** What the registry renders from: the series' labels beside `le`, as prom-client's histogram gives them. */
  async getForPromString() {
    const values: BucketLine[] = [];
    for (const series of this.#series.values()) {
      let cumulative = 0;
      this.#bounds.forEach((bound, i) => {
        cumulative += series.counts[i]!;
        values.push({
          value: cumulative,
          labels: { le: bound },
          sharedLabels: series.labels,
          metricName: `${this.name}_bucket`,
        });
      });
      const sharedLabels = series.labels;
      values.push(
        { value: series.count, labels: { le: "+Inf" }, sharedLabels, metricName: `${this.name}_bucket` },
        { value: series.sum, labels: {}, sharedLabels, metricName: `${this.name}_sum` },
        { value: series.count, labels: {}, sharedLabels, metricName: `${this.name}_count` },
      );
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** The JSON form (`registry.getMetricsAsJSON()`): each line's labels in one object. */
  async get() {
    const data = await this.getForPromString();
    return {
      ...data,
      values: data.values.map(({ sharedLabels, labels, ...line }) => ({
        ...line,
        labels: { ...labels, ...sharedLabels },
      })),
    };
  }

  /** Every series back to zero; its lines stay, and the children kept keep counting into them. */
  reset(): void {
    for (const series of this.#series.values()) {
      series.counts.fill(0);
      series.sum = 0;
      series.count = 0;
    }
  }
}
