/**
 * The read path's in-process layer (US-13, US-14): an LRU (`lru-cache`) in front of the store,
 * bounded in entries AND bytes, then the store read by key. When full, the least recently
 * used code goes and hot codes stay. Hits and misses are counted for the hit ratio
 * (`url_shortener_read_cache_requests_total{result}` and `stats`).
 *
 * Freshness: an entry lives at most `ttlMs` (other replicas' edits reach this one within it)
 * and never past its link's expiry; an edit through THIS process evicts the code at once
 * (`forget`). Concurrent misses of one code share one store read (kit's SingleFlight), so a
 * hot code arriving cold costs one query, not one per request. Unknown codes are not cached:
 * a scan of random codes must not evict the hot ones.
 *
 * @example
 * const reader = new CachedLinkReader(links, { maxEntries: 100_000, maxBytes: 64 << 20, ttlMs: 60_000, clock });
 * await reader.resolve("s.example", "q3ZxP0a");
 */
import type { Clock } from "@casebook/kit/clock";
import { SingleFlight } from "@casebook/kit/single-flight";
import { LRUCache } from "lru-cache";
import type { ResolvedLink } from "../domain/redirect-decision.ts";

export interface LinkResolver {
  resolve(domain: string, code: string): Promise<ResolvedLink | undefined>;
}

export interface CachedLinkReaderOptions {
  maxEntries: number;
  maxBytes: number;
  ttlMs: number;
  clock: Clock;
  /** Called per lookup: true on a hit (for the metric). */
  onLookup?: (hit: boolean) => void;
}

/** Bytes an entry is charged: the strings (2 bytes a character in V8's worst case) and ~100 of overhead. */
function entryBytes(key: string, link: ResolvedLink): number {
  return 2 * (key.length + link.target.length) + 100;
}

export class CachedLinkReader implements LinkResolver {
  readonly #store: LinkResolver;
  readonly #cache: LRUCache<string, ResolvedLink>;
  readonly #flights = new SingleFlight<ResolvedLink | undefined>({ maxInFlightKeys: 10_000 });
  readonly #options: CachedLinkReaderOptions;
  #hits = 0;
  #misses = 0;

  constructor(store: LinkResolver, options: CachedLinkReaderOptions) {
    this.#store = store;
    this.#options = options;
    this.#cache = new LRUCache<string, ResolvedLink>({
      max: options.maxEntries,
      maxSize: options.maxBytes,
      sizeCalculation: (link, key) => entryBytes(key, link),
      ttl: options.ttlMs,
      // Time from the injected clock, so tests move it. +1: lru-cache takes a start time of 0 to
      // mean "no TTL", and a manual clock starts its monotonic time at 0.
      perf: { now: () => options.clock.monotonicMs() + 1 },
      ttlAutopurge: false,
      // 0: read the clock on every check (the default caches "now" for 1 ms behind a timer).
      ttlResolution: 0,
    });
  }

  get stats() {
    const lookups = this.#hits + this.#misses;
    return {
      hits: this.#hits,
      misses: this.#misses,
      hitRatio: lookups === 0 ? 0 : this.#hits / lookups,
      entries: this.#cache.size,
      bytes: this.#cache.calculatedSize,
    };
  }

  /** The cached link, counted as a hit, or undefined (not counted: the caller resolves it next). No waiting. */
  peek(domain: string, code: string): ResolvedLink | undefined {
    const cached = this.#cache.get(`${domain}/${code}`);
    if (cached === undefined) return undefined;
    this.#hits += 1;
    this.#options.onLookup?.(true);
    return cached;
  }

  async resolve(domain: string, code: string): Promise<ResolvedLink | undefined> {
    const key = `${domain}/${code}`;
    const cached = this.#cache.get(key);
    if (cached !== undefined) {
      this.#hits += 1;
      this.#options.onLookup?.(true);
      return cached;
    }
    this.#misses += 1;
    this.#options.onLookup?.(false);
    return this.#flights.do(key, async () => {
      const link = await this.#store.resolve(domain, code);
      if (link !== undefined) this.#remember(key, link);
      return link;
    });
  }

  #remember(key: string, link: ResolvedLink): void {
    let ttl = this.#options.ttlMs;
    if (link.expiresAtMs !== null) ttl = Math.min(ttl, link.expiresAtMs - this.#options.clock.nowMs());
    if (ttl <= 0) return;
    this.#cache.set(key, link, { ttl });
  }

  /** An edit through this process: the next read goes to the store. */
  forget(domain: string, code: string): void {
    const key = `${domain}/${code}`;
    this.#cache.delete(key);
    this.#flights.forget(key);
  }
}
