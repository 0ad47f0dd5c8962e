/**
 * Approximate LRU's clock and score (CA-11). The clock is wall-clock milliseconds
 * modulo 2^30 (12.4 days), kept in `CacheEntry.access` as a small integer; the score is
 * the idle time, so the pool's best candidate is the key unused the longest among
 * those sampled. Like Redis's 24-bit clock, a key idle longer than one wrap looks
 * younger than it is: such a key is a rare survivor, not a correctness problem.
 *
 * @example
 * const access = lruClock(1_000);
 * lruIdleMs(access, 1_250); // 250
 */
import { isLfuField, lfuIdleMs } from "./lfu-counter.ts";

/** The clock wraps here: small enough to stay a V8 small integer in every entry. */
export const LRU_CLOCK_WRAP_MS = 2 ** 30;

export function lruClock(nowMs: number): number {
  return nowMs % LRU_CLOCK_WRAP_MS;
}

/**
 * Milliseconds since `access` (an LRU clock), across the wrap. A field an LFU policy wrote
 * (before a `CONFIG SET maxmemory-policy`) is read by its minute stamp instead of as a clock.
 */
export function lruIdleMs(access: number, nowMs: number): number {
  if (isLfuField(access)) return lfuIdleMs(access, nowMs);
  const now = lruClock(nowMs);
  return now >= access ? now - access : LRU_CLOCK_WRAP_MS - access + now;
}
