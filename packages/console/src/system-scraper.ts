/**
 * Every few seconds, each started system's `/readyz` and `/metrics`, read in parallel and each
 * bounded in time and size: `/readyz` gives its state (200 up; any other answer degraded — it
 * runs but a dependency is not ready; no answer down), `/metrics` goes into the system's
 * ScrapeWindow. One slow or dead system costs one timeout, never the others' plots.
 *
 * @example
 * const scraper = new SystemScraper(catalog.systems, { intervalMs: 2_000, windowScrapes: 150, log });
 * scraper.start();
 * scraper.health("rate-limiter"); // { state: "up", checkedAtMs: … }
 * await scraper.stop();
 */

import type { Logger } from "@casebook/infra/http/logger";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import { parsePromText } from "@casebook/kit/prom-text";
import { ScrapeWindow } from "./scrape-window.ts";

export type HealthState = "up" | "degraded" | "down" | "unknown";

export interface Health {
  state: HealthState;
  /** Why degraded or down, in a few words (the status code, the connection error). */
  detail?: string;
  checkedAtMs?: number;
}

export interface ScrapeTarget {
  name: string;
  url: string;
  started: boolean;
}

export interface ScraperOptions {
  intervalMs: number;
  /** Scrapes kept per system: intervalMs × windowScrapes is the plots' span. */
  windowScrapes: number;
  /** Bound on one /metrics or /readyz request. */
  requestTimeoutMs?: number;
  /** A larger /metrics body is dropped as a failed scrape. */
  maxBodyBytes?: number;
  log: Pick<Logger, "warn">;
  fetch?: typeof fetch;
  now?: () => number;
}

export const defaultRequestTimeoutMs = 1_500;
export const defaultMaxBodyBytes = 4 * 1024 * 1024;

export class SystemScraper {
  readonly #targets: readonly ScrapeTarget[];
  readonly #windows = new Map<string, ScrapeWindow>();
  readonly #health = new Map<string, Health>();
  readonly #options: Required<Omit<ScraperOptions, "log">> & Pick<ScraperOptions, "log">;
  readonly #loop: BackgroundLoop;

  constructor(targets: readonly ScrapeTarget[], options: ScraperOptions) {
    this.#targets = targets.filter((t) => t.started);
    this.#options = {
      requestTimeoutMs: defaultRequestTimeoutMs,
      maxBodyBytes: defaultMaxBodyBytes,
      fetch: globalThis.fetch,
      now: Date.now,
      ...options,
    };
    for (const target of this.#targets)
      this.#windows.set(target.name, new ScrapeWindow(options.windowScrapes));
    this.#loop = new BackgroundLoop({
      name: "console scraper",
      round: async () => {
        await this.scrapeOnce();
        return false;
      },
      idleMs: options.intervalMs,
      failureBackoff: { capMs: options.intervalMs, jitter: "none" },
      onError: (error) => options.log.warn({ err: error }, "console scrape round failed"),
    });
  }

  start(): void {
    this.#loop.start();
  }

  stop(): Promise<void> {
    return this.#loop.stop();
  }

  window(name: string): ScrapeWindow | undefined {
    return this.#windows.get(name);
  }

  health(name: string): Health {
    return this.#health.get(name) ?? { state: "unknown" };
  }

  /** One round: every target's /readyz and /metrics, all at once. */
  async scrapeOnce(): Promise<void> {
    await Promise.all(this.#targets.map((target) => this.#scrapeTarget(target)));
  }

  async #scrapeTarget(target: ScrapeTarget): Promise<void> {
    const [ready, metrics] = await Promise.all([
      this.#get(`${target.url}/readyz`),
      this.#get(`${target.url}/metrics`),
    ]);
    const checkedAtMs = this.#options.now();
    if ("error" in ready) this.#health.set(target.name, { state: "down", detail: ready.error, checkedAtMs });
    else if (ready.status === 200) this.#health.set(target.name, { state: "up", checkedAtMs });
    else
      this.#health.set(target.name, {
        state: "degraded",
        detail: `/readyz answered ${ready.status}`,
        checkedAtMs,
      });
    const samples =
      "error" in metrics || metrics.status !== 200 ? undefined : parsePromText(metrics.body).samples;
    this.#windows.get(target.name)!.push(checkedAtMs, samples);
  }

  async #get(url: string): Promise<{ status: number; body: string } | { error: string }> {
    try {
      const response = await this.#options.fetch(url, {
        signal: AbortSignal.timeout(this.#options.requestTimeoutMs),
      });
      const length = Number(response.headers.get("content-length") ?? "0");
      if (length > this.#options.maxBodyBytes) {
        await response.body?.cancel();
        return { error: `${url} answered ${length} bytes, over ${this.#options.maxBodyBytes}` };
      }
      const body = await response.text();
      if (body.length > this.#options.maxBodyBytes)
        return { error: `${url} answered over ${this.#options.maxBodyBytes} bytes` };
      return { status: response.status, body };
    } catch (error) {
      const cause = (error as Error & { cause?: Error }).cause;
      return { error: cause?.message ?? (error as Error).message };
    }
  }
}
