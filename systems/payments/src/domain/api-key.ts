/**
 * Merchant API keys: `sk_<id>_<secret>`, where `sk_<id>` (the prefix) is public — shown in
 * listings to tell keys apart and used to find the stored row — and only sha256(key) is
 * stored. Lookup by prefix, then a constant-time compare of the hashes: the response time
 * says nothing about how much of a guessed secret was right.
 *
 * The random bytes are injected (production: node:crypto's `randomBytes`), so this file stays
 * pure and a test can pin a key. Never feed it a seeded, non-cryptographic source outside tests.
 *
 * @example
 * const key = newApiKey(randomBytes);      // { key: "sk_1f…_Qx…", prefix: "sk_1f…", hash: "9a…" }
 * const parsed = parseApiKey(key.key);     // { prefix, hash } or undefined when malformed
 * apiKeyMatches(parsed!.hash, key.hash);   // true
 */
import { createHash, timingSafeEqual } from "node:crypto";

/** Random bytes of the public id (16 hex chars): a collision only costs a retry (UNIQUE prefix). */
export const API_KEY_ID_BYTES = 8;
/** Random bytes of the secret: 256 bits, beyond any guessing. */
export const API_KEY_SECRET_BYTES = 32;
/** `sk_` + 16 hex + `_` + 43 base64url characters. */
export const API_KEY_CHARS = 3 + API_KEY_ID_BYTES * 2 + 1 + 43;

const KEY_PATTERN = /^(sk_[0-9a-f]{16})_[A-Za-z0-9_-]{43}$/;

export type RandomBytes = (size: number) => Uint8Array;

export interface IssuedApiKey {
  /** The whole key: shown once, to the merchant, never stored. */
  key: string;
  /** Public part, stored and shown: identifies the key in listings and logs. */
  prefix: string;
  /** sha256 of the whole key, lowercase hex: what is stored. */
  hash: string;
}

export interface PresentedApiKey {
  prefix: string;
  hash: string;
}

export function hashApiKey(key: string): string {
  return createHash("sha256").update(key, "utf8").digest("hex");
}

/** A fresh key from `randomBytes` (which must be cryptographically secure in production). */
export function newApiKey(randomBytes: RandomBytes): IssuedApiKey {
  const id = Buffer.from(randomBytes(API_KEY_ID_BYTES)).toString("hex");
  const secret = Buffer.from(randomBytes(API_KEY_SECRET_BYTES)).toString("base64url");
  const prefix = `sk_${id}`;
  const key = `${prefix}_${secret}`;
  if (!KEY_PATTERN.test(key)) throw new Error("api key: randomBytes returned the wrong number of bytes");
  return { key, prefix, hash: hashApiKey(key) };
}

/** The prefix and hash of a presented key, or undefined when it cannot be one of ours (no lookup needed). */
export function parseApiKey(key: string): PresentedApiKey | undefined {
  if (key.length !== API_KEY_CHARS) return undefined;
  const match = KEY_PATTERN.exec(key);
  return match ? { prefix: match[1]!, hash: hashApiKey(key) } : undefined;
}

/** Constant-time equality of two sha256 hex digests. */
export function apiKeyMatches(presentedHash: string, storedHash: string): boolean {
  const presented = Buffer.from(presentedHash, "hex");
  const stored = Buffer.from(storedHash, "hex");
  // Both are 32 bytes when well-formed; a length check first keeps timingSafeEqual from throwing.
  return presented.length === 32 && stored.length === 32 && timingSafeEqual(presented, stored);
}
