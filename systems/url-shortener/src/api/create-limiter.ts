/**
 * Link creation rate-limited per API key (US-16: Kutt's public instance was ruined by abuse):
 * one kit TokenBucket per key prefix, in a bounded LRU of buckets (a flood of keys cannot grow
 * memory; an evicted key starts again with a full bucket, which only ever errs towards
 * allowing). In-process: each replica enforces its own share; a limit shared by every replica
 * belongs to systems/rate-limiter.
 *
 * @example
 * const limiter = new CreateLimiter({ ratePerS: 10, burst: 100, maxKeys: 10_000 });
 * limiter.take("usk_0123456789abcdef", clock.monotonicMs()); // 0: go; > 0: wait this many ms
 */
import { TokenBucket } from "@casebook/kit/token-bucket";
import { LRUCache } from "lru-cache";

export interface CreateLimiterOptions {
  ratePerS: number;
  burst: number;
  /** Keys tracked at once. */
  maxKeys: number;
}

export class CreateLimiter {
  readonly #options: CreateLimiterOptions;
  readonly #buckets: LRUCache<string, TokenBucket>;

  constructor(options: CreateLimiterOptions) {
    this.#options = options;
    this.#buckets = new LRUCache<string, TokenBucket>({ max: options.maxKeys });
  }

  /** 0 when the key may create a link now (a token is taken), else the ms until it may. */
  take(keyPrefix: string, nowMs: number): number {
    let bucket = this.#buckets.get(keyPrefix);
    if (bucket === undefined) {
      bucket = new TokenBucket({ capacity: this.#options.burst, ratePerS: this.#options.ratePerS, nowMs });
      this.#buckets.set(keyPrefix, bucket);
    }
    return bucket.take(nowMs);
  }
}
