/**
 * The hash scheme, the alternative US-03/US-04 measure the counter against: hash the URL
 * (MD5 or SHA-256), keep 7 Base62 characters of it, and when that code is taken, hash again
 * with a salt (the attempt number) and try again. Every attempt is a store lookup — here a
 * conditional insert through `claim`, which is the lookup and the write in one — so the
 * scheme pays at least one lookup per code and one more per collision; and collisions come
 * early (birthday.ts: the first near 2 million codes in a space of 3.5 trillion).
 *
 * @example
 * const { code, lookups } = await hashCode("https://example.com/a", { claim: (c) => store.insertIfAbsent(c) });
 */
import { createHash } from "node:crypto";
import { CODE_SPACE, encodeBase62 } from "./base62.ts";

export type HashAlgorithm = "md5" | "sha256";
/** Attempts before giving up: each one a lookup; past a handful the space is crowded or the store refuses. */
export const DEFAULT_MAX_HASH_ATTEMPTS = 8;

/** 7 Base62 characters of hash(url, salted by `attempt` when > 0): the first 48 bits of the digest mod 62^7. */
export function truncatedHashCode(url: string, attempt = 0, algorithm: HashAlgorithm = "md5"): string {
  const input = attempt === 0 ? url : `${url}#${attempt}`;
  const digest = createHash(algorithm).update(input).digest();
  // 48 bits is ~80 000 × 62^7, so the modulo's bias is below 1e-5.
  return encodeBase62(digest.readUIntBE(0, 6) % CODE_SPACE);
}

export interface HashCodeOptions {
  /** Store the code if it is free; false when it is taken (the collision). One lookup per call. */
  claim(code: string): Promise<boolean>;
  algorithm?: HashAlgorithm;
  maxAttempts?: number;
}

export interface HashCodeResult {
  code: string;
  /** Store lookups made: 1 + collisions. */
  lookups: number;
}

/** Salt-and-retry until a code is claimed; throws after `maxAttempts` collisions in a row. */
export async function hashCode(url: string, options: HashCodeOptions): Promise<HashCodeResult> {
  const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_HASH_ATTEMPTS;
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const code = truncatedHashCode(url, attempt, options.algorithm);
    if (await options.claim(code)) return { code, lookups: attempt + 1 };
  }
  throw new HashAttemptsExhaustedError(maxAttempts);
}

export class HashAttemptsExhaustedError extends Error {
  readonly attempts: number;

  constructor(attempts: number) {
    super(`hash scheme: ${attempts} salted codes in a row were taken`);
    this.attempts = attempts;
  }
}
