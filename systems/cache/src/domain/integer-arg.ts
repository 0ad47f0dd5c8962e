/**
 * Integers as Redis reads them from arguments and values (`string2ll`): optional `-`,
 * digits, no `+`, no spaces, no leading zeros, within int64. Safe integers come back as
 * numbers (the fast path: every realistic counter); the rest of int64 as bigints, so
 * INCRBY near ±9.2e18 overflows exactly where Redis does.
 *
 * @example
 * parseInt64("42");                   // 42
 * parseInt64("9223372036854775807");  // 9223372036854775807n
 * parseInt64("007");                  // undefined
 * addInt64(9223372036854775807n, 1);  // undefined (would overflow)
 */

export const MIN_INT64 = -(2n ** 63n);
export const MAX_INT64 = 2n ** 63n - 1n;
/** Up to this many digits a decimal is always a safe integer (2^53 has 16 digits). */
const SAFE_DIGITS = 15;
/** int64's longest text: "-9223372036854775808". */
const MAX_INT64_CHARS = 20;

function isDigitRun(text: string, from: number): boolean {
  for (let i = from; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 48 || code > 57) return false;
  }
  return true;
}

/** The int64 in `text`, or undefined when it is not one (Redis: "value is not an integer or out of range"). */
export function parseInt64(text: string): number | bigint | undefined {
  const length = text.length;
  if (length === 0 || length > MAX_INT64_CHARS) return undefined;
  if (text === "0") return 0;
  const start = text.charCodeAt(0) === 45 ? 1 : 0;
  if (start === length) return undefined;
  const first = text.charCodeAt(start);
  if (first < 49 || first > 57 || !isDigitRun(text, start + 1)) return undefined;
  if (length - start <= SAFE_DIGITS) return Number(text);
  const value = BigInt(text);
  if (value < MIN_INT64 || value > MAX_INT64) return undefined;
  const asNumber = Number(value);
  return Number.isSafeInteger(asNumber) ? asNumber : value;
}

/** A safe integer or, beyond 2^53, the same value as a bigint. */
function normalize(value: bigint): number | bigint {
  const asNumber = Number(value);
  return Number.isSafeInteger(asNumber) ? asNumber : value;
}

/** a + b in int64, or undefined on overflow (Redis: "increment or decrement would overflow"). */
export function addInt64(a: number | bigint, b: number | bigint): number | bigint | undefined {
  if (typeof a === "number" && typeof b === "number") {
    const sum = a + b;
    if (Number.isSafeInteger(sum)) return sum;
  }
  const sum = BigInt(a) + BigInt(b);
  return sum < MIN_INT64 || sum > MAX_INT64 ? undefined : normalize(sum);
}

/** −a in int64, or undefined for int64's minimum (Redis: "decrement would overflow"). */
export function negateInt64(a: number | bigint): number | bigint | undefined {
  if (typeof a === "number") return a === 0 ? 0 : -a;
  const negated = -a;
  return negated > MAX_INT64 ? undefined : normalize(negated);
}
