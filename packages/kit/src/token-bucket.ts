/**
 * An in-process token bucket: `capacity` tokens, refilled continuously at `ratePerS`; an action
 * takes one. Pure: time comes from the caller, so tests drive it with a manual clock. It shapes
 * what ONE process does (calls to a dependency, attempts to one endpoint); a limit shared by many
 * processes needs a shared store instead (systems/rate-limiter).
 *
 * Used by payments (PY-12: calls to the acquirer are rate-limited) and webhooks (WH-15: a rate
 * limit per endpoint, where `readyAtMs` lets the scheduler park an endpoint instead of polling it).
 *
 * @example
 * const bucket = new TokenBucket({ capacity: 5, ratePerS: 10, nowMs: clock.monotonicMs() });
 * const waitMs = bucket.take(clock.monotonicMs()); // 0: go now; > 0: a token frees up in waitMs
 * if (!bucket.tryTake(nowMs)) park(endpoint, bucket.readyAtMs(nowMs));
 */
export interface TokenBucketOptions {
  /** Most tokens held: the burst, actions allowed back to back. */
  capacity: number;
  /** Tokens added per second: the sustained rate. */
  ratePerS: number;
  /** The bucket starts full at this time. */
  nowMs: number;
}

export class TokenBucket {
  readonly capacity: number;
  readonly ratePerS: number;
  #tokens: number;
  #atMs: number;

  constructor(options: TokenBucketOptions) {
    if (!(options.capacity >= 1) || !Number.isFinite(options.capacity))
      throw new RangeError(`capacity must be a finite number >= 1, got ${options.capacity}`);
    if (!(options.ratePerS > 0) || !Number.isFinite(options.ratePerS))
      throw new RangeError(`ratePerS must be a finite number > 0, got ${options.ratePerS}`);
    this.capacity = options.capacity;
    this.ratePerS = options.ratePerS;
    this.#tokens = options.capacity;
    this.#atMs = options.nowMs;
  }

  #refill(nowMs: number): void {
    // A clock stepping back adds nothing rather than removing tokens.
    const elapsedMs = Math.max(0, nowMs - this.#atMs);
    this.#tokens = Math.min(this.capacity, this.#tokens + (elapsedMs * this.ratePerS) / 1_000);
    this.#atMs = Math.max(this.#atMs, nowMs);
  }

  /** Takes a token if one is there. */
  tryTake(nowMs: number): boolean {
    this.#refill(nowMs);
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Takes a token and returns 0, or takes none and returns the ms until one is available. */
  take(nowMs: number): number {
    return this.tryTake(nowMs) ? 0 : this.readyAtMs(nowMs) - nowMs;
  }

  /** The earliest time a token is available (`nowMs` when one already is). */
  readyAtMs(nowMs: number): number {
    this.#refill(nowMs);
    if (this.#tokens >= 1) return nowMs;
    return this.#atMs + Math.ceil(((1 - this.#tokens) * 1_000) / this.ratePerS);
  }

  /** Tokens available now (fractional), for metrics. */
  available(nowMs: number): number {
    this.#refill(nowMs);
    return this.#tokens;
  }

  /** True when the bucket is full again: forgetting it then loses nothing. */
  isFull(nowMs: number): boolean {
    this.#refill(nowMs);
    return this.#tokens >= this.capacity;
  }
}
