/**
 * Redis's LFU counter (CA-11): 8 bits per key, incremented logarithmically (a Morris
 * counter) and decayed by elapsed time. An increment succeeds with probability
 * 1 / ((counter − 5) · logFactor + 1), so with the default factor 10 a counter reaches
 * 255 only after about a million hits; a new key starts at 5 so it is not the first
 * victim; and each `decayTimeMin` minutes without access take one off the counter.
 * Same constants and formulas as Redis's evict.c (lfu-log-factor 10, lfu-decay-time 1).
 *
 * @example
 * let counter = LFU_INIT_VAL;
 * counter = lfuLogIncrement(counter, 10, seededRandom(1)); // 6: p = 1 at the initial value
 * lfuDecay(counter, 3, 1); // 3: three minutes idle
 */
import type { RandomSource } from "@casebook/kit/random";

/** What a new key's counter starts at, so it survives its first eviction round. */
export const LFU_INIT_VAL = 5;
/** The counter's ceiling: 8 bits. */
export const MAX_LFU_COUNTER = 255;

/**
 * One access: adds 1 with probability 1 / ((counter − LFU_INIT_VAL) · logFactor + 1).
 *
 * @example
 * lfuLogIncrement(5, 10, seededRandom(1)); // 6 (probability 1 below and at the initial value)
 */
export function lfuLogIncrement(counter: number, logFactor: number, random: RandomSource): number {
  if (counter >= MAX_LFU_COUNTER) return MAX_LFU_COUNTER;
  const base = Math.max(0, counter - LFU_INIT_VAL);
  const probability = 1 / (base * logFactor + 1);
  return random.next() < probability ? counter + 1 : counter;
}

/**
 * The counter after `elapsedMin` minutes without access: one off per `decayTimeMin`
 * (0 disables decay), never below 0.
 *
 * @example
 * lfuDecay(10, 5, 2); // 8: two whole periods
 */
export function lfuDecay(counter: number, elapsedMin: number, decayTimeMin: number): number {
  if (decayTimeMin <= 0) return counter;
  const periods = Math.floor(elapsedMin / decayTimeMin);
  return periods >= counter ? 0 : counter - periods;
}
