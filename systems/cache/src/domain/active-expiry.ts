/**
 * Redis's active expiry cycle (CA-02): keys nobody reads again would stay in memory
 * forever under lazy expiry alone, so a timer samples keys that have a TTL and deletes
 * the expired ones: 20 per round, and another round while more than 25% of a round was
 * expired (the keyspace is probably full of dead keys), within a time budget so a
 * backlog never stalls the node. The rest is left to lazy expiry and the next cycle.
 *
 * @example
 * const report = runActiveExpiry(keyspace.expiryTarget(), { clock, budgetMs: 25 });
 * report.expired; // keys deleted this cycle
 */
import type { Clock } from "@casebook/kit/clock";

/** What the cycle needs from the keyspace. */
export interface ExpiryTarget {
  /** Keys that have a TTL. */
  readonly volatileCount: number;
  /** Looks at one random key with a TTL; deletes it and returns true when it is expired at nowMs. */
  sampleAndExpire(nowMs: number): boolean;
}

export interface ActiveExpiryOptions {
  readonly clock: Clock;
  /** Time budget of one cycle (Redis: 25% of a 100 ms tick). */
  readonly budgetMs: number;
  /** Keys sampled per round (Redis's ACTIVE_EXPIRE_CYCLE_KEYS_PER_LOOP). */
  readonly keysPerRound?: number;
  /** Another round runs while more than this share of a round was expired. */
  readonly repeatAboveExpiredShare?: number;
}

export interface ActiveExpiryReport {
  readonly rounds: number;
  readonly sampled: number;
  readonly expired: number;
  /** True when the budget ended the cycle while keys were still expiring fast. */
  readonly timedOut: boolean;
}

export const ACTIVE_EXPIRY_KEYS_PER_ROUND = 20;
export const ACTIVE_EXPIRY_REPEAT_ABOVE = 0.25;
/** Rounds between two clock reads: reading the clock costs more than a round of 20 samples. */
const ROUNDS_PER_CLOCK_CHECK = 16;

/** One cycle. Bounded by the budget and by the keys with a TTL (a repeated round deleted > 25% of 20). */
export function runActiveExpiry(target: ExpiryTarget, options: ActiveExpiryOptions): ActiveExpiryReport {
  const perRound = options.keysPerRound ?? ACTIVE_EXPIRY_KEYS_PER_ROUND;
  const repeatAbove = options.repeatAboveExpiredShare ?? ACTIVE_EXPIRY_REPEAT_ABOVE;
  const startMs = options.clock.monotonicMs();
  let rounds = 0;
  let sampled = 0;
  let expired = 0;
  let timedOut = false;
  for (;;) {
    const count = Math.min(perRound, target.volatileCount);
    if (count === 0) break;
    const nowMs = options.clock.nowMs();
    let expiredThisRound = 0;
    for (let i = 0; i < count; i++) if (target.sampleAndExpire(nowMs)) expiredThisRound += 1;
    rounds += 1;
    sampled += count;
    expired += expiredThisRound;
    if (expiredThisRound <= count * repeatAbove) break;
    if (rounds % ROUNDS_PER_CLOCK_CHECK === 0 && options.clock.monotonicMs() - startMs > options.budgetMs) {
      timedOut = true;
      break;
    }
  }
  return { rounds, sampled, expired, timedOut };
}
