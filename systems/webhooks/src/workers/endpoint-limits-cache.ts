/**
 * The scheduler's view of each endpoint's limits (WH-15): subscription concurrency and rate
 * read from the store for the endpoints of a claim round, and kept for `ttlMs`, so a limit
 * changed through the API applies within that time. Bounded to `maxEntries` (the oldest
 * entries go first).
 *
 * @example
 * const cache = new EndpointLimitsCache(db, { clock, ttlMs: 30_000, maxEntries: 10_000 });
 * await cache.load(claimed.map((c) => c.subscriptionId));
 * const scheduler = new FairScheduler({ …, limitsOf: (id) => cache.limitsOf(id) });
 */
import type { Queryable } from "@casebook/infra/sql/sql";
import type { Clock } from "@casebook/kit/clock";
import type { EndpointLimits } from "../domain/fair-scheduler.ts";
import { endpointLimits, MAX_LIMITS_BATCH, type StoredEndpointLimits } from "../store/endpoint-limits.ts";

/** "No rate limit" as a token bucket: far above what one process can send. */
export const UNLIMITED_RATE_PER_S = 1_000_000;
/** A rate-limited endpoint may take 100 ms of its rate back to back. */
const BURST_WINDOW_S = 0.1;
/** Until its subscription is read (or when it vanished): the store's default concurrency. */
const FALLBACK: Readonly<EndpointLimits> = Object.freeze({
  maxInFlight: 4,
  ratePerS: UNLIMITED_RATE_PER_S,
  burst: UNLIMITED_RATE_PER_S,
});

/** The scheduler's limits for stored ones. */
export function schedulerLimits(stored: StoredEndpointLimits): EndpointLimits {
  const rate = stored.rateLimitPerS;
  return {
    maxInFlight: stored.maxConcurrency,
    ratePerS: rate ?? UNLIMITED_RATE_PER_S,
    burst: rate === null ? UNLIMITED_RATE_PER_S : Math.max(1, Math.ceil(rate * BURST_WINDOW_S)),
  };
}

export class EndpointLimitsCache {
  readonly #db: Queryable;
  readonly #clock: Clock;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  /** Insertion order is age: reloading an entry moves it to the end. */
  readonly #entries = new Map<string, { limits: EndpointLimits; loadedAtMs: number }>();

  constructor(db: Queryable, options: { clock: Clock; ttlMs: number; maxEntries: number }) {
    if (!(options.ttlMs > 0)) throw new RangeError("ttlMs must be > 0");
    if (!Number.isSafeInteger(options.maxEntries) || options.maxEntries < 1)
      throw new RangeError("maxEntries must be >= 1");
    this.#db = db;
    this.#clock = options.clock;
    this.#ttlMs = options.ttlMs;
    this.#maxEntries = options.maxEntries;
  }

  /** Reads the limits of every id not cached or stale (one statement per MAX_LIMITS_BATCH ids). */
  async load(subscriptionIds: readonly string[]): Promise<void> {
    const nowMs = this.#clock.monotonicMs();
    const stale = [...new Set(subscriptionIds)].filter((id) => {
      const entry = this.#entries.get(id);
      return entry === undefined || nowMs - entry.loadedAtMs >= this.#ttlMs;
    });
    for (let i = 0; i < stale.length; i += MAX_LIMITS_BATCH) {
      const found = await endpointLimits(this.#db, stale.slice(i, i + MAX_LIMITS_BATCH));
      for (const [id, stored] of found) this.#put(id, schedulerLimits(stored), nowMs);
    }
  }

  /** The cached limits of `subscriptionId`, or the store's defaults when never read. */
  limitsOf(subscriptionId: string): EndpointLimits {
    return this.#entries.get(subscriptionId)?.limits ?? FALLBACK;
  }

  #put(id: string, limits: EndpointLimits, nowMs: number): void {
    this.#entries.delete(id);
    if (this.#entries.size >= this.#maxEntries) {
      const oldest = this.#entries.keys().next().value;
      if (oldest !== undefined) this.#entries.delete(oldest);
    }
    this.#entries.set(id, { limits, loadedAtMs: nowMs });
  }
}
