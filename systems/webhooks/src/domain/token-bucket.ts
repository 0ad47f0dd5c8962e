/**
 * A token bucket per endpoint (WH-15 per-endpoint rate limit): `burst` tokens, refilled
 * at `ratePerS`; an attempt takes one. Pure: time comes from the caller. `readyAtMs`
 * says when the next token exists, so the scheduler can park the endpoint until then
 * instead of polling it.
 *
 * @example
 * const bucket = new TokenBucket({ burst: 5, ratePerS: 10, nowMs: 0 });
 * bucket.tryTake(0);    // true (4 left)
 * bucket.readyAtMs(0);  // 0 while tokens remain; later, when the next one arrives
 */
export interface TokenBucketOptions {
  /** Most tokens held: attempts allowed back to back. */
  burst: number;
  /** Tokens added per second: the sustained attempt rate. */
  ratePerS: number;
  nowMs: number;
}

export class TokenBucket {
  readonly burst: number;
  readonly ratePerS: number;
  #tokens: number;
  #atMs: number;

  constructor(options: TokenBucketOptions) {
    if (!(options.burst >= 1) || !Number.isFinite(options.burst)) throw new RangeError("burst must be >= 1");
    if (!(options.ratePerS > 0) || !Number.isFinite(options.ratePerS))
      throw new RangeError("ratePerS must be > 0");
    this.burst = options.burst;
    this.ratePerS = options.ratePerS;
    this.#tokens = options.burst;
    this.#atMs = options.nowMs;
  }

  #refill(nowMs: number): void {
    // A clock stepping back adds nothing rather than removing tokens.
    const elapsedMs = Math.max(0, nowMs - this.#atMs);
    this.#tokens = Math.min(this.burst, this.#tokens + (elapsedMs * this.ratePerS) / 1_000);
    this.#atMs = Math.max(this.#atMs, nowMs);
  }

  /** Takes a token if one is there. */
  tryTake(nowMs: number): boolean {
    this.#refill(nowMs);
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** The earliest time a token is available (nowMs when one already is). */
  readyAtMs(nowMs: number): number {
    this.#refill(nowMs);
    if (this.#tokens >= 1) return nowMs;
    return this.#atMs + Math.ceil(((1 - this.#tokens) * 1_000) / this.ratePerS);
  }

  /** True when the bucket is full again: forgetting it then loses nothing. */
  isFull(nowMs: number): boolean {
    this.#refill(nowMs);
    return this.#tokens >= this.burst;
  }
}
