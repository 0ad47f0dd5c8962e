/**
 * The scraper: every interval, each configured target's `/metrics` read over infra's outbound
 * client (a timeout on the whole exchange, a bounded body), parsed with kit's exposition
 * parser, turned into a batch by `domain/scrape-series.ts` (job/instance labels, `up`,
 * `scrape_duration_seconds`, `scrape_samples_scraped`, staleness markers) and written through
 * the same ingest as remote-write (`store/sample-ingest.ts`: the stream when on) under the
 * scrape tenant. Targets are scraped in parallel, so one dead or slow target costs one timeout,
 * never the others' samples. As in Prometheus, a scrape fails whole — `up` 0, and every series
 * it had marked stale — on a refused connection, a timeout, a status other than 200, a body
 * over the bound, a line that does not parse, or more samples than the limit.
 *
 * @example
 * const scraper = new Scraper({ targets, tenant, ingest, clock: systemClock, intervalMs: 15_000,
 *   timeoutMs: 10_000, maxBodyBytes: 10 * 1024 * 1024, maxSamples: 50_000, onError });
 * scraper.start();
 * scraper.states(); // [{ target, health: "up", lastError: "", lastScrapeMs, lastDurationMs }]
 * await scraper.stop();
 */
import { setTimeout as sleep } from "node:timers/promises";
import { OutboundClient } from "@casebook/infra/http/outbound";
import { BackgroundLoop } from "@casebook/kit/background-loop";
import type { Clock } from "@casebook/kit/clock";
import { parsePromText } from "@casebook/kit/prom-text";
import type { Labels } from "../domain/labels.ts";
import { type ScrapeOutcome, scrapeBatch } from "../domain/scrape-series.ts";
import type { ScrapeTarget } from "../domain/scrape-target.ts";
import type { IngestSeries } from "../store/sample-ingest.ts";
import type { Tenant } from "../store/tenant-repository.ts";

export interface ScraperOptions {
  readonly targets: readonly ScrapeTarget[];
  /** The tenant every scraped series belongs to. */
  readonly tenant: Tenant;
  readonly ingest: { write(tenant: Tenant, series: IngestSeries): Promise<void> };
  readonly clock: Clock;
  /** From one round's start to the next (a round lasts at most `timeoutMs`). */
  readonly intervalMs: number;
  /** Bound on one target's whole exchange: connect, headers, body. */
  readonly timeoutMs: number;
  /** A larger body fails the scrape (reading stops at the bound). */
  readonly maxBodyBytes: number;
  /** Prometheus's `sample_limit`: a target exposing more fails the scrape. */
  readonly maxSamples: number;
  readonly onScraped?: (target: ScrapeTarget, result: { ok: boolean; staleMarkers: number }) => void;
  /** The ingest refused or could not take a scrape's batch (the stream down, a series limit). */
  readonly onError: (error: unknown, target: ScrapeTarget | undefined) => void;
}

export type TargetHealth = "unknown" | "up" | "down";

export interface TargetState {
  readonly target: ScrapeTarget;
  readonly health: TargetHealth;
  /** Why the last scrape failed; "" when it worked. */
  readonly lastError: string;
  readonly lastScrapeMs: number | undefined;
  readonly lastDurationMs: number | undefined;
}

interface Tracked {
  state: TargetState;
  /** The series of the last scrape, for staleness. */
  seen: ReadonlyMap<string, Labels>;
}

export class Scraper {
  readonly #options: ScraperOptions;
  readonly #tracked: Tracked[];
  readonly #client: OutboundClient;
  readonly #loop: BackgroundLoop;
  /** The last round's length, taken off the next pause: a round starts every interval, as in Prometheus. */
  #roundMs = 0;

  constructor(options: ScraperOptions) {
    if (options.timeoutMs > options.intervalMs)
      throw new RangeError("a scrape's timeout must not exceed its interval (as Prometheus requires)");
    this.#options = options;
    this.#tracked = options.targets.map((target) => ({
      state: { target, health: "unknown", lastError: "", lastScrapeMs: undefined, lastDurationMs: undefined },
      seen: new Map(),
    }));
    this.#client = new OutboundClient({
      addressGuard: "off", // the operator's own targets (casebook up: the services it started), not a tenant's URL
      timeouts: { connectMs: options.timeoutMs, headersMs: options.timeoutMs, bodyMs: options.timeoutMs },
      deadlineMs: options.timeoutMs,
      maxResponseBytes: options.maxBodyBytes,
      responseOverflow: "error",
      pool: { maxOrigins: Math.max(1, options.targets.length), maxSocketsPerOrigin: 1 },
      userAgent: "casebook-metrics-scraper",
    });
    this.#loop = new BackgroundLoop({
      name: "metrics scraper",
      round: async () => {
        const started = performance.now();
        await this.scrapeOnce();
        this.#roundMs = performance.now() - started;
        return false;
      },
      idleMs: options.intervalMs,
      // Unref'd: stop() ends the pause itself, and a pending timer must not hold the process open.
      sleep: (ms) => sleep(Math.max(0, ms - this.#roundMs), undefined, { ref: false }),
      failureBackoff: { capMs: options.intervalMs, jitter: "none" },
      onError: (error) => options.onError(error, undefined),
    });
  }

  start(): void {
    if (this.#tracked.length > 0) this.#loop.start();
  }

  async stop(): Promise<void> {
    await this.#loop.stop();
    this.#client.close();
  }

  states(): TargetState[] {
    return this.#tracked.map((t) => t.state);
  }

  /** One round: every target at once; resolves when each has been scraped and written (or failed). */
  async scrapeOnce(): Promise<void> {
    await Promise.all(this.#tracked.map((tracked) => this.#scrape(tracked)));
  }

  async #scrape(tracked: Tracked): Promise<void> {
    const { target } = tracked.state;
    const atMs = this.#options.clock.nowMs();
    const started = performance.now();
    const outcome = await this.#fetch(target).then(
      (samples): ScrapeOutcome => ({ ok: true, samples, durationMs: performance.now() - started }),
      (error: unknown): ScrapeOutcome => ({
        ok: false,
        error: reasonOf(error),
        durationMs: performance.now() - started,
      }),
    );
    const batch = scrapeBatch(target, atMs, outcome, tracked.seen);
    tracked.seen = batch.current;
    tracked.state = {
      target,
      health: outcome.ok ? "up" : "down",
      lastError: outcome.ok ? "" : outcome.error,
      lastScrapeMs: atMs,
      lastDurationMs: outcome.durationMs,
    };
    this.#options.onScraped?.(target, { ok: outcome.ok, staleMarkers: batch.staleMarkers });
    try {
      await this.#options.ingest.write(this.#options.tenant, batch.series);
    } catch (error) {
      this.#options.onError(error, target);
    }
  }

  async #fetch(target: ScrapeTarget) {
    const response = await this.#client.request({
      method: "GET",
      url: target.url,
      headers: {
        accept: "text/plain;version=0.0.4;q=1,*/*;q=0.1",
        "x-prometheus-scrape-timeout-seconds": String(this.#options.timeoutMs / 1000),
      },
    });
    if (response.status !== 200) throw new Error(`server returned HTTP status ${response.status}`);
    const scrape = parsePromText(response.body.toString("utf8"), this.#options.maxSamples);
    if (scrape.truncated)
      throw new Error(`sample limit exceeded: more than ${this.#options.maxSamples} samples`);
    const problem = scrape.problems[0];
    if (problem !== undefined) throw new Error(`line ${problem.line}: ${problem.reason}`);
    return scrape.samples;
  }
}

function reasonOf(error: unknown): string {
  const fields = (error as { fields?: { phase?: string } }).fields;
  const message = error instanceof Error ? error.message : String(error);
  return fields?.phase === undefined ? message : `${fields.phase}: ${message}`;
}
