/**
 * Redis's LFU counter (CA-11): an 8-bit Morris counter, incremented with probability
 * 1 / ((counter − 5) · logFactor + 1), so 255 stands for millions of hits, and
 * decremented by one for every `decayTimeMin` minutes without access, so keys that
 * were hot yesterday do not stay forever. New keys start at 5 so they are not
 * the first evicted before they had a chance to be read.
 *
 * Packed as `(minutes << 8) | counter`, minutes wrapping at 2^16 as in Redis (45 days),
 * and kept in `CacheEntry.access` bit-inverted (`~packed`, always negative) while an LRU
 * clock is never negative: the sign says which policy wrote the field. Redis's one 24-bit
 * `lru` field carries no such mark, so after `CONFIG SET maxmemory-policy` it reads an
 * LRU clock as minutes and counter (`LFUDecrAndReturn`): pseudo-random bits that mostly
 * decay to 0. Here a field written under LRU reads as counter 0 on purpose — nothing is
 * known of its frequency — so keys written before a switch go first, as they mostly do in
 * Redis, and the counter can never leave 0–255 (the bug this prevents: an LRU clock read
 * as minutes gave a negative elapsed time and counters in the millions, keys that could
 * never be evicted). The other way, `lfuIdleMs` reads the minute stamp as an idle time.
 *
 * Redis's published table for logFactor 10 (redis.conf): 100 hits → 10,
 * 1 000 → 18, 100 000 → 142, 1 000 000 → 255.
 *
 * @example
 * let access = lfuInitial(nowMs);
 * access = lfuTouch(access, nowMs, { logFactor: 10, decayTimeMin: 1 }, rng);
 * lfuCounterOf(access); // 6 (the first hits almost always count)
 */
import type { RandomSource } from "@casebook/kit/random";

export interface LfuParams {
  /** lfu-log-factor: higher = slower growth (Redis default 10). */
  readonly logFactor: number;
  /** lfu-decay-time: minutes per decrement of an idle key's counter; 0 = never decay (default 1). */
  readonly decayTimeMin: number;
}

export const defaultLfuParams: Readonly<LfuParams> = Object.freeze({ logFactor: 10, decayTimeMin: 1 });

/** Counter of a new key (Redis's LFU_INIT_VAL). */
export const LFU_INIT_VAL = 5;
export const MAX_LFU = 255;
const MINUTES_MASK = 0xffff;
const MS_PER_MINUTE = 60_000;

/** Minutes since the epoch, modulo 2^16 (Redis's LFUGetTimeInMinutes). */
export function lfuMinutes(nowMs: number): number {
  return Math.floor(nowMs / MS_PER_MINUTE) & MINUTES_MASK;
}

/** Minutes elapsed since `then`, across the 2^16 wrap. */
function minutesSince(then: number, nowMs: number): number {
  const now = lfuMinutes(nowMs);
  return now >= then ? now - then : MINUTES_MASK + 1 - then + now;
}

/** True when `access` was written under an LFU policy (bit-inverted, so negative); false for an LRU clock. */
export function isLfuField(access: number): boolean {
  return access < 0;
}

/** The stored (bit-inverted) field for a minute stamp and a counter. */
function lfuField(nowMs: number, counter: number): number {
  return ~((lfuMinutes(nowMs) << 8) | counter);
}

/** The raw counter; 0 for a field an LRU policy wrote (its frequency is unknown). */
export function lfuCounterOf(access: number): number {
  return access < 0 ? ~access & 0xff : 0;
}

/** The field of a new key. */
export function lfuInitial(nowMs: number): number {
  return lfuField(nowMs, LFU_INIT_VAL);
}

/** The counter after decay for idle time, without changing the entry (what eviction compares). */
export function lfuDecayed(access: number, nowMs: number, params: LfuParams): number {
  if (access >= 0) return 0; // an LRU clock: see the module comment
  const packed = ~access;
  const counter = packed & 0xff;
  if (params.decayTimeMin <= 0) return counter;
  const periods = Math.floor(minutesSince(packed >>> 8, nowMs) / params.decayTimeMin);
  return periods > counter ? 0 : counter - periods;
}

/**
 * Idle time of an LFU field read by an LRU policy after a switch: the field knows only the
 * minute of the last access, so this is the longest the key can have been idle (the rest of
 * that minute counted too). Keys not touched since the switch thus rank as older than every
 * key touched since, which they are.
 */
export function lfuIdleMs(access: number, nowMs: number): number {
  return minutesSince(~access >>> 8, nowMs) * MS_PER_MINUTE + (nowMs % MS_PER_MINUTE);
}

/** One logarithmic increment (Redis's LFULogIncr). */
export function lfuLogIncrement(counter: number, logFactor: number, random: RandomSource): number {
  if (counter >= MAX_LFU) return MAX_LFU;
  const base = Math.max(0, counter - LFU_INIT_VAL);
  const p = 1 / (base * logFactor + 1);
  return random.next() < p ? counter + 1 : counter;
}

/** An access: decay for the idle time, then one logarithmic increment, stamped now. */
export function lfuTouch(access: number, nowMs: number, params: LfuParams, random: RandomSource): number {
  const counter = lfuLogIncrement(lfuDecayed(access, nowMs, params), params.logFactor, random);
  return lfuField(nowMs, counter);
}
