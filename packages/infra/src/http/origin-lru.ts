/**
 * One connection pool per origin, under a bound on origins: the least recently used pool with
 * nothing in flight is closed when a new origin would pass the bound; when every pool is busy
 * the map goes over the bound rather than kill calls in flight (the caller's in-flight bound
 * caps how far: at most one origin per call). node:http's agents (`agent-pool.ts`) and undici's
 * pools (`dispatcher-pool.ts`) are kept this one way.
 *
 * @example
 * const pools = new OriginLru({ maxOrigins: 16, open: (origin) => new Pool(origin), busy: (p) => p.stats.running > 0, close: (p) => p.close(), destroy: (p) => p.destroy() });
 * pools.for(new URL("http://127.0.0.1:8101/v1")); // created once, then the same pool
 * pools.destroyAll();
 */

export interface OriginLruOptions<T> {
  readonly maxOrigins: number;
  /** A new pool for `origin` (`url.origin`); `url` is the call that asked for it. */
  open(origin: string, url: URL): T;
  /** Whether the pool has a call in flight (or waiting): such a pool is never evicted. */
  busy(pool: T): boolean;
  /** Closes an evicted, idle pool. */
  close(pool: T): void;
  /** Closes a pool and its sockets now, calls in flight failing (`destroyAll`). */
  destroy(pool: T): void;
}

export class OriginLru<T> {
  readonly #options: OriginLruOptions<T>;
  /** Insertion order is recency: `for` moves an origin to the end. */
  readonly #pools = new Map<string, T>();
  /** The last call's URL object, its address then (a URL can be changed in place), and its pool. */
  #recent: { readonly url: URL; readonly href: string; readonly pool: T } | undefined;

  constructor(options: OriginLruOptions<T>) {
    if (!Number.isSafeInteger(options.maxOrigins) || options.maxOrigins < 1)
      throw new RangeError("maxOrigins must be >= 1");
    this.#options = options;
  }

  /** The pool for `url`'s origin, created on first use. */
  for(url: URL): T {
    // A client calling one endpoint passes the same URL object every time: that pool is already
    // the most recent (no origin string to build, no reordering). It cannot have been evicted:
    // only a call for another origin evicts, and that call becomes the most recent itself.
    const recent = this.#recent;
    if (recent !== undefined && recent.url === url && recent.href === url.href) return recent.pool;
    const origin = url.origin;
    let pool = this.#pools.get(origin);
    if (pool !== undefined) {
      this.#pools.delete(origin);
    } else {
      this.#evictIdle();
      pool = this.#options.open(origin, url);
    }
    this.#pools.set(origin, pool);
    this.#recent = { url, href: url.href, pool };
    return pool;
  }

  /** Origins holding a pool now. */
  get size(): number {
    return this.#pools.size;
  }

  destroyAll(): void {
    for (const pool of this.#pools.values()) this.#options.destroy(pool);
    this.#pools.clear();
    this.#recent = undefined;
  }

  /** Closes least recently used pools with no call in flight until there is room. */
  #evictIdle(): void {
    for (const [origin, pool] of this.#pools) {
      if (this.#pools.size < this.#options.maxOrigins) return;
      if (this.#options.busy(pool)) continue;
      this.#options.close(pool);
      this.#pools.delete(origin);
    }
  }
}
