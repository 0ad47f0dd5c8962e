/**
 * The plots' other source (issue 23): the metrics system's Prometheus query API, when it runs.
 * `casebook up` gives the console metrics' URL and a key of its scrape tenant
 * (CASEBOOK_CONSOLE_METRICS_URL, …_API_KEY). Every interval the console reads
 * `/api/v1/targets`: metrics answers, and scrapes a system (an active target whose job is the
 * system's name), at the interval it names — then that system's plots are `query_range` calls
 * (`plot-query.ts`) over the same span and step as the window. Metrics down, absent, or not
 * scraping that system: the caller draws from its in-memory window as before. No second
 * time-series store, and no import of metrics' code: HTTP only, each request bounded in time
 * and size.
 *
 * @example
 * const source = new MetricsSource({ url: "http://127.0.0.1:8112", apiKey, intervalMs: 2_000, spanMs: 300_000, log });
 * source.start();
 * if (source.serves("cache")) await source.plot("cache", declaration.plots[0]); // { title, unit, times, lines }
 * await source.stop();
 */
import type { Logger } from "@casebook/infra/http/logger";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { parsePromDurationMs } from "@casebook/kit/prom-duration";
import type { PlotDeclaration } from "./console-declaration.ts";
import { type MatrixSeries, matrixLines, rateRangeS, seriesQuery } from "./plot-query.ts";
import type { PlotData } from "./scrape-window.ts";

export interface MetricsSourceOptions {
  /** metrics' base URL. */
  url: string;
  /** A key of metrics' scrape tenant (Bearer). */
  apiKey: string;
  /** How often /api/v1/targets is read, and the plots' step. */
  intervalMs: number;
  /** The plots' span: the window's (interval × scrapes kept). */
  spanMs: number;
  /** Bound on one request to metrics. */
  requestTimeoutMs?: number;
  /** A larger answer fails (the plots fall back to the window). */
  maxBodyBytes?: number;
  log: Pick<Logger, "warn">;
  fetch?: typeof fetch;
  now?: () => number;
}

interface TargetsAnswer {
  data?: { activeTargets?: Array<{ labels?: { job?: string }; scrapeInterval?: string }> };
}

interface RangeAnswer {
  status?: string;
  data?: { resultType?: string; result?: MatrixSeries[] };
}

export const defaultMetricsTimeoutMs = 2_000;
export const defaultMetricsMaxBodyBytes = 8 * 1024 * 1024;

export class MetricsSource {
  readonly #options: Required<Omit<MetricsSourceOptions, "log">> & Pick<MetricsSourceOptions, "log">;
  readonly #loop: BackgroundLoop;
  /** Job → metrics' scrape interval of it, from the last answer; empty while metrics does not answer. */
  #jobs = new Map<string, number>();

  constructor(options: MetricsSourceOptions) {
    this.#options = {
      requestTimeoutMs: defaultMetricsTimeoutMs,
      maxBodyBytes: defaultMetricsMaxBodyBytes,
      fetch: globalThis.fetch,
      now: Date.now,
      ...options,
      url: options.url.replace(/\/+$/, ""),
    };
    this.#loop = new BackgroundLoop({
      name: "console metrics source",
      round: async () => {
        await this.refresh();
        return false;
      },
      idleMs: options.intervalMs,
      failureBackoff: { capMs: options.intervalMs, jitter: "none" },
      onError: (error) => options.log.warn({ err: error }, "console: reading metrics' targets failed"),
    });
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  /** Reads metrics' targets; a failure (metrics down) empties them, so every plot uses its window. */
  async refresh(): Promise<void> {
    try {
      const answer = (await this.#get("/api/v1/targets")) as TargetsAnswer;
      const jobs = new Map<string, number>();
      for (const target of answer.data?.activeTargets ?? []) {
        const job = target.labels?.job;
        const intervalMs = parseIntervalMs(target.scrapeInterval ?? "");
        if (job !== undefined && intervalMs !== undefined) jobs.set(job, intervalMs);
      }
      this.#jobs = jobs;
    } catch {
      this.#jobs = new Map();
    }
  }

  /** Metrics answered at the last refresh and scrapes the system `job`. */
  serves(job: string): boolean {
    return this.#jobs.has(job);
  }

  /** The plot over the span, from metrics; rejects when metrics does not answer one of its queries. */
  async plot(job: string, plot: PlotDeclaration): Promise<PlotData> {
    const stepMs = this.#options.intervalMs;
    const endMs = Math.floor(this.#options.now() / stepMs) * stepMs;
    const startMs = endMs - Math.floor(this.#options.spanMs / stepMs) * stepMs;
    const times: number[] = [];
    for (let t = startMs; t <= endMs; t += stepMs) times.push(t / 1000);
    const rangeS = rateRangeS(this.#jobs.get(job) ?? stepMs, stepMs);
    const lines = await Promise.all(
      plot.series.map(async (series) => {
        const query = new URLSearchParams({
          query: seriesQuery(job, series, rangeS),
          start: String(startMs / 1000),
          end: String(endMs / 1000),
          step: String(stepMs / 1000),
        });
        const answer = (await this.#get(`/api/v1/query_range?${query}`)) as RangeAnswer;
        if (answer.status !== "success" || answer.data?.resultType !== "matrix")
          throw new Error(`metrics answered no matrix for ${series.metric}`);
        return matrixLines(series, answer.data.result ?? [], times);
      }),
    );
    return { title: plot.title, unit: plot.unit, times, lines: lines.flat() };
  }

  async #get(path: string): Promise<unknown> {
    const response = await this.#options.fetch(`${this.#options.url}${path}`, {
      headers: { authorization: `Bearer ${this.#options.apiKey}` },
      signal: AbortSignal.timeout(this.#options.requestTimeoutMs),
    });
    const length = Number(response.headers.get("content-length") ?? "0");
    if (length > this.#options.maxBodyBytes) {
      await response.body?.cancel();
      throw new Error(`metrics answered ${length} bytes, over ${this.#options.maxBodyBytes}`);
    }
    const text = await response.text();
    if (response.status !== 200)
      throw new Error(`metrics answered ${response.status} to ${path.split("?")[0]}`);
    if (text.length > this.#options.maxBodyBytes)
      throw new Error(`metrics answered over ${this.#options.maxBodyBytes} bytes`);
    return JSON.parse(text);
  }
}

/** A Prometheus duration (`5s`, `1m30s`, `250ms`) in ms, or undefined (zero too: not an interval). */
export function parseIntervalMs(text: string): number | undefined {
  const ms = parsePromDurationMs(text);
  return ms !== undefined && ms > 0 ? ms : undefined;
}
