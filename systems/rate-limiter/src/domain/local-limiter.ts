/**
 * RL-11 fail-open fallback: an in-process token bucket per key, used while Redis
 * does not answer, so read routes stay up but still limited. Like
 * rate-limiter-flexible's `insuranceLimiter`, each instance holds a FRACTION of the
 * quota (1/instances by default): with the traffic spread evenly, the instances
 * together admit about the global quota instead of instances × quota.
 *
 * What holds: per key, one instance admits at most localCapacity + localRate·t over
 * any interval t (a token bucket; elapsed time uses the monotonic clock, so a wall
 * clock stepping back mints nothing). Each local capacity is ⌊capacity × fraction⌋
 * but at least 1, so a tiny quota does not lock everyone out; across M instances
 * with fraction 1/M the burst sum is therefore at most max(capacity, M), plus
 * rate·t. Traffic skewed to one instance gets only that instance's fraction: the
 * approximation the design text accepts.
 *
 * No double spending (issue 12): while Redis answers, every decision it makes for this
 * instance is MIRRORED here (`mirror`): what Redis admitted through this instance is
 * taken from the local bucket too, and the bucket never holds more than this instance's
 * share of what Redis said is left (remaining × fraction). A call that timed out is
 * decided by `take` like any fallback call — it is assumed spent. So when Redis goes
 * away the local quota is what is LEFT of this instance's share, not a fresh one: with
 * M instances each holding at most min(s − aᵢ, Rᵢ / M) (s = its share, aᵢ what it spent
 * through Redis, Rᵢ the last remaining it saw), the outage admits at most what Redis had
 * left plus each instance's view being stale — bounded by (M − 1)·s when one instance
 * did all the spending and the others never saw the key (README, "Failure").
 *
 * Memory is bounded: at most `maxKeys` buckets, least recently used evicted first.
 * An evicted key comes back with a full bucket, so a flood of distinct keys can
 * reset legitimate ones: `evictions` counts it for the degraded-mode dashboards.
 *
 * @example
 * const local = new LocalLimiter({ clock: systemClock, maxKeys: 100_000, instances: 4 });
 * const d = local.take("rl:per-user:tb:user:42", { capacity: 100, ratePerS: 10 });
 * // 25 tokens on this instance; d.allowed, d.remaining, d.retryAfterMs
 */
import type { Clock } from "@casebook/kit/clock";

export interface LocalLimiterOptions {
  readonly clock: Clock;
  /** Bound on buckets held in memory; least recently used evicted first. */
  readonly maxKeys: number;
  /** Share of each quota this instance holds, in (0, 1]. Default 1 / instances. */
  readonly fraction?: number;
  /** Service instances sharing the quota; used when `fraction` is not given. */
  readonly instances?: number;
}

/** The bucket a policy maps to (see `bucketEquivalent` in policy.ts). */
export interface LocalBucketLimit {
  readonly capacity: number;
  readonly ratePerS: number;
}

export interface LocalDecision {
  readonly allowed: boolean;
  /** Whole tokens left on this instance after the decision. */
  readonly remaining: number;
  /** When refused: ms until `cost` tokens are back (≥ 1). 0 when allowed. */
  readonly retryAfterMs: number;
  /** ms until the local bucket is full again. */
  readonly resetMs: number;
  /** The local capacity applied (quota × fraction, at least 1). */
  readonly capacity: number;
}

/** Rounds up, ignoring float noise: (1 − 0.999) / 0.001 is 1.0000000000000009, and must give 1 ms, not 2. */
function ceilMs(ms: number): number {
  return Math.ceil(ms - 1e-6);
}

interface Bucket {
  tokens: number;
  tsMs: number;
}

/**
 * The per-instance fallback limiter (see the module comment for what it guarantees).
 *
 * @example
 * const local = new LocalLimiter({ clock, maxKeys: 100_000, fraction: 0.25 });
 * if (!local.take(limit.key, bucketEquivalent(limit.limit), limit.cost).allowed) reply.code(429);
 */
export class LocalLimiter {
  readonly #clock: Clock;
  readonly #maxKeys: number;
  #fraction: number;
  readonly #buckets = new Map<string, Bucket>();
  #evictions = 0;
  /** Fixed by `fraction`, or 1 / the instance count (which `setInstances` updates). */
  #fractionFixed: boolean;

  constructor(options: LocalLimiterOptions) {
    if (!Number.isInteger(options.maxKeys) || options.maxKeys < 1) {
      throw new RangeError(`maxKeys must be an integer >= 1, got ${options.maxKeys}`);
    }
    const fraction =
      options.fraction ?? (options.instances === undefined ? Number.NaN : 1 / options.instances);
    if (!(fraction > 0 && fraction <= 1)) {
      throw new RangeError("give fraction in (0, 1] or instances >= 1 (the fraction is then 1 / instances)");
    }
    this.#clock = options.clock;
    this.#maxKeys = options.maxKeys;
    this.#fraction = fraction;
    this.#fractionFixed = options.fraction !== undefined;
  }

  /**
   * The live instance count changed (heartbeats in Redis): the share becomes 1 / count.
   * Buckets above the new capacity are trimmed on their next use. Ignored when a fixed
   * `fraction` was given.
   */
  setInstances(count: number): void {
    if (!(Number.isInteger(count) && count >= 1))
      throw new RangeError(`instances must be an integer >= 1, got ${count}`);
    if (!this.#fractionFixed) this.#fraction = 1 / count;
  }

  /**
   * Mirrors a decision the store made through this instance: `spent` units leave the
   * local bucket as well (never below 0), and when the store said how much is left
   * (`remaining`, in the policy's units) the bucket keeps at most this instance's share of it.
   */
  mirror(key: string, limit: LocalBucketLimit, spent: number, remaining?: number): void {
    const { bucket } = this.#refilled(key, limit);
    bucket.tokens = Math.max(0, bucket.tokens - spent);
    if (remaining !== undefined && Number.isFinite(remaining))
      bucket.tokens = Math.min(bucket.tokens, Math.max(0, remaining) * this.#fraction);
  }

  /**
   * Spends `cost` tokens from `key`'s local bucket if it has them (a refused request
   * spends nothing). A cost above the local capacity is clamped to it: in degraded
   * mode an expensive request may pass on a full bucket instead of never.
   */
  take(key: string, limit: LocalBucketLimit, cost = 1): LocalDecision {
    if (!(limit.capacity >= 1 && limit.ratePerS > 0 && cost >= 1)) {
      throw new RangeError(
        `need capacity >= 1, ratePerS > 0, cost >= 1 (got ${limit.capacity}, ${limit.ratePerS}, ${cost})`,
      );
    }
    const { bucket, capacity, ratePerMs } = this.#refilled(key, limit);
    const need = Math.min(cost, capacity);
    const allowed = bucket.tokens >= need;
    if (allowed) bucket.tokens -= need;
    if (!(bucket.tokens >= 0 && bucket.tokens <= capacity))
      throw new Error(`local bucket out of range: ${bucket.tokens}`);
    return {
      allowed,
      remaining: Math.floor(bucket.tokens),
      retryAfterMs: allowed ? 0 : Math.max(1, ceilMs((need - bucket.tokens) / ratePerMs)),
      resetMs: ceilMs((capacity - bucket.tokens) / ratePerMs),
      capacity,
    };
  }

  /**
   * Gives back what `take` spent when a later limit of the same request refused
   * (the "spend in order, refund on refusal" strategy); capped at the local capacity.
   * A key no longer held (evicted) is already full: nothing to do.
   */
  refund(key: string, limit: LocalBucketLimit, cost = 1): void {
    const bucket = this.#buckets.get(key);
    if (!bucket) return;
    const capacity = Math.max(1, Math.floor(limit.capacity * this.#fraction));
    bucket.tokens = Math.min(capacity, bucket.tokens + Math.min(cost, capacity));
  }

  /** `key`'s bucket at this instance's share, lazily refilled to now. */
  #refilled(key: string, limit: LocalBucketLimit): { bucket: Bucket; capacity: number; ratePerMs: number } {
    const capacity = Math.max(1, Math.floor(limit.capacity * this.#fraction));
    const ratePerMs = (limit.ratePerS * this.#fraction) / 1_000;
    const nowMs = this.#clock.monotonicMs();
    const bucket = this.#touch(key, capacity, nowMs);
    // Lazy refill; elapsed clamped at 0 (RL-05) even though the monotonic clock should not step back.
    bucket.tokens = Math.min(capacity, bucket.tokens + Math.max(0, nowMs - bucket.tsMs) * ratePerMs);
    bucket.tsMs = nowMs;
    return { bucket, capacity, ratePerMs };
  }

  #touch(key: string, capacity: number, nowMs: number): Bucket {
    const existing = this.#buckets.get(key);
    if (existing) {
      // Re-insert: a Map iterates in insertion order, so the first key is the least recently used.
      this.#buckets.delete(key);
      this.#buckets.set(key, existing);
      return existing;
    }
    const fresh = { tokens: capacity, tsMs: nowMs };
    this.#buckets.set(key, fresh);
    if (this.#buckets.size > this.#maxKeys) {
      this.#buckets.delete(this.#buckets.keys().next().value!);
      this.#evictions++;
    }
    return fresh;
  }

  /** Buckets held (≤ maxKeys). */
  get size(): number {
    return this.#buckets.size;
  }

  /** Buckets dropped to stay within maxKeys since start. */
  get evictions(): number {
    return this.#evictions;
  }

  /** The share of each quota this instance holds. */
  get fraction(): number {
    return this.#fraction;
  }
}
