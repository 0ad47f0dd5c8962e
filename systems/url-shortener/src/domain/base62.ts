/**
 * Base62 codes of fixed length (US-02): the alphabet is [a-z, A-Z, 0-9], so a code is
 * URL-safe without escaping, and 7 characters give 62^7 = 3,521,614,606,208 codes. A number
 * below the code space encodes to exactly `CODE_LENGTH` characters (left-padded with the
 * alphabet's zero, `a`), and decoding a well-formed code gives the number back.
 *
 * @example
 * encodeBase62(0);          // "aaaaaaa"
 * decodeBase62("aaaaaab");  // 1
 * CODE_SPACE;               // 3_521_614_606_208
 */
import { assert } from "@casebook/kit/assert";

/** US-02: lower case, upper case, digits — in this order, so `a` is the zero digit. */
export const BASE62_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
export const CODE_LENGTH = 7;
/** 62^7: every number the counter may hand out is below this (3,521,614,606,208 < 2^53). */
export const CODE_SPACE = 62 ** CODE_LENGTH;

const DIGIT_OF = new Map<string, number>([...BASE62_ALPHABET].map((char, index) => [char, index]));

/** The code of `n` (an integer in [0, CODE_SPACE)), exactly CODE_LENGTH characters. */
export function encodeBase62(n: number): string {
  assert(Number.isSafeInteger(n) && n >= 0 && n < CODE_SPACE, `base62: ${n} is outside [0, 62^7)`);
  let rest = n;
  let code = "";
  for (let i = 0; i < CODE_LENGTH; i++) {
    code = BASE62_ALPHABET[rest % 62]! + code;
    rest = Math.floor(rest / 62);
  }
  return code;
}

/** The number of a CODE_LENGTH-character code, or undefined when it is not one. */
export function decodeBase62(code: string): number | undefined {
  if (code.length !== CODE_LENGTH) return undefined;
  let n = 0;
  for (const char of code) {
    const digit = DIGIT_OF.get(char);
    if (digit === undefined) return undefined;
    n = n * 62 + digit;
  }
  return n;
}
