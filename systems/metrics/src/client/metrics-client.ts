/**
 * The library applications call (`@casebook/metrics/client`, MT-02/04): counters, gauges and
 * histograms with labels, recorded in the application's memory and shipped to the host's
 * agent (`casebook metrics agent`, loopback HTTP, `POST /v1/records`) once per `flushMs`
 * (1 s by default) — never one request per metric. A call is a map update and returns at
 * once: no I/O, no promise, no lock, whatever the agent or the ingest behind it is doing
 * (telemetry must not bring down the service it observes). Between flushes a counter's
 * increments are summed, a gauge keeps its last value, a histogram counts per bucket; the
 * agent then aggregates those into its 10 s windows.
 *
 * Bounded: at most `maxPendingSeries` series wait between two flushes; a record for one more
 * is dropped and counted (`stats().droppedRecords`), as is a record with a label name
 * Prometheus would refuse. A flush the agent did not take is merged back (counter and
 * histogram deltas add, a newer gauge value wins), so an agent restart loses nothing within
 * the bound. One flush in flight at a time; the timer is unref'd, `close()` sends the rest.
 *
 * @example
 * const metrics = new MetricsClient({ agentUrl: "http://127.0.0.1:8125" });
 * const requests = metrics.counter("http_requests_total");
 * requests.inc({ route: "/orders", code: "200" });
 * metrics.histogram("http_request_duration_seconds", { buckets: [0.05, 0.1, 0.5, 1] }).observe({ route: "/orders" }, 0.042);
 * await metrics.close();
 */
import { OutboundClient } from "@casebook/infra/http/outbound";
import type { AgentRecord } from "../domain/agent-aggregator.ts";
import { LABEL_NAME_PATTERN, METRIC_NAME_PATTERN } from "../domain/labels.ts";

export const DEFAULT_CLIENT_FLUSH_MS = 1_000;
export const DEFAULT_CLIENT_MAX_PENDING_SERIES = 10_000;
export const DEFAULT_AGENT_URL = "http://127.0.0.1:8125";
export const DEFAULT_HISTOGRAM_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];

export type LabelValues = Readonly<Record<string, string>>;

export interface MetricsClientOptions {
  readonly agentUrl?: string;
  readonly flushMs?: number;
  readonly maxPendingSeries?: number;
  /** Added to every record (`service`, `instance`): a series per process when several share a host. */
  readonly constLabels?: LabelValues;
  /** Told of a flush the agent did not take (it is merged back and tried again). */
  readonly onFlushError?: (error: unknown) => void;
}

export interface ClientStats {
  readonly pendingSeries: number;
  readonly flushes: number;
  readonly failedFlushes: number;
  readonly droppedRecords: number;
}

type Pending =
  | { kind: "counter"; name: string; labels: LabelValues; value: number }
  | { kind: "gauge"; name: string; labels: LabelValues; value: number }
  | {
      kind: "histogram";
      name: string;
      labels: LabelValues;
      bounds: readonly number[];
      counts: number[];
      sum: number;
    };

export interface Counter {
  inc(labels?: LabelValues, by?: number): void;
}
export interface Gauge {
  set(labels: LabelValues, value: number): void;
}
export interface Histogram {
  observe(labels: LabelValues, value: number): void;
}

export class MetricsClient {
  readonly #url: URL;
  readonly #maxPending: number;
  readonly #constLabels: LabelValues;
  readonly #onFlushError: ((error: unknown) => void) | undefined;
  readonly #http = new OutboundClient({
    addressGuard: "off", // the host's own agent, configured by the operator
    timeouts: { connectMs: 1_000, headersMs: 2_000, bodyMs: 2_000 },
    maxRequestBytes: 16 * 1024 * 1024,
    userAgent: "casebook-metrics-client",
  });
  readonly #timer: NodeJS.Timeout;
  #pending = new Map<string, Pending>();
  #inFlight: Promise<void> | undefined;
  #flushes = 0;
  #failed = 0;
  #dropped = 0;

  constructor(options: MetricsClientOptions = {}) {
    this.#url = new URL("/v1/records", options.agentUrl ?? DEFAULT_AGENT_URL);
    this.#maxPending = options.maxPendingSeries ?? DEFAULT_CLIENT_MAX_PENDING_SERIES;
    this.#constLabels = options.constLabels ?? {};
    this.#onFlushError = options.onFlushError;
    this.#timer = setInterval(() => void this.flush(), options.flushMs ?? DEFAULT_CLIENT_FLUSH_MS);
    this.#timer.unref();
  }

  counter(name: string): Counter {
    checkName(name);
    return {
      inc: (labels = {}, by = 1) => {
        if (!(by >= 0) || !Number.isFinite(by)) return void this.#dropped++;
        const entry = this.#entry("counter", name, labels, () => ({
          kind: "counter",
          name,
          labels,
          value: 0,
        }));
        if (entry?.kind === "counter") entry.value += by;
      },
    };
  }

  gauge(name: string): Gauge {
    checkName(name);
    return {
      set: (labels, value) => {
        const entry = this.#entry("gauge", name, labels, () => ({ kind: "gauge", name, labels, value }));
        if (entry?.kind === "gauge") entry.value = value;
      },
    };
  }

  histogram(name: string, options: { buckets?: readonly number[] } = {}): Histogram {
    checkName(name);
    const bounds = [...(options.buckets ?? DEFAULT_HISTOGRAM_BUCKETS)];
    if (!bounds.every((b, i) => Number.isFinite(b) && (i === 0 || b > bounds[i - 1]!)))
      throw new RangeError(`histogram ${name}: buckets must be finite and strictly ascending`);
    return {
      observe: (labels, value) => {
        const entry = this.#entry("histogram", name, labels, () => ({
          kind: "histogram",
          name,
          labels,
          bounds,
          counts: new Array<number>(bounds.length + 1).fill(0),
          sum: 0,
        }));
        if (entry?.kind !== "histogram") return;
        let bucket = bounds.findIndex((b) => value <= b);
        if (bucket < 0) bucket = bounds.length;
        entry.counts[bucket]!++;
        entry.sum += value;
      },
    };
  }

  stats(): ClientStats {
    return {
      pendingSeries: this.#pending.size,
      flushes: this.#flushes,
      failedFlushes: this.#failed,
      droppedRecords: this.#dropped,
    };
  }

  /** Sends what is pending (waits for a flush already in flight instead of starting a second). */
  flush(): Promise<void> {
    if (this.#inFlight) return this.#inFlight;
    if (this.#pending.size === 0) return Promise.resolve();
    const taken = this.#pending;
    this.#pending = new Map();
    this.#inFlight = this.#send(taken).finally(() => {
      this.#inFlight = undefined;
    });
    return this.#inFlight;
  }

  /** Stops the timer and sends the rest (one try). */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.#inFlight;
    await this.flush();
  }

  async #send(taken: Map<string, Pending>): Promise<void> {
    const records: AgentRecord[] = [...taken.values()];
    try {
      const res = await this.#http.request({
        method: "POST",
        url: this.#url,
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ records }),
      });
      if (res.status === 202) {
        this.#flushes++;
        return;
      }
      if (res.status >= 400 && res.status < 500) {
        // Refused for good (a value the agent's rules reject): merging it back would refuse again.
        this.#failed++;
        this.#dropped += records.length;
        this.#onFlushError?.(
          new Error(`agent answered ${res.status}: ${res.body.toString("utf8").slice(0, 300)}`),
        );
        return;
      }
      throw new Error(`agent answered ${res.status}`);
    } catch (error) {
      this.#failed++;
      this.#mergeBack(taken);
      this.#onFlushError?.(error);
    }
  }

  #mergeBack(taken: Map<string, Pending>): void {
    for (const [key, old] of taken) {
      const now = this.#pending.get(key);
      if (now === undefined) {
        if (this.#pending.size >= this.#maxPending) this.#dropped++;
        else this.#pending.set(key, old);
      } else if (now.kind === "counter" && old.kind === "counter") now.value += old.value;
      else if (now.kind === "histogram" && old.kind === "histogram") {
        for (let i = 0; i < now.counts.length; i++) now.counts[i]! += old.counts[i] ?? 0;
        now.sum += old.sum;
      } // a gauge set since is newer: it stays
    }
  }

  #entry(
    kind: Pending["kind"],
    name: string,
    labels: LabelValues,
    create: () => Pending,
  ): Pending | undefined {
    const all = Object.keys(this.#constLabels).length === 0 ? labels : { ...this.#constLabels, ...labels };
    const names = Object.keys(all).sort();
    let key = `${kind}\u0000${name}`;
    for (const n of names) key += `\u0000${n}\u0001${all[n]}`;
    const found = this.#pending.get(key);
    if (found !== undefined) return found;
    if (
      this.#pending.size >= this.#maxPending ||
      !names.every((n) => LABEL_NAME_PATTERN.test(n) && !n.startsWith("__"))
    ) {
      this.#dropped++;
      return undefined;
    }
    const created = { ...create(), labels: all } as Pending;
    this.#pending.set(key, created);
    return created;
  }
}

function checkName(name: string): void {
  if (!METRIC_NAME_PATTERN.test(name)) throw new TypeError(`metric name "${name}" is not valid`);
}
