/**
 * INCRBYFLOAT's arithmetic as Redis does it: in the C `long double` of x86-64 (a 64-bit
 * mantissa, not JavaScript's 53-bit double), parsed like `strtold` (Redis's string2ld) and
 * printed with `%.17Lf` minus trailing zeros (ld2string's LD_STR_HUMAN). So "10.5" + "0.1" is
 * "10.6" and "0.1" + "0.2" is "0.3" where a double would say 0.30000000000000004, and 1e20 + 0.3
 * loses the 0.3 exactly as Redis does. A value is an exact binary number `m × 2^e` held in
 * BigInt; parsing and every sum round to 64 significant bits, half to even, as the FPU does.
 *
 * Not followed: strtold's hexadecimal floats ("0x1p3"), refused here as not a valid float.
 *
 * @example
 * const sum = addLongDouble(parseLongDouble("10.5") as LongDouble, parseLongDouble("0.1") as LongDouble);
 * formatLongDouble(sum as LongDouble); // "10.6"
 */

/** A finite long double: exactly `m × 2^e`. */
export interface LongDouble {
  readonly m: bigint;
  readonly e: number;
}

/** `parseLongDouble` of "inf", "-infinity"…: strtold accepts them; INCRBYFLOAT then refuses the result. */
export const INFINITE = "infinite";

const MANTISSA_BITS = 64n;
const MANTISSA_LIMIT = 1n << MANTISSA_BITS;
/** Largest exponent of `m × 2^e` with a 64-bit m: LDBL_MAX is just under 2^16384. */
const MAX_EXPONENT = 16384 - 64;
/** Smallest exponent: the least subnormal is 2^-16445. */
const MIN_EXPONENT = -16445;
/** Redis refuses number strings this long or longer (MAX_LONG_DOUBLE_CHARS). */
const MAX_CHARS = 5 * 1024;
/** Decimal magnitudes beyond these over- or underflow a long double (LDBL_MAX ≈ 1.19e4932, least subnormal ≈ 3.6e-4951). */
const MAX_DECIMAL_DIGITS_ABOVE_POINT = 4933;
const MIN_DECIMAL_MAGNITUDE = -4951;
const FRACTION_DIGITS = 17;

const DECIMAL = /^([+-]?)(?:(\d+)(?:\.(\d*))?|\.(\d+))(?:[eE]([+-]?\d+))?$/;
const INFINITY_WORDS = /^[+-]?(?:inf|infinity)$/i;

function bitLength(n: bigint): number {
  return n === 0n ? 0 : n.toString(2).length;
}

/** The long double nearest to `num / den` (both > 0), or INFINITE when it overflows; 0 when it underflows. */
function roundToLongDouble(negative: boolean, num: bigint, den: bigint): LongDouble | typeof INFINITE {
  // num/den lies in [2^(k-1), 2^(k+1)): scaling by 2^(64-k) lands in [2^63, 2^65).
  const k = bitLength(num) - bitLength(den);
  let shift = Math.min(64 - k, -MIN_EXPONENT);
  const quotient = (s: number): [bigint, bigint] =>
    s >= 0 ? [num << BigInt(s), den] : [num, den << BigInt(-s)];
  let [n, d] = quotient(shift);
  if (n / d >= MANTISSA_LIMIT) {
    shift -= 1;
    [n, d] = quotient(shift);
  }
  let m = n / d;
  const twiceRest = 2n * (n - m * d);
  if (twiceRest > d || (twiceRest === d && (m & 1n) === 1n)) m += 1n;
  if (m === MANTISSA_LIMIT) {
    m >>= 1n;
    shift -= 1;
  }
  if (-shift > MAX_EXPONENT) return INFINITE;
  return { m: negative ? -m : m, e: -shift };
}

/** strtold as string2ld uses it: the whole string, no leading space, no NaN; undefined = "not a valid float". */
export function parseLongDouble(text: string): LongDouble | typeof INFINITE | undefined {
  if (text.length === 0 || text.length >= MAX_CHARS) return undefined;
  if (INFINITY_WORDS.test(text)) return INFINITE;
  const match = DECIMAL.exec(text);
  if (match === null) return undefined;
  const [, sign, whole, fraction = "", onlyFraction, exponent = "0"] = match;
  const digits = (whole ?? "") + (onlyFraction ?? fraction);
  const mantissa = BigInt(digits);
  if (mantissa === 0n) return { m: 0n, e: 0 };
  const scale = Number(exponent) - (onlyFraction ?? fraction).length;
  const magnitude = scale + mantissa.toString().length;
  // Out of range: strtold reports ERANGE with ±HUGE_VAL or 0, which string2ld refuses.
  if (magnitude > MAX_DECIMAL_DIGITS_ABOVE_POINT || magnitude < MIN_DECIMAL_MAGNITUDE) return undefined;
  const num = scale >= 0 ? mantissa * 10n ** BigInt(scale) : mantissa;
  const den = scale >= 0 ? 1n : 10n ** BigInt(-scale);
  const value = roundToLongDouble(sign === "-", num, den);
  if (value === INFINITE || value.m === 0n) return undefined;
  return value;
}

/** a + b rounded to a long double; INFINITE when the sum overflows. */
export function addLongDouble(a: LongDouble, b: LongDouble): LongDouble | typeof INFINITE {
  const e = Math.min(a.e, b.e);
  const sum = (a.m << BigInt(a.e - e)) + (b.m << BigInt(b.e - e));
  if (sum === 0n) return { m: 0n, e: 0 };
  const negative = sum < 0n;
  const magnitude = negative ? -sum : sum;
  return e >= 0
    ? roundToLongDouble(negative, magnitude << BigInt(e), 1n)
    : roundToLongDouble(negative, magnitude, 1n << BigInt(-e));
}

/** `%.17Lf` (exact value rounded half to even), trailing zeros and a bare "-0" removed, as ld2string does. */
export function formatLongDouble(value: LongDouble): string {
  const negative = value.m < 0n;
  const m = negative ? -value.m : value.m;
  const scaled = m * 10n ** BigInt(FRACTION_DIGITS);
  let units: bigint;
  if (value.e >= 0) {
    units = scaled << BigInt(value.e);
  } else {
    const den = 1n << BigInt(-value.e);
    units = scaled / den;
    const twiceRest = 2n * (scaled - units * den);
    if (twiceRest > den || (twiceRest === den && (units & 1n) === 1n)) units += 1n;
  }
  const digits = units.toString().padStart(FRACTION_DIGITS + 1, "0");
  const integer = digits.slice(0, -FRACTION_DIGITS);
  const fraction = digits.slice(-FRACTION_DIGITS).replace(/0+$/, "");
  const text = fraction === "" ? integer : `${integer}.${fraction}`;
  return negative && text !== "0" ? `-${text}` : text;
}
