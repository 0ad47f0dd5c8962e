/**
 * TTL jitter (CA-12): keys written together (a bulk load, a cache warmed after a deploy)
 * with the same TTL also expire together, and their misses reach the database in the
 * same second. Spreading each TTL uniformly over base ± fraction (the text's 300 s ± 10%:
 * 270..330 s) turns that one spike into a plateau about 2·fraction·base seconds wide.
 *
 * Whole seconds, because `SET … EX` takes seconds; each second of the range is equally
 * likely (the ends included), so 300 s ± 10% spreads a bulk write over 61 seconds.
 *
 * @example
 * jitteredTtlS(300, 0.1, seededRandom(1)); // an integer in [270, 330]
 * jitteredTtlS(300, 0, seededRandom(1));   // 300: no jitter
 */
import type { RandomSource } from "@casebook/kit/random";
import { requireInteger, requireNumber } from "../errors.ts";

/** Bound on a cache TTL: 30 days, past which Redis would read EX as an absolute time in memcached. */
export const MAX_TTL_S = 30 * 24 * 3_600;
/** Jitter above half the TTL would let some keys live almost not at all. */
export const MAX_JITTER_FRACTION = 0.5;

/** The lowest and highest TTL `jitteredTtlS` can return for this base and fraction. */
export function ttlRangeS(baseS: number, fraction: number): { minS: number; maxS: number } {
  requireInteger("ttlS", baseS, 1, MAX_TTL_S);
  requireNumber("jitter", fraction, 0, MAX_JITTER_FRACTION);
  const spreadS = Math.floor(baseS * fraction);
  return { minS: Math.max(1, baseS - spreadS), maxS: baseS + spreadS };
}

/**
 * A TTL drawn uniformly from the whole seconds in [base·(1−fraction), base·(1+fraction)].
 *
 * @example
 * const ttlS = jitteredTtlS(300, 0.1, systemRandom); // SET key value EX ttlS
 */
export function jitteredTtlS(baseS: number, fraction: number, random: RandomSource): number {
  const { minS, maxS } = ttlRangeS(baseS, fraction);
  if (minS === maxS) return minS;
  const ttlS = minS + Math.floor(random.next() * (maxS - minS + 1));
  // A source that breaks its [0, 1) contract (returns 1) must not step past the range.
  return Math.min(ttlS, maxS);
}
