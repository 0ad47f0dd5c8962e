/**
 * FS-14's bot layer before join: a proof of work. The API hands a challenge (a signed,
 * expiring token naming the sale and the user); the client finds a nonce such that
 * SHA-256(challenge + ":" + nonce) starts with `bits` zero bits — about 2^bits hashes, a few
 * milliseconds for one browser, a real cost for a farm joining a million users — and joins
 * with both. The check is one hash; a challenge is bound to its user, so it cannot be
 * solved once and spent on many. Best effort, never the inventory barrier (FS-14): the
 * counter and the unique constraint are.
 *
 * @example
 * const nonce = solveChallenge(challenge, 12);      // what the page's script does
 * hasLeadingZeroBits(sha256(`${challenge}:${nonce}`), 12); // true
 */

/** True when `digest` starts with at least `bits` zero bits. */
export function hasLeadingZeroBits(digest: Uint8Array, bits: number): boolean {
  let left = bits;
  for (const byte of digest) {
    if (left <= 0) return true;
    if (left >= 8) {
      if (byte !== 0) return false;
      left -= 8;
      continue;
    }
    return byte >> (8 - left) === 0;
  }
  return left <= 0;
}

/** Bound on the work a solver does: far above 2^24, the largest difficulty config allows. */
export const MAX_SOLVE_ATTEMPTS = 1 << 28;

/** Finds a nonce for `challenge` at `bits` (tests, and the reference for the page's script). */
export function solveChallenge(
  challenge: string,
  bits: number,
  sha256: (text: string) => Uint8Array,
): string {
  for (let nonce = 0; nonce < MAX_SOLVE_ATTEMPTS; nonce++) {
    if (hasLeadingZeroBits(sha256(`${challenge}:${nonce}`), bits)) return String(nonce);
  }
  throw new Error(`no nonce below ${MAX_SOLVE_ATTEMPTS} for ${bits} bits`);
}
