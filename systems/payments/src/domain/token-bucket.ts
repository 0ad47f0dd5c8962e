/**
 * A token bucket for calls to a dependency (PY-12: "calls to the acquirer are rate-limited"):
 * `capacity` tokens, refilled at `ratePerS`; a call takes one. Pure: time comes from the caller.
 * In-process on purpose: it shapes this process's calls; the acquirer enforces its own global limit.
 *
 * @example
 * const bucket = new TokenBucket({ capacity: 50, ratePerS: 100, nowMs: clock.monotonicMs() });
 * const waitMs = bucket.take(clock.monotonicMs()); // 0: go now; > 0: a token frees up in waitMs
 */
export interface TokenBucketOptions {
  /** Most tokens held: the burst size. */
  capacity: number;
  /** Tokens added per second. */
  ratePerS: number;
  nowMs: number;
}

export class TokenBucket {
  readonly capacity: number;
  readonly ratePerS: number;
  #tokens: number;
  #atMs: number;

  constructor(options: TokenBucketOptions) {
    if (!(options.capacity >= 1) || !Number.isFinite(options.capacity)) throw new RangeError("capacity >= 1");
    if (!(options.ratePerS > 0) || !Number.isFinite(options.ratePerS)) throw new RangeError("ratePerS > 0");
    this.capacity = options.capacity;
    this.ratePerS = options.ratePerS;
    this.#tokens = options.capacity;
    this.#atMs = options.nowMs;
  }

  #refill(nowMs: number): void {
    // A clock that steps back adds nothing rather than removing tokens.
    const elapsedMs = Math.max(0, nowMs - this.#atMs);
    this.#tokens = Math.min(this.capacity, this.#tokens + (elapsedMs * this.ratePerS) / 1000);
    this.#atMs = Math.max(this.#atMs, nowMs);
  }

  /** Takes a token and returns 0, or takes none and returns the ms until one is available. */
  take(nowMs: number): number {
    this.#refill(nowMs);
    if (this.#tokens >= 1) {
      this.#tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - this.#tokens) * 1000) / this.ratePerS);
  }

  /** Tokens available now (fractional), for metrics. */
  available(nowMs: number): number {
    this.#refill(nowMs);
    return this.#tokens;
  }
}
