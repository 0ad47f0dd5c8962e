/**
 * Turning an expiry argument into an absolute millisecond timestamp, with Redis's
 * checks. SET's EX/PX/EXAT/PXAT need a positive value; EXPIRE's family accepts any
 * int64 (zero or negative deletes the key) but refuses one whose conversion or
 * addition to now would overflow int64. Both answer "invalid expire time in '<cmd>'".
 *
 * @example
 * setExpiryAtMs("10", "s", true, 1_000, "set");     // { atMs: 11_000 }
 * setExpiryAtMs("0", "s", true, 1_000, "set");      // { error: "ERR invalid expire time in 'set' command" }
 * expireAtMs("-5", "s", true, 1_000, "expire");     // { atMs: -4_000 } (deletes the key)
 */
import { MAX_INT64, MIN_INT64, parseInt64 } from "./integer-arg.ts";
import { invalidExpireError, REPLY_ERRORS } from "./reply-errors.ts";

export type TimeUnit = "s" | "ms";
export type ExpiryResult = { readonly atMs: number; readonly error?: undefined } | { readonly error: string };

const MS_PER_S = 1000n;

/** SET's expiry (Redis's getExpireMillisecondsOrReply): positive, no overflow once in ms and made absolute. */
export function setExpiryAtMs(
  raw: string,
  unit: TimeUnit,
  relative: boolean,
  nowMs: number,
  command: string,
): ExpiryResult {
  const value = parseInt64(raw);
  if (value === undefined) return { error: REPLY_ERRORS.notInteger };
  const big = BigInt(value);
  if (big <= 0n || (unit === "s" && big > MAX_INT64 / MS_PER_S))
    return { error: invalidExpireError(command) };
  const ms = unit === "s" ? big * MS_PER_S : big;
  const at = relative ? ms + BigInt(nowMs) : ms;
  if (at > MAX_INT64) return { error: invalidExpireError(command) };
  return { atMs: Number(at) };
}

/** EXPIRE/PEXPIRE/EXPIREAT/PEXPIREAT's time (Redis's expireGenericCommand): any int64 that does not overflow. */
export function expireAtMs(
  raw: string,
  unit: TimeUnit,
  relative: boolean,
  nowMs: number,
  command: string,
): ExpiryResult {
  const value = parseInt64(raw);
  if (value === undefined) return { error: REPLY_ERRORS.notInteger };
  if (typeof value === "number" && Math.abs(value) < 1e12) {
    // The fast path: far from every overflow bound.
    return { atMs: (unit === "s" ? value * 1000 : value) + (relative ? nowMs : 0) };
  }
  let ms = BigInt(value);
  if (unit === "s") {
    if (ms > MAX_INT64 / MS_PER_S || ms < MIN_INT64 / MS_PER_S) return { error: invalidExpireError(command) };
    ms *= MS_PER_S;
  }
  const base = relative ? BigInt(nowMs) : 0n;
  if (ms > MAX_INT64 - base) return { error: invalidExpireError(command) };
  return { atMs: Number(ms + base) };
}
